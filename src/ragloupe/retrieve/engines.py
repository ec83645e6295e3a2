"""The two retrieval engines over the store: dense (Chroma) and BM25 (over Chroma's texts).

Each returns its own ranked candidate list, best first, with the engine's
raw score; fusion and reranking happen later, in replay.py. The chunk BM25
searched here is the workspace's (Workspace.lexical).

Scores and their meaning:
- dense: ``score`` is the cosine similarity, 1 - cosine distance, clipped
  to [-1, 1] (float rounding in the index can step a hair outside);
  ``distance`` is Chroma's cosine distance as returned, in [0, 2].
- bm25: ``score`` is the Okapi BM25 score (>= 0, unbounded, comparable only
  within one query); chunks scoring 0 are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragloupe.index import lexical
from ragloupe.models import Chunk

ENGINES = ("dense", "bm25")


@dataclass(frozen=True)
class EngineHit:
    chunk: Chunk
    score: float  # see the module docstring for each engine's meaning
    distance: float | None = None  # dense only


def chroma_where(filters: dict | None) -> dict | None:
    """Turn search filters into a Chroma ``where`` clause (None: no filter).

    filters: {"doc_ids": [...], "pages": (lo, hi), "quality": [...]}; any may be absent.
    """
    if not filters:
        return None
    clauses: list[dict] = []
    doc_ids = list(filters.get("doc_ids") or [])
    if doc_ids:
        clauses.append({"doc_id": {"$in": doc_ids}})
    if filters.get("pages"):
        lo, hi = filters["pages"]
        if lo is not None:
            clauses.append({"page": {"$gte": int(lo)}})
        if hi is not None:
            clauses.append({"page": {"$lte": int(hi)}})
    quality = list(filters.get("quality") or [])
    if quality:
        clauses.append({"quality": {"$in": quality}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def cosine_similarity(distance: float) -> float:
    """1 - cosine distance, clipped to the similarity's range [-1, 1]."""
    return float(np.clip(1.0 - distance, -1.0, 1.0))


def dense_search(store, embedding: np.ndarray, n: int, filters: dict | None = None) -> list[EngineHit]:
    """The n chunks nearest to the query embedding, within the filters."""
    return [EngineHit(chunk, cosine_similarity(distance), float(distance))
            for chunk, distance in store.query(embedding, n, where=chroma_where(filters))]


def bm25_search(index: lexical.LexicalIndex, query: str, n: int,
                filters: dict | None = None, extra_tokens: Sequence[str] = ()) -> list[EngineHit]:
    """The n best BM25 chunks for the query (plus ``extra_tokens``); filters apply before ranking."""
    return [EngineHit(chunk, score)
            for chunk, score in lexical.search(index, query, n, filters, extra_tokens)]
