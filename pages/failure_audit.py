"""Failure audit: why each question of a run missed, with the evidence for the code."""

import pandas as pd
import streamlit as st

from ragloupe.diagnostics.gold import find_goldsets, load_goldsets
from ragloupe.ui import state
from ragloupe.ui.background import index_notice
from ragloupe.ui.cache import current_settings, get_workspace
from ragloupe.ui.charts import failure_chart
from ragloupe.ui.guard import page_errors
from ragloupe.ui.navigation import page_file
from ragloupe.ui.tables import audit_rows, codes_picked, gold_rank_rows, retrieved_rows, run_label, with_codes
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import evaluate_with_progress

PAGE = "audit"
COMPARED = ["dense", "bm25", "hybrid"]  # Search & compare's own default set


def modes_with_run(compared: list[str] | None, run_mode: str) -> list[str]:
    """The modes Search & compare was comparing, with the run's mode added (not put in their place):
    at most three, the run's kept; an outside run's mode ("outside:NAME") is none of ragloupe's."""
    modes = list(compared or COMPARED)
    mode = run_mode.replace("+rewrite", "")
    if mode.startswith("outside:") or mode in modes:
        return modes[:3]
    return (modes[:2] + [mode]) if len(modes) >= 3 else modes + [mode]

st.title("Failure audit")
st.caption("Failure codes after Barnett et al. (2024), assigned per question at the run's "
           "failure cutoff k; pick another cutoff to see which questions miss there.")

with page_errors():
    from ragloupe.evaluate.not_indexed import run_sentence
    from ragloupe.evaluate.runs import list_runs, load_run

    index_notice()
    settings = current_settings()
    past = list_runs(settings)
    if not past:
        st.info("No evaluation run yet. Evaluate every shipped gold set here in the default mode "
                "(about a minute on 2 cores), or pick gold sets and modes on the Evaluation page.")
        if not st.button("Evaluate the gold sets now", type="primary", key="evaluate_now"):
            st.stop()
        goldsets, problems = load_goldsets(find_goldsets(settings))
        for problem in problems:
            st.error(problem)
        evaluate_with_progress(goldsets, [settings.mode], [1, 3, 5, 10], "doc", settings,
                               get_workspace(settings))
        st.rerun()  # the page again, now with the run (and without the "no run yet" note)
    runs = {row["run_id"]: load_run(row["run_id"], settings) for row in past}
    ids = list(runs)  # newest first
    if st.session_state.get(f"{PAGE}.run") not in ids:
        st.session_state[f"{PAGE}.run"] = ids[0]
    run_id = st.selectbox("Run", ids, key=f"{PAGE}.run", format_func=lambda i: run_label(runs[i]))
    run = runs[run_id]
    failures = run.data["failures"]
    if run_sentence(run.data):  # those questions have no code at all, not FP1: say why they are absent
        st.warning(md_escape(run_sentence(run.data)))

    chart_col, legend_col = st.columns([3, 2])
    with chart_col:
        st.subheader(f"Retrieval failures at k={failures['k']} ({run.data['n_queries']} questions)")
        clicked = st.plotly_chart(failure_chart(failures["counts"]), key="failure_counts",
                                  on_select="rerun", selection_mode="points")
        picked_codes = codes_picked(clicked)
        st.caption("Click a bar to list only that code's questions below (double-click the chart to clear).")
    with legend_col:
        st.subheader("Codes")
        # A static table wraps each meaning in full (a grid cell would cut it mid-word).
        st.table(pd.DataFrame([{"code": c, "meaning": m} for c, m in failures["taxonomy"].items()]).set_index("code"))
        generation = failures["generation"]
        if generation.get("assessed"):
            st.caption("Generation codes: " + ", ".join(f"{c} {n}" for c, n in generation["counts"].items()))
        else:
            st.caption("Generation codes (FP4-FP7) were not assessed: this run generated no "
                       "answers. They need an LLM and an evaluation with answers.")

    cutoff_col, misses_col = st.columns([1, 3])
    deepest = max([max(run.data["ks"])] + [q["first_relevant_rank"] or 0 for q in run.data["queries"]])
    k = int(cutoff_col.number_input("Cutoff k", min_value=1, max_value=max(deepest, 1), step=1,
                                    value=int(failures["k"]), key=f"{PAGE}.k-{run_id}"))
    only_misses = misses_col.toggle(f"Only the questions that miss at k={k}", value=True,
                                    key=f"{PAGE}.only_misses")
    listed = with_codes(audit_rows(run, k, only_misses), picked_codes, int(failures["k"]))
    if picked_codes:
        st.info(f"Only the questions coded {', '.join(sorted(picked_codes))} (picked on the chart).")
    st.subheader(f"Questions that miss at k={k}: "
                 f"{len(audit_rows(run, k, True))} of {run.data['n_queries']}")
    if not listed:
        st.success(f"Every question hit at k={k}.")
        st.stop()
    st.dataframe(pd.DataFrame(listed), hide_index=True, width="stretch",
                 column_config={"first relevant rank": st.column_config.NumberColumn(
                     help="the rank of the first gold unit in the run's ranking, however deep")})

    by_key = {(q["goldset"], q["query_id"]): q for q in run.data["queries"]}
    keys = [(q["goldset"], q["query_id"]) for q in run.data["queries"]
            if q["query_id"] in {row["query_id"] for row in listed}]
    choice = st.selectbox("Look at one", keys, key=f"{PAGE}.query-{run_id}-{k}-{only_misses}",
                          format_func=lambda key: f"{key[1]} ({by_key[key]['failure']['code']}) "
                                                  f"{by_key[key]['question']}")
    query = by_key[choice]
    st.subheader(md_escape(f"{query['query_id']} · {query['failure']['code']}"))
    st.text(f"Question: {query['question']}")
    st.text(f"Gold units: {', '.join(query['expected_units'])}")
    st.text(f"Gold answer: {query['expected_answer'] or '—'}")
    st.text(f"Evidence: {query['failure']['evidence']}")
    if st.button("Open in Search & compare", key="open_in_search"):
        state.carry("search", {"question": query["question"],
                               "docs": [query["doc_id"]] if run.data["scope"] == "doc" else [],
                               "modes": modes_with_run(state.value("search", "modes", None),
                                                       run.data["mode"])})
        st.session_state["_search_pending"] = True
        st.switch_page(page_file("search_compare"))
    audit = query.get("label_audit") or {}
    if audit.get("flagged"):
        meaning = run.data["label_audit"].get("categories", {}).get(audit.get("category", ""))
        st.warning("Suspected gold-set error: " + (meaning or "the answer was found on another unit"))
        st.text(audit.get("note") or ", ".join(audit.get("found_on", [])))
    st.markdown("**Where each engine ranked the gold unit** (however deep; — when the engine "
                "did not list it at all)")
    st.dataframe(pd.DataFrame(gold_rank_rows(query)), hide_index=True)
    st.markdown("**What was retrieved instead**")
    st.dataframe(pd.DataFrame(retrieved_rows(query)), hide_index=True, width="stretch")
    if query["failure"].get("details"):
        with st.expander("Details behind the code"):
            st.json(query["failure"]["details"])
