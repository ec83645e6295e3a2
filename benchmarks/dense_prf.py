"""Rocchio pseudo-relevance feedback in the dense space, tried as a signal past term overlap.

    .venv/bin/python benchmarks/dense_prf.py [--grid 0.3:1,0.5:3,0.5:5,1.0:3] [--out PATH]

On the index RAGLOUPE_INDEX_DIR points at (the benchmark index of benchmarks/adapt.py: the
Grampian PDFs, natech/guidance.csv and the manuals). For each (beta, m) of the grid, the dense
engine searches twice: once with the question's embedding, then with that embedding plus beta
times the mean of the first m chunks' embeddings (within the same filters), renormalised
(Rocchio 1971; on dense retrievers: Li et al., "Pseudo Relevance Feedback with Deep Language
Models and Dense Retrievers", 2021). Every tuning family of benchmarks/adapt.py is searched in
dense and the default hybrid mode, each question in its own document, against beta 0 (the
shipped engine): Hit@1 per family and the paired permutation p-value of the difference.

The feedback is patched onto the dense engine for this script only: it is not a setting of
ragloupe, because it measured lower (benchmarks/results/dense_prf.json).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

sys.path.insert(0, str(Path(__file__).parent))
import adapt as bench  # noqa: E402  (its families, measure(), variants_table(), write_variants())

from ragloupe.retrieve import engines  # noqa: E402

SHIPPED = engines.DenseEngine.search


def with_feedback(beta: float, m: int):
    """DenseEngine.search with Rocchio feedback from its own first m hits."""
    def search(self, question, scope, k):
        if beta <= 0:
            return SHIPPED(self, question, scope, k)
        workspace = scope.workspace
        workspace.embedder
        embedding = workspace.query_vector(question.text)
        table = workspace.chunk_table() if "bm25" in scope.running else None
        first = engines.dense_search(workspace.store, embedding, m, scope.filters, table)
        if first:
            vectors = np.asarray(workspace.store.get_embeddings([h.chunk.chunk_id for h in first]))
            embedding = embedding + beta * vectors.mean(axis=0)
            embedding = embedding / np.linalg.norm(embedding)
        scope.shared["query_vector"] = embedding
        return engines.dense_search(workspace.store, embedding, k, scope.filters, table)
    return search


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default="0.3:1,0.5:3,0.5:5,1.0:3", help="beta:m pairs")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/dense_prf.json")
    args = parser.parse_args()
    fams = {name: spec for name, spec in bench.families().items() if spec["tuning"]}
    settings = get_settings()
    runs = {}
    for point in ["0:0"] + args.grid.split(","):
        beta, m = float(point.split(":")[0]), int(point.split(":")[1])
        engines.DenseEngine.search = with_feedback(beta, m)
        runs[point] = bench.measure(settings, fams, ("dense", "hybrid"))
        print(point, file=sys.stderr, flush=True)
    engines.DenseEngine.search = SHIPPED
    table = bench.variants_table(runs, fams, "0:0", "p_vs_shipped")
    result = {"command": "python benchmarks/dense_prf.py --grid " + args.grid,
              "index_dir": str(settings.path("index_dir")), "embedding_model": settings.embedding_model,
              "default": f"{settings.mode}, {settings.fusion}", "loadavg": [round(x, 2) for x in os.getloadavg()],
              "grid": "beta:m (0:0 is the shipped dense engine)", "hit@1": table}
    bench.write_variants(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
