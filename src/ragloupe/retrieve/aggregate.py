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
"""

from __future__ import annotations

from typing import Sequence

from ragloupe.models import Hit, PageHit

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
