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
from typing import Mapping, Sequence

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


@dataclass(frozen=True)
class ChunkTable:
    """Every chunk of a store by id, and each document's chunk ids: what the dense engine looks up
    instead of asking Chroma for its hits' texts and evaluating a doc_id clause."""

    by_id: Mapping[str, Chunk]
    by_doc: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> "ChunkTable":
        by_doc: dict[str, list[str]] = {}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk.chunk_id)
        return cls({c.chunk_id: c for c in chunks}, {d: tuple(ids) for d, ids in by_doc.items()})


def dense_search(store, embedding: np.ndarray, n: int, filters: dict | None = None,
                 table: ChunkTable | None = None) -> list[EngineHit]:
    """The n chunks nearest to the query embedding, within the filters.

    With the store's ``table`` (Workspace.chunk_table) the hits' chunks come from it, and a
    doc_ids filter (the period filter's, or the caller's) is passed to Chroma as the chunk ids
    of those documents: Chroma then searches the same allowed set as under a ``doc_id $in``
    clause, so the same hits come back, without evaluating the clause over its metadata table
    (at 100k chunks 10 ms against 73 ms of CPU, and the clause's cost grows with the corpus).
    """
    if table is None:
        return [EngineHit(chunk, cosine_similarity(distance), float(distance))
                for chunk, distance in store.query(embedding, n, where=chroma_where(filters))]
    filters = dict(filters or {})
    doc_ids = list(filters.pop("doc_ids", None) or [])
    scope = [i for d in dict.fromkeys(doc_ids) for i in table.by_doc.get(d, ())] if doc_ids else None
    found = store.nearest(embedding, n, where=chroma_where(filters), ids=scope)
    missing = [i for i, _ in found if i not in table.by_id]  # written after the table was read
    extra = {c.chunk_id: c for c in store.get_chunks(missing)} if missing else {}
    return [EngineHit(table.by_id.get(i) or extra[i], cosine_similarity(distance), distance)
            for i, distance in found if i in table.by_id or i in extra]


def bm25_search(index: lexical.LexicalIndex, query: str, n: int,
                filters: dict | None = None, extra_tokens: Sequence[str] = ()) -> list[EngineHit]:
    """The n best BM25 chunks for the query (plus ``extra_tokens``); filters apply before ranking."""
    return [EngineHit(chunk, score)
            for chunk, score in lexical.search(index, query, n, filters, extra_tokens)]
