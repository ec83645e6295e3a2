"""One index opened once, then search() per stage over the gold questions: where a search's time goes.

    nice -n 15 .venv/bin/python benchmarks/search_stages.py --index /work/cache/scale/300000/index
        [--queries 50] [--repeat 1] [--profile 30] [--out benchmarks/results/search_stages.json]

benchmarks/scale.py measures a restart and the searches after it in a fresh process per size;
this opens the index through one Workspace (as scale.py's probe does: the real model, the
default settings of a search: hybrid, learned fusion, query analysis and the period filter on),
loads everything a search reads before timing, then asks the first ``--queries`` Grampian gold
questions ``--repeat`` times each, after three warm-up questions, and reports each stage's p50
and p95 of wall and of this process's CPU time (a shared machine moves the wall figures more).
``--profile N`` also prints cProfile's N most expensive functions (cumulative) over the same
searches, run once more. Writes the report to ``--out`` (printed as well) with the load average
before and after and the niceness.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scale  # noqa: E402  (settings_for, gold_questions, code_version)

WARMUP = 3


def loaded(index_dir: Path):
    """The settings and a Workspace over ``index_dir`` with everything a search reads in memory."""
    from ragloupe.index.embedder import get_embedder
    from ragloupe.retrieve import learned
    from ragloupe.workspace import Workspace

    settings = scale.settings_for(index_dir)
    workspace = Workspace.open(settings, embedder=get_embedder(settings))
    start = time.perf_counter()
    workspace.corpus_views(workspace.lexical())
    workspace.periods()
    workspace.chunk_table()
    workspace.learned_model(learned.model_path(settings))
    return settings, workspace, time.perf_counter() - start


class Collections:
    """The garbage collector's passes while the searches run: how many of each generation, how long."""

    def __init__(self):
        self.started: float | None = None
        self.seconds = {0: 0.0, 1: 0.0, 2: 0.0}
        self.count = {0: 0, 1: 0, 2: 0}

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        elif self.started is not None:
            generation = info["generation"]
            self.seconds[generation] += time.perf_counter() - self.started
            self.count[generation] += 1

    def report(self, searches: int) -> dict:
        return {f"gen{g}": {"passes": self.count[g], "ms_per_search": round(self.seconds[g] * 1000 / searches, 2)}
                for g in self.count}


def stage_times(settings, workspace, questions: list[str], repeat: int) -> dict:
    """Each stage's wall time as search() reports it, each search's CPU time, the collector's passes."""
    from ragloupe.retrieve.search import search

    stages: dict[str, list[float]] = {}
    cpu: list[float] = []
    collections = Collections()
    gc.callbacks.append(collections)
    try:
        for question in questions * repeat:
            start_cpu = time.process_time()
            ranking = search(question, workspace=workspace)
            cpu.append(time.process_time() - start_cpu)
            for stage, seconds in ranking.timings.items():
                stages.setdefault(stage, []).append(seconds)
    finally:
        gc.callbacks.remove(collections)
    report = {stage: {"p50_ms": round(float(np.percentile(v, 50)) * 1000, 2),
                      "p95_ms": round(float(np.percentile(v, 95)) * 1000, 2)} for stage, v in stages.items()}
    report["cpu"] = {"p50_ms": round(float(np.percentile(cpu, 50)) * 1000, 2),
                     "p95_ms": round(float(np.percentile(cpu, 95)) * 1000, 2)}
    report["garbage_collector"] = collections.report(len(cpu))
    return report


def profiled(settings, workspace, questions: list[str], top: int) -> str:
    from io import StringIO

    from ragloupe.retrieve.search import search

    profile = cProfile.Profile()
    profile.enable()
    for question in questions:
        search(question, workspace=workspace)
    profile.disable()
    out = StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's N costliest functions")
    parser.add_argument("--out", type=Path, default=scale.PROJECT_ROOT / "benchmarks" / "results" / "search_stages.json")
    args = parser.parse_args(argv)
    from ragloupe.retrieve.search import search

    load_before, code = [round(x, 1) for x in os.getloadavg()], scale.code_version()
    settings, workspace, load_s = loaded(args.index)
    questions = scale.gold_questions()[: args.queries + WARMUP]
    for question in questions[-WARMUP:]:
        search(question, workspace=workspace)
    report = {"benchmark": "search_stages", "index": str(args.index), "chunks": workspace.store.count(),
              "code": code, "queries": len(questions) - WARMUP, "repeat": args.repeat,
              "load_s": round(load_s, 1), "stages": stage_times(settings, workspace, questions[:-WARMUP], args.repeat),
              "niceness": os.nice(0), "peak_rss_mb": scale.peak_rss_mb(),
              "load_average": {"before": load_before, "after": [round(x, 1) for x in os.getloadavg()]},
              "command": "nice -n 15 .venv/bin/python benchmarks/search_stages.py " + " ".join(argv or sys.argv[1:])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    if args.profile:
        print(profiled(settings, workspace, questions[:-WARMUP], args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
