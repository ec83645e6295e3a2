"""fetch(): the part of a search that reads the index, once per question.

The question is analysed once (fiscal periods, amounts, codes), rewritten
when the mode says ``+rewrite``, embedded (the workspace keeps recent query
vectors), and each engine of the mode lists its candidates over the whole
candidate window. Everything read from the index comes through the caller's
``Workspace`` (ragloupe.workspace): fetch opens nothing itself.
When the unit view is on, every whole-unit signal is scored too. What comes
back is a ``Candidates``: plain lists and the read-only corpus views the later
stages need (each document's period, the chunk BM25 for learned fusion's
page- and section-level features, the learned model). ``replay()`` is
everything after this and touches no store; ``search() == replay(fetch())``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.errors import ACTION, Action
from ragloupe.index import lexical
from ragloupe.retrieve import engines, feedback, learned, query_analysis, units
from ragloupe.retrieve.expansion import bm25_expansion
from ragloupe.retrieve.reader import Reader
from ragloupe.retrieve.modes import InvalidSearch, check_choices, check_k, normalise_filters, parse_mode, timed
from ragloupe.retrieve.rewrite import Rewrite, rewrite_query
from ragloupe.retrieve.stage_configs import EngineConfig
from ragloupe.workspace import Workspace


@dataclass(frozen=True)
class UnitSignals:
    """Whole-unit signals of one unit view (Settings.unit_view), over the fetch window.

    ``lists``: "unit_bm25" and "unit_dense" as (unit, score), best first;
    ``held``: the units that have whole-unit signals; ``locate``: unit ->
    (doc_id, page, record_id). ``dense_rule`` and ``bm25_b`` are the settings
    the signals were scored under.
    """

    lists: Mapping[str, list[tuple[str, float]]]
    held: frozenset
    locate: Mapping[str, tuple[str, int, str]]
    dense_rule: str
    bm25_b: float


@dataclass(frozen=True)
class Candidates:
    """What the engines found for one question, and what the stages after them read."""

    query: str
    search_text: str  # the question, or its rewrite when the mode asked for one and it was used
    mode: str
    window: int  # every list holds at most this many candidates
    filters: dict
    lists: Mapping[str, list[engines.EngineHit]]  # engine -> candidates, best first
    analysis: query_analysis.QueryAnalysis
    query_analysis: bool  # whether the settings fetched under had query analysis on
    expansion: tuple[str, ...] = ()
    period_scope: tuple[str, ...] = ()
    periods: Mapping[str, query_analysis.DocumentPeriod] | None = None
    corpus: lexical.LexicalIndex | None = None  # the chunk BM25
    views: Any = None  # features.CorpusViews of the chunk BM25: learned fusion's page and section views
    units: Mapping[str, UnitSignals] = field(default_factory=dict)  # unit view -> its signals
    model: Any = None  # the configured learned model, when fetched under learned fusion
    assumed: Mapping[str, Any] = field(default_factory=dict)  # learned.assumed_settings of the fetch
    rewrite: Rewrite | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    reader: Any = None  # reader.Reader of the configured LLM, when the mode says +read


def fetch(query: str, mode: str | None = None, k: int | None = None, filters: dict | None = None, *,
          workspace: Workspace, explain: bool = False, unit_views: Sequence[str] = (),
          with_periods: bool = False, **overrides: Any) -> Candidates:
    """Run the engines for ``query`` through ``workspace``, under its settings and ``overrides``
    for this call (as search()); see the module docstring. ``explain`` also
    runs the engine the mode does not use, so every hit can show both engines' ranks.
    ``unit_views`` ("records", "all") scores those views' whole-unit signals
    besides the one in force, and ``with_periods`` reads the documents' periods
    even when the settings do not need them: ``ragloupe tune`` replays other
    settings over what one fetch returned.
    """
    workspace = workspace.with_overrides(**overrides)
    settings = workspace.settings
    mode = mode or settings.mode
    plan = parse_mode(mode)
    k = check_k(k if k is not None else settings.top_k)
    if not query or not query.strip():
        raise InvalidSearch("the query is empty")
    check_choices(settings)
    filters = normalise_filters(filters)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    search_text, rewrite, analysis, expansion = _read_question(query, plan.rewrite, settings, timings)
    with timed(timings, "setup"):
        store, content = workspace.store, workspace.content_key()
    with workspace.one_content(content):  # the store is asked what it holds once per question
        learned_fusion = settings.fusion == "learned" and len(plan.engines) > 1
        periods = None
        if settings.query_analysis or learned_fusion or with_periods:
            with timed(timings, "period"):
                periods = workspace.periods(settings.fiscal_year_start_month)
        period_scope: list[str] = []
        if settings.query_analysis and settings.period_filter and not filters.get("doc_ids"):
            period_scope = query_analysis.period_documents(analysis, periods)
            if period_scope:
                filters = {**filters, "doc_ids": period_scope}
        window = max(int(settings.candidate_window), k)
        engine_config = EngineConfig.of(settings)  # what the engines and the unit signals read
        run = set(plan.engines) | (set(engines.ENGINES) if explain else set())
        lists, embedding, corpus = _run_engines(run, search_text, window, filters, expansion, engine_config,
                                                workspace, timings)
        if not any(lists.values()) and store.count() == 0:  # asked only when nothing was found
            raise InvalidSearch(f"the index at {settings.path('index_dir')} is empty: {ACTION}",
                                action=Action.INDEX_FIRST)
        views = [v for v in dict.fromkeys([settings.unit_view, *unit_views]) if v != "none"]
        with timed(timings, "units"):
            signals = {view: _unit_signals(view, search_text if "bm25" in lists else "", embedding, filters,
                                           workspace, engine_config, window) for view in views}
        model, assumed = _model(settings, learned_fusion, workspace)
        corpus_views = _corpus_views(corpus, "dense" in lists or with_periods, workspace, timings)
    timings["total"] = time.perf_counter() - started
    return Candidates(
        query=query, search_text=search_text, mode=mode, window=window, filters=filters, lists=lists,
        analysis=analysis, query_analysis=bool(settings.query_analysis), expansion=tuple(expansion),
        period_scope=tuple(period_scope), periods=periods, corpus=corpus, views=corpus_views, units=signals,
        model=model,
        assumed=assumed, rewrite=rewrite, timings=timings, reader=_reader(plan.read, settings))


def _corpus_views(corpus, wanted: bool, workspace, timings: dict[str, float]):
    """Learned fusion's views of the chunk BM25, when both engines ran (a replay may fuse them so)."""
    if corpus is None or not wanted:
        return None
    with timed(timings, "bm25_index"):
        return workspace.corpus_views(corpus)


def _read_question(query: str, rewrite: bool, settings: Settings, timings: dict[str, float]):
    """The text the engines search (the rewrite, when asked for and used), its analysis and BM25 expansion."""
    search_text, rewritten = query, None
    if rewrite:
        with timed(timings, "rewrite"):
            rewritten = rewrite_query(query, settings)
        search_text = rewritten.search_text
    with timed(timings, "query_analysis"):
        analysis = query_analysis.analyze(query, settings.fiscal_year_start_month)
        expansion = (bm25_expansion(analysis)
                     if settings.query_analysis and settings.query_expansion else [])
    return search_text, rewritten, analysis, expansion


def _run_engines(run: set[str], text: str, window: int, filters: dict, expansion: Sequence[str],
                 config: EngineConfig, workspace, timings: dict[str, float]):
    """Each engine's list (dense first, then bm25), the query embedding and the chunk BM25 index."""
    lists: dict[str, list[engines.EngineHit]] = {}
    embedding, corpus = None, None
    if "dense" in run:
        with timed(timings, "setup"):  # loads the model on the workspace's first call only
            workspace.embedder
        with timed(timings, "query_embedding"):
            embedding = workspace.query_vector(text)
        with timed(timings, "dense"):
            # The BM25 reads every chunk anyway: the dense hits are looked up in the same chunks.
            table = workspace.chunk_table() if "bm25" in run else None
            lists["dense"] = engines.dense_search(workspace.store, embedding, window, filters, table)
    if "bm25" in run:
        with timed(timings, "bm25_index"):
            corpus = workspace.lexical(config.bm25_k1, config.bm25_b, config.bm25_backend)
        with timed(timings, "bm25"):
            if config.feedback_terms > 0:
                lists["bm25"] = _bm25_feedback(corpus, text, window, filters, expansion, config)
            else:
                lists["bm25"] = engines.bm25_search(corpus, text, window, filters, expansion)
    return lists, embedding, corpus


def _bm25_feedback(corpus: lexical.LexicalIndex, text: str, window: int, filters: dict,
                   expansion: Sequence[str], config: EngineConfig) -> list[engines.EngineHit]:
    """BM25 with pseudo-relevance feedback (retrieve/feedback.py): a first pass, then the question
    with the feedback words of its best chunks."""
    mask = corpus.mask(filters)
    eligible = mask if mask is not None else np.ones(len(corpus), dtype=bool)
    scores, _ = feedback.feedback_scores(corpus, lexical.tokenize(text) + list(expansion), eligible,
                                         feedback.FeedbackConfig(config.feedback_terms, config.feedback_docs,
                                                                 config.feedback_weight))
    return [engines.EngineHit(chunk, score) for chunk, score in lexical.ranked(corpus, scores, window, filters)]


def _unit_signals(view: str, text: str, embedding, filters: dict, workspace, config: EngineConfig,
                  window: int) -> UnitSignals:
    index = workspace.unit_index(view, config.bm25_k1, config.unit_bm25_b, config.bm25_backend)
    found = units.unit_scores(index, text, embedding, filters, config.unit_dense, window)
    return UnitSignals(found, index.held, index.locate, config.unit_dense, config.unit_bm25_b)


def _reader(wanted: bool, settings: Settings):
    """The reader of the configured LLM for a +read mode (nothing is loaded or contacted yet)."""
    return Reader(settings) if wanted else None


def _model(settings: Settings, learned_fusion: bool, workspace):
    assumed = learned.assumed_settings(settings)
    return (workspace.learned_model(learned.model_path(settings)) if learned_fusion else None), assumed
