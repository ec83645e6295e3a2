"""Run info: the settings in force and where they came from, the index, versions, endpoints."""

import pandas as pd
import streamlit as st

from ragloupe.diagnostics import system
from ragloupe.ui.cache import current_settings, get_store
from ragloupe.ui.guard import page_errors
from ragloupe.ui.text import md_escape

st.title("Run info")
st.caption("What produced the numbers on the other pages: compare this with a colleague's "
           "before comparing results.")

with page_errors():
    settings = current_settings()

    left, right = st.columns(2)
    with left:
        st.subheader("Index")
        st.markdown(f"**Chroma mode:** {md_escape(system.chroma_mode(settings))}")
        st.markdown(f"**Settings fingerprint** (what shapes the index): "
                    f"`{settings.index_fingerprint()}`")
        st.markdown(f"**Embedding model:** {md_escape(settings.embedding_model)}")
        st.markdown(f"**Chunking:** {settings.chunk_tokens} tokens, overlap {settings.chunk_overlap}")
        with page_errors():
            store = get_store(settings)
            st.metric("Chunks in the index", f"{store.count():,}")
            st.markdown(f"**Index fingerprint** (changes with the content): `{store.fingerprint()}`")
    with right:
        st.subheader("LLM endpoint")
        with st.spinner("Asking the LLM endpoint…"):
            reachable, message = system.llm_status(settings)
        (st.success if reachable else st.warning)(message)
        from ragloupe.logs import llm_calls_path, read_llm_calls

        calls = read_llm_calls(settings, limit=50)
        logged = {0: "No LLM call logged yet", 1: "The last LLM call"}.get(
            len(calls), f"The last {len(calls)} LLM calls (newest first)")
        st.caption(f"{logged}, in {llm_calls_path(settings)}")
        if calls:
            st.dataframe(pd.DataFrame(calls, columns=["time", "backend", "model", "call", "prompt_chars", "duration_s",
                                                      "outcome", "error"]), hide_index=True)
        st.subheader("Package versions")
        versions = system.package_versions()
        st.dataframe(pd.DataFrame({"package": list(versions), "version": list(versions.values())}),
                     hide_index=True)

    st.subheader("Index status")
    with page_errors():
        from ragloupe.index.pipeline import status

        # The page's whole width and a static table, which wraps: in half the width a grid cut the
        # store's path and each document's mid-word.
        st.table(pd.DataFrame(system.as_rows(status(settings))).set_index("name"))

    st.subheader("Pipeline")
    st.graphviz_chart(system.pipeline_dot(settings))

    st.subheader("Settings in force")
    st.dataframe(pd.DataFrame(system.settings_rows(settings)), hide_index=True, width="stretch")
