"""The app's parts for outside systems attached as engines: the Index page's attach form and the
Chunk Explorer's read-only view of an attached Chroma collection. The logic is in ragloupe.attached;
here are only widgets and layout. Document text is shown as text, never markdown."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragloupe import attached
from ragloupe.attached.browse import CollectionView, bm25_beside_dense, chroma_engines, collection_view
from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.ui.cache import get_workspace
from ragloupe.ui.guard import app_message
from ragloupe.ui.text import fmt_score

KIND_LABELS = {"chroma": "a Chroma collection (a directory)", "python": "a Python function",
               "http": "an HTTP retriever", "run": "a run file"}


def attach_section(settings: Settings) -> None:
    """Attach an outside system by name (each kind's fields), and the engines attached, each removable."""
    st.header("Engines")
    st.caption("Your own retrieval beside ragloupe's: attach a Chroma collection made by LangChain or "
               "LlamaIndex (only ever read), a Python or HTTP retriever, or a run file. Its name is then a "
               "mode in Search & compare, Evaluation and the CLI (docs/engines.md).")
    workspace = get_workspace(settings)
    registry = workspace.engines()
    for row in registry.describe():
        if row["origin"] in ("attached", "plugin"):
            left, right = st.columns([5, 1])
            left.text(f"{row['name']} ({row['origin']}): {row['source']} | score: {row['score']}")
            if row["origin"] == "attached" and right.button("Remove", key=f"engines.remove.{row['name']}"):
                attached.remove(settings, row["name"])
                st.rerun()
    for problem in registry.problems:
        st.warning(problem)
    with st.form("engines.attach"):
        name_col, kind_col = st.columns([1, 2])
        name = name_col.text_input("Name", key="engines.name", placeholder="e.g. mylc")
        kind = kind_col.radio("What to attach", list(KIND_LABELS), format_func=KIND_LABELS.get,
                              horizontal=True, key="engines.kind")
        target = st.text_input("Directory, module:function, URL or run file", key="engines.target",
                               placeholder="/home/me/proj/chroma_db · myrag.retrieval:retrieve · "
                                           "http://127.0.0.1:9000/search · runs/theirs.trec")
        collection_col, model_col = st.columns(2)
        collection = collection_col.text_input("Chroma collection (for a directory)", key="engines.collection")
        model = model_col.text_input("Model that embedded it (empty: ragloupe's)", key="engines.model")
        submitted = st.form_submit_button("Attach")
    if submitted:
        try:
            attachment = _attach(settings, workspace, name.strip(), kind, target.strip(), collection.strip(),
                                 model.strip())
        except RagloupeError as exc:
            st.error(app_message(exc))
        else:
            st.success(f"{attachment.name} attached: pick it as a mode in Search & compare or Evaluation.")


def _attach(settings: Settings, workspace, name: str, kind: str, target: str, collection: str, model: str):
    if kind == "chroma":
        embedder = workspace.embedder
        if model:
            from ragloupe.index.embedder import get_embedder  # only a collection of another model loads one

            embedder = get_embedder(settings.replace(embedding_model=model))
        return attached.attach(settings, name, "chroma", embedder=embedder, collection=collection, path=target,
                               model=model)
    option = {"python": "function", "http": "url", "run": "path"}[kind]
    return attached.attach(settings, name, kind, **{option: target})


@st.cache_resource(show_spinner="Reading the attached collection…", max_entries=2)
def _collection_view(key: str, _engine, k1: float, b: float, backend: str) -> CollectionView:
    return collection_view(_engine, k1, b, backend)


def attached_collection_section(settings: Settings) -> None:
    """Browse an attached Chroma collection, and rank its texts by BM25 beside your dense results."""
    workspace = get_workspace(settings)
    registry = workspace.engines()
    names = chroma_engines(registry)
    if not names:
        return
    st.header("An attached collection")
    st.caption("Read only. Its chunks as ragloupe names them (document: the file name without its "
               "extension; page: 1-based), and for a question its texts ranked by BM25 beside your own "
               "index's dense ranking.")
    name = st.selectbox("Collection", names, key="explorer.attached")
    engine = registry.get(name)
    view = _collection_view(f"{settings.path('index_dir')}:{name}:{engine.attachment.options}", engine,
                            float(settings.bm25_k1), float(settings.bm25_b), settings.bm25_backend)
    doc_col, text_col = st.columns([1, 2])
    doc = doc_col.selectbox("Document", view.documents(), index=None, placeholder="all documents",
                            key="explorer.attached_doc")
    text = text_col.text_input("Text contains (case-sensitive)", key="explorer.attached_text")
    shown = view.chunks_of(doc, text)
    st.metric(f"Chunks in {name}", f"{len(shown):,}")
    st.dataframe(pd.DataFrame([{"doc": c.doc_id, "page": c.page, "text": c.text[:300]} for c in shown[:500]]),
                 hide_index=True, width="stretch")
    question = st.text_input("Question: their texts by BM25 beside your dense results", key="explorer.attached_q")
    if question.strip():
        rows = bm25_beside_dense(view, question.strip(), workspace, k=10)
        st.dataframe(pd.DataFrame([{"rank": r.rank, f"{name} (BM25)": r.theirs_unit,
                                    "BM25": fmt_score(r.theirs_bm25), "your dense": r.yours_unit,
                                    "dense score": fmt_score(r.yours_dense)} for r in rows]),
                     hide_index=True, width="stretch")
