"""The page view of a ranking: units (PDF pages, or records) ranked from their chunks' hits.

Gold sets judge pages (or chapters, for records), not chunks, so the
evaluation reads this view. Pure: hits in, page hits out.

Rules (Settings.page_aggregation):
- ``max``: a unit scores its best chunk's score. Long pages gain nothing
  from having many chunks.
- ``sum``: a unit scores the sum of its chunks' scores. Rewards pages that
  several chunks point to, but also long pages.
- ``rrf``: a unit scores sum(1 / (rrf_k + chunk rank)). Like ``sum`` but on
  ranks, so it behaves the same whatever scale the final scores are on.

The unit view (Settings.unit_view, ``unit_view`` below) fuses that chunk
view with whole-unit signals (retrieve/units.py), so a long record that
answers a question as a whole is no longer judged by its best 256 tokens.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ragloupe.models import EngineScore, Hit, PageHit
from ragloupe.retrieve import fusion

RULES = ("max", "sum", "rrf")


def aggregate_pages(hits: Sequence[Hit], rule: str = "max", rrf_k: int = 60) -> list[PageHit]:
    """Rank the units of ``hits`` (which must be in final order, best first)."""
    if rule not in RULES:
        raise ValueError(f"unknown page aggregation {rule!r}; use one of {', '.join(RULES)}")
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(hit.chunk.unit, []).append(hit)

    def unit_score(unit_hits: list[Hit]) -> float:
        if rule == "max":
            return max(h.score for h in unit_hits)
        if rule == "sum":
            return sum(h.score for h in unit_hits)
        return sum(1.0 / (rrf_k + h.rank) for h in unit_hits)

    scored = [(unit, unit_score(unit_hits), unit_hits) for unit, unit_hits in groups.items()]
    # Ties go to the unit whose best chunk ranks higher: the order never depends on dict order.
    scored.sort(key=lambda item: (-item[1], min(h.rank for h in item[2])))
    pages = []
    for rank, (unit, score, unit_hits) in enumerate(scored, start=1):
        first = unit_hits[0].chunk
        pages.append(PageHit(
            unit=unit, doc_id=first.doc_id, page=first.page, record_id=first.record_id,
            rank=rank, score=float(score), chunk_ids=tuple(h.chunk.chunk_id for h in unit_hits),
            best_chunk_rank=min(h.rank for h in unit_hits)))
    return pages


def unit_view(chunk_view: Sequence[PageHit], unit_lists: Mapping[str, Sequence[tuple[str, float]]],
              weights: Mapping[str, float], method: str = "minmax", rrf_k: int = 60, *,
              has_unit_signals: Callable[[str], bool], locate: Mapping[str, tuple[str, int, str]]
              ) -> list[PageHit]:
    """Fuse the chunk view with whole-unit signals into one unit ranking.

    ``unit_lists``: each whole-unit signal's ranked (unit, score) list, best
    first ("unit_bm25", "unit_dense"); ``weights``: one per signal, "chunks"
    included. A unit's fused score is the weighted MEAN over the signals that
    exist for it: units with whole-unit signals (``has_unit_signals``) are
    judged on all of them, the others (PDF pages under unit_view=records) on
    the chunk view alone, so both land on the same scale and a mixed ranking
    (records and pages, whole-index scope) stays fair. ``locate`` gives
    (doc_id, page, record_id) of units that only the whole-unit signals found.
    Every unit keeps each signal's rank and raw score in ``signals``.
    """
    lists = {"chunks": [(p.unit, p.score) for p in chunk_view], **unit_lists}
    by_signal = {name: fusion.fuse(method, {name: pairs}, {name: 1.0}, rrf_k)
                 for name, pairs in lists.items()}
    raw = {name: {unit: score for unit, score in reversed(pairs)} for name, pairs in lists.items()}
    fused: dict[str, float] = {}
    signal_views: dict[str, dict[str, EngineScore]] = {}
    for name, items in by_signal.items():
        for rank, item in enumerate(items, start=1):
            signal_views.setdefault(item.id, {})[name] = EngineScore(rank, raw[name][item.id])
            fused[item.id] = fused.get(item.id, 0.0) + float(weights.get(name, 1.0)) * item.score
    chunk_pages = {p.unit: p for p in chunk_view}

    def total_weight(unit: str) -> float:
        names = lists if has_unit_signals(unit) else ("chunks",)
        return sum(float(weights.get(name, 1.0)) for name in names) or 1.0

    scores = {unit: value / total_weight(unit) for unit, value in fused.items()}
    ordered = sorted(scores, key=lambda unit: (
        -scores[unit], min(v.rank for v in signal_views[unit].values()), unit))
    out = []
    for rank, unit in enumerate(ordered, start=1):
        views = {name: signal_views[unit].get(name, EngineScore(None, None)) for name in lists}
        known = chunk_pages.get(unit)
        if known is not None:
            doc_id, page, record_id = known.doc_id, known.page, known.record_id
        else:
            doc_id, page, record_id = locate[unit]
        out.append(PageHit(
            unit=unit, doc_id=doc_id, page=page, record_id=record_id, rank=rank,
            score=float(scores[unit]), chunk_ids=known.chunk_ids if known else (),
            best_chunk_rank=known.best_chunk_rank if known else None, signals=views))
    return out
