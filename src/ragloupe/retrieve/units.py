"""Whole-unit signals: each record (or PDF page) scored as a whole, not through its chunks.

Chunks are what the engines rank, but gold sets judge units. Ranking a unit
by its best chunk lets a long record that answers a question as a whole lose
to a short one sharing a few words with it: no single 256-token window of the
long record holds enough of the question. This module scores every unit in
scope directly, with two signals the chunk engines cannot give:

- ``unit_bm25``: Okapi BM25 over each unit's whole text (its title, then its
  chunks joined back into the original text, the chunk overlaps removed),
  with the same tokenizer as the chunk BM25;
- ``unit_dense``: the query's cosine similarity to the unit, from the chunk
  embeddings already in Chroma (nothing is re-embedded). Rules
  (Settings.unit_dense): ``centroid`` (the L2-normalised mean of the unit's
  chunk embeddings), ``max`` (its best chunk, over all its chunks rather than
  only those in the engine's window), ``mean`` (the mean chunk similarity),
  ``top2`` (the mean of its two best chunks).

``build_unit_index`` and ``unit_scores`` are pure; Workspace.unit_index is the
edge that reads the store (every chunk, then the embeddings), once per store
content like the chunk BM25 index.
How these signals are fused with the chunk view is ``aggregate.unit_view``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragloupe.index import lexical
from ragloupe.models import Chunk

DENSE_RULES = ("centroid", "max", "mean", "top2")
# Settings.unit_view: which units get whole-unit signals. "records": only the
# records of CSV/JSONL corpora (PDF pages keep the chunk view); "all": pages too.
VIEWS = ("none", "records", "all")
# The format of what build_unit_index returns as index.derived_saved keeps it: bump it by hand when the
# unit index changes, so no copy saved by older code is loaded.
UNIT_INDEX_FORMAT = 1


@dataclass
class UnitIndex:
    """Every unit of the chosen kinds: a BM25 over whole texts and its chunks' embeddings.

    ``lexical.chunks`` holds one pseudo-chunk per unit (chunk_id = unit id),
    so the chunk BM25's filters (documents, pages, quality) work unchanged.
    ``embeddings`` holds the unit's chunk embeddings, grouped by unit:
    unit ``i`` owns rows ``offsets[i]:offsets[i + 1]``.
    """

    units: list[str]
    lexical: lexical.LexicalIndex
    embeddings: np.ndarray  # (n_chunks, dim), float32, L2-normalised rows
    offsets: np.ndarray  # (n_units + 1,) int64
    centroids: np.ndarray  # (n_units, dim), float32, L2-normalised rows

    def __len__(self) -> int:
        return len(self.units)

    @functools.cached_property
    def held(self) -> frozenset:
        """The units that have whole-unit signals."""
        return frozenset(self.units)

    @functools.cached_property
    def locate(self) -> dict[str, tuple[str, int, str]]:
        """unit -> (doc_id, page, record_id), for units only the whole-unit signals found."""
        return {c.chunk_id: (c.doc_id, c.page, c.record_id) for c in self.lexical.chunks}


def joined_text(chunks: Sequence[Chunk]) -> str:
    """A unit's text rebuilt from its chunks (in position order), each overlap kept once.

    Chunks are substrings of the page cut at token offsets, so the overlap
    between two neighbours is a suffix of the first that is a prefix of the
    second; the longest such is dropped from the second.
    """
    parts: list[str] = []
    previous = ""
    for chunk in sorted(chunks, key=lambda c: c.position):
        text = chunk.text
        overlap = next((n for n in range(min(len(previous), len(text)), 0, -1)
                        if previous.endswith(text[:n])), 0)
        parts.append(text[overlap:] if overlap else (" " + text if parts else text))
        previous = text
    return "".join(parts)


def build_unit_index(chunks: Sequence[Chunk], embeddings: np.ndarray, *, k1: float = 1.5,
                     b: float = 0.75, backend: str = "bm25s") -> UnitIndex:
    """Group chunks by unit and index each unit as a whole. ``embeddings[i]`` belongs to ``chunks[i]``."""
    rows_by_unit: dict[str, list[int]] = {}
    for row, chunk in enumerate(chunks):
        rows_by_unit.setdefault(chunk.unit, []).append(row)
    units = sorted(rows_by_unit)
    pseudo, order, offsets = [], [], [0]
    for unit in units:
        rows = sorted(rows_by_unit[unit], key=lambda r: chunks[r].position)
        members = [chunks[r] for r in rows]
        first = members[0]
        title = first.title or (first.section if first.record_id else "")
        text = joined_text(members)
        pseudo.append(Chunk(
            chunk_id=unit, doc_id=first.doc_id, page=first.page, position=0,
            text=f"{title}\n{text}" if title else text, n_tokens=sum(c.n_tokens for c in members),
            quality=first.quality, section=first.section, record_id=first.record_id,
            title=first.title, source_sha256=first.source_sha256))
        order += rows
        offsets.append(len(order))
    matrix = np.asarray(embeddings, dtype=np.float32)[order] if order else np.zeros((0, 0), np.float32)
    bounds = np.asarray(offsets, dtype=np.int64)
    centroids = (np.add.reduceat(matrix, bounds[:-1], axis=0) if units
                 else np.zeros((0, matrix.shape[1] if matrix.ndim == 2 else 0), np.float32))
    norms = np.linalg.norm(centroids, axis=1, keepdims=True) if units else np.ones((0, 1))
    centroids = (centroids / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return UnitIndex(units=units, lexical=lexical.build_index(pseudo, k1=k1, b=b, backend=backend),
                     embeddings=matrix, offsets=bounds, centroids=centroids)


def dense_unit_scores(index: UnitIndex, query_embedding: np.ndarray, rule: str) -> np.ndarray:
    """Cosine-based score of every unit (one per ``index.units``) under ``rule``."""
    if rule not in DENSE_RULES:
        raise ValueError(f"unknown unit dense rule {rule!r}; use one of {', '.join(DENSE_RULES)}")
    if not len(index):
        return np.zeros(0)
    query = np.asarray(query_embedding, dtype=np.float32)
    if rule == "centroid":
        return index.centroids @ query
    sims = index.embeddings @ query
    starts = index.offsets[:-1]
    if rule == "max":
        return np.maximum.reduceat(sims, starts)
    if rule == "mean":
        return np.add.reduceat(sims, starts) / np.diff(index.offsets)
    out = np.empty(len(index))
    for i, (lo, hi) in enumerate(zip(index.offsets[:-1], index.offsets[1:])):
        out[i] = np.sort(sims[lo:hi])[::-1][:2].mean()
    return out


def unit_scores(index: UnitIndex, query: str, query_embedding: np.ndarray | None,
                filters: dict | None, dense_rule: str, n: int) -> dict[str, list[tuple[str, float]]]:
    """The ``n`` best units in scope by each whole-unit signal, best first, as (unit, score).

    ``unit_bm25`` lists only units sharing a term with the query (like the
    chunk BM25); ``unit_dense`` is left out when no query embedding is given.
    """
    out = {"unit_bm25": [(c.chunk_id, s) for c, s in lexical.search(index.lexical, query, n, filters)]}
    if query_embedding is not None and len(index):
        scores = dense_unit_scores(index, query_embedding, dense_rule)
        keep = index.lexical.mask(filters)
        # lexical orders its pseudo-chunks by id, and units are sorted: the rows line up.
        candidates = np.flatnonzero(keep) if keep is not None else np.arange(len(index))
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:n]
        out["unit_dense"] = [(index.units[i], float(scores[i])) for i in order]
    return out
