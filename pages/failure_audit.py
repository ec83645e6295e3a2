"""Failure audit: why each question of a run missed, with the evidence for the code."""

import pandas as pd
import streamlit as st

from ragloupe.diagnostics.gold import find_goldsets, load_goldsets
from ragloupe.ui.cache import current_settings, get_embedder, get_store
from ragloupe.ui.charts import failure_chart
from ragloupe.ui.guard import inside_navigation, page_errors
from ragloupe.ui.tables import failed_query_rows, retrieved_rows
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import evaluate_with_progress

inside_navigation()
st.title("Failure audit")
st.caption("Failure codes after Barnett et al. (2024), assigned per question at the run's "
           "failure cutoff k.")

with page_errors():
    from ragloupe.evaluate.runs import list_runs, load_run

    settings = current_settings()
    past = list_runs(settings)
    if not past:
        st.info("No evaluation run yet. Evaluate every shipped gold set here in the default mode "
                "(about a minute on 2 cores), or pick gold sets and modes on the Evaluation page "
                "(or `ragloupe eval`).")
        if not st.button("Evaluate the gold sets now", type="primary", key="evaluate_now"):
            st.stop()
        goldsets, problems = load_goldsets(find_goldsets(settings))
        for problem in problems:
            st.error(problem)
        evaluate_with_progress(goldsets, [settings.mode], [1, 3, 5, 10], "doc", settings,
                               store=get_store(settings), embedder=get_embedder(settings))
        past = list_runs(settings)
    run_id = st.selectbox("Run", [row["run_id"] for row in past], key="run")
    run = load_run(run_id, settings)
    failures = run.data["failures"]

    chart_col, legend_col = st.columns([3, 2])
    with chart_col:
        st.subheader(f"Retrieval failures at k={failures['k']} ({run.data['n_queries']} questions)")
        st.plotly_chart(failure_chart(failures["counts"]), key="failure_counts")
    with legend_col:
        st.subheader("Codes")
        st.dataframe(pd.DataFrame([{"code": c, "meaning": m} for c, m in failures["taxonomy"].items()]),
                     hide_index=True, width="stretch")
        generation = failures["generation"]
        if generation.get("assessed"):
            st.caption("Generation codes: " + ", ".join(f"{c} {n}" for c, n in generation["counts"].items()))
        else:
            st.caption(generation.get("note", "Generation codes not assessed."))

    failed = failed_query_rows(run)
    st.subheader(f"Questions that missed ({len(failed)})")
    if not failed:
        st.success("Every question hit at this cutoff.")
        st.stop()
    st.dataframe(pd.DataFrame(failed), hide_index=True, width="stretch")

    by_key = {(q["goldset"], q["query_id"]): q for q in run.data["queries"]}
    choice = st.selectbox("Look at one", [(r["goldset"], r["query_id"]) for r in failed],
                          format_func=lambda key: f"{key[1]} ({by_key[key]['failure']['code']})",
                          key="query")
    query = by_key[choice]
    st.subheader(md_escape(f"{query['query_id']} · {query['failure']['code']}"))
    st.text(f"Question: {query['question']}")
    st.text(f"Gold units: {', '.join(query['expected_units'])}")
    st.text(f"Gold answer: {query['expected_answer'] or '—'}")
    st.text(f"Evidence: {query['failure']['evidence']}")
    audit = query.get("label_audit") or {}
    if audit.get("flagged"):
        st.warning("Suspected gold-label error: the answer was found on "
                   + (", ".join(audit.get("found_on", [])) or "another unit")
                   + (f" ({audit['note']})" if audit.get("note") else ""))
    gold_rows = [e for e in query["ranked"] if e["relevant"]]
    st.markdown("**Where each engine ranked the gold unit**")
    if gold_rows:
        st.dataframe(pd.DataFrame(retrieved_rows({"ranked": gold_rows})), hide_index=True)
    else:
        st.caption("The gold unit is not among the units the report lists for this question.")
    st.markdown("**What was retrieved instead**")
    st.dataframe(pd.DataFrame(retrieved_rows(query)), hide_index=True, width="stretch")
    if query["failure"].get("details"):
        with st.expander("Details behind the code"):
            st.json(query["failure"]["details"])
