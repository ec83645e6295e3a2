"""The Embeddings page's maps: seeded sampling, fitted reducers that place new points."""

from __future__ import annotations

import numpy as np
import pytest

from ragloupe.diagnostics.projections import (UMAP_MIN_POINTS, fit_projection, fit_reducer,
                                              map_points, project_index, sample_ids)
from ragloupe.errors import RagloupeError
from ragloupe.models import Chunk


def _clusters(n_per: int = 30, dim: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated, L2-normalised clusters (like sentence embeddings) and their centres."""
    rng = np.random.default_rng(seed)
    centres = np.eye(dim, dtype=np.float32)[:3] * 5
    points = np.concatenate([c + rng.normal(0, 0.3, (n_per, dim)) for c in centres])
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32), centres / np.linalg.norm(centres, axis=1, keepdims=True)


def test_sample_is_seeded_and_ignores_the_store_order():
    ids = [f"c{i:04d}" for i in range(1000)]
    first = sample_ids(ids, 100, seed=7)
    assert len(first) == 100 and len(set(first)) == 100
    assert first == sample_ids(list(reversed(ids)), 100, seed=7)
    assert first != sample_ids(ids, 100, seed=8)


def test_sample_keeps_every_chunk_under_the_limit():
    ids = ["b", "a", "c"]
    assert sample_ids(ids, 10, seed=1) == ["a", "b", "c"]


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(f"c{i:03d}", f"doc{i // 30}", 1 + i % 30, 0, f"text {i}", 2, "clean")
            for i in range(n)]


@pytest.mark.parametrize("method", ["pca", "umap"])
def test_query_is_placed_in_the_cluster_it_resembles(method):
    points, centres = _clusters()
    projection = fit_projection(_chunks(len(points)), points, method, seed=42)
    assert projection.method == method and projection.coords.shape == (len(points), 2)
    # A query close to the second cluster's centre must land nearer that cluster's
    # points on the map than the other two clusters' points.
    query = centres[1] + 0.05 * centres[0]
    placed = projection.place(query / np.linalg.norm(query))[0]
    cluster_means = [projection.coords[i * 30:(i + 1) * 30].mean(axis=0) for i in range(3)]
    distances = [np.linalg.norm(placed - mean) for mean in cluster_means]
    assert int(np.argmin(distances)) == 1


def test_umap_places_a_fitted_chunk_among_its_neighbours():
    points, _ = _clusters()
    projection = fit_projection(_chunks(len(points)), points, "umap", seed=42)
    placed = projection.place(points[5])[0]
    own_cluster = projection.coords[:30]
    spread = np.linalg.norm(own_cluster - own_cluster.mean(axis=0), axis=1).max()
    assert np.linalg.norm(placed - own_cluster.mean(axis=0)) <= spread


def test_tiny_index_uses_pca_and_says_why():
    points, _ = _clusters(n_per=2)
    assert len(points) < UMAP_MIN_POINTS
    _, coords, used, note = fit_reducer(points, "umap", seed=42)
    assert used == "pca" and "UMAP needs" in note and coords.shape == (6, 2)


def test_unknown_method_is_a_readable_error():
    points, _ = _clusters(n_per=4)
    with pytest.raises(RagloupeError, match="unknown projection method"):
        fit_reducer(points, "tsne", seed=1)


def test_index_map_is_sampled_with_a_stated_size(demo_index):
    from ragloupe.index.store import open_store

    store = open_store(demo_index)
    projection = project_index(store, method="pca", max_points=50, seed=3)
    assert projection.total == store.count() > 50
    assert projection.sample_size == 50 and projection.sampled
    assert "50" in projection.note and f"{projection.total:,}" in projection.note
    rows = map_points(projection)
    assert {row["chunk_id"] for row in rows} == {c.chunk_id for c in projection.chunks}
    # A chunk's own embedding placed with the fitted reducer lands on its point.
    chunk = projection.chunks[0]
    placed = projection.place(store.get_embeddings([chunk.chunk_id]))
    assert np.allclose(placed[0], projection.coords[0], atol=1e-4)


_SECOND_PROCESS = """
import sys
import numpy as np
from ragloupe.diagnostics.projections import fit_reducer
from numba.core.registry import CPUDispatcher

fit_reducer(np.load(sys.argv[1]), "umap", seed=42)
# Those compiled in this process and kept on disk (two tiny ones are compiled at import).
used = [f for name, m in list(sys.modules.items()) if name.split(".")[0] == "umap"
        for f in vars(m).values() if isinstance(f, CPUDispatcher) and f.overloads and f.stats.cache_path]
print(len(used), sum(sum(f.stats.cache_hits.values()) for f in used),
      sum(sum(f.stats.cache_misses.values()) for f in used))
"""


def test_a_later_process_loads_umaps_compiled_code_instead_of_compiling_it(tmp_path):
    """UMAP's numba functions are compiled once on a machine: the next app server's first map
    loads them from numba's disk cache (umap-learn itself caches one of them)."""
    import subprocess
    import sys

    points, _ = _clusters()
    fit_reducer(points, "umap", seed=42)  # compiles, or loads what an earlier process compiled
    np.save(tmp_path / "points.npy", points)
    done = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, str(tmp_path / "points.npy")],
                          capture_output=True, text=True, timeout=300, check=True)
    used, hits, misses = map(int, done.stdout.split()[-3:])
    assert used >= 5 and hits >= used and misses == 0
