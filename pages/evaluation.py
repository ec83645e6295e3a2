"""Evaluation: gold sets in, Hit@k / Recall@k / MRR / nDCG with confidence intervals out."""

import pandas as pd
import streamlit as st

from ragloupe.diagnostics.gold import goldset_choices, load_goldsets
from ragloupe.ui import state
from ragloupe.ui.background import index_notice
from ragloupe.ui.cache import current_settings, get_store, get_workspace
from ragloupe.ui.charts import k_sweep_chart, survival_chart
from ragloupe.ui.guard import page_errors
from ragloupe.ui.tables import fitted_columns, run_comparison_rows, metrics_rows, parse_ks, run_label
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import evaluate_with_progress

PAGE = "evaluation"

st.title("Evaluation")
st.caption("Each run asks every gold question, scores the page view of the ranking and writes "
           "a report under the runs folder. Brackets are 95% bootstrap confidence intervals.")

with page_errors():
    from ragloupe.evaluate.compare import compare
    from ragloupe.evaluate.not_indexed import run_sentence, scored_goldsets
    from ragloupe.evaluate.runs import list_runs, load_run
    from ragloupe.retrieve.search import MODES

    index_notice()
    settings = current_settings()
    paths = goldset_choices(settings)
    state.keep(PAGE, {"goldsets": list(paths)[:1], "modes": ["dense", "hybrid"],
                      "ks": "1,3,5,10", "scope": "doc"})
    state.restrict(PAGE, "goldsets", list(paths))
    with st.form("evaluate"):
        chosen = st.multiselect("Gold sets", list(paths), key=f"{PAGE}.goldsets")
        left, middle, right = st.columns([3, 2, 1])
        # ragloupe's modes, then each plugin or attached engine as a mode of its own (ragloupe attach)
        modes = left.multiselect("Modes", [*MODES, *get_workspace(settings).engines().outside()],
                                 key=f"{PAGE}.modes")
        ks_text = middle.text_input("k sweep", key=f"{PAGE}.ks",
                                    help="whole numbers separated by commas, e.g. 1,3,5,10")
        scope = right.radio("Scope", ("doc", "all"), key=f"{PAGE}.scope",
                            help="doc: each question searches its own document; all: the whole index")
        run_clicked = st.form_submit_button("Run evaluation", type="primary")

    if run_clicked:
        ks = parse_ks(ks_text)
        if not chosen or not modes:
            st.warning("Pick at least one gold set and one mode.")
        elif ks is None:
            st.warning(f"The k sweep takes whole numbers of at least 1 separated by commas "
                       f"(e.g. 1,3,5,10); {ks_text!r} is not that.")
        else:
            goldsets, problems = load_goldsets(paths[name] for name in chosen)
            for problem in problems:
                st.error(problem)
            if goldsets:
                state.forget(PAGE)  # an earlier run's figures never stand under this run's error
                with page_errors():  # none of the questions scorable: the reason, and no figure
                    reports = evaluate_with_progress(
                        goldsets, modes, list(ks), scope, settings, get_workspace(settings))
                    state.result(PAGE, [r.run_id for r in reports])

    run_ids = state.result(PAGE) or []
    if run_ids:
        runs = [load_run(run_id, settings) for run_id in run_ids]
        st.header("Results")
        for sentence in dict.fromkeys(run_sentence(run.data) for run in runs if run_sentence(run.data)):
            st.warning(md_escape(sentence))  # above the figures: they leave these questions out
        metrics = pd.DataFrame(metrics_rows(runs))
        st.dataframe(metrics, hide_index=True, width="stretch", key=f"{PAGE}.metrics",
                     column_config={name: st.column_config.Column(width=px)
                                    for name, px in fitted_columns(metrics).items()})
        # The coverage caveat sits beside the Hit@1 it qualifies, above the charts.
        from ragloupe.evaluate.coverage_sources import coverage_report
        from ragloupe.retrieve.modes import runs_dense
        from ragloupe.ui.coverage_view import show_in_sample

        covered, _ = load_goldsets(paths[name] for name in chosen)
        covered = scored_goldsets(covered, runs[0].data.get("not_indexed"))  # the questions the figures are over
        audit = coverage_report(covered, settings, get_store(settings), settings.mode) if covered else {}
        caveats = audit.get("warnings", [])
        if caveats:  # one caveat a line: run together, one's "(expected 30%)" read into the next
            st.warning(md_escape("These figures hold for the parts of the documents the gold sets cover:")
                       + "".join(f"\n- {md_escape(caveat)}" for caveat in caveats))
        if audit and runs_dense(run.data["mode"] for run in runs):  # the adapter maps dense's question
            show_in_sample(audit)
        if len(runs) >= 2:  # the significance test on the run's own screen, not only under Past runs
            paired = compare(runs[0], runs[1])
            st.subheader(md_escape(f"Is the difference real? {runs[1].data['mode']} against {runs[0].data['mode']}"))
            for line in paired.verdicts:
                st.text(line)
            st.dataframe(pd.DataFrame(run_comparison_rows(paired)), hide_index=True, width="stretch")
        for run in runs:
            st.caption(f"{run_label(run)}: {run.data['recall_sweep']['text']} · "
                       f"report {run.path.name if run.path else run.run_id}")
        st.subheader("By difficulty")
        by_difficulty = pd.DataFrame(metrics_rows(runs, "by_difficulty"))
        st.dataframe(by_difficulty, hide_index=True,
                     column_config={name: st.column_config.Column(width=px)
                                    for name, px in fitted_columns(by_difficulty).items()},
                     width="stretch")
        sweep, survival = st.columns(2)
        with sweep:
            st.subheader("k sweep")
            st.plotly_chart(k_sweep_chart(runs), key="k_sweep")
        with survival:
            st.subheader("Rank survival")
            st.plotly_chart(survival_chart(runs), key="survival")
        flagged = [q["query_id"] for q in runs[0].data["queries"] if (q.get("label_audit") or {}).get("flagged")]
        if flagged:
            st.info(md_escape(f"{len(flagged)} question(s) look like gold-set errors (the answer is on another "
                              "page, or the gold answer disagrees with the document): " + ", ".join(flagged)
                              + ". The report gives figures with and without them; the Failure audit "
                              "shows each."))

    from ragloupe.ui.coverage_view import coverage_section

    coverage_section(settings, [paths[name] for name in chosen], get_store(settings))

    from ragloupe.ui.goldsets_view import drafts_section, outside_run_section, your_goldsets_section

    your_goldsets_section(settings)
    drafts_section(settings, get_workspace(settings))
    outside_run_section(settings, paths, list(MODES), get_workspace(settings))

    st.header("Past runs")
    past = list_runs(settings)
    if not past:
        st.caption("No run yet in " + str(settings.path("runs_dir")))
    else:
        loaded = {row["run_id"]: load_run(row["run_id"], settings) for row in past}
        st.dataframe(pd.DataFrame([{"run": run_label(loaded[row["run_id"]]),
                                    "hit@1": row["hit@1"], "mrr": row["mrr"],
                                    "report": row["run_id"]} for row in past]),
                     hide_index=True, width="stretch")
        ids = [row["run_id"] for row in past]  # newest first
        if len(ids) >= 2:
            # Keyed on the newest run: a new run resets both choices to the two newest,
            # so Compare never keeps comparing runs chosen before it.
            first, second = st.columns(2)
            run_a = first.selectbox("Run A (baseline)", ids, index=1, key=f"run_a-{ids[0]}",
                                    format_func=lambda i: run_label(loaded[i]))
            run_b = second.selectbox("Run B", ids, index=0, key=f"run_b-{ids[0]}",
                                     format_func=lambda i: run_label(loaded[i]))
            if st.button("Compare", key="compare"):
                comparison = compare(loaded[run_a], loaded[run_b])
                for line in comparison.verdicts:
                    st.text(line)
                for note in comparison.notes:
                    st.caption(note)
                st.dataframe(pd.DataFrame(run_comparison_rows(comparison)), hide_index=True,
                             width="stretch")
                counts = st.columns(3)
                counts[0].metric("Improved", len(comparison.improved))
                counts[1].metric("Regressed", len(comparison.regressed))
                counts[2].metric("Unchanged", len(comparison.unchanged))
                with st.expander("Per-question changes"):
                    st.dataframe(pd.DataFrame(
                        [{"change": "improved", **row} for row in comparison.improved]
                        + [{"change": "regressed", **row} for row in comparison.regressed]),
                        hide_index=True, width="stretch")

    from ragloupe.ui.tuning_view import tuning_section

    tuning_section(settings, paths, get_workspace(settings))
