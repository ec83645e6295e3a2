"""Index: see what a re-index would do, run it with progress, manage the source files."""

import pandas as pd
import streamlit as st

from ragloupe.errors import RagloupeError
from ragloupe.ui.cache import current_settings
from ragloupe.ui.guard import inside_navigation, page_errors
from ragloupe.ui.sources import UPLOAD_SUFFIXES, clear_index, delete_source, raw_sources, save_upload
from ragloupe.ui.widgets import flash, index_summary, run_with_progress, show_flash

inside_navigation()
st.title("Index")
st.caption("Only new and modified files are read and embedded; unchanged ones cost a hash. "
           "The plan below is what the next run will do.")

with page_errors():
    from ragloupe.index.pipeline import plan, run_index, status

    settings = current_settings()
    show_flash()

    with st.expander("Add files to the raw folder", expanded=False):
        st.caption(f"PDF, CSV or JSON Lines, at most {settings.max_upload_mb} MB each. They are "
                   f"saved under {settings.path('raw_dir')} and indexed by the next run.")
        uploads = st.file_uploader("Files", type=[s.lstrip(".") for s in UPLOAD_SUFFIXES],
                                   accept_multiple_files=True, key="uploads")
        if uploads and st.button("Save to the raw folder", key="save_uploads"):
            for upload in uploads:
                try:
                    saved = save_upload(upload.name, upload.getvalue(), settings)
                    flash(f"Saved {saved.name} to the raw folder: it is in the plan below.")
                except RagloupeError as exc:  # one bad file does not stop the others
                    flash(str(exc), "error")
            st.rerun()

    st.header("Plan")
    the_plan = plan(None, settings)
    counts = st.columns(4)
    for column, (label, items) in zip(counts, (
            ("New", the_plan.new), ("Modified", the_plan.modified),
            ("Unchanged", the_plan.unchanged), ("Deleted", the_plan.deleted))):
        column.metric(label, len(items))
    if the_plan.stale:
        st.warning(f"Settings changed: {the_plan.stale}")
    changes = ([{"change": "new", "source": p} for p in the_plan.new]
               + [{"change": "modified", "source": p} for p in the_plan.modified]
               + [{"change": "deleted", "source": d} for d in the_plan.deleted])
    if changes:
        st.dataframe(pd.DataFrame(changes), hide_index=True, width="stretch")
    st.caption("Sources: " + ", ".join(the_plan.roots))

    run_col, rebuild_col = st.columns(2)
    run_clicked = run_col.button("Run incremental re-index", type="primary", key="run_index",
                                 disabled=bool(the_plan.stale))
    confirm_rebuild = rebuild_col.checkbox("I want to re-embed everything", key="confirm_rebuild")
    rebuild_clicked = rebuild_col.button("Rebuild from scratch", key="rebuild",
                                         disabled=not confirm_rebuild)
    if run_clicked or rebuild_clicked:
        with page_errors():
            summary = run_with_progress(
                lambda progress: run_index(None, settings, rebuild=rebuild_clicked,
                                           progress=progress))
            st.session_state["last_summary"] = summary
            st.rerun()
    if "last_summary" in st.session_state:
        st.header("Last run")
        index_summary(st.session_state["last_summary"])

    st.header("Index status")
    current = status(settings)
    cols = st.columns(4)
    cols[0].metric("Documents", current.n_documents)
    cols[1].metric("Pages indexed", f"{current.n_pages_indexed:,} of {current.n_pages:,}")
    cols[2].metric("Chunks", f"{current.n_chunks_store:,}")
    cols[3].metric("Refused files", len(current.refused))
    if current.documents:
        st.dataframe(pd.DataFrame(current.documents), hide_index=True, width="stretch")

    st.header("Manage sources")
    raw_files = raw_sources(settings)
    if raw_files:
        doomed = st.selectbox("A file in the raw folder", raw_files, format_func=lambda p: p.name,
                              key="delete_choice")
        if st.button("Delete this file", key="delete_source"):
            delete_source(doomed, settings)
            flash(f"Deleted {doomed.name}: the plan lists it as deleted; run the re-index "
                  "to remove its chunks.")
            st.rerun()
    else:
        st.caption("The raw folder is empty; the app deletes only files it manages there.")
    confirm = st.text_input('Type "clear" to empty the index (source files are kept)',
                            key="confirm_clear")
    if st.button("Clear the index", key="clear", disabled=confirm.strip() != "clear"):
        clear_index(settings)
        st.session_state.pop("last_summary", None)
        flash("The index is empty. Run the re-index to fill it again.")
        st.rerun()
