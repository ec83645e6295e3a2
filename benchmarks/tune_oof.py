"""Out-of-fold retrieval figures from the product's own `ragloupe tune`, for the README.

    .venv/bin/python benchmarks/tune_oof.py [--space full] [--parts doc,all,natech]
                                            [--chunking 256/64,384/96] [--out PATH]

What it does, in order (on the index RAGLOUPE_INDEX_DIR points at; `make index`
builds the demo corpus there):

1. ``doc``: tune on the three shipped Grampian gold sets, each question
   scoped to its report, leaving one report out at a time (evaluate/tuning.py).
2. ``all``: the same over the whole index (no document filter; the question
   names its year, as users do).
3. ``natech``: tune on the Natech record gold set (guidance.gold.json),
   leaving one top-level chapter out at a time, then score the configuration
   it chose on the held-out practitioner set (guidance2.gold.json), which
   tuning never sees.

Each part records the out-of-fold figure of the whole selection procedure
with its 95% bootstrap CIs, the in-sample best beside it, the gap, the paired
tests against the settings in force and against BM25 alone, and each fold's
choice. Written to benchmarks/results/tune_oof.json, with the tuning run ids
(their full reports are under RAGLOUPE_RUNS_DIR).

``--chunking`` passes chunking variants to tune: every configuration is also
scored on a scratch index per variant (built under RAGLOUPE_RUNS_DIR/tune-indexes,
the index in force is only read), and each part then records the per-variant
figures and the chunking each fold chose. Write those runs elsewhere than
tune_oof.json (``--out benchmarks/results/tune_chunking.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.evaluate import tuning as T  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
NATECH = PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json"
NATECH_HELD_OUT = PROJECT_ROOT / "data/benchmarks/natech/guidance2.gold.json"
RESULTS = PROJECT_ROOT / "benchmarks/results/tune_oof.json"
PARTS = ("doc", "all", "natech")


def headline(report: T.TuneReport) -> dict:
    d = report.data
    return {"run_id": report.run_id, "n_questions": d["n_questions"], "n_configs": d["n_configs"],
            "groups": d["groups"], "out_of_fold": d["out_of_fold"], "in_sample_best": d["in_sample_best"],
            "optimism_gap": d["optimism_gap"], "current": d["current"], "bm25_alone": d["bm25_alone"],
            "versus": d["versus"], "decision": d["decision"], "replay_check": d["replay_check"],
            "chunking": d.get("chunking"), "indexes": report.timings.get("indexes"),
            "seconds": report.timings.get("total_s")}


def held_out_check(report: T.TuneReport, path: Path, settings) -> dict:
    """The configuration tuning chose, scored by `ragloupe eval`'s own evaluate() on a set it never saw."""
    from ragloupe.evaluate.runs import evaluate

    if not path.is_file():
        return {"note": f"{path.name} is not there"}
    chosen = report.data["in_sample_best"]["config"]
    if any(chosen.get(name, getattr(settings, name)) != getattr(settings, name) for name in T.CHUNKING_KNOBS):
        return {"note": f"the chosen chunking {chosen['chunk_tokens']}/{chosen['chunk_overlap']} is not the "
                        f"index's: {path.name} can be scored on it only after `ragloupe index --rebuild`"}
    configured = settings.replace(**{k: v for k, v in chosen.items() if k != "mode"})
    run = evaluate([load_goldset(path)], mode=chosen["mode"], scope="doc", settings=configured)
    current = evaluate([load_goldset(path)], mode=settings.mode, scope="doc", settings=settings)
    pick = lambda r: {k: r.aggregates[k] for k in ("hit@1", "hit@3", "recall@1", "recall@3", "mrr")}  # noqa: E731
    return {"goldset": path.name, "chosen": {"label": report.data["in_sample_best"]["label"],
                                             "run_id": run.run_id, **pick(run)},
            "settings_in_force": {"run_id": current.run_id, **pick(current)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="full", choices=T.SPACES)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--chunking", default=None, metavar="TOKENS/OVERLAP,...",
                        help="chunking variants scored besides the one in force (ragloupe tune --chunking)")
    args = parser.parse_args(argv)
    settings = get_settings()
    out_path = Path(args.out)
    results = json.loads(out_path.read_text(encoding="utf-8")) if out_path.is_file() else {}
    results.update({"what": "out-of-fold tuning figures from `ragloupe tune` (evaluate/tuning.py)",
                    "procedure": "nested leave-one-document-out (Natech: leave one top-level chapter out)",
                    "index": str(settings.path("index_dir")), "space": args.space,
                    "chunking": args.chunking or ""})
    for part in [p.strip() for p in args.parts.split(",") if p.strip()]:
        started = time.perf_counter()
        load_before = os.getloadavg()[0]
        if part in ("doc", "all"):
            report = T.tune(GRAMPIAN, scope=part, space=args.space, settings=settings, chunking=args.chunking)
            results[f"grampian_{part}"] = headline(report)
        elif part == "natech":
            report = T.tune([NATECH], scope="doc", space=args.space, settings=settings, chunking=args.chunking)
            results["natech"] = {**headline(report),
                                 "held_out_set": held_out_check(report, NATECH_HELD_OUT, settings)}
        else:
            raise SystemExit(f"unknown part {part!r}; use {', '.join(PARTS)}")
        key = f"grampian_{part}" if part != "natech" else "natech"
        results[key]["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        oof = results[key]["out_of_fold"]["figures"]
        print(f"{part}: out-of-fold Hit@1 {oof['hit@1']['mean']:.3f} MRR {oof['mrr']['mean']:.3f} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
        for variant in (results[key]["chunking"] or {}).get("variants", []) if args.chunking else ():
            best, held = variant["in_sample_best"], variant["out_of_fold"]
            print(f"  chunking {variant['chunking']}: in-sample best Hit@1 {best['hit@1']:.3f} MRR {best['mrr']:.3f}; "
                  f"out-of-fold Hit@1 {held['hit@1']:.3f} MRR {held['mrr']:.3f}", flush=True)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
