"""The Embeddings page's map of a real index: a seeded sample, and chunks placed where they were fitted.

Apart from tests/test_projections.py, which needs no demo index: the suite runs that file early,
so UMAP's numba functions are compiled (and kept on disk) before the app servers' first maps.
"""

from __future__ import annotations

import numpy as np

from ragloupe.diagnostics.projections import map_points, project_index


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
