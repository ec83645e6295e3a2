"""Chunk Explorer: what the index holds, chunk by chunk, and what ingestion left out."""

import pandas as pd
import streamlit as st

from ragloupe.ui.cache import current_settings, get_selection, get_store, index_documents, load_manifest
from ragloupe.ui import state
from ragloupe.ui.background import index_notice
from ragloupe.ui.guard import page_errors
from ragloupe.ui.inputs import ALL_QUALITIES, page_range_problem, search_filters
from ragloupe.ui.table_view import (KINDS, method_label, page_beside_tables, page_side_by_side,
                                   show_chunk)
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import chunk_label, chunk_metadata

st.title("Chunk Explorer")
st.caption("Every chunk in the index with its metadata and full text; pages that ingestion "
           "did not index, and the running headers and footers it stripped, are listed below.")

PAGE = "explorer"

with page_errors():
    index_notice()
    settings = current_settings()
    held = index_documents(settings)
    state.keep(PAGE, {"docs": [], "page_from": 0, "page_to": 0,
                      "quality": list(ALL_QUALITIES), "text": "", "kinds": list(KINDS)})
    state.restrict(PAGE, "docs", held)
    documents_col, pages_col, quality_col = st.columns([3, 2, 2])
    documents = documents_col.multiselect("Documents", held, key=f"{PAGE}.docs",
                                          placeholder="all documents")
    first, last = pages_col.columns(2)
    page_from = first.number_input("From page", min_value=0, step=1, key=f"{PAGE}.page_from",
                                   help="0: no lower bound")
    page_to = last.number_input("To page", min_value=0, step=1, key=f"{PAGE}.page_to",
                                help="0: no upper bound")
    qualities = quality_col.multiselect("Quality", ALL_QUALITIES, key=f"{PAGE}.quality",
                                        placeholder="every quality")
    text_col, kind_col = st.columns([5, 2])
    text = text_col.text_input("Text contains (case-sensitive)", key=f"{PAGE}.text")
    kinds = kind_col.multiselect("Kind", KINDS, key=f"{PAGE}.kinds", placeholder="every kind",
                                 help="table: chunks cut from a table found on the page")
    problem = page_range_problem(page_from, page_to)
    if problem:
        st.warning(problem)
        st.stop()

    if not qualities:
        st.caption("No quality picked: chunks of every quality are shown.")
    filters = search_filters(documents, page_from, page_to, qualities)
    selection = get_selection(settings, filters, text, tuple(kinds) if kinds else None)
    matching, clean, degraded = st.columns(3)
    matching.metric("Matching chunks", f"{selection.matching:,}")
    clean.metric("Clean", f"{selection.quality_counts.get('clean', 0):,}")
    degraded.metric("Degraded", f"{selection.quality_counts.get('degraded', 0):,}")

    page_size = settings.explorer_page_size
    if selection.matching:
        result_page = st.pagination(selection.n_pages(page_size), key="result_page")
        start = (result_page - 1) * page_size
        st.caption(f"Chunks {start + 1:,}–{min(start + page_size, selection.matching):,} "
                   f"of {selection.matching:,}")
        from ragloupe.diagnostics.explorer import chunks_on_page

        manifest = load_manifest(settings)
        for chunk in chunks_on_page(get_store(settings), selection, result_page, page_size):
            label = (f"{chunk_label(chunk)} · chunk {chunk.position} · {chunk.kind} · "
                     f"{chunk.quality} · {chunk.n_tokens} tokens")
            with st.expander(md_escape(label)):
                chunk_metadata(chunk)
                stripped = next((p.stripped for p in manifest.pages(chunk.doc_id)
                                 if p.page == chunk.page and p.record_id == chunk.record_id), ())
                if stripped:
                    st.text("Stripped from this page as running header/footer: "
                            + " | ".join(stripped))
                show_chunk(chunk, [text] if text.strip() else [])
    else:
        st.info("No chunk matches these filters.")

    st.header("One page: prose and tables side by side")
    manifest = load_manifest(settings)
    doc_col, page_col = st.columns([3, 1])
    page_doc = doc_col.selectbox("Document", held, key=f"{PAGE}.page_doc")
    page_number = page_col.number_input("Page", min_value=1, value=1, key=f"{PAGE}.page_number")
    if page_doc:
        entry = next((p for p in manifest.pages(page_doc) if p.page == page_number), None)
        if entry is None:
            st.caption("The document has no such page.")
        else:
            st.text(f"extraction method: {method_label(entry.method, entry.confidence)} · "
                    f"quality: {entry.quality}" + (f" ({entry.reason})" if entry.reason else "")
                    + f" · tables: {entry.tables}")
            page_chunks = get_store(settings).all_chunks(
                {"$and": [{"doc_id": page_doc}, {"page": int(page_number)}]})
            if entry.tables:
                page_beside_tables(manifest.documents[page_doc].path, int(page_number), page_chunks)
            page_side_by_side(page_chunks)

    st.header("What ingestion left out")
    manifest = load_manifest(settings)
    shown = set(documents) or set(manifest.documents)
    excluded = [{"document": doc_id, "page": page.record_id or page.page, "quality": page.quality,
                 "reason": page.reason, "method": method_label(page.method, page.confidence)}
                for doc_id, page in manifest.excluded_pages() if doc_id in shown]
    st.subheader(f"Pages not indexed ({len(excluded)})")
    if excluded:
        st.dataframe(pd.DataFrame(excluded), hide_index=True, width="stretch")
    else:
        st.caption("Every page of the selected documents is indexed.")
    read_again = [{"document": e.doc_id, "page": p.page, "method": method_label(p.method, p.confidence),
                   "quality": p.quality, "reason": p.reason}
                  for e in manifest.complete() if e.doc_id in shown
                  for p in e.pages if p.method in ("ocr", "pdfminer")]
    if read_again:
        st.subheader(f"Pages read by OCR or the fallback extractor ({len(read_again)})")
        st.dataframe(pd.DataFrame(read_again), hide_index=True, width="stretch")

    st.subheader("Stripped running headers and footers")
    stripped = [{"document": entry.doc_id, "line": line}
                for entry in manifest.complete() if entry.doc_id in shown
                for line in entry.boilerplate]
    if stripped:
        st.dataframe(pd.DataFrame(stripped), hide_index=True, width="stretch")
    else:
        st.caption("Nothing was stripped from the selected documents.")
    refused = [entry for entry in manifest.refused() if entry.doc_id in shown]
    if refused:
        st.subheader("Files refused")
        st.dataframe(pd.DataFrame([{"document": e.doc_id, "reason": e.error or "blocking findings"}
                                   for e in refused]), hide_index=True, width="stretch")
