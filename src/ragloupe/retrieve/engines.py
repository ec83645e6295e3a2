"""What an engine is (the protocol every engine keeps), and ragloupe's two built-in engines.

An engine has a ``name``, says what its score means (``score_meaning``) and
answers ``search(question, scope, k)`` with its ranked candidates, best first,
each an ``EngineHit`` carrying the engine's raw score. Fusion, evaluation, the
failure taxonomy and every view read engines by name from what fetch() returned
(Candidates.lists, Hit.per_engine); the registry (retrieve/registry.py) says
which engines exist: these built-ins, plugins of the entry-point group
``ragloupe.engines``, and outside systems attached by name (ragloupe.attached).

The built-ins search the workspace's store: dense (Chroma) and BM25 (over
Chroma's texts, the workspace's Workspace.lexical). Fusion and reranking
happen later, in replay.py.

Scores and their meaning:
- dense: ``score`` is the cosine similarity, 1 - cosine distance, clipped
  to [-1, 1] (float rounding in the index can step a hair outside);
  ``distance`` is Chroma's cosine distance as returned, in [0, 2].
- bm25: ``score`` is the Okapi BM25 score (>= 0, unbounded, comparable only
  within one query); chunks scoring 0 are not listed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ragloupe.index import lexical
from ragloupe.models import Chunk
from ragloupe.retrieve.modes import timed

# The dense engine's sentence grain rescores this many of Chroma's nearest chunks (more when asked for more).
SENTENCE_POOL = 100
DENSE_MEANING = ("cosine similarity of the question's embedding with the chunk's, blended with its best sentence's "
                 "(RAGLOUPE_DENSE_SENTENCE_WEIGHT; 0: the chunk's alone), in [-1, 1]")
BM25_MEANING = "Okapi BM25 score of the chunk for the question (>= 0, comparable only within one question)"


@dataclass(frozen=True)
class EngineHit:
    chunk: Chunk
    score: float  # the engine's raw score: see its score_meaning
    distance: float | None = None  # dense only


@dataclass(frozen=True)
class Question:
    """What an engine is asked: the text to search and what the question analysis added to it."""

    text: str  # the question, or its rewrite when the mode asked for one and it was used
    asked: str = ""  # the question as the user asked it (a run file's engine finds its query by it)
    expansion: tuple[str, ...] = ()  # index tokens of the period variants the question lacks (BM25 reads them)


@dataclass
class Scope:
    """Where an engine searches: the filters, the face's workspace, and what this fetch shares.

    ``filters`` are normalised (modes.normalise_filters): doc_ids, pages (lo, hi), quality; an
    engine that cannot honour one says so in its docs (an outside system's chunks have no
    quality). ``running`` names every engine of this fetch. An engine may add its own stages to
    ``timings`` (fetch times the rest of its call under its name) and leave by-products for
    the stages after it in ``shared`` ("query_vector", "chunk_bm25").
    """

    filters: dict
    workspace: Any
    config: Any  # stage_configs.EngineConfig: the BM25 parameters the built-ins read
    running: frozenset = frozenset()
    timings: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """One retrieval engine: a name, what its score means, and its ranked candidates for a question."""

    name: str
    score_meaning: str

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        """At most ``k`` candidates, best first, each with the engine's raw score."""
        ...


class DenseEngine:
    """Nearest chunks to the question's embedding in the workspace's store."""

    name = "dense"
    score_meaning = DENSE_MEANING

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        workspace = scope.workspace
        with timed(scope.timings, "setup"):  # loads the model on the workspace's first call only
            workspace.embedder
        with timed(scope.timings, "query_embedding"):
            embedding = workspace.dense_query_vector(question.text, scope.config.query_adapter)
        scope.shared["query_vector"] = embedding
        # The BM25 reads every chunk anyway: the dense hits are looked up in the same chunks.
        table = workspace.chunk_table() if "bm25" in scope.running else None
        weight = scope.config.dense_sentence_weight
        if weight <= 0:
            return dense_search(workspace.store, embedding, k, scope.filters, table)
        # Rescored from the same SENTENCE_POOL nearest chunks whatever k is, so a shorter list is the
        # head of a longer one (search() at window 50 == replay() of a fetch at 100).
        hits = dense_search(workspace.store, embedding, max(k, SENTENCE_POOL), scope.filters, table)
        with timed(scope.timings, "sentences"):
            return with_best_sentence(hits, embedding, weight, workspace.sentences_of)[:k]


def with_best_sentence(hits: Sequence[EngineHit], query: np.ndarray, weight: float,
                       sentences_of) -> list[EngineHit]:
    """The dense hits rescored as (1 - weight) x the chunk's own cosine + weight x its best sentence's
    (index/sentences.py), best first; a chunk with no sentence vectors keeps its own. The distance
    stays the chunk's own embedding's. ``sentences_of(doc_id)``: that document's DocSentences."""
    per_doc = {doc_id: sentences_of(doc_id) for doc_id in dict.fromkeys(h.chunk.doc_id for h in hits)}
    rescored = []
    for hit in hits:
        best = per_doc[hit.chunk.doc_id].best(hit.chunk.chunk_id, query)
        score = hit.score if best is None else (1.0 - weight) * hit.score + weight * best
        rescored.append(EngineHit(hit.chunk, float(score), hit.distance))
    return sorted(rescored, key=lambda h: -h.score)


class BM25Engine:
    """The chunk BM25 over every chunk of the workspace's store."""

    name = "bm25"
    score_meaning = BM25_MEANING

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        config = scope.config
        with timed(scope.timings, "bm25_index"):
            corpus = scope.workspace.lexical(config.bm25_k1, config.bm25_b, config.bm25_backend)
        scope.shared["chunk_bm25"] = corpus
        return bm25_search(corpus, question.text, k, scope.filters, question.expansion)


BUILT_IN: tuple[Engine, ...] = (DenseEngine(), BM25Engine())
ENGINES = tuple(engine.name for engine in BUILT_IN)  # the built-ins, in the order fetch runs them


def run_engine(engine: Engine, question: Question, scope: Scope, k: int) -> list[EngineHit]:
    """``engine.search``, its time kept under its name beside the sub-stages it recorded itself."""
    recorded = sum(scope.timings.values())
    started = time.perf_counter()
    hits = list(engine.search(question, scope, k))
    own = time.perf_counter() - started - (sum(scope.timings.values()) - recorded)
    scope.timings[engine.name] = scope.timings.get(engine.name, 0.0) + own
    return hits[:k]


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

