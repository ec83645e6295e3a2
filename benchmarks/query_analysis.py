"""Query analysis measured: per-report and whole-index Hit@1 / Hit@3 / MRR with and without it.

    RAGLOUPE_INDEX_DIR=/work/cache/demo-index RAGLOUPE_RUNS_DIR=/tmp/qa-runs \\
        nice -n 10 .venv/bin/python benchmarks/query_analysis.py [--boosts 0.1,0.25,0.5,1,2]

Over an index of the demo corpus (the three Grampian reports and the Natech
records, as `make index` builds it), with the default retrieval settings:

1. Per-document scope (each question filtered to its report, as the README's
   main table): query analysis off, and on with the BM25 expansion (BM25
   also asked for the written variants of the periods, amounts and codes
   the question names). The period settings cannot act there.
2. Whole-index scope (no filter: the question has to find its year's report
   itself): off, and analysis with and without the expansion, each with
   no period preference, each period_boost of --boosts, period_filter
   (search only the reports of the period the question names), and both.
3. The Natech records gold set (scope doc), off and with the expansion, to
   check that it does not hurt questions about codes rather than years.

Choosing a setting on the questions it is reported on would flatter it, so
every choice (analysis on or off, and the boost) is made leave one report
out: chosen on two reports' questions by the mean of Hit@1 and MRR (a tie
goes to the simpler configuration: off, then the smaller boost), scored on
the third, rotated. The out-of-fold figure is the 150 held-out answers
together, with a bootstrap CI and a paired test against analysis off.
Everything runs the real search() end to end through ragloupe.evaluate.

Writes benchmarks/results/query_analysis.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.evaluate.runs import evaluate, index_snapshot  # noqa: E402
from ragloupe.evaluate.stats import bootstrap_ci, paired_permutation_p  # noqa: E402
from ragloupe.retrieve.query_analysis import analyze  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
NATECH = PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json"
RESULTS = PROJECT_ROOT / "benchmarks/results/query_analysis.json"
KS = (1, 3, 10)


def configurations(boosts: list[float]) -> dict[str, dict]:
    """Name -> settings overrides, simplest first (the order ties are broken in)."""
    def analysis(expansion: bool, boost: float, period_filter: bool) -> dict:
        return {"query_analysis": True, "query_expansion": expansion, "period_boost": boost,
                "period_filter": period_filter}

    configs = {"off": {"query_analysis": False, "query_expansion": False, "period_boost": 0.0,
                       "period_filter": False}}
    for expansion in (False, True):
        prefix = "analysis+expansion" if expansion else "analysis"
        configs[prefix] = analysis(expansion, 0.0, False)
        for boost in boosts:
            configs[f"{prefix}+boost {boost:g}"] = analysis(expansion, boost, False)
        configs[f"{prefix}+filter"] = analysis(expansion, 0.0, True)
        for boost in boosts:
            configs[f"{prefix}+filter+boost {boost:g}"] = analysis(expansion, boost, True)
    return configs


def run(goldsets, scope: str, overrides: dict, settings, workspace, snapshot) -> list[dict]:
    """One evaluation; per question: its report, Hit@1, Hit@3, RR and whether it names a period."""
    report = evaluate(goldsets, mode=settings.mode, ks=KS, scope=scope,
                      write=False, workspace=workspace.with_settings(settings.replace(**overrides)), snapshot=snapshot)
    return [{"goldset": q["goldset"], "query_id": q["query_id"],
             "hit@1": q["metrics"]["hit@1"], "hit@3": q["metrics"]["hit@3"], "rr": q["metrics"]["rr"],
             "names_period": analyze(q["question"]).target_period is not None}
            for q in report.data["queries"]]


def summary(rows: list[dict]) -> dict:
    out: dict = {"n": len(rows)}
    for metric, name in (("hit@1", "hit@1"), ("hit@3", "hit@3"), ("rr", "mrr")):
        values = [r[metric] for r in rows]
        mean = sum(values) / len(values) if values else None
        low, high = bootstrap_ci(values)
        out[name] = {"mean": _r(mean), "ci_low": _r(low), "ci_high": _r(high)}
    return out


def by_report(rows: list[dict]) -> dict:
    reports = sorted({r["goldset"] for r in rows})
    return {report: summary([r for r in rows if r["goldset"] == report]) for report in reports}


def objective(rows: list[dict]) -> float:
    return (sum(r["hit@1"] for r in rows) + sum(r["rr"] for r in rows)) / (2 * len(rows))


def leave_one_report_out(results: dict[str, list[dict]], baseline: str = "off") -> dict:
    """Choose a configuration on two reports, score it on the third, for each report."""
    names = list(results)
    reports = sorted({r["goldset"] for r in results[names[0]]})
    held_out_rows: list[dict] = []
    folds = []
    for report in reports:
        scores = {name: objective([r for r in results[name] if r["goldset"] != report]) for name in names}
        best = max(names, key=lambda name: (round(scores[name], 9), -names.index(name)))
        rows = [r for r in results[best] if r["goldset"] == report]
        held_out_rows += rows
        folds.append({"held_out": report, "chosen": best,
                      "tuning_objective": {n: _r(s) for n, s in scores.items()},
                      "held_out_figures": summary(rows)})
    base = {(r["goldset"], r["query_id"]): r for r in results[baseline]}
    paired = [base[(r["goldset"], r["query_id"])] for r in held_out_rows]
    in_sample_best = max(names, key=lambda name: (round(objective(results[name]), 9), -names.index(name)))
    return {
        "folds": folds,
        "out_of_fold": summary(held_out_rows),
        "out_of_fold_naming_a_period": summary([r for r in held_out_rows if r["names_period"]]),
        "against_" + baseline: {
            "hit@1_delta": _r(sum(r["hit@1"] - b["hit@1"] for r, b in zip(held_out_rows, paired)) / len(paired)),
            "hit@1_p": _r(paired_permutation_p([r["hit@1"] for r in held_out_rows], [b["hit@1"] for b in paired])),
            "mrr_delta": _r(sum(r["rr"] - b["rr"] for r, b in zip(held_out_rows, paired)) / len(paired)),
            "mrr_p": _r(paired_permutation_p([r["rr"] for r in held_out_rows], [b["rr"] for b in paired])),
        },
        "in_sample_best": {"configuration": in_sample_best, **summary(results[in_sample_best])},
    }


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--boosts", default="0.1,0.25,0.5,1,2",
                        help="period_boost values tried in the whole-index scope")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    boosts = [float(b) for b in args.boosts.split(",") if b.strip()]

    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store

    settings = get_settings()
    workspace = Workspace.open(settings, store=open_store(settings), embedder=get_embedder(settings))
    store = workspace.store
    grampian = [load_goldset(p) for p in GRAMPIAN]
    natech = [load_goldset(NATECH)]
    snapshot = index_snapshot(settings, sorted({q.doc_id for g in grampian for q in g.queries}), store)
    natech_snapshot = index_snapshot(settings, ["guidance"], store)
    configs = configurations(boosts)
    started = time.perf_counter()

    output: dict = {"index": {"fingerprint": store.fingerprint(), "chunks": store.count()},
                    "settings": {k: v for k, v in settings.as_dict().items()
                                 if k in ("mode", "fusion", "weight_dense", "weight_bm25", "candidate_window",
                                          "page_aggregation", "rrf_k", "fiscal_year_start_month")},
                    "configurations": configs, "scopes": {}}
    # Per report, the period settings cannot act (the document filter is the user's), so only
    # the BM25 expansion is compared there.
    for scope, names in (("doc", ["off", "analysis+expansion"]), ("all", list(configs))):
        results = {}
        for name in names:
            t0 = time.perf_counter()
            results[name] = run(grampian, scope, configs[name], settings, workspace, snapshot)
            print(f"{scope:3} {name:22} Hit@1 {summary(results[name])['hit@1']['mean']:.3f} "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        output["scopes"][scope] = {
            "per_configuration": {name: {"all": summary(rows), "by_report": by_report(rows),
                                         "naming_a_period": summary([r for r in rows if r["names_period"]])}
                                  for name, rows in results.items()},
            "leave_one_report_out": leave_one_report_out(results),
            "questions_naming_a_period": sum(r["names_period"] for r in results["off"]),
        }
    natech_results = {name: run(natech, "doc", configs[name], settings, workspace, natech_snapshot)
                      for name in ("off", "analysis+expansion")}
    output["natech_records"] = {name: summary(rows) for name, rows in natech_results.items()}
    output["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(output, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for scope, block in output["scopes"].items():
        loro = block["leave_one_report_out"]
        oof = loro["out_of_fold"]
        print(f"scope {scope}: out-of-fold Hit@1 {oof['hit@1']['mean']} [{oof['hit@1']['ci_low']}-"
              f"{oof['hit@1']['ci_high']}] Hit@3 {oof['hit@3']['mean']} MRR {oof['mrr']['mean']}; "
              f"chosen {[f['chosen'] for f in loro['folds']]}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
