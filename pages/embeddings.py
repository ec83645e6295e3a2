"""Embeddings: the index as a 2-D map, with a query and its hits placed on it."""

import streamlit as st

from ragloupe.diagnostics.gold import gold_chunk_ids, match_question
from ragloupe.diagnostics.projections import METHODS, map_points
from ragloupe.ui.cache import (cached_goldsets, current_settings, get_projection, get_workspace,
                               index_documents)
from ragloupe.ui.charts import embedding_map
from ragloupe.ui import state
from ragloupe.ui.background import index_notice
from ragloupe.ui.guard import page_errors
from ragloupe.ui.widgets import encode_sentences_with_progress

COLOUR_BY = {"document": "doc_id", "section": "section", "quality": "quality",
             "run outcome": "outcome", "failure code": "failure code"}

st.title("Embeddings")
st.caption("Each point is a chunk. A query and its hits are placed with the same fitted "
           "reducer, so they land among the chunks they resemble.")

PAGE = "embeddings"
MODES = ("hybrid", "dense", "bm25", "hybrid+rerank")

with page_errors():
    index_notice()
    settings = current_settings()
    documents = index_documents(settings)
    state.keep(PAGE, {"method": settings.projection_method if settings.projection_method in METHODS
                      else METHODS[-1], "colour": "document", "question": "", "mode": "hybrid",
                      "k": settings.top_k, "docs": []})
    state.restrict(PAGE, "docs", documents)
    left, middle = st.columns(2)
    method = left.radio("Projection", METHODS, horizontal=True, key=f"{PAGE}.method",
                        format_func=lambda m: {"umap": "UMAP", "pca": "PCA (fast)"}[m])
    colour = middle.radio("Colour by", list(COLOUR_BY), horizontal=True, key=f"{PAGE}.colour",
                          help="run outcome / failure code: the gold units' chunks of a run's questions")
    run = None
    if COLOUR_BY[colour] in ("outcome", "failure code"):
        from ragloupe.evaluate.runs import list_runs, load_run
        from ragloupe.ui.tables import run_label

        past = list_runs(settings)
        if not past:
            st.info("No evaluation run yet: run one on the Evaluation page to colour its questions.")
        else:
            runs = {row["run_id"]: load_run(row["run_id"], settings) for row in past}
            run_col, k_run_col = st.columns([3, 1])
            chosen_run = run_col.selectbox("Run", list(runs), key=f"{PAGE}.run",
                                           format_func=lambda i: run_label(runs[i]))
            run_k = k_run_col.number_input("top k", min_value=1, max_value=100, value=5, key=f"{PAGE}.run_k")
            run = runs[chosen_run]
    with st.form("place_query"):
        question = st.text_input("Place a query on the map (optional)", key=f"{PAGE}.question")
        mode_col, k_col, docs_col = st.columns([1, 1, 2])
        mode = mode_col.selectbox("Mode", MODES, key=f"{PAGE}.mode")
        k = k_col.number_input("k", min_value=1, max_value=50, step=1, key=f"{PAGE}.k")
        chosen_docs = docs_col.multiselect("Documents searched", documents, key=f"{PAGE}.docs",
                                           placeholder="all documents")
        st.form_submit_button("Place")

    # A cold start fits the reducer over every chunk's vector: say so at once rather than show nothing.
    # UMAP's times: benchmarks/projection_speed.py (numba compiles once a machine, then loads).
    expected = ("up to a minute on 2 cores the first time on this machine, up to half a minute after"
                if method == "umap" else "a few seconds")
    with st.spinner(f"Reading the chunk vectors and fitting the 2-D map ({method.upper()}: {expected}; "
                    "then it is kept for this index)…", show_time=True):
        projection = get_projection(settings, method)
    caption = (f"{projection.method.upper()} of {projection.sample_size:,} chunks"
               + (f" (sample of {projection.total:,})" if projection.sampled else " (all)"))
    if projection.note:
        caption += f" — {projection.note}"
    st.caption(caption)

    marks: dict[str, list[dict]] = {}
    if question.strip():
        from ragloupe.retrieve.search import search

        workspace = get_workspace(settings)
        store = workspace.store
        encode_sentences_with_progress(workspace, [mode], chosen_docs or None)
        ranking = search(question, mode=mode, k=int(k), workspace=workspace,
                         filters={"doc_ids": list(chosen_docs)} if chosen_docs else None)
        hit_ids = [hit.chunk.chunk_id for hit in ranking.hits]
        # Where dense searched from: the question's embedding as the query adapter in force maps it.
        query_xy = projection.place(workspace.dense_query_vector(question)[None, :])
        hits_xy = projection.place(store.get_embeddings(hit_ids)) if hit_ids else []
        marks["query"] = [{"x": float(query_xy[0][0]), "y": float(query_xy[0][1]),
                           "label": "query"}]
        marks["hits"] = [{"x": float(x), "y": float(y), "label": f"#{hit.rank}"}
                         for hit, (x, y) in zip(ranking.hits, hits_xy)]
        matched = match_question(question, cached_goldsets(settings))
        gold_ids = gold_chunk_ids(store, matched)
        if gold_ids:
            gold_xy = projection.place(store.get_embeddings(gold_ids))
            marks["gold"] = [{"x": float(x), "y": float(y), "label": "gold"} for x, y in gold_xy]
        st.caption(f"{len(hit_ids)} hits ({mode}) ringed"
                   + (f"; {len(gold_ids)} gold chunks marked ◆ "
                      f"({', '.join(q.query_id for q in matched)})" if gold_ids else ""))
        st.caption("The query ★ is placed where dense searches from: " + workspace.query_adapter()[1] + ".")
    points = map_points(projection)
    if COLOUR_BY[colour] in ("outcome", "failure code"):
        from ragloupe.diagnostics.run_map import colour_points, unit_outcomes

        outcomes = unit_outcomes(run.data, int(run_k)) if run is not None else {}
        points = colour_points(points, outcomes)
        on_map = {p["unit"] for p in points} & set(outcomes)
        st.caption(f"{len(on_map)} of the run's {len(outcomes)} gold units have chunks on the map "
                   "(hit at 1, in the top k, missed; or the run's failure code); other chunks: "
                   "not a gold unit of the run.")
    st.plotly_chart(embedding_map(points, COLOUR_BY[colour], marks), key="embedding_map")
