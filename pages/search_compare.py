"""Search & compare: one question, up to three retrieval modes side by side."""

import pandas as pd
import streamlit as st

from ragloupe.diagnostics.gold import gold_units, match_question
from ragloupe.ui.cache import (cached_goldsets, current_settings, get_embedder, get_store,
                               index_documents)
from ragloupe.ui.charts import bump_chart
from ragloupe.ui.guard import inside_navigation, page_errors
from ragloupe.ui.inputs import ALL_QUALITIES, search_filters
from ragloupe.ui.tables import hit_rows
from ragloupe.ui.text import md_escape, query_terms
from ragloupe.ui.widgets import hit_detail

inside_navigation()
st.title("Search & compare")
st.caption("Every hit shows each engine's rank and raw score (— when that engine did not list "
           "it), the fused score, what the reranker changed and the margin to the next hit.")

with page_errors():
    from ragloupe.retrieve.search import MODES, search

    base_modes = [mode for mode in MODES if not mode.endswith("+rewrite")]
    settings = current_settings()
    with st.form("search"):
        question = st.text_input("Question", key="question",
                                 placeholder="e.g. What was the total capital expenditure?")
        left, middle, right = st.columns([3, 1, 1])
        modes = left.multiselect("Modes (up to three)", base_modes, max_selections=3,
                                 default=["dense", "bm25", "hybrid+rerank"], key="modes")
        k = middle.number_input("k", min_value=1, max_value=50, value=settings.top_k, key="k")
        rewrite = right.toggle("Rewrite the query (LLM)", key="rewrite",
                               help="Appends an LLM rewrite to the question; falls back to the "
                                    "question alone when no LLM answers.")
        with st.expander("Filters"):
            documents = st.multiselect("Documents", index_documents(settings), key="docs")
            first, last = st.columns(2)
            page_from = first.number_input("From page", min_value=0, value=0, key="page_from",
                                           help="0: no lower bound")
            page_to = last.number_input("To page", min_value=0, value=0, key="page_to",
                                        help="0: no upper bound")
            qualities = st.multiselect("Quality", ALL_QUALITIES, default=list(ALL_QUALITIES), key="quality")
        submitted = st.form_submit_button("Search", type="primary")

    if question.strip() and modes:
        filters = search_filters(documents, page_from, page_to, qualities)
        matched = match_question(question, cached_goldsets(settings))
        gold = gold_units(matched)
        if matched:
            st.info(md_escape("Gold set question " + ", ".join(q.query_id for q in matched)
                              + ": gold pages marked ★ — " + ", ".join(sorted(gold))))
        terms = query_terms(question)
        columns = st.columns(len(modes))
        for column, mode in zip(columns, modes):
            with column, page_errors():
                full_mode = f"{mode}+rewrite" if rewrite else mode
                with st.spinner(f"Searching ({full_mode})…"):
                    # explain: run both engines in every mode, so a dense-only column
                    # still shows where bm25 would have put each hit.
                    ranking = search(question, mode=full_mode, k=int(k), filters=filters,
                                     settings=settings, explain=True, store=get_store(settings),
                                     embedder=get_embedder(settings))
                st.subheader(full_mode)
                total_ms = 1000 * sum(ranking.timings.values())
                st.caption(f"{len(ranking.hits)} hits · {total_ms:.0f} ms")
                if rewrite:
                    if ranking.rewrite_used:
                        st.text(f"Rewrite used: {ranking.rewrite}")
                    else:
                        st.text(f"Rewrite not used: {ranking.rewrite_note or 'no rewrite'}")
                st.dataframe(pd.DataFrame(hit_rows(ranking, gold)), hide_index=True,
                             width="stretch")
                if ranking.hits:
                    st.plotly_chart(bump_chart(ranking, gold), key=f"bump-{mode}",
                                    config={"displayModeBar": False})
                for hit in ranking.hits:
                    hit_detail(hit, terms, gold)
    elif submitted:
        st.warning("Type a question and pick at least one mode.")
