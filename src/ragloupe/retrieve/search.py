"""One entry point for retrieval: search(query, mode, k, filters, settings) -> Ranking.

The flow, one way: (rewrite) -> engines over their full candidate windows
-> fusion -> (rerank) -> dynamic cut -> page view -> top k. Every hit keeps
what each stage said about it (each engine's rank and raw score, the fused
score, the reranker's score and the places it moved), so a person can see
why the right chunk lost. Timings are kept per stage, in seconds: setup
(opening the store, loading the embedding model on first use), rewrite,
query_embedding (near 0 when this process embedded the same text recently:
query vectors are cached), query_analysis (fiscal periods, amounts and
codes the question names when Settings.query_analysis is on, and their
BM25 variants when Settings.query_expansion is), dense, bm25_index (the
cached BM25 index, rebuilt when the store changed), bm25, fusion, rerank,
period (each hit's document period, Settings.period_filter's choice of the
documents of the question's period and Settings.period_boost's preference
for them), aggregate (cut and page view) and total.

Modes name the engines and the optional stages: ``dense``, ``bm25``,
``hybrid`` (dense + bm25, fused), ``+rerank`` (cross-encoder when
Settings.cross_encoder_model is set, else the lexical reranker) and
``+rewrite`` (LLM query rewrite appended to the question).
Settings.lexical_rerank=true runs the lexical reranker in the modes without
``+rerank`` too, so the evaluation can switch it on everywhere at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import numpy as np

from ragloupe.config import Settings, get_settings
from ragloupe.errors import RagloupeError
from ragloupe.index import lexical
from ragloupe.models import EngineScore, Hit, LearnedScore, Ranking
from ragloupe.retrieve import (aggregate, cut, doc_periods, engines, fusion, prefer_tables,
                               query_analysis, rerank, units)
from ragloupe.retrieve.rewrite import rewrite_query

BASES = {"dense": ("dense",), "bm25": ("bm25",), "hybrid": ("dense", "bm25")}
MODES = ("dense", "bm25", "hybrid", "hybrid+rerank",
         "dense+rewrite", "bm25+rewrite", "hybrid+rewrite", "hybrid+rerank+rewrite")
FILTER_KEYS = ("doc_ids", "pages", "quality")


class InvalidSearch(RagloupeError):
    """A search was asked for with a mode, k, filter or setting that does not exist."""


@dataclass(frozen=True)
class ModePlan:
    engines: tuple[str, ...]
    rerank: bool
    rewrite: bool


def parse_mode(mode: str) -> ModePlan:
    """'hybrid+rerank+rewrite' -> engines (dense, bm25), rerank, rewrite (flags in any order)."""
    base, *flags = [part.strip().lower() for part in mode.split("+")]
    unknown = [f for f in flags if f not in ("rerank", "rewrite")]
    if base not in BASES or unknown or len(set(flags)) != len(flags):
        raise InvalidSearch(f"unknown search mode {mode!r}; use one of: {', '.join(MODES)}")
    return ModePlan(BASES[base], "rerank" in flags, "rewrite" in flags)


def normalise_filters(filters: dict | None) -> dict:
    """Check and tidy filters: doc_ids and quality as lists, pages as (lo, hi) ints or None."""
    if not filters:
        return {}
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise InvalidSearch(f"unknown filter {unknown[0]!r}; filters are {', '.join(FILTER_KEYS)}")
    out: dict[str, Any] = {}
    for key in ("doc_ids", "quality"):
        value = filters.get(key)
        if value:
            out[key] = [value] if isinstance(value, str) else [str(v) for v in value]
    if filters.get("pages"):
        try:
            lo, hi = filters["pages"]
            lo, hi = (int(lo) if lo is not None else None), (int(hi) if hi is not None else None)
        except (TypeError, ValueError):
            raise InvalidSearch(f"page filter must be (first, last), got {filters['pages']!r}") from None
        if lo is not None and hi is not None and lo > hi:
            raise InvalidSearch(f"page filter starts after it ends: {lo}-{hi}")
        out["pages"] = (lo, hi)
    return out


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def search(query: str, mode: str | None = None, k: int | None = None, filters: dict | None = None,
           settings: Settings | None = None, *, explain: bool = False, store=None, embedder=None,
           **overrides: Any) -> Ranking:
    """Rank chunks for ``query``; see the module docstring for the flow.

    ``overrides`` replace settings for this call only (e.g. ``fusion="minmax"``,
    ``weight_bm25=2``, ``page_aggregation="sum"``), so a sweep needs no
    re-indexing. ``explain`` also runs the engines the mode does not use, so
    every hit shows where the other engine would have put it (the CLI table
    does this). ``store`` and ``embedder`` can be passed to reuse open ones.
    """
    settings = settings or get_settings()
    if overrides:
        settings = settings.replace(**overrides)
    mode = mode or settings.mode
    plan = parse_mode(mode)
    k = int(k if k is not None else settings.top_k)
    if k < 1:
        raise InvalidSearch(f"k must be at least 1, got {k}")
    if not query or not query.strip():
        raise InvalidSearch("the query is empty")
    _check_settings(settings)
    filters = normalise_filters(filters)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    search_text, rewrite = query, None
    if plan.rewrite:
        with _timed(timings, "rewrite"):
            rewrite = rewrite_query(query, settings)
        search_text = rewrite.search_text
    analysis, expansion = None, []
    if settings.query_analysis:
        with _timed(timings, "query_analysis"):
            analysis = query_analysis.analyze(query, settings.fiscal_year_start_month)
            expansion = query_analysis.bm25_expansion(analysis) if settings.query_expansion else []

    if store is None:
        from ragloupe.index.store import open_store

        with _timed(timings, "setup"):
            store = open_store(settings)
    period_scope: list[str] = []
    if analysis is not None and settings.period_filter and not filters.get("doc_ids"):
        with _timed(timings, "period"):
            period_scope = query_analysis.period_documents(
                analysis, doc_periods.document_periods(store, settings))
        if period_scope:
            filters = {**filters, "doc_ids": period_scope}
    window = max(int(settings.candidate_window), k)
    run = set(plan.engines) | (set(engines.ENGINES) if explain else set())
    lists: dict[str, list[engines.EngineHit]] = {}
    embedding = None
    if "dense" in run:
        if embedder is None:
            from ragloupe.index.embedder import get_embedder

            with _timed(timings, "setup"):  # loads the model on the first call only
                embedder = get_embedder(settings)
        with _timed(timings, "query_embedding"):
            embedding = _embed_query(embedder, search_text)
        with _timed(timings, "dense"):
            lists["dense"] = engines.dense_search(store, embedding, window, filters)
    if "bm25" in run:
        with _timed(timings, "bm25_index"):
            index = engines.lexical_index(store, settings)
        with _timed(timings, "bm25"):
            lists["bm25"] = engines.bm25_search(index, search_text, window, filters, expansion)

    if not any(lists.values()) and store.count() == 0:  # asked only when nothing was found
        raise InvalidSearch(f"the index at {settings.path('index_dir')} is empty: "
                            "run `ragloupe index <files>` first")
    periods, learned_fusion = None, settings.fusion == "learned" and len(plan.engines) > 1
    if analysis is not None or learned_fusion:
        with _timed(timings, "period"):
            periods = doc_periods.document_periods(store, settings)
    corpus = None
    if learned_fusion:
        with _timed(timings, "bm25_index"):
            corpus = engines.lexical_index(store, settings)
    staged = replay(plan, search_text, lists, settings, timings, analysis, periods, corpus)
    pages = staged.pages
    if settings.unit_view != "none":  # after replay: it reads the store, replay only the engines' lists
        with _timed(timings, "units"):
            pages = _unit_view(plan, search_text, embedding if "dense" in plan.engines else None,
                               filters, pages, store, settings, window)
    timings["total"] = time.perf_counter() - started
    return Ranking(
        query=query, mode=mode, hits=tuple(staged.hits[:k]), timings=timings, pages=tuple(pages),
        rewrite=rewrite.rewrite if rewrite else None,
        rewrite_used=bool(rewrite and rewrite.used),
        rewrite_note=rewrite.note if rewrite else "",
        cut_at=staged.cut_at, filters=filters, fusion=staged.fusion, reranker=staged.reranker,
        candidates=staged.candidates,
        query_analysis={**analysis.summary(), "bm25_expansion": expansion,
                        "period_scope": period_scope} if analysis else {})


@dataclass(frozen=True)
class Staged:
    """What the stages after the engines made of their lists: hits (after any cut) and the page view."""

    hits: list[Hit]
    pages: list
    fusion: str
    reranker: str
    cut_at: int | None
    candidates: int


def replay(plan: ModePlan, search_text: str, lists: dict[str, list[engines.EngineHit]],
           settings: Settings, timings: dict[str, float] | None = None,
           analysis: query_analysis.QueryAnalysis | None = None,
           periods: dict[str, query_analysis.DocumentPeriod] | None = None,
           corpus: lexical.LexicalIndex | None = None, model=None) -> Staged:
    """Fusion, rerank, period preference, cut and page view: everything search() does after the engines.

    search() calls this on the lists it just fetched; ``ragloupe tune`` calls it
    on lists fetched once over the largest window, cut to each configuration's
    window, so a configuration costs a replay instead of a search. ``analysis``
    and ``periods`` (each document's fiscal period) are given when query
    analysis is on. Learned fusion reads ``corpus`` (the chunk-level BM25
    index, for page- and section-level BM25) and ``model`` (a LearnedModel;
    None loads the configured one).
    """
    timings = timings if timings is not None else {}
    with _timed(timings, "fusion"):
        settings, model, fallback = _learned_or_fallback(plan, lists, settings, model)
        candidates, fused_by = _fuse(plan, lists, settings)
        if fused_by == "learned":
            candidates = _learn(search_text, candidates, settings, corpus, model, analysis, periods)
        fused_by = f"{fused_by} ({fallback})" if fallback else fused_by
    reranker = ""
    if plan.rerank or settings.lexical_rerank:
        with _timed(timings, "rerank"):
            candidates, reranker = _rerank(plan, search_text, candidates, settings)
    if analysis is not None:
        with _timed(timings, "period"):
            candidates = _prefer_period(analysis, candidates, periods or {}, settings.period_boost)
    if settings.prefer_tables and prefer_tables.asks_for_figure(search_text):
        candidates = _prefer_tables(candidates, settings.prefer_tables_boost)
    with _timed(timings, "aggregate"):
        hits = _finish(candidates)
        cut_at = cut.cut_position([h.score for h in hits], settings.dynamic_cut,
                                  settings.dynamic_cut_value)
        kept = hits[:cut_at] if cut_at is not None else hits
        pages = aggregate.aggregate_pages(kept, settings.page_aggregation, settings.rrf_k)
    return Staged(kept, pages, fused_by, reranker, cut_at, len(candidates))


# Query vectors of recent questions: an evaluation sweep asks the same 150
# questions under many settings, and embedding is the slowest step it repeats.
_QUERY_CACHE_SIZE = 1024
_query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_lock = threading.Lock()


def _embed_query(embedder, text: str) -> np.ndarray:
    key = (str(getattr(embedder, "model_name", id(embedder))), text)
    with _query_lock:
        if key in _query_vectors:
            _query_vectors.move_to_end(key)
            return _query_vectors[key]
    vector = embedder.encode([text])[0]
    with _query_lock:
        _query_vectors[key] = vector
        while len(_query_vectors) > _QUERY_CACHE_SIZE:
            _query_vectors.popitem(last=False)
    return vector


def _check_settings(settings: Settings) -> None:
    checks = [("fusion", settings.fusion, fusion.METHODS),
              ("page_aggregation", settings.page_aggregation, aggregate.RULES),
              ("dynamic_cut", settings.dynamic_cut, cut.RULES),
              ("bm25_backend", settings.bm25_backend, lexical.BACKENDS),
              ("unit_view", settings.unit_view, units.VIEWS),
              ("unit_dense", settings.unit_dense, units.DENSE_RULES)]
    for name, value, allowed in checks:
        if value not in allowed:
            raise InvalidSearch(f"RAGLOUPE_{name.upper()}={value!r} is not one of {', '.join(allowed)}")


# The stages below (_fuse, _rerank, _finish) run inside replay(), which
# ragloupe tune (evaluate/tuning.py) calls over cached engine lists to sweep
# settings cheaply: their signatures are a seam, change them together.


@dataclass
class _Candidate:
    """A chunk on its way through the stages; becomes a Hit at the end."""

    hit: engines.EngineHit
    per_engine: dict[str, EngineScore]
    score: float
    fused_score: float | None = None
    rerank_score: float | None = None
    rerank_change: int | None = None
    doc_period: str = ""
    period_match: float | None = None
    rrf_score: float | None = None
    learned: LearnedScore | None = None


def _fuse(plan: ModePlan, lists: dict[str, list[engines.EngineHit]],
          settings: Settings) -> tuple[list[_Candidate], str]:
    """Order the candidates by the mode's engines; annotate each with every engine that ran."""
    by_id: dict[str, engines.EngineHit] = {}
    engine_views: dict[str, dict[str, EngineScore]] = {}
    for engine, engine_hits in lists.items():
        view: dict[str, EngineScore] = {}
        for rank, hit in enumerate(engine_hits, start=1):
            by_id.setdefault(hit.chunk.chunk_id, hit)
            view.setdefault(hit.chunk.chunk_id, EngineScore(rank, hit.score, hit.distance))
        engine_views[engine] = view

    def annotate(chunk_id: str) -> dict[str, EngineScore]:
        return {engine: view.get(chunk_id, EngineScore(None, None)) for engine, view in engine_views.items()}

    weights = {"dense": settings.weight_dense, "bm25": settings.weight_bm25}
    scored = {e: [(h.chunk.chunk_id, h.score) for h in lists[e]] for e in plan.engines}
    # The RRF score of every candidate, whatever orders it: shown beside the
    # fusion that ranks, so a reader can see where plain RRF would have put it.
    rrf_scores = {f.id: f.score for f in fusion.fuse("rrf", scored, weights, settings.rrf_k)}
    if len(plan.engines) == 1:
        (engine,) = plan.engines
        return [_Candidate(by_id[h.chunk.chunk_id], annotate(h.chunk.chunk_id), h.score,
                           rrf_score=rrf_scores.get(h.chunk.chunk_id))
                for h in lists[engine]], ""
    # Learned fusion starts from the RRF order (which breaks its ties) and rescores in _learn().
    method = "rrf" if settings.fusion == "learned" else settings.fusion
    fused = fusion.fuse(method, scored, weights, settings.rrf_k)
    return [_Candidate(by_id[f.id], annotate(f.id), f.score, fused_score=f.score,
                       rrf_score=rrf_scores.get(f.id))
            for f in fused], settings.fusion


def _learned_or_fallback(plan: ModePlan, lists: dict[str, list[engines.EngineHit]], settings: Settings,
                         model) -> tuple[Settings, object, str]:
    """The settings fusion runs under, the learned model (if it runs) and why it does not (if not).

    A learned model ranks only what it was trained on. Its features assume the
    settings it was trained under (chunking, BM25, embedding model): under
    others it does not fit. And it knows one kind of unit: the shipped one
    learned what makes a report's page the answer (its position in the report
    among other things), which says nothing about a record of a CSV. In
    either case every candidate is fused by ``learned_fallback`` instead, and
    the fusion label says why. A model file that cannot be read is an error.
    A ``model`` given by the caller (tune trains one per fold) is not checked.
    """
    from ragloupe.retrieve import learned

    if settings.fusion != "learned" or len(plan.engines) < 2:
        return settings, model, ""
    fallback = settings.replace(fusion=settings.learned_fallback)
    if model is None:
        model = learned.read(settings)
        problems = learned.mismatches(model, settings)
        if problems:
            return fallback, None, f"the learned fusion model does not fit: {'; '.join(problems)}"
    kinds = {"record" if hit.chunk.record_id else "page" for hits in lists.values() for hit in hits}
    other = sorted(kinds - {model.units})
    if not other:
        return settings, model, ""
    return (fallback, model, f"learned fusion was trained on {model.units}s, these candidates include {other[0]}s")


def _learn(query: str, candidates: list[_Candidate], settings: Settings, corpus, model,
           analysis: query_analysis.QueryAnalysis | None,
           periods: dict[str, query_analysis.DocumentPeriod] | None) -> list[_Candidate]:
    """Rescore the fused candidates with the learned model; each keeps its per-feature account."""
    from ragloupe.retrieve import features, learned

    if corpus is None:
        raise InvalidSearch("learned fusion needs the BM25 index of the store (pass corpus to replay)")
    model = model or learned.load(settings)
    analysis = analysis or query_analysis.analyze(query, settings.fiscal_year_start_month)
    rows = features.candidate_features(query, [c.hit.chunk for c in candidates],
                                       [c.per_engine for c in candidates], features.corpus_views(corpus),
                                       analysis, periods)
    for candidate, explained in zip(candidates, model.explain(rows)):
        candidate.learned = explained
        candidate.score = candidate.fused_score = explained.probability
    # A stable sort on the logit (the probability saturates): ties keep the RRF order.
    return sorted(candidates, key=lambda c: -c.learned.logit)


def _rerank(plan: ModePlan, query: str, candidates: list[_Candidate],
            settings: Settings) -> tuple[list[_Candidate], str]:
    """Rescore the first rerank_window candidates and reorder them; the rest keep their order below."""
    size = settings.rerank_window if settings.rerank_window > 0 else len(candidates)
    head, tail = candidates[:size], candidates[size:]
    if not head:
        return candidates, ""
    chunks = [c.hit.chunk for c in head]
    if plan.rerank and settings.cross_encoder_model:
        scores = rerank.cross_encoder_scores(query, chunks, settings.cross_encoder_model,
                                             device=settings.device)
        name = f"cross-encoder:{settings.cross_encoder_model}"
    else:
        scores = rerank.lexical_scores(query, chunks, [c.score for c in head],
                                       settings.lexical_rerank_weight)
        name = "lexical"
    by_id = {c.hit.chunk.chunk_id: c for c in head}
    reordered = []
    for item in rerank.reorder([c.hit.chunk.chunk_id for c in head], scores):
        candidate = by_id[item.id]
        candidate.rerank_score, candidate.rerank_change = item.score, item.change
        candidate.score = item.score
        reordered.append(candidate)
    # Candidates beyond the window were not rescored: they stay below, in fusion's
    # order, and take the lowest rescored score so the final scores never rise.
    floor = reordered[-1].score
    for candidate in tail:
        candidate.score = floor
    return reordered + tail, name


def _prefer_period(analysis: query_analysis.QueryAnalysis, candidates: list[_Candidate],
                   periods: dict[str, query_analysis.DocumentPeriod], boost: float) -> list[_Candidate]:
    """Note each candidate's document period and, with a boost, move the question's period up."""
    found = [periods.get(c.hit.chunk.doc_id) for c in candidates]
    scores, matches = query_analysis.prefer_period(
        analysis, [p.period if p else None for p in found], [c.score for c in candidates], boost)
    named = analysis.target_period is not None
    for candidate, period, score, match in zip(candidates, found, scores, matches):
        candidate.doc_period = period.period.label if period and period.period else ""
        candidate.period_match = match if named else None
        candidate.score = score
    # A stable sort: equal scores keep the order fusion and reranking gave them.
    return sorted(candidates, key=lambda c: -c.score)


def _prefer_tables(candidates: list[_Candidate], boost: float) -> list[_Candidate]:
    """Table chunks' scores times (1 + boost), then a stable re-sort (see prefer_tables.py)."""
    scores = prefer_tables.boosted([c.score for c in candidates],
                                   [c.hit.chunk.kind for c in candidates], boost)
    for candidate, score in zip(candidates, scores):
        candidate.score = score
    return sorted(candidates, key=lambda c: -c.score)


def _finish(candidates: list[_Candidate]) -> list[Hit]:
    """Final ranks and margins (score minus the next candidate's score)."""
    hits = []
    for position, candidate in enumerate(candidates):
        following = candidates[position + 1] if position + 1 < len(candidates) else None
        hits.append(Hit(
            chunk=candidate.hit.chunk, rank=position + 1, score=float(candidate.score),
            per_engine=candidate.per_engine, fused_score=candidate.fused_score,
            rerank_score=candidate.rerank_score, rerank_change=candidate.rerank_change,
            doc_period=candidate.doc_period, period_match=candidate.period_match,
            rrf_score=candidate.rrf_score, learned=candidate.learned, margin=float(candidate.score - following.score) if following else None))
    return hits


def _unit_view(plan: ModePlan, query: str, embedding, filters: dict, pages: list,
               store, settings: Settings, window: int) -> list:
    """The unit view: the chunk view fused with whole-unit signals of the mode's engines."""
    index = units.unit_index(store, settings)
    signals = units.unit_scores(index, query if "bm25" in plan.engines else "", embedding,
                                filters, settings.unit_dense, window)
    weights = {"chunks": 1.0, "unit_bm25": settings.unit_weight_bm25,
               "unit_dense": settings.unit_weight_dense}
    held = set(index.units)
    locate = {c.chunk_id: (c.doc_id, c.page, c.record_id) for c in index.lexical.chunks}
    return aggregate.unit_view(pages, {name: pairs for name, pairs in signals.items() if pairs},
                               weights, settings.learned_fallback if settings.fusion == "learned"
                               else settings.fusion, settings.rrf_k,
                               has_unit_signals=held.__contains__, locate=locate)


def ranking_to_dict(ranking: Ranking) -> dict[str, Any]:
    """A JSON-ready dict of a Ranking (chunks in full, absent ranks as null)."""
    return asdict(ranking)
