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


from ragloupe.config import Settings
from ragloupe.errors import ACTION, Action
from ragloupe.index import lexical
from ragloupe.retrieve import engines, learned, query_analysis, units
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
    runs the built-in engines the mode does not use, so every hit can show both engines' ranks.
    The engines come from the workspace's registry (Workspace.engines()): the built-ins, plugins
    and attached outside systems, each run over the candidate window in the registry's order.
    ``unit_views`` ("records", "all") scores those views' whole-unit signals
    besides the one in force, and ``with_periods`` reads the documents' periods
    even when the settings do not need them: ``ragloupe tune`` replays other
    settings over what one fetch returned.
    """
    workspace = workspace.with_overrides(**overrides)
    settings = workspace.settings
    mode = mode or settings.mode
    registry = workspace.engines()
    plan = parse_mode(mode, registry.names())
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
        learned_fusion = settings.fusion == "learned" and plan.learnable
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
        run = set(plan.engines) | (set(registry.built_in()) if explain else set())
        question = engines.Question(search_text, query, tuple(expansion))
        scope = engines.Scope(filters, workspace, engine_config, frozenset(run), timings)
        # In the registry's order (dense, then bm25, then the rest), whatever order the mode names them.
        lists = {name: engines.run_engine(registry.get(name), question, scope, window)
                 for name in registry.names() if name in run}
        embedding, corpus = scope.shared.get("query_vector"), scope.shared.get("chunk_bm25")
        if not any(lists.values()) and store.count() == 0:  # asked only when nothing was found
            raise InvalidSearch(f"the index at {settings.path('index_dir')} is empty: {ACTION}",
                                action=Action.INDEX_FIRST)
        views = [v for v in dict.fromkeys([settings.unit_view, *unit_views]) if v != "none"]
        with timed(timings, "units"):
            signals = {view: _unit_signals(view, search_text if corpus is not None else "", embedding, filters,
                                           workspace, engine_config, window) for view in views}
        model, assumed = _model(settings, learned_fusion, workspace)
        corpus_views = _corpus_views(corpus, embedding is not None or with_periods, workspace, timings)
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
