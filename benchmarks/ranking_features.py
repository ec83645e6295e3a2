"""Learned fusion's features, out-of-fold per gold-set family: which help where, and against BM25 alone.

    .venv/bin/python benchmarks/ranking_features.py [--out PATH] [--variants all,-position,...]

On the index RAGLOUPE_INDEX_DIR points at (it must hold every family's documents:
the three Grampian reports, data/benchmarks/natech/guidance.csv and the
data/benchmarks/manuals PDFs). The engines run once per question of every
tuning gold set (never a ``*.holdout.json`` or guidance2.gold.json); learned
fusion is then trained leave-one-group-out (a report, a Natech chapter, a
manual) on each feature subset, and every question is scored by a model that
never saw its group. Per family: Hit@1, Hit@3, MRR@10 with bootstrap CIs,
Hit@1 per quarter of the document (the whole-report and manuals sets name
one), beside BM25 alone, RRF and min-max fusion replayed over the same lists.
Written to benchmarks/results/ranking_features.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

import numpy as np  # noqa: E402

from ragloupe.evaluate import tuning as T  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.evaluate.tune_replay import fetch_all, indexed_only, score_configs  # noqa: E402
from ragloupe.evaluate.tune_report import figures  # noqa: E402
from ragloupe.retrieve import features as F  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
RESULTS = PROJECT_ROOT / "benchmarks/results/ranking_features.json"
ACCOUNTS = ("page_term_share", "page_number_match", "label_match", "caps_heading_match")
TRUST = tuple(name for name in F.FEATURES if "_x_" in name)
VARIANTS = {
    "all": (),
    "-first_on_page+length": ("first_on_page", "length"),
    "-accounts": ACCOUNTS,
    "-trust": TRUST,
    "-accounts-trust": ACCOUNTS + TRUST,
}


def tuning_goldsets() -> list[Path]:
    """Every shipped gold set tuning may read: no *.holdout.json, no guidance2 (held out)."""
    paths = (sorted(BENCH.glob("grampian/eval/*.eval.json")) + sorted(BENCH.glob("grampian/whole/*.whole.json"))
             + [BENCH / "natech/guidance.gold.json"] + sorted(BENCH.glob("manuals/eval/*.eval.json")))
    return [p for p in paths if p.is_file() and not T.is_held_out(p)]


def quarters(paths: list[Path]) -> dict[tuple[str, str], int]:
    """(gold set name, query id) -> the quarter of its document the question is about, where the set says."""
    out = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        name = load_goldset(path).name
        for query in data.get("queries", []) if isinstance(data, dict) else []:
            if query.get("quarter"):
                out[(name, query["query_id"])] = int(query["quarter"])
    return out


def per_family(scores: np.ndarray, questions, quarter_of: dict) -> dict:
    out = {}
    for family in sorted({q.family for q in questions}):
        rows = [i for i, q in enumerate(questions) if q.family == family]
        entry = {"n": len(rows), **{k: figures(scores[rows])[k] for k in ("hit@1", "hit@3", "mrr")}}
        by_quarter = {}
        for i in rows:
            quarter = quarter_of.get((questions[i].query.goldset, questions[i].query.query_id))
            if quarter:
                by_quarter.setdefault(quarter, []).append(scores[i, T.HIT1])
        if by_quarter:
            entry["hit@1_by_quarter"] = {str(k): round(float(np.mean(v)), 4) for k, v in sorted(by_quarter.items())}
        out[family] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store

    settings = get_settings()
    paths = tuning_goldsets()
    sets = [load_goldset(p) for p in paths]
    store, embedder = open_store(settings), get_embedder(settings)
    questions = indexed_only(T.tune_questions(sets), store)
    groups = [q.group for q in questions]
    learned = T.Config.of("hybrid", settings, fusion="learned")
    baselines = {"bm25": T.Config.of("bm25", settings), "rrf": T.Config.of("hybrid", settings, fusion="rrf", rrf_k=60,
                                                                          weight_dense=1, weight_bm25=1),
                 "minmax": T.Config.of("hybrid", settings, fusion="minmax")}
    started = time.perf_counter()
    workspace = Workspace.open(settings, store=store, embedder=embedder)
    fetched = fetch_all(questions, [learned], "doc", settings, workspace)
    base_scores = score_configs(questions, list(baselines.values()), fetched, settings)
    quarter_of = quarters(paths)
    results = {"index": str(settings.path("index_dir")), "goldsets": [p.name for p in paths],
               "n_questions": len(questions), "groups": sorted(set(groups)),
               "procedure": "learned fusion trained leave-one-group-out; each question scored by a model "
                            "that never saw its report, Natech chapter or manual",
               "baselines": {name: per_family(base_scores[i], questions, quarter_of)
                             for i, name in enumerate(baselines)}, "variants": {}}
    for name in [v for v in args.variants.split(",") if v]:
        dropped = VARIANTS[name]
        kept = [f for f in F.FEATURES if f not in dropped]
        trainer = T.LearnedTrainer(learned, questions, fetched, settings, features=kept)
        scores = trainer.grouped_score(np.arange(len(questions)), groups)
        model = trainer.fit(np.arange(len(questions)))
        results["variants"][name] = {"dropped": list(dropped), "families": per_family(scores, questions, quarter_of),
                                     "coefficients": dict(zip(model.features, np.round(model.coef, 3).tolist()))}
        print(name, {f: (v["hit@1"]["mean"], v["mrr"]["mean"]) for f, v in
                     results["variants"][name]["families"].items()}, flush=True)
    results["seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
