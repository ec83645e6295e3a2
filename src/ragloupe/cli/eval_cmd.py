"""`ragloupe eval`, `ragloupe compare`, `ragloupe runs`: measure retrieval, compare runs, list them.

    ragloupe eval GOLDSET... --mode hybrid --k 1,3,5,10 [--scope doc|all] [--failure-k 1]
                  [--validate-only] [--answers] [--set NAME=VALUE] [--json]
                  [--fail-under hit@3=0.90,mrr=0.80]
    ragloupe eval GOLDSET... (--run FILE | --retriever package.module:function) [--against MODE,...]
    ragloupe compare RUN_A RUN_B [--fail-if-worse [--alpha 0.05] [--metrics hit@1,mrr]] [--json]
    ragloupe runs [--json]

eval indexes nothing: it evaluates what the index holds and writes a run
report under RAGLOUPE_RUNS_DIR. Gold-set text (questions, answers) is
printed as plain data.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from ragloupe.cli import CommandResult, add_json_flag, settings_with_overrides
from ragloupe.config import Settings, get_settings
from ragloupe.errors import BadOption, RagloupeError
from ragloupe.evaluate.not_indexed import run_sentence
from ragloupe.evaluate.stats import p_value_text


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="evaluate retrieval on gold sets and write a run report",
                        description=__doc__.splitlines()[0])
    ev.add_argument("goldsets", nargs="+", metavar="GOLDSET", help="gold-set JSON files")
    ev.add_argument("--mode", default=None, help="search mode, or an engine by name (`ragloupe engines`), e.g. NAME or hybrid+NAME "
                         "(default: RAGLOUPE_MODE)")
    ev.add_argument("--k", default="1,3,5,10", help="cutoffs, comma-separated (default 1,3,5,10)")
    ev.add_argument("--scope", choices=("doc", "all"), default="doc",
                    help="doc: each question searches its own document; all: the whole index")
    ev.add_argument("--failure-k", type=int, default=1, help="cutoff the failure codes are assigned at")
    ev.add_argument("--validate-only", action="store_true", help="check the gold sets and stop")
    ev.add_argument("--answers", action="store_true",
                    help="also generate an answer per question and assign FP4-FP7 (needs an LLM)")
    ev.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                    help="override a setting for this run, e.g. --set page_aggregation=sum")
    ev.add_argument("--fail-under", metavar="METRIC=FLOOR,...",
                    help="exit 1 when a figure is under its floor, e.g. hit@3=0.90,mrr=0.80")
    from ragloupe.cli.outside_run import add_outside_options

    add_outside_options(ev)
    add_json_flag(ev)
    ev.set_defaults(handler=handle_eval)

    cmp_ = sub.add_parser("compare", help="paired comparison of two evaluation runs")
    cmp_.add_argument("run_a", help="run id, id prefix or report path (the baseline)")
    cmp_.add_argument("run_b", help="run id, id prefix or report path (the candidate)")
    cmp_.add_argument("--fail-if-worse", action="store_true",
                      help="exit 1 when B is measurably worse than A (paired test at --alpha)")
    cmp_.add_argument("--alpha", type=float, default=0.05,
                      help="level of the paired test (default 0.05)")
    cmp_.add_argument("--metrics", default="hit@1,mrr",
                      help="metrics --fail-if-worse watches, comma-separated (default hit@1,mrr)")
    add_json_flag(cmp_)
    cmp_.set_defaults(handler=handle_compare)

    runs = sub.add_parser("runs", help="list evaluation runs")
    add_json_flag(runs)
    runs.set_defaults(handler=handle_runs)


def settings_with(overrides: Sequence[str]) -> Settings:
    """The settings with ``--set`` overrides applied (ragloupe.cli.settings_with_overrides)."""
    return settings_with_overrides(overrides)


def handle_eval(args: argparse.Namespace) -> CommandResult:
    from ragloupe.cli.progress import encode_missing_sentences
    from ragloupe.cli.outside_run import gate_floors, handle_outside
    from ragloupe.evaluate.ci_gates import check_floors_exist, parse_floors
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.runs import evaluate, normalise_ks, searched_documents
    from ragloupe.evaluate.usersets import resolve_goldset
    from ragloupe.workspace import Workspace

    settings = settings_with(args.overrides)
    workspace = Workspace.open(settings)  # the command's: the store opened, the model loaded on first use
    ks = normalise_ks(args.k)
    floors = parse_floors(args.fail_under) if args.fail_under else {}
    check_floors_exist(floors, ks)
    goldsets, load_errors = [], []
    for ref in args.goldsets:
        try:  # a path, or the name of one of the user's gold sets
            goldsets.append(load_goldset(resolve_goldset(ref, settings)))
        except RagloupeError as exc:  # one unreadable gold set does not stop the others
            load_errors.append(str(exc))
    if args.validate_only:
        return _validate(goldsets, load_errors, settings, workspace.store)
    if not goldsets:
        raise BadOption("no readable gold set: " + "; ".join(load_errors))
    if args.run or args.retriever:
        return handle_outside(args, goldsets, load_errors, settings, ks, floors, workspace)
    encode_missing_sentences(workspace, [args.mode or settings.mode], searched_documents(goldsets, args.scope))
    report = evaluate(goldsets, mode=args.mode or settings.mode, ks=ks, scope=args.scope,
                      answers=args.answers, failure_k=args.failure_k, workspace=workspace)
    data = {"run_id": report.run_id, "path": str(report.path), "load_errors": load_errors,
            "not_indexed": report.data["not_indexed"],
            "metrics": report.data["metrics"]["all"],
            "metrics_excluding_flagged": report.data["metrics"]["excluding_flagged"],
            "failures": report.data["failures"]["counts"],
            "generation": report.data["failures"]["generation"],
            "recall_sweep": report.data["recall_sweep"], "findings": report.data["findings"],
            "label_audit": report.data["label_audit"], "coverage": report.data.get("coverage"),
            "timings": report.timings}
    return gate_floors(CommandResult(data, render_run(report, load_errors)), report, floors)


def _validate(goldsets, load_errors: list[str], settings: Settings, store) -> CommandResult:
    from ragloupe.evaluate.goldset import all_findings
    from ragloupe.evaluate.runs import index_snapshot

    doc_ids = sorted({q.doc_id for g in goldsets for q in g.queries})
    snapshot = index_snapshot(settings, doc_ids, store) if goldsets else None
    findings = all_findings(goldsets, snapshot.documents if snapshot else {})
    lines = [f"{g.name}: {g.format} format, {len(g.queries)} questions" for g in goldsets]
    lines += [f"cannot load: {e}" for e in load_errors]
    lines += [f"{f.severity}: {f.message}" for f in findings] or ["no findings"]
    data = {"goldsets": [{"name": g.name, "format": g.format, "queries": len(g.queries)} for g in goldsets],
            "load_errors": load_errors, "findings": [f.as_dict() for f in findings]}
    if goldsets:  # where the gold pages sit needs no search: checking a gold set includes it
        from ragloupe.evaluate.coverage_sources import coverage_report
        from ragloupe.evaluate.coverage_text import render_lines

        data["coverage"] = coverage_report(goldsets, settings, store, settings.mode)
        lines += ["", *render_lines(data["coverage"])]
    bad = bool(load_errors or any(f.severity == "error" for f in findings))
    return CommandResult(data, "\n".join(lines), exit_code=1 if bad else 0)


def render_run(report, load_errors: Sequence[str] = ()) -> str:
    data = report.data
    ks = data["ks"]
    lines = [f"run {report.run_id}  mode={data['mode']} scope={data['scope']} "
             f"questions={data['n_queries']}", f"report: {report.path}"]
    lines += [f"cannot load: {e}" for e in load_errors]
    not_scored = run_sentence(data)
    if not_scored:  # right above the figures it qualifies
        lines += ["", not_scored]
    header = ["metric", *[f"@{k}" for k in ks]]
    lines.append("")
    lines.append("  ".join(f"{h:>22}" if i else f"{h:<8}" for i, h in enumerate(header)))
    overall = data["metrics"]["all"]
    for name in ("hit", "recall", "ndcg", "mrr"):
        if f"{name}@{ks[0]}" not in overall:  # a report written before MRR was kept per k
            continue
        cells = [_cell(overall[f"{name}@{k}"]) for k in ks]
        lines.append("  ".join([f"{name:<8}", *[f"{c:>22}" for c in cells]]))
    lines.append(f"{'mrr':<8}  {_cell(overall['mrr']):>22}   (cut at k={max(ks)})")
    lines.append("")
    lines.append(data["recall_sweep"]["text"])
    flagged = data["label_audit"]["n_flagged"]
    if flagged:
        clean = data["metrics"]["excluding_flagged"]
        lines.append(f"label audit: {flagged} suspected gold-set error(s); excluding them "
                     f"Hit@1 {clean['hit@1']['mean']:.3f}, MRR {clean['mrr']['mean']:.3f}")
        names = {"answer_elsewhere": "answer on another page",
                 "disagrees_with_document": "gold answer disagrees with the document"}
        for item in data["label_audit"]["flagged"]:
            kind = names.get(item.get("category", ""), "suspected label error")
            lines.append(f"  {item['query_id']} ({kind}): {item['note']}")
    counts = data["failures"]["counts"]
    lines.append(f"failures at k={data['failures']['k']}: " + ", ".join(f"{c} {n}" for c, n in counts.items()))
    if data["failures"].get("fp2_top_unit_holds_answer"):
        lines.append(f"  of the FP2 misses, {data['failures']['fp2_top_unit_holds_answer']} ranked first a unit "
                     "that also holds the gold answer (the figure is repeated elsewhere in the document)")
    generation = data["failures"]["generation"]
    lines.append(("answers: " + ", ".join(f"{c} {n}" for c, n in generation["counts"].items()))
                 if generation["assessed"] else generation["note"])
    for finding in data["findings"]:
        if not_scored and finding["code"] == "unknown_document":
            continue  # one line a question, said once above the figures
        lines.append(f"{finding['severity']}: {finding['message']}")
    if "coverage" in data:  # reports written before the coverage audit have none
        from ragloupe.evaluate.coverage_text import render_lines

        lines += ["", *render_lines(data["coverage"])]
    return "\n".join(lines)


def handle_compare(args: argparse.Namespace) -> CommandResult:
    from ragloupe.evaluate.compare import compare
    from ragloupe.evaluate.runs import load_run

    from ragloupe.evaluate.ci_gates import worse_metrics

    if not 0.0 < args.alpha < 1.0:
        raise BadOption(f"--alpha must lie between 0 and 1, got {args.alpha}")
    settings = get_settings()
    result = compare(load_run(args.run_a, settings), load_run(args.run_b, settings), alpha=args.alpha)
    watched = [m.strip().lower() for m in args.metrics.split(",") if m.strip()]
    fell = worse_metrics(result, watched, args.alpha) if args.fail_if_worse else []
    lines = render_comparison(result)
    data = result.as_dict()
    if args.fail_if_worse:
        data["gate"] = {"alpha": args.alpha, "metrics": watched, "fell": fell}
    line = (f"fail-if-worse: B ({result.run_b}) is worse than A ({result.run_a}): " + "; ".join(fell)
            if fell else "")
    return CommandResult(data, "\n".join(lines), exit_code=1 if fell else 0, gate_line=line)


def render_comparison(result) -> list[str]:
    """The text of a paired comparison: verdicts, the metric table, the per-question changes."""
    lines = [f"A = {result.run_a}", f"B = {result.run_b}", f"{result.n_paired} paired questions", ""]
    lines += result.verdicts
    lines.append("")
    lines.append(f"{'metric':<10}{'A':>8}{'B':>8}{'B-A':>8}{'p':>9}   95% CI of B-A")
    for name, m in result.metrics.items():
        ci = "" if m["ci_low"] is None else f"[{m['ci_low']:+.3f}, {m['ci_high']:+.3f}]"
        lines.append(f"{name:<10}{m['a']:>8.3f}{m['b']:>8.3f}{m['diff']:>+8.3f}{p_value_text(m['p_value']):>9}   {ci}")
    lines.append("")
    lines.append(f"improved {len(result.improved)}, regressed {len(result.regressed)}, "
                 f"unchanged {len(result.unchanged)} (by the rank of the first relevant unit)")
    for label, rows in (("improved", result.improved), ("regressed", result.regressed)):
        for row in rows:
            lines.append(f"  {label}: {row['query_id']} rank {_rank(row['rank_a'])} -> {_rank(row['rank_b'])}")
    lines += [f"note: {n}" for n in result.notes]
    return lines


def handle_runs(args: argparse.Namespace) -> CommandResult:
    from ragloupe.evaluate.runs import list_runs

    rows = list_runs(get_settings())
    if not rows:
        return CommandResult([], "no runs yet: `ragloupe eval GOLDSET...` writes one")
    lines = [f"{'run':<34}{'started':<27}{'queries':>8}{'Hit@1':>8}{'MRR':>8}  gold sets"]
    for r in rows:
        scored = str(r["queries"]) if r["asked"] == r["queries"] else f"{r['queries']}/{r['asked']}"
        lines.append(f"{r['run_id']:<34}{r['started_at']:<27}{scored:>8}"
                     f"{_num(r['hit@1']):>8}{_num(r['mrr']):>8}  {', '.join(r['goldsets'])}")
    if any(r["asked"] != r["queries"] for r in rows):
        lines.append("queries n/m: n of the m questions asked were scored; the others ask about documents "
                     "not in the index")
    return CommandResult(rows, "\n".join(lines))


def _cell(estimate: dict) -> str:
    if estimate.get("ci_low") is None:
        return f"{estimate['mean']:.3f}"
    return f"{estimate['mean']:.3f} [{estimate['ci_low']:.2f},{estimate['ci_high']:.2f}]"


def _rank(rank) -> str:
    return "—" if rank is None else str(rank)


def _num(value) -> str:
    return "" if value is None else f"{value:.3f}"
