"""Embeddings page: how long fitting the 2-D map takes, UMAP against PCA, by chunk count.

    .venv/bin/python benchmarks/projection_speed.py [--sizes 1000,4000] [--index DIR]

Writes benchmarks/results/projection_speed.json.

Synthetic points, real reducers: unit vectors of the bundled model's dimension
(384) drawn around 40 random centres, so UMAP sees clustered data like real
chunk embeddings. fit_projection() is what the page calls; Projection.place()
of 10 new points (a query and its hits) is timed apart. UMAP's first call in a process
also compiles its numba kernels; that one-off cost is reported separately
(``umap_warmup_s``), since the app pays it once per server start. With
``--index`` the real index at DIR is projected too (its own chunk count).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.diagnostics.projections import fit_projection, project_index  # noqa: E402
from ragloupe.models import Chunk  # noqa: E402

DIMENSION = 384
SEED = 42
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "projection_speed.json"


def clustered_points(n: int, dim: int = DIMENSION, centres: int = 40, seed: int = SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centre_vectors = rng.normal(size=(centres, dim))
    points = centre_vectors[rng.integers(0, centres, n)] + rng.normal(scale=0.6, size=(n, dim))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32)


def time_fit(points: np.ndarray, method: str) -> dict:
    chunks = [Chunk(f"c{i}", "synthetic", 1, i, "", 0, "clean") for i in range(len(points))]
    started = time.perf_counter()
    projection = fit_projection(chunks, points, method, SEED)
    fit_s = time.perf_counter() - started
    started = time.perf_counter()
    projection.place(clustered_points(10, seed=7))
    return {"method": projection.method, "n": len(points), "fit_s": round(fit_s, 3),
            "place_10_s": round(time.perf_counter() - started, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--index", help="also project the real index in this directory")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    started = time.perf_counter()
    time_fit(clustered_points(200), "umap")
    warmup = time.perf_counter() - started

    results = [time_fit(clustered_points(n), method) for n in sizes for method in ("pca", "umap")]
    for row in results:
        print(f"{row['method']:>4} n={row['n']:>6}: fit {row['fit_s']:.2f} s, place 10 points "
              f"{row['place_10_s'] * 1000:.0f} ms", flush=True)
    real = []
    if args.index:
        from ragloupe.index.store import open_store

        store = open_store(Settings.from_env(index_dir=Path(args.index).resolve()))
        for method in ("pca", "umap"):
            started = time.perf_counter()
            projection = project_index(store, method=method, max_points=4000, seed=SEED)
            real.append({"method": projection.method, "n": projection.sample_size,
                         "total_s": round(time.perf_counter() - started, 3)})
            print(f"index {method}: {projection.sample_size} chunks in {real[-1]['total_s']:.2f} s")

    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps({
        "benchmark": "projection_speed", "command": "python " + " ".join(sys.argv),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "umap_warmup_s": round(warmup, 3), "synthetic": results, "index": real,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
