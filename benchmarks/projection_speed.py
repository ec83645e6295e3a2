"""Embeddings page: how long fitting the 2-D map takes, UMAP against PCA, by chunk count.

    .venv/bin/python benchmarks/projection_speed.py [--sizes 1000,4000] [--index DIR]

Writes benchmarks/results/projection_speed.json.

Synthetic points, real reducers: unit vectors of the bundled model's dimension
(384) drawn around 40 random centres, so UMAP sees clustered data like real
chunk embeddings. fit_projection() is what the page calls; Projection.place()
of 10 new points (a query and its hits) is timed apart. UMAP's first call
compiles its numba kernels, which numba then keeps on disk: that one-off cost
is reported apart (``umap_first_fit_s``: a 200-point fit in a new process, on
a machine whose numba cache is empty, then in a second process, like the next
app server), both in child processes sharing an empty ``NUMBA_CACHE_DIR``.
With ``--index`` the real index at DIR is projected too (its own chunk count).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
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


FIRST_FIT = """
import time
from projection_speed import clustered_points, time_fit  # this script, as a module
started = time.perf_counter()
time_fit(clustered_points(200), "umap")
print(round(time.perf_counter() - started, 3))
"""


def first_fits() -> dict:
    """A 200-point UMAP fit in a first and a second new process, numba's disk cache empty before."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache,
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
        times = [float(subprocess.run([sys.executable, "-c", FIRST_FIT], env=env, check=True,
                                      capture_output=True, text=True).stdout.split()[-1])
                 for _ in range(2)]
    return {"empty_cache": times[0], "later_process": times[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--index", help="also project the real index in this directory")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    first = first_fits()
    print(f"umap's first 200-point fit in a process: {first['empty_cache']:.1f} s with numba's cache "
          f"empty, {first['later_process']:.1f} s in the next process", flush=True)
    time_fit(clustered_points(200), "umap")  # this process's compilation (or cache load) is not timed below

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
        "umap_first_fit_s": first, "synthetic": results, "index": real,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
