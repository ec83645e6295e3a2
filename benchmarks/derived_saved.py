"""Learned fusion's corpus views, the documents' periods and the unit index: built from the chunks, or
loaded from the copies saved beside the BM25 (index.derived_saved)? The same rankings, and what each costs.

    RAGLOUPE_INDEX_DIR=/path/to/demo/index .venv/bin/python benchmarks/derived_saved.py

The index is copied to a scratch directory (it is only read) without saved copies.
A first workspace over it builds each part (timed; CPU seconds too) and saves it,
as the first search after an index run without them would; a second, fresh
workspace over the same store loads them (timed). Then every question of the
shipped gold sets (the 150 Grampian benchmark questions, the whole-report and
held-out sets, both Natech sets) is searched through both, within its document as
evaluation does, in the default hybrid mode (learned fusion) and with the unit view
"all" (which reads the unit index), and the top 10 (chunk id, score) compared.
Nothing is tuned. Writes benchmarks/results/derived_saved.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

RESULTS = PROJECT_ROOT / "benchmarks/results/derived_saved.json"
GOLD = [*sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json")),
        *sorted((PROJECT_ROOT / "data/benchmarks/natech").glob("*.gold.json")),
        *sorted((PROJECT_ROOT / "data/benchmarks/grampian/whole").glob("*.json"))]


def parts(workspace) -> dict:
    """Wall and CPU seconds of each part a start builds or loads (the BM25 and chunks first, untimed)."""
    s = workspace.settings
    index = workspace.lexical()
    out = {}
    for name, work in (("corpus_views", lambda: workspace.corpus_views(index)),
                       ("periods", workspace.periods),
                       ("unit_index_all", lambda: workspace.unit_index("all", s.bm25_k1, s.unit_bm25_b,
                                                                       s.bm25_backend))):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        out[name] = {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}
    return out


def compare(built, loaded, settings: Settings) -> dict:
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.retrieve.search import search

    out = {}
    for label, overrides in (("hybrid", {}), ("hybrid+unit_view=all", {"unit_view": "all"})):
        asked, differ = 0, []
        for path in GOLD:
            for q in load_goldset(path).queries:
                filters = {"doc_ids": [q.doc_id]} if q.doc_id else None
                a, b = ([(h.chunk.chunk_id, h.score) for h in search(
                    q.question, k=10, filters=filters, workspace=w.with_settings(settings), **overrides).hits]
                    for w in (built, loaded))
                asked += 1
                if a != b:
                    differ.append(q.question)
        out[label] = {"questions": asked, "differ": len(differ), "differences": differ[:20]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    bootstrap_environment()
    from ragloupe.index import derived_saved
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store
    from ragloupe.workspace import Workspace

    load_before = os.getloadavg()
    source = Settings.from_env(chroma_host="")
    scratch = Path(tempfile.mkdtemp(prefix="derived-saved-"))
    try:
        shutil.copytree(source.path("index_dir"), scratch / "index")
        settings = source.replace(index_dir=scratch / "index", runs_dir=scratch / "runs", logs_dir=scratch / "logs")
        shutil.rmtree(settings.path("index_dir") / derived_saved.SUBDIR, ignore_errors=True)
        store, embedder = open_store(settings), get_embedder(settings)
        chunks = store.count()
        built = Workspace.open(settings, store=store, embedder=embedder)
        built_parts = parts(built)
        loaded = Workspace.open(settings, store=store, embedder=embedder)
        loaded_parts = parts(loaded)
        sizes = {p.name.split("-", 1)[0]: p.stat().st_size for p in (settings.path("index_dir") / "derived").iterdir()}
        rankings = compare(built, loaded, settings)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {"what": "corpus views, periods and the unit index built from the chunks vs loaded from the saved "
                      "copies: start-up parts timed, top-10 (chunk id, score) of every gold question compared",
              "identical": all(r["differ"] == 0 for r in rankings.values()), "rankings": rankings,
              "built": built_parts, "loaded": loaded_parts, "saved_bytes": sizes, "chunks": chunks,
              "index_dir": str(source.path("index_dir")),
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
              "command": "RAGLOUPE_INDEX_DIR=... python " + " ".join(["benchmarks/derived_saved.py", *sys.argv[1:]])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("identical", "rankings", "built", "loaded", "saved_bytes")}, indent=1))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
