"""Index: see what a re-index would do, run it with progress, manage the source files."""

import pandas as pd
import streamlit as st

from ragloupe.errors import RagloupeError
from ragloupe.ui.background import (current_job, forget_job, running_job, show_job, start_job,
                                   wait_for_job)
from ragloupe.ui.adapt_view import adapt_section, query_adapter_section
from ragloupe.ui.cache import current_settings, get_workspace
from ragloupe.ui.guard import app_message, page_errors
from ragloupe.index.pipeline import clear_index, sentences_line
from ragloupe.retrieve import query_adapter
from ragloupe.ingest.uploads import UPLOAD_SUFFIXES, delete_source, raw_sources, save_upload
from ragloupe.ui.widgets import encode_sentences_with_progress, flash, index_summary, show_flash
from ragloupe.ui.attached_view import attach_section

st.title("Index")
st.caption("Only new and modified files are read and embedded; unchanged ones cost a hash. "
           "The plan below is what the next run will do.")

with page_errors():
    from ragloupe.diagnostics.index_view import plan_view
    from ragloupe.index.lock import lock_holder
    from ragloupe.index.pipeline import status

    settings = current_settings()
    show_flash()
    job = running_job(settings)
    if job is not None:
        st.info("An index run is going on (started here or in another tab); the page updates "
                "when it ends.")
        show_job(job)
        st.stop()
    holder = lock_holder(settings)
    if holder:
        st.warning(f"Another indexer ({'process ' + str(holder) if holder > 0 else 'another process'}) "
                   "is writing this index. Wait for it to finish before re-indexing here.")

    limit_mb = min(settings.max_upload_mb, int(st.get_option("server.maxUploadSize")))
    with st.expander("Add files to the raw folder", expanded=False):
        st.caption(f"PDF, HTML, Word (.docx), CSV or JSON Lines, at most {limit_mb} MB each. Each "
                   f"file is checked as it is saved (a PDF header; an HTML or Word document's text; "
                   f"a records file's id and text columns), saved "
                   f"under {settings.path('raw_dir')} and indexed by the next run.")
        uploads = st.file_uploader("Files", type=[s.lstrip(".") for s in UPLOAD_SUFFIXES],
                                   accept_multiple_files=True, key="uploads")
        if uploads and st.button("Save to the raw folder", key="save_uploads"):
            for upload in uploads:
                try:
                    saved = save_upload(upload.name, upload.getvalue(),
                                        settings.replace(max_upload_mb=limit_mb))
                    flash(f"Saved {saved.name} to the raw folder: it is in the plan below.")
                except RagloupeError as exc:  # one bad file does not stop the others
                    flash(app_message(exc), "error")
            st.rerun()

    st.header("Plan")
    view = plan_view(settings)
    the_plan = view.plan
    for column, (label, count, help_text) in zip(st.columns(len(view.counts)), view.counts):
        column.metric(label, count, help=help_text)
    if the_plan.stale:
        st.warning(f"Settings changed: {the_plan.stale}")
    if view.changes:
        st.dataframe(pd.DataFrame(view.changes), hide_index=True, width="stretch")
    st.caption("Sources: " + ", ".join(the_plan.roots))

    run_col, rebuild_col = st.columns(2)
    run_clicked = run_col.button("Run incremental re-index", type="primary", key="run_index",
                                 disabled=bool(the_plan.stale) or bool(holder))
    confirm_rebuild = rebuild_col.checkbox("I want to re-embed everything", key="confirm_rebuild")
    rebuild_clicked = rebuild_col.button("Rebuild from scratch", key="rebuild",
                                         disabled=not confirm_rebuild or bool(holder))
    if run_clicked or rebuild_clicked:
        job = start_job(settings, None, rebuild=rebuild_clicked)
        wait_for_job(job)
        st.rerun()
    finished = current_job(settings)
    if finished is not None and finished.finished:
        st.header("Last run")
        if finished.error:
            st.error(finished.error)
        else:
            index_summary(finished.summary)

    st.header("Index status")
    current = status(settings)
    cols = st.columns(4)
    cols[0].metric("Documents", current.n_documents)
    cols[1].metric("Pages indexed", f"{current.n_pages_indexed:,} of {current.n_pages:,}")
    cols[2].metric("Chunks", f"{current.n_chunks_store:,}")
    cols[3].metric("Refused files", len(current.refused))
    st.caption("Sentences: " + sentences_line(current.as_dict()))
    st.caption("Question: dense searches with " + query_adapter.in_force(settings)[1])
    if current.dense_sentence_weight and current.n_documents_with_sentences < current.n_documents:
        if st.button("Encode missing sentence vectors", key="encode_sentences", disabled=bool(holder),
                     help="Encodes them now, with progress, instead of on the first search that needs them."):
            flash(encode_sentences_with_progress(get_workspace(settings), ["dense"]) or
                  "No document lacks its sentence vectors any more.", "success")
            st.rerun()
    if current.documents:
        st.dataframe(pd.DataFrame(current.documents), hide_index=True, width="stretch")
        adapt_section(settings, busy=bool(holder))
        query_adapter_section(settings, busy=bool(holder))

    st.header("Manage sources")
    raw_files = raw_sources(settings)
    if raw_files:
        doomed = st.selectbox("A file in the raw folder", raw_files, format_func=lambda p: p.name,
                              key="delete_choice")
        sure = st.checkbox(f"Yes, delete {doomed.name} from the raw folder (this cannot be "
                           "undone)", key="confirm_delete")
        if st.button("Delete this file", key="delete_source", disabled=not sure):
            delete_source(doomed, settings)
            st.session_state.pop("confirm_delete", None)
            flash(f"Deleted {doomed.name}: the plan lists it as deleted; run the re-index "
                  "to remove its chunks.")
            st.rerun()
    else:
        st.caption("The raw folder is empty; the app deletes only files it manages there.")
    confirm = st.text_input('Type "clear" to empty the index (source files are kept)',
                            key="confirm_clear")
    if st.button("Clear the index", key="clear", disabled=confirm.strip() != "clear"):
        clear_index(settings)
        forget_job(settings)
        flash("The index is empty. Run the re-index to fill it again.")
        st.rerun()

    attach_section(settings)
