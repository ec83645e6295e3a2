"""Out-of-fold retrieval figures per gold-set family, from the product's own `ragloupe tune`.

    .venv/bin/python benchmarks/tune_oof.py [--space full] [--parts families,all]
                                            [--chunking 256/64,384/96] [--confirm PATH...] [--out PATH]

On the index RAGLOUPE_INDEX_DIR points at, which must hold every family's
documents: the three Grampian reports, data/benchmarks/natech/guidance.csv and
the PDFs of data/benchmarks/manuals (`ragloupe index data/benchmarks/grampian/pdf
data/benchmarks/natech/guidance.csv data/benchmarks/manuals/pdf` into a
benchmark index of its own; the tests' demo index stays as it is). Questions of
a document the index lacks are left out, and the JSON says how many.

1. ``families``: tune on every tuning gold set of every family at once, each
   question scoped to its document: ``benchmark`` (grampian/eval/*.eval.json,
   the 150), ``whole-report`` (grampian/whole/*.whole.json), ``natech``
   (guidance.gold.json), ``manuals`` (manuals/eval/*.eval.json) and the
   paraphrased families (grampian/paraphrased, manuals/paraphrased,
   natech/paraphrased.gold.json: written blind, no run of three content words
   from the page). The default rule (evaluate/tune_rule.py) is applied to the
   choice; ``--confirm PATH...`` names the confirmation family that gates it
   (never chosen on; without it the verdict is provisional). One group
   per report, Natech chapter and manual is held out in turn; each fold chooses
   on the worst family's objective (evaluate/tune_folds.py). Per family: the
   out-of-fold Hit@1 / Hit@3 / MRR@10 with bootstrap CIs, Hit@1 per quarter of
   the document where the set names it, and the paired test against BM25 alone.
   Then the configuration chosen on everything is scored by `ragloupe eval`'s
   evaluate() on the held-out sets, which tuning never reads: every
   ``*.holdout.json`` and guidance2.gold.json.
2. ``all``: the Grampian families (benchmark and whole-report) over the whole
   index (no document filter; the question names its year, as users do).

Written to benchmarks/results/tune_oof.json with the tuning run ids (their full
reports are under RAGLOUPE_RUNS_DIR).
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
from ragloupe.cli.tune_cmd import confirmation_paths  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
RESULTS = PROJECT_ROOT / "benchmarks/results/tune_oof.json"
PARTS = ("families", "all")


def tuning_goldsets(grampian_only: bool = False) -> list[Path]:
    """The shipped gold sets tuning may read: never a *.holdout.json, never guidance2 (held out)."""
    paths = (sorted(BENCH.glob("grampian/eval/*.eval.json")) + sorted(BENCH.glob("grampian/whole/*.whole.json"))
             + sorted(BENCH.glob("grampian/paraphrased/*.json")))
    if not grampian_only:
        paths += ([BENCH / "natech/guidance.gold.json"] + sorted(BENCH.glob("manuals/eval/*.eval.json"))
                  + sorted(BENCH.glob("manuals/paraphrased/*.json")) + [BENCH / "natech/paraphrased.gold.json"])
    return [p for p in paths if p.is_file() and not T.is_held_out(p)]


def held_out_goldsets() -> list[Path]:
    # never the confirmation family's folder: it is the lead's gate, run only with --confirm
    return ([p for p in sorted(BENCH.glob("*/*/*.holdout.json")) if p.relative_to(BENCH).parts[0] != "confirm"]
            + [BENCH / "natech/guidance2.gold.json"])


def headline(report: T.TuneReport) -> dict:
    d = report.data
    return {"run_id": report.run_id, "n_questions": d["n_questions"], "n_configs": d["n_configs"],
            "groups": d["groups"], "selection": d.get("selection"), "families": d.get("families"),
            "out_of_fold": d["out_of_fold"], "in_sample_best": d["in_sample_best"],
            "optimism_gap": d["optimism_gap"], "current": d["current"], "bm25_alone": d["bm25_alone"],
            "versus": d["versus"], "decision": d["decision"], "replay_check": d["replay_check"],
            "chunking": d.get("chunking"), "default_rule": d.get("default_rule"),
            "confirmation": d.get("confirmation"), "default": d.get("default"),
            "query_adapter": d.get("query_adapter"), "indexes": report.timings.get("indexes"),
            "configs": [{k: c.get(k) for k in ("label", "hit@1", "mrr", "family_objective", "adapter_retrained",
                                              "chosen_in_folds")} for c in d.get("configs", [])],
            "seconds": report.timings.get("total_s")}


def quarters_oof(report: T.TuneReport, paths: list[Path]) -> dict:
    """Per family, out-of-fold Hit@1 per quarter of the document, for the sets that name each question's quarter."""
    quarter = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        for query in data.get("queries", []) if isinstance(data, dict) else []:
            if query.get("quarter"):
                quarter[(load_goldset(path).name, query["query_id"])] = int(query["quarter"])
    found: dict[str, dict[int, list[float]]] = {}
    for row in report.data["queries"]:
        q = quarter.get((row["goldset"], row["query_id"]))
        if q:
            found.setdefault(row["family"], {}).setdefault(q, []).append(row["oof_hit@1"])
    return {family: {str(q): {"n": len(v), "hit@1": round(sum(v) / len(v), 4)} for q, v in sorted(by.items())}
            for family, by in found.items()}


def held_out_check(report: T.TuneReport, settings) -> dict:
    """The configuration tuning leaves as the default, scored by `ragloupe eval`'s evaluate() on sets
    it never saw."""
    from ragloupe.evaluate.runs import evaluate

    chosen = T.chosen_config(report.data)
    if any(chosen.get(name, getattr(settings, name)) != getattr(settings, name) for name in T.CHUNKING_KNOBS):
        return {"note": f"the chosen chunking {chosen['chunk_tokens']}/{chosen['chunk_overlap']} is not the "
                        "index's: the held-out sets can be scored on it only after `ragloupe index --rebuild`"}
    configured = settings.replace(**{k: v for k, v in chosen.items() if k != "mode"})
    out = {"chosen": T.Config(chosen["mode"], tuple((k, chosen[k]) for k in T.KNOBS)).label()}
    for path in held_out_goldsets():
        if not path.is_file():
            continue
        row = {}
        for name, (mode, s) in {"chosen": (chosen["mode"], configured),
                                "bm25": ("bm25", settings.replace(query_analysis=False))}.items():
            run = evaluate([load_goldset(path)], mode=mode, scope="doc", workspace=Workspace.open(s))
            row[name] = {"run_id": run.run_id, "n": run.data.get("n_queries", run.data.get("n_evaluated")),
                         **{k: run.aggregates[k] for k in ("hit@1", "hit@3", "recall@1", "recall@3", "mrr")
                            if k in run.aggregates}}
        out[path.name] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="full", choices=T.SPACES)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--confirm", nargs="+", default=[], metavar="PATH",
                        help="confirmation gold sets (files or folders): they gate the default rule, "
                             "nothing is chosen on them (ragloupe tune --confirm)")
    parser.add_argument("--chunking", default=None, metavar="TOKENS/OVERLAP,...",
                        help="chunking variants scored besides the one in force (ragloupe tune --chunking)")
    args = parser.parse_args(argv)
    settings = get_settings()
    out_path = Path(args.out)
    results = json.loads(out_path.read_text(encoding="utf-8")) if out_path.is_file() else {}
    results = {k: v for k, v in results.items() if k in PARTS}  # the parts not rerun stay; older layouts go
    results.update({"what": "out-of-fold tuning figures per gold-set family from `ragloupe tune` (evaluate/tuning.py)",
                    "procedure": "nested leave-one-group-out (a report, a Natech chapter, a manual), chosen on "
                                 "the worst family's objective",
                    "index": str(settings.path("index_dir")), "space": args.space, "chunking": args.chunking or ""})
    for part in [p.strip() for p in args.parts.split(",") if p.strip()]:
        if part not in PARTS:
            raise SystemExit(f"unknown part {part!r}; use {', '.join(PARTS)}")
        started, load_before = time.perf_counter(), os.getloadavg()[0]
        paths = tuning_goldsets(grampian_only=part == "all")
        confirm = confirmation_paths(args.confirm) if part == "families" else []
        report = T.tune(paths, scope="doc" if part == "families" else "all", space=args.space,
                        chunking=args.chunking, confirm=confirm, workspace=Workspace.open(settings))
        entry = {**headline(report), "goldsets": [p.name for p in paths],
                 "confirmation_goldsets": [p.name for p in confirm],
                 "hit@1_by_quarter": quarters_oof(report, paths)}
        if part == "families":
            entry["held_out_sets"] = held_out_check(report, settings)
        entry["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        results[part] = entry
        for family, row in (entry["families"] or {}).items():
            oof = row["out_of_fold"]
            print(f"{part} {family}: out-of-fold Hit@1 {oof['hit@1']['mean']:.3f} Hit@3 {oof['hit@3']['mean']:.3f} "
                  f"MRR {oof['mrr']['mean']:.3f}", flush=True)
        print(f"{part}: default rule: {entry['default_rule']['verdict']}", flush=True)
        if entry["default"]:
            print(f"{part}: default: {entry['default']['label']} ({entry['default']['why']})", flush=True)
        print(f"{part}: {time.perf_counter() - started:.0f} s", flush=True)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
