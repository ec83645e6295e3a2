"""Choose the retrieval defaults by measurement, guarding against fitting the gold sets.

    .venv/bin/python benchmarks/tune_defaults.py [--cache /tmp/ragloupe-tune] [--chunks 256:64,128:32]

What it does, in order:

1. For each chunking variant (chunk_tokens:chunk_overlap), index the demo
   corpus (Grampian PDFs and the Natech CSV) once into its own directory under --cache (reused on later
   runs: the indexer skips unchanged files).
2. For each question of the three Grampian gold sets (scoped to its own
   report), run the two engines ONCE over the largest candidate window, and
   keep their lists.
3. Replay search()'s own later stages (ragloupe.retrieve.search's fusion,
   rerank and finish, then the page aggregation) over those cached lists for
   every retrieval configuration of the grid. This makes a configuration cost
   milliseconds instead of a re-run of the engines; a check at start-up
   asserts that the replay gives exactly search()'s page ranking.
4. Tune on two reports, confirm on the third, for all three rotations: the
   configuration (chunking included) with the best mean of Hit@1 and MRR on
   the two tuning reports is scored on the held-out one.
5. Write everything to benchmarks/results/tune_defaults.json: every
   configuration's Hit@1 / MRR per report, each rotation's pick and its
   held-out figures, and the overall pick (the configuration with the best
   mean held-out-rotation rank; see ``choose``).

The figures for the README are then produced with `ragloupe eval` on the
chosen defaults, which runs the real search() end to end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.errors import StaleIndex  # noqa: E402
from ragloupe.evaluate import metrics as M  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.retrieve import aggregate, engines  # noqa: E402
from ragloupe.retrieve import search as S  # noqa: E402

GOLD = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
# The demo corpus as `make index` builds it: the records file shares the
# index (and BM25's document frequencies) with the reports.
SOURCES = [PROJECT_ROOT / "data/benchmarks/grampian/pdf", PROJECT_ROOT / "data/benchmarks/natech/guidance.csv"]
RESULTS = PROJECT_ROOT / "benchmarks/results/tune_defaults.json"
MAX_WINDOW = 100
KS = (1, 3, 5, 10)


def retrieval_grid() -> list[dict]:
    """Every retrieval configuration tried on each index (no re-indexing needed)."""
    grid: list[dict] = [
        {"mode": "dense"}, {"mode": "bm25"},
    ]
    fusions = [{"fusion": "rrf", "rrf_k": rk, "weight_dense": wd, "weight_bm25": wb}
               for rk, (wd, wb) in itertools.product(
                   (10, 60), ((1, 1), (1, 1.5), (1, 2), (1, 3), (1.5, 1), (2, 1)))]
    fusions += [{"fusion": "minmax", "weight_dense": wd, "weight_bm25": wb}
                for wd, wb in ((1, 1), (1, 1.5), (1, 2), (1.5, 1), (2, 1))]
    # rerank 0 = no reranker; otherwise the lexical reranker with that blend weight.
    for fusion, window, agg, rerank in itertools.product(
            fusions, (50, 100), ("max", "sum", "rrf"), (0, 0.3)):
        config = {"mode": "hybrid+rerank" if rerank else "hybrid", **fusion,
                  "candidate_window": window, "page_aggregation": agg}
        if rerank:
            config["lexical_rerank_weight"] = rerank
        grid.append(config)
    return grid


BM25_PARAMS = [(k1, b) for k1 in (0.9, 1.5, 2.0) for b in (0.4, 0.75, 1.0)]


def bm25_grid() -> list[dict]:
    """Second stage: BM25's k1 and b, crossed with every fusion on max aggregation, no reranker.

    Staged rather than crossed with the whole first grid to keep the sweep
    within minutes: in the first stage sum/rrf aggregation and the lexical
    reranker lost on every fusion (see the results file), so they are not
    crossed again.
    """
    grid: list[dict] = []
    for k1, b in BM25_PARAMS:
        if (k1, b) == (1.5, 0.75):  # the defaults: already in the first stage
            continue
        bm25 = {"bm25_k1": k1, "bm25_b": b}
        grid.append({"mode": "bm25", **bm25})
        for config in retrieval_grid():
            if config["mode"] == "hybrid" and config["page_aggregation"] == "max":
                grid.append({**config, **bm25})
    return grid


@dataclass
class Question:
    goldset: str
    query_id: str
    text: str
    doc_id: str
    expected: tuple[str, ...]


def load_questions() -> list[Question]:
    out = []
    for path in GOLD:
        gold = load_goldset(path)
        out += [Question(gold.name, q.query_id, q.question, q.doc_id, q.expected_units) for q in gold.queries]
    return out


def build_index(cache: Path, tokens: int, overlap: int) -> Settings:
    from ragloupe.index.pipeline import run_index

    root = cache / f"idx_{tokens}_{overlap}"
    settings = Settings.from_env(index_dir=root / "index", runs_dir=root / "runs", raw_dir=root / "raw",
                                 logs_dir=root / "logs", chroma_host="", chunk_tokens=tokens,
                                 chunk_overlap=overlap)
    started = time.perf_counter()
    try:
        summary = run_index(SOURCES, settings)
    except StaleIndex:  # built by an older ingestion or chunking: build it again
        summary = run_index(SOURCES, settings, rebuild=True)
    if summary.errors:
        raise SystemExit(f"indexing {root} failed: {summary.errors}")
    print(f"index {tokens}:{overlap} ready in {time.perf_counter() - started:.0f}s", flush=True)
    return settings


def open_resources(settings: Settings):
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store

    return open_store(settings), get_embedder(settings)


def engine_lists(settings: Settings, questions: list[Question], store, embedder,
                 dense: dict | None = None) -> dict:
    """Each question's dense and bm25 lists over MAX_WINDOW candidates, within its report.

    ``dense`` reuses earlier dense lists (a BM25 parameter change leaves them as they are).
    """
    bm25 = engines.lexical_index(store, settings)
    if dense is None:
        embeddings = embedder.encode([q.text for q in questions])
        dense = {}
        for q, emb in zip(questions, embeddings):
            filters = S.normalise_filters({"doc_ids": [q.doc_id]})
            dense[(q.goldset, q.query_id)] = engines.dense_search(store, emb, MAX_WINDOW, filters)
    lists = {}
    for q in questions:
        key = (q.goldset, q.query_id)
        filters = S.normalise_filters({"doc_ids": [q.doc_id]})
        lists[key] = {"dense": dense[key], "bm25": engines.bm25_search(bm25, q.text, MAX_WINDOW, filters)}
    return lists


def replay(question: Question, lists: dict, settings: Settings, mode: str) -> list[str]:
    """search()'s stages after the engines, over cached engine lists: the ranked units."""
    plan = S.parse_mode(mode)
    window = int(settings.candidate_window)
    cut_lists = {e: lists[e][:window] for e in plan.engines}
    candidates, _ = S._fuse(plan, cut_lists, settings)
    if plan.rerank or settings.lexical_rerank:
        candidates, _ = S._rerank(plan, question.text, candidates, settings)
    hits = S._finish(candidates)
    pages = aggregate.aggregate_pages(hits, settings.page_aggregation, settings.rrf_k)
    return [p.unit for p in pages]


def check_replay(settings: Settings, questions: list[Question], lists: dict, store, embedder) -> None:
    """The replay must equal search() itself, or the sweep measures something else."""
    for config in ({"mode": "hybrid"}, {"mode": "hybrid+rerank", "page_aggregation": "sum",
                                        "candidate_window": 30, "fusion": "minmax"}):
        s = settings.replace(**{k: v for k, v in config.items() if k != "mode"})
        for q in questions[::25]:
            ranking = S.search(q.text, mode=config["mode"], k=s.candidate_window,
                               filters={"doc_ids": [q.doc_id]}, settings=s, store=store, embedder=embedder)
            expected = [p.unit for p in ranking.pages]
            got = replay(q, lists[(q.goldset, q.query_id)], s, config["mode"])
            if got != expected:
                raise SystemExit(f"replay differs from search() for {q.query_id} with {config}")


def score(questions: list[Question], ranked: dict) -> dict:
    """Hit@1 and MRR (cut at 10) per report and overall, plus the per-query first ranks."""
    per_report: dict[str, list[dict]] = {}
    for q in questions:
        per_report.setdefault(q.goldset, []).append(
            M.query_metrics(ranked[(q.goldset, q.query_id)], q.expected, KS))
    out = {}
    for name, rows in sorted(per_report.items()):
        out[name] = {m: round(sum(r[m] for r in rows) / len(rows), 4)
                     for m in ("hit@1", "hit@3", "hit@5", "hit@10", "rr")}
    return out


def objective(result: dict, reports: list[str]) -> float:
    """What a configuration is picked by: the mean of Hit@1 and MRR over ``reports``."""
    return sum(result[r]["hit@1"] + result[r]["rr"] for r in reports) / (2 * len(reports))


def choose(results: list[dict], reports: list[str]) -> dict:
    """Each rotation's pick (tuned on two reports) and its held-out figures."""
    rotations = []
    for held_out in reports:
        tuning = [r for r in reports if r != held_out]
        best = max(results, key=lambda c: (objective(c["scores"], tuning), -c["index"]))
        rotations.append({"held_out": held_out, "tuned_on": tuning, "config": best["config"],
                          "tuning_objective": round(objective(best["scores"], tuning), 4),
                          "held_out_hit@1": best["scores"][held_out]["hit@1"],
                          "held_out_mrr": best["scores"][held_out]["rr"]})
    return {"rotations": rotations,
            "held_out_mean_hit@1": round(sum(r["held_out_hit@1"] for r in rotations) / len(rotations), 4),
            "held_out_mean_mrr": round(sum(r["held_out_mrr"] for r in rotations) / len(rotations), 4)}


def write_results(out_path: Path, results: list[dict], reports: list[str], n_questions: int,
                  seconds: float) -> None:
    picks = choose(results, reports)
    overall = max(results, key=lambda c: (objective(c["scores"], reports), -c["index"]))
    out = {
        "what": "retrieval defaults by measurement on the Grampian gold sets (page level, scope doc)",
        "objective": "mean of Hit@1 and MRR@10",
        "reports": reports, "n_questions": n_questions, "n_configs": len(results),
        "tune_confirm": picks,
        "best_on_all_three": {"config": overall["config"], "scores": overall["scores"],
                              "note": "chosen on all 150 questions: an optimistic figure, "
                                      "see tune_confirm for the held-out ones"},
        "baselines": {f"{c['config']['mode']} {c['config']['chunk_tokens']}:{c['config']['chunk_overlap']}"
                      f" k1={c['config'].get('bm25_k1', 1.5)} b={c['config'].get('bm25_b', 0.75)}":
                      c["scores"] for c in results if c["config"]["mode"] in ("dense", "bm25")},
        "seconds": round(seconds, 1),
        "results": results,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/tmp/ragloupe-tune", help="where variant indexes are kept")
    parser.add_argument("--chunks", default="256:64,128:32,192:48",
                        help="chunk_tokens:chunk_overlap variants, comma-separated")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--no-bm25", dest="bm25", action="store_false",
                        help="skip the BM25 k1/b stage")
    args = parser.parse_args(argv)
    cache = Path(args.cache)
    questions = load_questions()
    reports = sorted({q.goldset for q in questions})
    grid = retrieval_grid()
    results: list[dict] = []
    started = time.perf_counter()
    for variant in args.chunks.split(","):
        tokens, overlap = (int(x) for x in variant.split(":"))
        settings = build_index(cache, tokens, overlap)
        store, embedder = open_resources(settings)
        lists = engine_lists(settings, questions, store, embedder)
        check_replay(settings, questions, lists, store, embedder)
        dense = {key: value["dense"] for key, value in lists.items()}
        variant_started = time.perf_counter()
        stages = [(settings, lists, grid)]
        for k1, b in BM25_PARAMS if args.bm25 else ():
            if (k1, b) == (1.5, 0.75):
                continue
            bm25_settings = settings.replace(bm25_k1=k1, bm25_b=b)
            bm25_configs = [c for c in bm25_grid() if (c["bm25_k1"], c["bm25_b"]) == (k1, b)]
            stages.append((bm25_settings, engine_lists(bm25_settings, questions, store, embedder, dense),
                           bm25_configs))
        for stage_settings, stage_lists, configs in stages:
            for config in configs:
                s = stage_settings.replace(**{k: v for k, v in config.items() if k != "mode"})
                ranked = {(q.goldset, q.query_id): replay(q, stage_lists[(q.goldset, q.query_id)], s,
                                                          config["mode"])
                          for q in questions}
                full = {"chunk_tokens": tokens, "chunk_overlap": overlap, **config}
                results.append({"index": len(results), "config": full, "scores": score(questions, ranked)})
        best = max(results, key=lambda c: objective(c["scores"], reports))
        print(f"{variant}: {sum(len(c) for _, _, c in stages)} configs in {time.perf_counter() - variant_started:.0f}s; best so far "
              f"{best['config']} -> {objective(best['scores'], reports):.4f}", flush=True)
        # Written after every variant, so a long sweep leaves usable results as it goes.
        write_results(Path(args.out), results, reports, len(questions), time.perf_counter() - started)
    print(json.dumps({k: v for k, v in json.loads(Path(args.out).read_text()).items()
                      if k in ("tune_confirm", "best_on_all_three")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
