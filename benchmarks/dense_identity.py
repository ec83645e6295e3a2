"""Does the dense engine's new reading of Chroma rank the same as the old one? Every Grampian
benchmark question and both Natech sets, dense and the default hybrid mode, over the whole corpus
(the period filter at work) and scoped to the question's document (as evaluation searches).

    PYTHONPATH=src .venv/bin/python benchmarks/dense_identity.py --index DIR

Per question, mode and scope, in one process: fetch() as it now runs (the hits' chunks looked
up in the workspace's chunk table, a doc_ids filter passed to Chroma as those documents'
chunk ids), then the old reading of the same question (``store.query`` with the ``doc_id $in``
clause, texts from Chroma) over the same query vector and filters. The dense lists are compared
whole (chunk, cosine score, distance), and the final hits of replay() over each. Both run in
one process on purpose: Chroma's HNSW over the demo index is not the same graph in two
processes (the last writes wait in its queue, under the sync threshold, and every process adds
them to its graph again), so two runs of the same code already differ in a few dense tails.
Writes benchmarks/results/dense_identity.json. The index is only read (the first search may
save its chunk BM25 beside it, as any search does). Nothing is tuned.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ragloupe.config import Settings, bootstrap_environment

bootstrap_environment()

HERE = Path(__file__).resolve().parent.parent  # the checkout this script is in (its data, its results)
GOLD = [*sorted((HERE / "data/benchmarks/grampian/eval").glob("*.eval.json")),
        *sorted((HERE / "data/benchmarks/natech").glob("*.gold.json"))]
RESULTS = HERE / "benchmarks/results/dense_identity.json"
MODES = ("dense", "hybrid")
SCOPES = ("corpus", "document")


def compare(index_dir: Path, scratch: Path) -> dict:
    from dataclasses import replace

    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.retrieve import engines
    from ragloupe.retrieve.fetch import fetch
    from ragloupe.retrieve.replay import replay
    from ragloupe.workspace import Workspace

    settings = Settings.from_env(index_dir=index_dir, runs_dir=scratch / "runs", logs_dir=scratch / "logs",
                                 chroma_host="", llm_backend="none")
    workspace = Workspace.open(settings)
    parts: dict = {}
    differ: list[str] = []
    for path in GOLD:
        for n, q in enumerate(load_goldset(path).queries):
            for mode in MODES:
                for scope in SCOPES:
                    filters = {"doc_ids": [q.doc_id]} if scope == "document" and q.doc_id else None
                    new = fetch(q.question, mode=mode, k=10, filters=filters,
                                workspace=workspace)
                    old_dense = engines.dense_search(workspace.store, workspace.query_vector(new.search_text),
                                                     new.window, new.filters)
                    old = replace(new, lists={**new.lists, "dense": old_dense})
                    same = (new.lists["dense"] == old_dense
                            and _hits(replay(new, settings, k=10)) == _hits(replay(old, settings, k=10)))
                    part = parts.setdefault(f"{mode}|{scope}", {"questions": 0, "differ": 0, "period_filtered": 0,
                                                                "dense_hits": 0, "chunk_table": 0})
                    part["questions"] += 1
                    part["differ"] += not same
                    part["period_filtered"] += bool(new.period_scope)
                    part["dense_hits"] += len(old_dense)
                    part["chunk_table"] += "bm25" in new.lists  # dense-only modes keep the clause path
                    if not same:
                        differ.append(f"{path.name}#{n}|{mode}|{scope}")
    return {"what": "per question, mode and scope, in one process: the dense engine's whole candidate list "
                    "(chunk, cosine score, distance) and replay()'s final hits (chunk id, rank, score), the new "
                    "reading of Chroma against the old one over the same query vector and filters (chunk_table: the rows "
                    "where fetch read through the chunk table; in dense mode it keeps the doc_id clause)",
            "identical": not differ, "by_part": parts, "differ": differ[:50], "index": str(index_dir),
            "chunks": workspace.store.count(), "code": _code(), "sets": [p.name for p in GOLD]}


def _hits(ranking) -> list[tuple]:
    return [(h.chunk.chunk_id, h.rank, float(h.score)) for h in ranking.hits]


def _code() -> str:
    head = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no", "src"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+changes" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="a demo index (read only)")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/ragloupe-dense-identity"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started, load_before = time.perf_counter(), os.getloadavg()
    result = {**compare(args.index, args.scratch), "seconds": round(time.perf_counter() - started, 1),
              "load_average_before": [round(x, 1) for x in load_before],
              "load_average_after": [round(x, 1) for x in os.getloadavg()],
              "command": "PYTHONPATH=src .venv/bin/python benchmarks/dense_identity.py " + " ".join(
                  argv or sys.argv[1:])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("identical", "by_part")}, indent=1))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
