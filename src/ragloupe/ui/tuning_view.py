"""The Evaluation page's Tuning section: out-of-fold against in-sample, and the gap between them.

It runs `ragloupe tune` (evaluate/tuning.py) on the chosen gold sets, or
shows the last tuning run under runs_dir. What it shows: the figure of the
whole selection procedure (each document held out in turn) with its 95%
CIs, the in-sample best beside it, the gap, a plot of every configuration's
training-fold score against its held-out score, and whether the chosen
settings would be applied. With chunking variants, a table of each
chunking's best figures in and out of sample and the scratch indexes used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.evaluate.not_indexed import tune_left_out_lines
from ragloupe.ui.coverage_view import show_in_sample
from ragloupe.ui.guard import app_message
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import encode_sentences_with_progress

ROWS = (("out-of-fold (the procedure)", ("out_of_fold", "figures")),
        ("in-sample best", ("in_sample_best", "figures")),
        ("settings in force", ("current", "figures")),
        ("bm25 alone", ("bm25_alone", "figures")))


def figure_rows(data: Mapping) -> list[dict]:
    """One row per line of the table: Hit@1, Hit@3 and MRR with their CIs, as text."""
    rows = []
    for label, (part, key) in ROWS:
        figures = data[part][key]
        rows.append({"": label, **{name: _cell(figures[metric]) for name, metric in
                                   (("Hit@1", "hit@1"), ("Hit@3", "hit@3"), ("MRR", "mrr"))},
                     "objective": f"{figures['objective']:.3f}"})
    return rows


def chunking_rows(data: Mapping, timings: Mapping) -> list[dict]:
    """One row per chunking variant (none when only the chunking in force was scored), as text."""
    chunking = data.get("chunking")
    if not chunking or len(chunking["variants"]) < 2:
        return []
    indexes = {i["chunking"]: i for i in timings.get("indexes", [])}
    rows = []
    for variant in chunking["variants"]:
        best, oof = variant["in_sample_best"], variant["out_of_fold"]
        index = indexes.get(variant["chunking"], {"scratch": variant.get("index") == "scratch"})
        if not index["scratch"]:
            built = "main index"
        else:
            built = f"scratch, built in {index['seconds']:.0f} s" if index.get("built") else "scratch, reused"
        rows.append({"chunking": variant["chunking"] + (" (in force)" if variant["chunking"] == chunking["in_force"]
                                                        else ""),
                     "in-sample best": f"{best['objective']:.3f}", "Hit@1 (in-sample)": f"{best['hit@1']:.3f}",
                     "out-of-fold": f"{oof['objective']:.3f}", "Hit@1 (out-of-fold)": f"{oof['hit@1']:.3f}",
                     "chosen in folds": ", ".join(h for h, c in chunking["chosen_in_folds"].items()
                                                  if c == variant["chunking"]) or "—",
                     "index": built})
    return rows


def _cell(estimate: Mapping) -> str:
    if estimate.get("ci_low") is None:
        return f"{estimate['mean']:.3f}"
    return f"{estimate['mean']:.3f} [{estimate['ci_low']:.2f}–{estimate['ci_high']:.2f}]"


def gap_chart(data: Mapping, height: int = 420) -> go.Figure:
    """Each configuration: mean training-fold objective (x) against mean held-out objective (y).

    Points below the diagonal did better on the documents they were chosen
    on than on the one held out: that distance is selection luck. The
    configurations a fold chose are ringed, the in-sample best is a star.
    """
    configs = data["configs"]
    chosen = [c for c in configs if c["chosen_in_folds"]]
    best = configs[data["in_sample_best"]["index"]]
    figure = go.Figure()
    figure.add_trace(go.Scattergl(
        x=[c["train_objective"] for c in configs], y=[c["held_out_objective"] for c in configs],
        mode="markers", name="configurations", marker={"size": 5, "opacity": 0.45},
        text=[c["label"] for c in configs], hovertemplate="%{text}<br>train %{x:.3f} · held out %{y:.3f}<extra></extra>"))
    figure.add_trace(go.Scatter(
        x=[c["train_objective"] for c in chosen], y=[c["held_out_objective"] for c in chosen],
        mode="markers", name="chosen in a fold", marker={"size": 13, "symbol": "circle-open",
                                                         "line": {"width": 2}, "color": "#d62728"},
        text=[f"{c['label']} (held out: {', '.join(c['chosen_in_folds'])})" for c in chosen],
        hovertemplate="%{text}<extra></extra>"))
    figure.add_trace(go.Scatter(
        x=[best["train_objective"]], y=[best["held_out_objective"]], mode="markers", name="in-sample best",
        marker={"size": 16, "symbol": "star", "color": "#ffbf00", "line": {"width": 1, "color": "black"}},
        text=[best["label"]], hovertemplate="%{text}<extra></extra>"))
    values = [c["train_objective"] for c in configs] + [c["held_out_objective"] for c in configs]
    low, high = min(values), max(values)
    figure.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="held out = training",
                                line={"dash": "dot", "color": "grey"}, hoverinfo="skip"))
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 10, "b": 10},
                         xaxis_title="objective on the training documents (mean over folds)",
                         yaxis_title="objective on the held-out document")
    return figure


def show_report(report) -> None:
    """Lay out one tuning report."""
    data = report.data
    st.caption(f"run {report.run_id} · scope {data['scope']} · {data['n_questions']} questions · "
               f"{data['n_configs']} configurations · held out in turn: "
               + ", ".join(f"{g} ({n})" for g, n in data["groups"].items()))
    for line in tune_left_out_lines(data.get("not_indexed") or {}):  # the figures are over the rest
        st.warning(md_escape(line))
    st.dataframe(figure_rows(data), hide_index=True, width="stretch")
    if data["current"].get("note"):
        st.text(f"settings in force: {data['current']['note']}")
    gap = data["optimism_gap"]
    oof, best = data["out_of_fold"]["figures"], data["in_sample_best"]["figures"]
    cells = st.columns(3)
    cells[0].metric("Hit@1 out-of-fold", f"{oof['hit@1']['mean']:.3f}",
                    delta=f"{-gap['hit@1']:+.3f} vs in-sample", delta_color="off")
    cells[1].metric("MRR out-of-fold", f"{oof['mrr']['mean']:.3f}",
                    delta=f"{-gap['mrr']:+.3f} vs in-sample", delta_color="off")
    cells[2].metric("Optimism gap (objective)", f"{gap['objective']:+.3f}",
                    help=f"in-sample best {best['objective']:.3f} minus out-of-fold {oof['objective']:.3f}")
    st.plotly_chart(gap_chart(data), key="tuning_gap")
    variants = chunking_rows(data, report.timings)
    if variants:
        st.subheader("Chunking")
        st.caption("Each chunking's objective: its best configuration in-sample, and out-of-fold the "
                   "procedure choosing among that chunking's configurations only. A chunking other than "
                   "the index's needs `ragloupe index --rebuild` once applied.")
        st.dataframe(variants, hide_index=True, width="stretch")
    st.text(f"in-sample best: {data['in_sample_best']['label']}")
    for fold in data["out_of_fold"]["folds"]:
        st.text(f"held out {fold['held_out']}: chose {fold['label']} -> Hit@1 {fold['held_out_hit@1']:.3f}, "
                f"MRR {fold['held_out_mrr']:.3f}")
    decision = data["decision"]
    (st.success if decision["apply"] else st.info)(
        f"Would apply: {'yes' if decision['apply'] else 'no'} — {decision['reason']}")
    if data.get("default"):  # what tuning leaves in force (reports before it was recorded have none)
        st.text(f"default: {data['default']['label']} ({data['default']['why']})")
    if data["replay_check"]["mismatches"]:
        st.warning("The replay differed from search() on: " + ", ".join(data["replay_check"]["mismatches"]))
    coverage = data.get("coverage")  # tuning reports written before the coverage audit have none
    if coverage:  # a tune over questions the query adapter learned from reads them in-sample
        show_in_sample(coverage)
    if coverage and coverage["warnings"]:
        st.warning("The gold sets tuned on do not cover their documents evenly (the Gold-set coverage "
                   "section above explains the audit):")
        for line in coverage["warnings"]:  # section headings are document text: plain text only
            st.text(line)


def tuning_section(settings: Settings, goldset_paths: Mapping[str, Path], workspace) -> None:
    """Run tune on chosen gold sets through the app's ``workspace``, or show the last tuning run."""
    from ragloupe.diagnostics.gold import load_goldsets
    from ragloupe.evaluate.runs import searched_documents
    from ragloupe.evaluate.tune_space import largest_sentence_weight, search_space
    from ragloupe.evaluate.tuning import SPACES, latest_tune, load_tune, tune

    st.header("Tuning")
    st.caption("Each document is held out in turn: the configuration best on the others is scored on it. "
               "The out-of-fold figure is what to expect on a new document; the in-sample best is "
               "chosen and scored on the same questions, and the gap between them is selection luck.")
    names = list(goldset_paths)
    default = [n for n in names if n.startswith("Grampian")] or names[:1]
    with st.form("tune"):
        chosen = st.multiselect("Gold sets to tune on", names, default=default, key="tune_goldsets")
        left, right = st.columns(2)
        scope = left.radio("Scope", ("doc", "all"), key="tune_scope", horizontal=True)
        space = right.radio("Configurations", SPACES, key="tune_space", horizontal=True,
                            help="small: a handful, seconds; full: several hundred, minutes; in-force: the "
                                 "settings in force against BM25 alone, the default rule's verdict on them")
        chunking_text = st.text_input(
            "Chunking variants (optional)", key="tune_chunking", placeholder="e.g. 128/32,384/96",
            help="TOKENS/OVERLAP pairs scored besides the index's own chunking; each is indexed once "
                 "(about a minute per few reports) into a scratch index under runs_dir/tune-indexes")
        clicked = st.form_submit_button("Run tuning")
    if clicked:
        goldsets, problems = load_goldsets(goldset_paths[name] for name in chosen)
        for problem in problems:
            st.error(problem)
        if goldsets:
            try:
                # The sweep tries blending each chunk's best sentence even when the settings in force do not.
                sweep_weight = largest_sentence_weight(search_space(settings, space, scope))
                encode_sentences_with_progress(workspace.with_settings(settings).with_overrides(
                    dense_sentence_weight=sweep_weight), ["dense"], searched_documents(goldsets, scope))
                bar = st.progress(0.0, text="tuning")
                report = tune(goldsets, scope=scope, space=space, workspace=workspace.with_settings(settings),
                              chunking=chunking_text or None,
                              progress=lambda share, text: bar.progress(min(share, 1.0), text=text))
                st.session_state["tune_run"] = str(report.path)
            except RagloupeError as exc:  # a bad chunking value, a source gone since indexing ...
                st.error(app_message(exc))
    path = st.session_state.get("tune_run")
    report = load_tune(Path(path)) if path else latest_tune(settings)
    if report is None:
        st.caption("No tuning run yet in " + str(settings.path("runs_dir")))
        return
    show_report(report)
