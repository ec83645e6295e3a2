"""Where a server's start goes, part by part, in one process: what `ragloupe serve`'s warm-up does, timed alone.

    RAGLOUPE_INDEX_DIR=/path/to/index .venv/bin/python benchmarks/api_start_parts.py

In the order the warm-up meets them (api/resources.py): importing the API app (before
health can answer), importing chromadb, opening the store, reading every chunk,
importing bm25s, loading the saved BM25, the corpus views and the periods, opening the
encoder (the server does that in a thread of its own, beside the others), the warm-up
search, then one more search. Wall and CPU seconds of each; the server runs the
same steps with the model beside them, so the CPU column is what its critical path
costs on an idle core. Writes benchmarks/results/api_start_parts.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "api_start_parts.json"


def main() -> None:
    load_before = os.getloadavg()
    parts: list[dict] = []
    wall, cpu = time.perf_counter(), time.process_time()

    def step(name: str, work) -> None:
        nonlocal wall, cpu
        work()
        now_wall, now_cpu = time.perf_counter(), time.process_time()
        parts.append({"part": name, "wall_s": round(now_wall - wall, 3), "cpu_s": round(now_cpu - cpu, 3)})
        wall, cpu = now_wall, now_cpu

    from ragloupe.config import Settings, bootstrap_environment

    bootstrap_environment()
    step("import the API app", lambda: __import__("ragloupe.api.app"))
    step("import chromadb", lambda: __import__("chromadb"))
    from ragloupe.api.resources import WARM_UP_QUESTION, Resources

    settings = Settings.from_env(chroma_host="", llm_backend="none")
    resources = Resources(settings)
    step("open the store", lambda: resources.store().count())
    workspace = resources.workspace()
    step("read every chunk", workspace.chunks)
    step("import bm25s", lambda: __import__("bm25s"))
    step("load the saved BM25", workspace.lexical)
    step("load the corpus views", lambda: workspace.corpus_views(workspace.lexical()))
    step("load the periods", workspace.periods)
    step("open the encoder", resources.embedder)
    from ragloupe.retrieve.search import search

    step("the warm-up search", lambda: search(WARM_UP_QUESTION, explain=True,
                                              workspace=workspace))
    step("a second search", lambda: search("capital expenditure", k=10, workspace=workspace))
    report = {"command": "RAGLOUPE_INDEX_DIR=... .venv/bin/python benchmarks/api_start_parts.py",
              "index_dir": str(settings.path("index_dir")), "chunks": resources.store().count(),
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
              "parts": parts, "torch_imported": "torch" in sys.modules}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
