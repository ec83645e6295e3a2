"""Record-level retrieval on the Natech guidance: the unit view, selected out-of-fold, confirmed once.

    RAGLOUPE_INDEX_DIR=<a demo index> .venv/bin/python benchmarks/natech_records.py [--confirm]

The demo index (Grampian PDFs and natech/guidance.csv, `make index`) is read,
never written. What it does, in order:

1. Natech, tuning set ``guidance.gold.json`` only: every configuration of the
   grid (unit view off, or on with each whole-unit dense rule, weights and
   BM25 b) runs the real search() on every question, scoped to the guidance.
2. Grouped cross-validation: the groups are the chapters' major numbers
   (1 to 5), so no part of the guidance is both tuned on and scored. For
   each held-out group the configuration with the best mean of recall@1 and
   MRR on the other groups is picked (ties: the earlier in the grid, the
   unit view off first) and scored on the held-out group. The out-of-fold
   figures are the score of the whole selection procedure, reported beside
   the in-sample best and the gap between them.
3. ``--confirm``: the procedure's choice on all of ``guidance.gold.json``
   and the unit view off are run ONCE on the held-out ``guidance2.gold.json``
   (written and committed before any run, never tuned on), with a paired
   test between them.
4. Grampian pages, per-document scope: the same selection over the page
   grid (unit view off, or ``all`` so PDF pages get whole-page signals),
   leave one report out; the unit view ``records`` must leave them exactly as
   they are (checked).

Writes benchmarks/results/natech_records.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.evaluate import metrics as M  # noqa: E402
from ragloupe.evaluate import stats  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.retrieve.search import search  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

NATECH = PROJECT_ROOT / "data/benchmarks/natech"
TUNE = NATECH / "guidance.gold.json"
CONFIRM = NATECH / "guidance2.gold.json"
GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
RESULTS = PROJECT_ROOT / "benchmarks/results/natech_records.json"
KS = (1, 3, 5, 10)
DEPTH = 10


def record_grid() -> list[dict]:
    """The unit view off first, then on with every rule, weight pair and b."""
    grid: list[dict] = [{"unit_view": "none"}]
    for rule, b, wb, wd in itertools.product(("centroid", "max", "mean", "top2"), (0.3, 0.75),
                                             (0.0, 0.5, 1.0, 2.0), (0.0, 0.5, 1.0, 2.0)):
        if wb == wd == 0.0:  # the chunk view alone: the same as off
            continue
        if wd == 0.0 and rule != "centroid":  # the dense rule does not matter without dense
            continue
        grid.append({"unit_view": "records", "unit_dense": rule, "unit_bm25_b": b,
                     "unit_weight_bm25": wb, "unit_weight_dense": wd})
    return grid


def page_grid() -> list[dict]:
    grid: list[dict] = [{"unit_view": "none"}]
    for rule, wb, wd in itertools.product(("centroid", "max"), (0.0, 0.5, 1.0), (0.0, 0.5, 1.0)):
        if wb == wd == 0.0 or (wd == 0.0 and rule != "centroid"):
            continue
        grid.append({"unit_view": "all", "unit_dense": rule, "unit_bm25_b": 0.75,
                     "unit_weight_bm25": wb, "unit_weight_dense": wd})
    return grid


def run(questions, config: dict, settings: Settings, workspace) -> list[dict]:
    """Per-question metrics of one configuration, real search(), each question in its own document."""
    s = settings.replace(**config)
    rows = []
    for q in questions:
        ranking = search(q.question, mode="hybrid", k=DEPTH, filters={"doc_ids": [q.doc_id]},
                         workspace=workspace.with_settings(s))
        ranked = M.dedupe(p.unit for p in ranking.pages)
        rows.append(M.query_metrics(ranked, q.expected_units, KS))
    return rows


def mean(rows: list[dict], metric: str) -> float:
    return sum(r[metric] for r in rows) / len(rows) if rows else 0.0


def objective(rows: list[dict], first: str) -> float:
    return (mean(rows, first) + mean(rows, "rr")) / 2


def summary(rows: list[dict]) -> dict:
    out = {}
    for metric in ("hit@1", "hit@3", "recall@1", "recall@3", "recall@5", "rr"):
        values = [r[metric] for r in rows]
        low, high = stats.bootstrap_ci(values)
        out[metric] = {"mean": round(mean(rows, metric), 4),
                       "ci95": [round(low, 4), round(high, 4)] if low is not None else None}
    out["n"] = len(rows)
    return out


def grouped_cv(per_config: list[list[dict]], groups: list[str], first: str) -> dict:
    """Leave one group out: pick on the rest, score the held-out group; per-question OOF rows."""
    oof: list[dict | None] = [None] * len(groups)
    folds = []
    for held in sorted(set(groups)):
        train = [i for i, g in enumerate(groups) if g != held]
        test = [i for i, g in enumerate(groups) if g == held]
        best = max(range(len(per_config)),
                   key=lambda c: (objective([per_config[c][i] for i in train], first), -c))
        for i in test:
            oof[i] = per_config[best][i]
        folds.append({"held_out": held, "n_test": len(test), "picked": best,
                      "train_objective": round(objective([per_config[best][i] for i in train], first), 4),
                      "test_objective": round(objective([per_config[best][i] for i in test], first), 4)})
    everything = list(range(len(groups)))
    in_sample = max(range(len(per_config)), key=lambda c: (objective(per_config[c], first), -c))
    oof_rows = [r for r in oof if r is not None]
    return {"folds": folds, "out_of_fold": summary(oof_rows),
            "out_of_fold_objective": round(objective(oof_rows, first), 4),
            "in_sample_pick": in_sample,
            "in_sample": summary([per_config[in_sample][i] for i in everything]),
            "in_sample_objective": round(objective(per_config[in_sample], first), 4),
            "optimism_gap": round(objective(per_config[in_sample], first) - objective(oof_rows, first), 4),
            "_oof_rows": oof_rows}


def paired(a: list[dict], b: list[dict], metric: str) -> dict:
    """b minus a on one metric, paired by question: mean difference, CI and permutation p."""
    xs, ys = [r[metric] for r in a], [r[metric] for r in b]
    low, high = stats.paired_bootstrap_ci(ys, xs)  # the CI of ys - xs
    return {"metric": metric, "a": round(mean(a, metric), 4), "b": round(mean(b, metric), 4),
            "diff_b_minus_a": round(mean(b, metric) - mean(a, metric), 4),
            "ci95": [round(low, 4), round(high, 4)] if low is not None else None,
            "p": round(stats.paired_permutation_p(xs, ys), 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--confirm", action="store_true",
                        help="also run the selected configuration once on guidance2.gold.json")
    parser.add_argument("--no-grampian", dest="grampian", action="store_false")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store

    settings = Settings.from_env()
    workspace = Workspace.open(settings, store=open_store(settings), embedder=get_embedder(settings))
    started = time.perf_counter()
    out: dict = {"what": "record-level retrieval on the Natech guidance (unit view), hybrid mode, scope doc",
                 "index_dir": str(settings.path("index_dir")), "embedding_model": settings.embedding_model,
                 "selection": "grouped CV on guidance.gold.json, groups = chapter major number; "
                              "objective mean(recall@1, MRR@10)"}

    tune = load_goldset(TUNE).queries
    grid = record_grid()
    per_config = [run(tune, config, settings, workspace) for config in grid]
    groups = [q.expected_records[0].split(".")[0] for q in tune]
    cv = grouped_cv(per_config, groups, "recall@1")
    cv.pop("_oof_rows")
    for fold in cv["folds"]:
        fold["picked"] = grid[fold["picked"]]
    chosen = grid[cv["in_sample_pick"]]
    cv["in_sample_pick"] = chosen
    out["natech_tuning"] = {"goldset": TUNE.name, "n_configs": len(grid), **cv,
                            "unit_view_off": summary(per_config[0]),
                            "grid": [{"config": c, "objective": round(objective(rows, "recall@1"), 4)}
                                     for c, rows in zip(grid, per_config)]}
    print(f"natech tuning: in-sample {cv['in_sample_objective']} out-of-fold "
          f"{cv['out_of_fold_objective']} pick {chosen}", flush=True)

    if args.confirm:
        held = load_goldset(CONFIRM).queries
        base = run(held, grid[0], settings, workspace)
        picked = run(held, chosen, settings, workspace)
        out["natech_confirm"] = {
            "goldset": CONFIRM.name, "config": chosen, "run_once": True,
            "unit_view_off": summary(base), "selected": summary(picked),
            "paired_recall@1": paired(base, picked, "recall@1"),
            "paired_recall@3": paired(base, picked, "recall@3"),
            "paired_rr": paired(base, picked, "rr"),
            "per_question": [{"query_id": q.query_id, "off_rr": round(a["rr"], 4), "selected_rr": round(b["rr"], 4)}
                             for q, a, b in zip(held, base, picked)]}
        print(f"natech confirm: off {summary(base)['recall@1']} selected {summary(picked)['recall@1']}", flush=True)

    if args.grampian:
        pages = [q for path in GRAMPIAN for q in load_goldset(path).queries]
        pgrid = page_grid()
        per_page_config = [run(pages, config, settings, workspace) for config in pgrid]
        records_view = run(pages, {**chosen, "unit_view": "records"}, settings, workspace)
        unchanged = records_view == per_page_config[0]
        reports = [q.doc_id for q in pages]
        pcv = grouped_cv(per_page_config, reports, "hit@1")
        oof_rows = pcv.pop("_oof_rows")
        for fold in pcv["folds"]:
            fold["picked"] = pgrid[fold["picked"]]
        pcv["in_sample_pick"] = pgrid[pcv["in_sample_pick"]]
        per_report = {doc: {"off": summary([r for r, d in zip(per_page_config[0], reports) if d == doc]),
                            "out_of_fold": summary([r for r, d in zip(oof_rows, reports) if d == doc])}
                      for doc in sorted(set(reports))}
        out["grampian_pages"] = {
            "n_configs": len(pgrid), "records_view_leaves_pages_unchanged": unchanged,
            **pcv, "unit_view_off": summary(per_page_config[0]), "per_report": per_report,
            "paired_hit@1_off_vs_oof": paired(per_page_config[0], oof_rows, "hit@1"),
            "grid": [{"config": c, "objective": round(objective(rows, "hit@1"), 4)}
                     for c, rows in zip(pgrid, per_page_config)]}
        print(f"grampian: records view leaves pages unchanged: {unchanged}; off "
              f"{summary(per_page_config[0])['hit@1']} out-of-fold {pcv['out_of_fold']['hit@1']}", flush=True)

    out["seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
