"""replay(): every stage of a search after the engines, pure over what fetch() returned.

Fusion (weighted RRF, min-max, or learned fusion rescoring the RRF order),
rerank, the period preference, the table preference, the dynamic cut, the
page view and the unit view. Nothing here opens a store or reads a file: the
corpus views, the documents' periods, the unit signals and the configured
learned model all come in the ``Candidates`` (a cross-encoder reranker, when
one is configured, is the one stage that loads a model). ``ragloupe tune``
replays many configurations over one fetch per question, so a configuration
costs milliseconds; ``search() == replay(fetch())``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Mapping

import numpy as np

from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.models import Chunk, EngineScore, Hit, LearnedScore, Ranking
from ragloupe.retrieve import aggregate, cut, fusion, prefer_tables, query_analysis, rerank
from ragloupe.retrieve.engines import EngineHit
from ragloupe.retrieve.fetch import Candidates
from ragloupe.retrieve.modes import LEARNED_ENGINES, InvalidSearch, ModePlan, check_k, parse_mode, timed
from ragloupe.retrieve.stage_configs import CutConfig, FusionConfig, ReaderConfig, RerankConfig, UnitViewConfig


@dataclass(frozen=True)
class ReplayConfig:
    """The settings the stages after the engines read, and nothing else; each stage gets its part
    (stage_configs.py: for_fusion, for_rerank, for_cut, for_unit_view)."""

    mode: str
    k: int
    candidate_window: int
    fusion: str
    learned_fallback: str
    weight_dense: float
    weight_bm25: float
    rrf_k: int
    lexical_rerank: bool
    lexical_rerank_weight: float
    rerank_window: int
    cross_encoder_model: str
    query_analysis: bool
    period_boost: float
    prefer_tables: bool
    prefer_tables_boost: float
    dynamic_cut: str
    dynamic_cut_value: float
    page_aggregation: str
    unit_view: str
    unit_dense: str
    unit_bm25_b: float
    unit_weight_bm25: float
    unit_weight_dense: float
    fiscal_year_start_month: int
    device: str  # where a cross-encoder reranker runs (auto, cpu, cuda, mps)
    prefer_tables_sections: str = ""  # a regex: only tables in the sections it finds are preferred
    reader_window: int = 5  # +read modes: candidates the reader rescores, best first
    reader_weight: float = 1.0  # the reader's share of the blend with the fused score
    reader_passage_chars: int = 600
    reader_signal: str = "yesno"  # yesno | likelihood (the embedded model)

    @classmethod
    def of(cls, settings, mode: str | None = None, k: int | None = None) -> "ReplayConfig":
        """The replay part of ``settings`` (a Settings); ``mode`` and ``k`` default to the settings'."""
        values = {f.name: getattr(settings, f.name) for f in fields(cls) if f.name not in ("mode", "k")}
        return cls(mode=mode or settings.mode, k=check_k(k if k is not None else settings.top_k), **values)

    def for_fusion(self) -> FusionConfig:
        return FusionConfig(self.fusion, self.weight_dense, self.weight_bm25, self.rrf_k)

    def for_rerank(self) -> RerankConfig:
        return RerankConfig(self.rerank_window, self.cross_encoder_model, self.lexical_rerank_weight, self.device)

    def for_reader(self) -> ReaderConfig:
        return ReaderConfig(self.reader_window, self.reader_weight, self.reader_passage_chars, self.reader_signal)

    def for_cut(self) -> CutConfig:
        return CutConfig(self.dynamic_cut, self.dynamic_cut_value, self.page_aggregation, self.rrf_k)

    def for_unit_view(self) -> UnitViewConfig:
        method = self.learned_fallback if self.fusion == "learned" else self.fusion
        return UnitViewConfig(self.unit_view, self.unit_dense, float(self.unit_bm25_b), self.unit_weight_bm25,
                              self.unit_weight_dense, method, self.rrf_k)


def replay(candidates: Candidates, config, *, mode: str | None = None, k: int | None = None,
           model=None) -> Ranking:
    """The Ranking the stages after the engines make of ``candidates`` under ``config``.

    ``config`` is a ReplayConfig or a Settings (``mode`` and ``k`` then default
    to the candidates' mode and the settings' top_k). Each engine's list is cut
    to the configuration's window. ``model`` is a learned model to use instead
    of the configured one (tune trains one per fold; it is not checked against
    the settings).
    """
    if not isinstance(config, ReplayConfig):
        config = ReplayConfig.of(config, mode or candidates.mode, k)
    plan = parse_mode(config.mode)
    missing = [e for e in plan.engines if e not in candidates.lists]
    if missing:
        raise InvalidSearch(f"mode {config.mode} needs the {missing[0]} engine's list, which this fetch "
                            "did not run (fetch with that mode, or explain=True)")
    window = max(int(config.candidate_window), config.k)
    if window > candidates.window:
        raise InvalidSearch(f"a candidate window of {window} needs a fetch over at least that many "
                            f"candidates; this one fetched {candidates.window}")
    timings = {name: value for name, value in candidates.timings.items() if name != "total"}
    started = time.perf_counter()
    lists = {engine: hits[:window] for engine, hits in candidates.lists.items()}
    with timed(timings, "fusion"):
        config, model, fallback = _learned_or_fallback(plan, lists, config, model, candidates)
        fused, fused_by = _fuse(plan, lists, config.for_fusion())
        if fused_by == "learned":
            fused = _learn(candidates, fused, config, model)
        fused_label = f"{fused_by} ({fallback})" if fallback else fused_by
    hits, pages, cut_at, reranker = _after_fusion(plan, candidates, fused, config, timings, window)
    timings["total"] = candidates.timings.get("total", 0.0) + time.perf_counter() - started
    return Ranking(
        query=candidates.query, mode=config.mode, hits=tuple(hits[:config.k]), timings=timings,
        pages=tuple(pages), rewrite=candidates.rewrite.rewrite if candidates.rewrite else None,
        rewrite_used=bool(candidates.rewrite and candidates.rewrite.used),
        rewrite_not_used_because=candidates.rewrite.not_used_because if candidates.rewrite else "",
        rewrite_restored=candidates.rewrite.restored if candidates.rewrite else (),
        cut_at=cut_at, filters=candidates.filters, fusion=fused_label, fused_by=fused_by,
        fusion_fallback=fallback, reranker=reranker,
        candidates=len(fused),
        query_analysis={**candidates.analysis.summary(), "bm25_expansion": list(candidates.expansion),
                        "period_scope": list(candidates.period_scope)} if config.query_analysis else {})


def _after_fusion(plan: ModePlan, candidates: Candidates, fused: list["_Candidate"], config: ReplayConfig,
                  timings: dict[str, float], window: int):
    """Rerank, period and table preference, cut, page view and unit view."""
    reranker = ""
    if plan.rerank or config.lexical_rerank:
        with timed(timings, "rerank"):
            fused, reranker = _rerank(plan, candidates.search_text, fused, config.for_rerank())
    if plan.read:
        with timed(timings, "read"):
            fused, reranker = _read(candidates, fused, config.for_reader())
    if config.query_analysis:
        with timed(timings, "period"):
            fused = _prefer_period(candidates.analysis, fused, candidates.periods or {}, config.period_boost)
    if config.prefer_tables and prefer_tables.asks_for_figure(candidates.search_text):
        fused = _prefer_tables(fused, config.prefer_tables_boost, config.prefer_tables_sections)
    with timed(timings, "aggregate"):
        hits = _finish(fused)
        cutting = config.for_cut()
        cut_at = cut.cut_position([h.score for h in hits], cutting.rule, cutting.value)
        kept = hits[:cut_at] if cut_at is not None else hits
        pages = aggregate.aggregate_pages(kept, cutting.page_aggregation, cutting.rrf_k)
    if config.unit_view != "none":
        with timed(timings, "units"):
            pages = _unit_view(plan, candidates, pages, config.for_unit_view(), window)
    return kept, pages, cut_at, reranker


def candidate_rows(candidates: Candidates, config) -> tuple[list[Chunk], np.ndarray]:
    """The candidates learned fusion would score under ``config`` (the RRF order of both engines'
    lists in its window) and their feature rows: what a learned model is trained on."""
    from ragloupe.retrieve import features

    if not isinstance(config, ReplayConfig):
        config = ReplayConfig.of(config, "hybrid", 10)
    window = max(int(config.candidate_window), config.k)
    lists = {engine: candidates.lists[engine][:window] for engine in LEARNED_ENGINES}
    fused, _ = _fuse(parse_mode("hybrid"), lists, _replace(config, fusion="rrf").for_fusion())
    chunks = [c.hit.chunk for c in fused]
    rows = features.candidate_features(candidates.search_text, chunks, [c.per_engine for c in fused],
                                       _views(candidates), candidates.analysis, candidates.periods)
    return chunks, rows


def _views(candidates: Candidates):
    if candidates.views is None:
        raise InvalidSearch("learned fusion needs the corpus views of the store's BM25: fetch with the bm25 "
                            "engine under fusion=learned (or with_periods=True)")
    return candidates.views


def _replace(config: ReplayConfig, **changes) -> ReplayConfig:
    return ReplayConfig(**{**{f.name: getattr(config, f.name) for f in fields(config)}, **changes})


@dataclass
class _Candidate:
    """A chunk on its way through the stages; becomes a Hit at the end."""

    hit: EngineHit
    per_engine: dict[str, EngineScore]
    score: float
    fused_score: float | None = None
    rerank_score: float | None = None
    rerank_change: int | None = None
    doc_period: str = ""
    period_match: float | None = None
    rrf_score: float | None = None
    learned: LearnedScore | None = None


def _fuse(plan: ModePlan, lists: Mapping[str, list[EngineHit]],
          config: FusionConfig) -> tuple[list[_Candidate], str]:
    """Order the candidates by the mode's engines; annotate each with every engine that ran."""
    by_id: dict[str, EngineHit] = {}
    engine_views: dict[str, dict[str, EngineScore]] = {}
    for engine, engine_hits in lists.items():
        view: dict[str, EngineScore] = {}
        for rank, hit in enumerate(engine_hits, start=1):
            by_id.setdefault(hit.chunk.chunk_id, hit)
            view.setdefault(hit.chunk.chunk_id, EngineScore(rank, hit.score, hit.distance))
        engine_views[engine] = view

    def annotate(chunk_id: str) -> dict[str, EngineScore]:
        return {engine: view.get(chunk_id, EngineScore(None, None)) for engine, view in engine_views.items()}

    weights = config.weights
    scored = {e: [(h.chunk.chunk_id, h.score) for h in lists[e]] for e in plan.engines}
    # The RRF score of every candidate, whatever orders it: shown beside the
    # fusion that ranks, so a reader can see where plain RRF would have put it.
    rrf_scores = {f.id: f.score for f in fusion.fuse("rrf", scored, weights, config.rrf_k)}
    if len(plan.engines) == 1:
        (engine,) = plan.engines
        return [_Candidate(by_id[h.chunk.chunk_id], annotate(h.chunk.chunk_id), h.score,
                           rrf_score=rrf_scores.get(h.chunk.chunk_id))
                for h in lists[engine]], ""
    # Learned fusion starts from the RRF order (which breaks its ties) and rescores in _learn().
    method = "rrf" if config.method == "learned" else config.method
    fused = fusion.fuse(method, scored, weights, config.rrf_k)
    return [_Candidate(by_id[f.id], annotate(f.id), f.score, fused_score=f.score,
                       rrf_score=rrf_scores.get(f.id))
            for f in fused], config.method


def _learned_or_fallback(plan: ModePlan, lists: Mapping[str, list[EngineHit]], config: ReplayConfig,
                         model, candidates: Candidates) -> tuple[ReplayConfig, object, str]:
    """The config fusion runs under, the learned model (if it runs) and why it does not (if not).

    A learned model ranks only what it was trained on: the dense and bm25 engines' lists (a
    mode that fuses another engine is fused by the fallback). Its features assume the
    settings it was trained under (chunking, BM25, embedding model): under
    others it does not fit. And it knows one kind of unit: a model trained on
    report pages says nothing about a record of a CSV. In either case every
    candidate is fused by ``learned_fallback`` instead, and the fusion label
    says why. A ``model`` given by the caller (tune trains one per fold) is
    not checked against the settings.
    """
    from ragloupe.retrieve import learned

    if config.fusion != "learned" or len(plan.engines) < 2:
        return config, model, ""
    fallback = _replace(config, fusion=config.learned_fallback)
    if not plan.learnable:  # its features read the two engines it was trained on, and no other
        others = [e for e in plan.engines if e not in LEARNED_ENGINES]
        return fallback, None, (f"learned fusion was trained on {' and '.join(LEARNED_ENGINES)}; this mode "
                                f"fuses {', '.join(others)} too")
    if model is None:
        model = candidates.model
        if model is None:
            raise InvalidSearch("learned fusion needs a model: fetch under fusion=learned, or pass model=")
        problems = learned.mismatches_with(model, candidates.assumed)
        if problems:
            return fallback, None, f"the learned fusion model does not fit: {'; '.join(problems)}"
    kinds = {"record" if hit.chunk.record_id else "page" for hits in lists.values() for hit in hits}
    other = sorted(kinds - set(model.unit_kinds))
    if not other:
        return config, model, ""
    return (fallback, model, f"learned fusion was trained on {model.units}s, these candidates include {other[0]}s")


def _learn(candidates: Candidates, fused: list[_Candidate], config: ReplayConfig, model) -> list[_Candidate]:
    """Rescore the fused candidates with the learned model; each keeps its per-feature account."""
    from ragloupe.retrieve import features

    rows = features.candidate_features(candidates.search_text, [c.hit.chunk for c in fused],
                                       [c.per_engine for c in fused], _views(candidates),
                                       candidates.analysis, candidates.periods)
    for candidate, explained in zip(fused, model.explain(rows)):
        candidate.learned = explained
        candidate.score = candidate.fused_score = explained.probability
    # A stable sort on the logit (the probability saturates): ties keep the RRF order.
    return sorted(fused, key=lambda c: -c.learned.logit)


def _rerank(plan: ModePlan, query: str, fused: list[_Candidate],
            config: RerankConfig) -> tuple[list[_Candidate], str]:
    """Rescore the first rerank_window candidates and reorder them; the rest keep their order below."""
    size = config.window if config.window > 0 else len(fused)
    head, tail = fused[:size], fused[size:]
    if not head:
        return fused, ""
    chunks = [c.hit.chunk for c in head]
    if plan.rerank and config.cross_encoder_model:
        scores = rerank.cross_encoder_scores(query, chunks, config.cross_encoder_model, device=config.device)
        name = f"cross-encoder:{config.cross_encoder_model}"
    else:
        scores = rerank.lexical_scores(query, chunks, [c.score for c in head], config.lexical_weight)
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


def _read(candidates: Candidates, fused: list[_Candidate], config: ReaderConfig) -> tuple[list[_Candidate], str]:
    """The reader's blend over the first ``config.window`` candidates (retrieve/reader.py); the rest stay below.

    The blend takes the place of a reranker's score (rerank_score, rerank_change). When the
    LLM cannot be reached the order stays fusion's and the reranker label says why."""
    from ragloupe.retrieve.reader import blend

    if candidates.reader is None:
        raise InvalidSearch("a +read mode needs the reader: fetch with the same mode")
    head, tail = fused[:max(int(config.window), 0)], fused[max(int(config.window), 0):]
    if not head:
        return fused, ""
    try:
        read = candidates.reader.scores(candidates.query, [c.hit.chunk for c in head], config)
    except (LlmUnavailable, LlmBadOutput) as exc:  # the order stays fusion's, and the ranking says why
        return fused, f"reader:{candidates.reader.label} unavailable ({exc})"
    scores = blend([c.score for c in head], read, config.weight)
    by_id = {c.hit.chunk.chunk_id: c for c in head}
    reordered = []
    for item in rerank.reorder([c.hit.chunk.chunk_id for c in head], scores):
        candidate = by_id[item.id]
        candidate.rerank_score, candidate.rerank_change, candidate.score = item.score, item.change, item.score
        reordered.append(candidate)
    # Below the head the order is fusion's, under scores that never rise above the head's last.
    floor = reordered[-1].score
    for candidate in tail:
        candidate.score = min(candidate.score, floor)
    return reordered + tail, f"reader:{candidates.reader.label}"


def _prefer_period(analysis: query_analysis.QueryAnalysis, fused: list[_Candidate],
                   periods: Mapping[str, query_analysis.DocumentPeriod], boost: float) -> list[_Candidate]:
    """Note each candidate's document period and, with a boost, move the question's period up."""
    found = [periods.get(c.hit.chunk.doc_id) for c in fused]
    scores, matches = query_analysis.prefer_period(
        analysis, [p.period if p else None for p in found], [c.score for c in fused], boost)
    named = analysis.target_period is not None
    for candidate, period, score, match in zip(fused, found, scores, matches):
        candidate.doc_period = period.period.label if period and period.period else ""
        candidate.period_match = match if named else None
        candidate.score = score
    # A stable sort: equal scores keep the order fusion and reranking gave them.
    return sorted(fused, key=lambda c: -c.score)


def _prefer_tables(fused: list[_Candidate], boost: float, sections: str = "") -> list[_Candidate]:
    """Table chunks' scores (in the allowed sections) times (1 + boost), then a stable re-sort
    (see prefer_tables.py)."""
    kinds = [c.hit.chunk.kind if prefer_tables.in_allowed_section(c.hit.chunk.section, sections) else "text"
             for c in fused]
    scores = prefer_tables.boosted([c.score for c in fused], kinds, boost)
    for candidate, score in zip(fused, scores):
        candidate.score = score
    return sorted(fused, key=lambda c: -c.score)


def _finish(fused: list[_Candidate]) -> list[Hit]:
    """Final ranks and margins (score minus the next candidate's score)."""
    hits = []
    for position, candidate in enumerate(fused):
        following = fused[position + 1] if position + 1 < len(fused) else None
        hits.append(Hit(
            chunk=candidate.hit.chunk, rank=position + 1, score=float(candidate.score),
            per_engine=candidate.per_engine, fused_score=candidate.fused_score,
            rerank_score=candidate.rerank_score, rerank_change=candidate.rerank_change,
            doc_period=candidate.doc_period, period_match=candidate.period_match,
            rrf_score=candidate.rrf_score, learned=candidate.learned,
            margin=float(candidate.score - following.score) if following else None))
    return hits


def _unit_view(plan: ModePlan, candidates: Candidates, pages: list, config: UnitViewConfig, window: int) -> list:
    """The unit view: the chunk view fused with whole-unit signals of the mode's engines."""
    signals = candidates.units.get(config.view)
    if signals is None or signals.dense_rule != config.dense_rule or signals.bm25_b != config.bm25_b:
        raise InvalidSearch(f"unit_view={config.view} (unit_dense={config.dense_rule}, unit_bm25_b="
                            f"{config.bm25_b:g}) needs its whole-unit signals: fetch under those settings "
                            "or with unit_views=")
    wanted = (["unit_bm25"] if "bm25" in plan.engines else []) + (["unit_dense"] if "dense" in plan.engines else [])
    lists = {name: list(signals.lists[name][:window]) for name in wanted if signals.lists.get(name)}
    weights = {"chunks": 1.0, "unit_bm25": config.weight_bm25, "unit_dense": config.weight_dense}
    return aggregate.unit_view(pages, lists, weights, config.method, config.rrf_k,
                               has_unit_signals=signals.held.__contains__, locate=signals.locate)
