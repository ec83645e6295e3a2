"""2-D maps of the chunk embeddings, for the Embeddings page.

The reducer is fitted once on the chunk embeddings of the index (a seeded
sample of them when the index is larger than ``max_points``) and then reused
to place a query and its hits on the same map, so a query lands where its
neighbours are rather than on a map refitted around it.

Two methods: UMAP (umap-learn, cosine metric), which keeps local
neighbourhoods and is what people expect from an embedding map, and PCA,
linear and near-instant, the fast choice for large indexes or a quick look.

Placing new points: PCA's transform is exact and instant. UMAP's own
transform() is not usable interactively: above 4096 fitted points it first
builds an approximate-neighbour search index, which took minutes on two
cores (benchmarks/projection_speed.py). So a new point goes where UMAP's
transform starts it anyway: at the similarity-weighted mean position of its
nearest fitted chunks (cosine, in the embedding space). It lands among the
chunks it resembles, which is what the map is for.

UMAP's first fit in a process compiles about a hundred numba functions
(~9 s alone on two cores, far more beside other work); umap-learn asks numba
to keep only one of them on disk. ``_umap()`` turns numba's disk cache on for
the rest before their first call, so only the first map on a machine pays
the compilation and every later process (each new app server) loads it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloupe.errors import RagloupeError
from ragloupe.models import Chunk

METHODS = ("umap", "pca")

# UMAP needs a neighbourhood to fit; below this many chunks the map is PCA.
UMAP_MIN_POINTS = 10
PLACE_NEIGHBOURS = 10  # fitted chunks a new point is averaged over (UMAP maps)
FIRST_WORDS = 12


@dataclass(frozen=True)
class Projection:
    """A fitted 2-D map: where each (sampled) chunk sits, and how to place new vectors."""

    method: str  # the method actually used (PCA stands in for UMAP on tiny indexes)
    chunks: tuple[Chunk, ...]  # the chunks on the map, in the order of ``coords``
    coords: np.ndarray  # shape (len(chunks), 2)
    total: int  # chunks in the index; more than len(chunks) when sampled
    reducer: Any  # fitted sklearn PCA or umap.UMAP (None for a one-chunk map)
    embeddings: np.ndarray  # the fitted chunks' embeddings, for placing new points
    note: str = ""  # anything the page should say about how the map was made

    @property
    def sample_size(self) -> int:
        return len(self.chunks)

    @property
    def sampled(self) -> bool:
        return self.sample_size < self.total

    def place(self, vectors: np.ndarray) -> np.ndarray:
        """Map new embeddings (a query, hits, gold chunks) with the fitted reducer."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim == 1:
            vectors = vectors[None, :]
        if len(vectors) == 0:
            return np.zeros((0, 2), dtype=np.float32)
        if self.reducer is None:
            return np.zeros((len(vectors), 2), dtype=np.float32)
        if self.method == "pca":
            return np.asarray(self.reducer.transform(vectors), dtype=np.float32)
        return place_by_neighbours(vectors, self.embeddings, self.coords)


def place_by_neighbours(vectors: np.ndarray, embeddings: np.ndarray, coords: np.ndarray,
                        k: int = PLACE_NEIGHBOURS) -> np.ndarray:
    """Each vector at the similarity-weighted mean map position of its k nearest fitted points."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    fitted = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    similarity = unit @ fitted.T
    k = min(k, len(fitted))
    nearest = np.argsort(-similarity, axis=1)[:, :k]
    placed = np.empty((len(vectors), 2), dtype=np.float32)
    for row, neighbours in enumerate(nearest):
        # Shifted so the least similar neighbour still counts a little and weights stay positive.
        weights = similarity[row, neighbours] - similarity[row, neighbours].min() + 1e-3
        placed[row] = (coords[neighbours] * weights[:, None]).sum(axis=0) / weights.sum()
    return placed


def sample_ids(ids: Sequence[str], max_points: int, seed: int) -> list[str]:
    """A seeded sample of at most ``max_points`` ids, in sorted order.

    Sorting first makes the sample depend only on which ids exist, not on the
    order the store happened to return them in.
    """
    ordered = sorted(set(ids))
    if max_points <= 0 or len(ordered) <= max_points:
        return ordered
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(ordered), size=max_points, replace=False)
    return [ordered[i] for i in sorted(picked)]


def fit_reducer(embeddings: np.ndarray, method: str, seed: int) -> tuple[Any, np.ndarray, str, str]:
    """Fit a 2-D reducer. Returns (reducer, coords, method used, note)."""
    if method not in METHODS:
        raise RagloupeError(f"unknown projection method {method!r}: use one of {', '.join(METHODS)}")
    embeddings = np.asarray(embeddings, dtype=np.float32)
    n = len(embeddings)
    if n == 1:
        return None, np.zeros((1, 2), dtype=np.float32), "pca", "one chunk: nothing to project"
    note = ""
    if method == "umap" and n < UMAP_MIN_POINTS:
        method, note = "pca", f"only {n} chunks: UMAP needs at least {UMAP_MIN_POINTS}, PCA used"
    if method == "pca":
        from sklearn.decomposition import PCA

        reducer = PCA(n_components=2, svd_solver="randomized", random_state=seed)
        coords = reducer.fit_transform(embeddings)
    else:
        umap = _umap()
        # random_state makes the map repeatable (at the cost of UMAP's parallelism);
        # cosine matches how the dense engine compares embeddings.
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, n - 1), min_dist=0.1,
                            metric="cosine", random_state=seed, n_jobs=1)
        coords = reducer.fit_transform(embeddings)
    return reducer, np.asarray(coords, dtype=np.float32), method, note


@functools.cache
def _umap() -> Any:
    """umap-learn, with numba's disk cache on for every compiled function it defines."""
    import umap
    from numba.core.registry import CPUDispatcher

    for name, module in list(sys.modules.items()):
        if name == "umap" or name.startswith("umap."):
            for function in list(vars(module).values()):
                # One already compiled in this process keeps its code as it is.
                if isinstance(function, CPUDispatcher) and not function.overloads:
                    function.enable_caching()
    return umap


def fit_projection(chunks: Sequence[Chunk], embeddings: np.ndarray, method: str, seed: int,
                   total: int | None = None) -> Projection:
    """A map of these chunks (one embedding row each); ``total`` is the index size when sampled."""
    embeddings = np.asarray(embeddings, dtype=np.float32)
    reducer, coords, used, note = fit_reducer(embeddings, method, seed)
    total = len(chunks) if total is None else total
    if len(chunks) < total:
        sample_note = f"a seeded sample of {len(chunks):,} of {total:,} chunks"
        note = f"{note}; {sample_note}" if note else sample_note
    return Projection(method=used, chunks=tuple(chunks), coords=coords, total=total,
                      reducer=reducer, embeddings=embeddings, note=note)


def project_index(store: Any, method: str = "umap", max_points: int = 4000,
                  seed: int = 42) -> Projection:
    """Fit a map on the index's chunk embeddings (sampled down to ``max_points``)."""
    all_ids = store.ids()
    if not all_ids:
        raise RagloupeError("the index is empty: index some documents on the Index page first")
    ids = sample_ids(all_ids, max_points, seed)
    # Only the sampled chunks are read: a 100k-chunk index costs one id scan, not 100k texts.
    chunks = store.get_chunks(ids)
    embeddings = store.get_embeddings([chunk.chunk_id for chunk in chunks])
    return fit_projection(chunks, embeddings, method, seed, total=len(all_ids))


def first_words(text: str, n: int = FIRST_WORDS) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def map_points(projection: Projection) -> list[dict[str, Any]]:
    """One row per chunk on the map: coordinates plus what to colour and hover by."""
    return [
        {"x": float(x), "y": float(y), "chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "unit": chunk.unit,
         "page": chunk.page, "section": chunk.section or "(none)", "quality": chunk.quality,
         "first_words": first_words(chunk.text)}
        for chunk, (x, y) in zip(projection.chunks, projection.coords)
    ]
