"""Chunk Explorer: what the index holds, chunk by chunk, and what ingestion left out."""

import pandas as pd
import streamlit as st

from ragloupe.diagnostics.explorer import chunks_of_page, chunks_on_page
from ragloupe.diagnostics.ingestion import ingestion_report, method_label, page_entry, stripped_from
from ragloupe.ui.cache import current_settings, get_selection, get_store, load_manifest
from ragloupe.ui import state
from ragloupe.ui.background import index_notice
from ragloupe.ui.guard import page_errors
from ragloupe.ui.inputs import ALL_QUALITIES, page_range_problem, search_filters
from ragloupe.ui.table_view import KINDS, page_beside_tables, page_side_by_side, show_chunk
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import chunk_label, chunk_metadata
from ragloupe.ui.attached_view import attached_collection_section

st.title("Chunk Explorer")
st.caption("Every chunk in the index with its metadata and full text; pages that ingestion "
           "did not index, and the running headers and footers it stripped, are listed below.")

PAGE = "explorer"

with page_errors():
    index_notice()
    settings = current_settings()
    manifest = load_manifest(settings)  # read once per run: every part below uses it
    held = [entry.doc_id for entry in manifest.complete()]
    state.keep(PAGE, {"docs": [], "page_from": 0, "page_to": 0,
                      "quality": list(ALL_QUALITIES), "text": "", "kinds": list(KINDS)})
    state.restrict(PAGE, "docs", held)
    documents_col, pages_col, quality_col = st.columns([3, 2, 3])  # room for three quality chips
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
    matching, *per_quality = st.columns(1 + len(ALL_QUALITIES))
    matching.metric("Matching chunks", f"{selection.matching:,}")
    for column, quality in zip(per_quality, ALL_QUALITIES):
        column.metric(quality.capitalize(), f"{selection.quality_counts.get(quality, 0):,}")

    page_size = settings.explorer_page_size
    if selection.matching:
        result_page = st.pagination(selection.n_pages(page_size), key="result_page")
        start = (result_page - 1) * page_size
        st.caption(f"Chunks {start + 1:,}–{min(start + page_size, selection.matching):,} "
                   f"of {selection.matching:,}")
        for chunk in chunks_on_page(get_store(settings), selection, result_page, page_size):
            label = (f"{chunk_label(chunk)} · chunk {chunk.position} · {chunk.kind} · "
                     f"{chunk.quality} · {chunk.n_tokens} tokens")
            with st.expander(md_escape(label)):
                chunk_metadata(chunk)
                stripped = stripped_from(manifest, chunk)
                if stripped:
                    st.text("Stripped from this page as running header/footer: "
                            + " | ".join(stripped))
                show_chunk(chunk, [text] if text.strip() else [])
    else:
        st.info("No chunk matches these filters.")

    st.header("One page: prose and tables side by side")
    doc_col, page_col = st.columns([3, 1])
    page_doc = doc_col.selectbox("Document", held, key=f"{PAGE}.page_doc")
    page_number = page_col.number_input("Page", min_value=1, value=1, key=f"{PAGE}.page_number")
    if page_doc:
        entry = page_entry(manifest, page_doc, int(page_number))
        if entry is None:
            st.caption("The document has no such page.")
        else:
            st.text(f"extraction method: {method_label(entry.method, entry.confidence)} · "
                    f"quality: {entry.quality}" + (f" ({entry.reason})" if entry.reason else "")
                    + f" · tables: {entry.tables}")
            page_chunks = chunks_of_page(get_store(settings), page_doc, int(page_number))
            if entry.tables:
                page_beside_tables(manifest.documents[page_doc].path, int(page_number), page_chunks)
            page_side_by_side(page_chunks)

    st.header("What ingestion left out")
    report = ingestion_report(manifest, documents)
    st.subheader(f"Pages not indexed ({len(report.excluded)})")
    if report.excluded:
        st.dataframe(pd.DataFrame(report.excluded), hide_index=True, width="stretch")
    else:
        st.caption("Every page of the selected documents is indexed.")
    if report.read_again:
        st.subheader(f"Pages read by OCR or the fallback extractor ({len(report.read_again)})")
        st.dataframe(pd.DataFrame(report.read_again), hide_index=True, width="stretch")

    st.subheader("Stripped running headers and footers")
    if report.stripped:
        st.dataframe(pd.DataFrame(report.stripped), hide_index=True, width="stretch")
    else:
        st.caption("Nothing was stripped from the selected documents.")
    if report.refused:
        st.subheader("Files refused")
        st.dataframe(pd.DataFrame(report.refused), hide_index=True, width="stretch")

    attached_collection_section(settings)
