"""Several retrieval modes in one table: a row per page (or chunk), read at a glance.

Side-by-side lists make a reader hunt for the same page in three columns,
and repeating every engine's columns per mode made three modes twenty
columns wide. Here each unit appears once with what does not depend on the
mode said once (each engine's rank and raw score, the RRF score, learned
fusion's score) and then one final-rank column per mode. A mode that did not
list the unit has no cell (None), shown as "—", never as rank 0; a row where
the modes disagree is flagged so the page can highlight it.

Pure: Rankings in, rows out. The rankings should hold every fused candidate
(search() with k equal to the candidate window), so a unit that one mode
puts in its top k and another at rank 37 shows 37 there, not "—".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ragloupe.models import Chunk, EngineScore, Hit, Ranking

LEVELS = ("page", "chunk")
_ABSENT = EngineScore(None, None)


@dataclass(frozen=True)
class ModeCell:
    """Where one mode put one row: its final rank and score, and the chunk it ranked best for it.

    engines holds each engine's rank and raw score of that chunk (an engine
    that did not list it has EngineScore(None, None)).
    """

    rank: int
    score: float
    engines: dict[str, EngineScore]
    chunk_id: str


@dataclass(frozen=True)
class ComparisonRow:
    key: str  # the unit id at page level, the chunk id at chunk level
    unit: str
    doc_id: str
    page: int
    record_id: str
    section: str
    gold: bool
    chunk: Chunk  # the chunk to open: the one the best-placing mode ranked highest
    cells: dict[str, ModeCell | None] = field(default_factory=dict)
    # Said once per row: each engine's best rank of the row's chunks, with that chunk's raw score.
    engines: dict[str, EngineScore] = field(default_factory=dict)
    rrf_score: float | None = None  # the best weighted RRF score of the row's chunks
    learned_hit: Hit | None = None  # the hit learned fusion scored best for the row, for "why this rank"

    @property
    def best_rank(self) -> int:
        return min(cell.rank for cell in self.cells.values() if cell is not None)

    @property
    def learned_score(self) -> float | None:
        return None if self.learned_hit is None else self.learned_hit.learned.probability

    def differs(self, k: int) -> bool:
        """The modes disagree on this row: one has it in its top k and another not, or at another rank."""
        ranks = [cell.rank if cell is not None else None for cell in self.cells.values()]
        return len(set(ranks)) > 1 and any(r is not None and r <= k for r in ranks)


def comparison_rows(rankings: Mapping[str, Ranking], level: str = "page", k: int = 10,
                    gold_units: Collection[str] = ()) -> list[ComparisonRow]:
    """The rows of the comparison table, best first.

    A row is a unit (level "page": a PDF page or a record) or a chunk (level
    "chunk") that at least one mode ranks within its top ``k``. Each mode's
    cell gives that mode's rank however deep it is in the mode's list, or
    None when the mode did not list it. Rows are ordered by their best rank
    in any mode, then by the ranks in the modes' order, then by key, so the
    order never depends on dict order.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown comparison level {level!r}; use one of {', '.join(LEVELS)}")
    cells_by_mode = {mode: (_page_cells(ranking) if level == "page" else _chunk_cells(ranking))
                     for mode, ranking in rankings.items()}
    hits_by_key: dict[str, list[Hit]] = {}
    for ranking in rankings.values():
        for hit in ranking.hits:
            hits_by_key.setdefault(hit.chunk.unit if level == "page" else hit.chunk.chunk_id, []).append(hit)
    chunks = {hit.chunk.chunk_id: hit.chunk for ranking in rankings.values() for hit in ranking.hits}
    keys = {key for cells in cells_by_mode.values() for key, cell in cells.items() if cell.rank <= k}
    rows = []
    for key in keys:
        cells = {mode: cells_by_mode[mode].get(key) for mode in rankings}
        best = min((cell for cell in cells.values() if cell is not None), key=lambda cell: cell.rank)
        chunk = chunks[best.chunk_id]
        held = hits_by_key.get(key, [])
        rows.append(ComparisonRow(
            key=key, unit=chunk.unit, doc_id=chunk.doc_id, page=chunk.page,
            record_id=chunk.record_id, section=chunk.section, gold=chunk.unit in gold_units,
            chunk=chunk, cells=cells, engines=best_engines(held),
            rrf_score=max((h.rrf_score for h in held if h.rrf_score is not None), default=None),
            learned_hit=max((h for h in held if h.learned is not None), default=None,
                            key=lambda h: h.learned.probability)))
    far = 10**9
    rows.sort(key=lambda row: (row.best_rank,
                               tuple(c.rank if c else far for c in row.cells.values()), row.key))
    return rows


def best_engines(hits: Collection[Hit]) -> dict[str, EngineScore]:
    """Each engine's best (lowest) rank over these hits, with the raw score of the chunk it ranked so.

    The same best rank a run report gives a unit (runs.ranking_view), so the
    table and the failure audit agree.
    """
    out = {}
    for engine in engine_names(hits):
        listed = [h.per_engine[engine] for h in hits
                  if engine in h.per_engine and h.per_engine[engine].rank is not None]
        out[engine] = min(listed, key=lambda view: view.rank) if listed else _ABSENT
    return out


def _chunk_cells(ranking: Ranking) -> dict[str, ModeCell]:
    return {hit.chunk.chunk_id: ModeCell(hit.rank, hit.score, _engines(hit), hit.chunk.chunk_id)
            for hit in ranking.hits}


def _page_cells(ranking: Ranking) -> dict[str, ModeCell]:
    """Each unit of the page view, with the engine ranks of its best-ranked chunk.

    A unit's chunks beyond the hits the Ranking holds are not known here; the
    unit's best chunk is always among them when the Ranking holds the whole
    candidate list.
    """
    hits = {hit.chunk.chunk_id: hit for hit in ranking.hits}
    cells = {}
    for page in ranking.pages:
        held = [hits[chunk_id] for chunk_id in page.chunk_ids if chunk_id in hits]
        if not held:
            continue
        best = min(held, key=lambda hit: hit.rank)
        cells[page.unit] = ModeCell(page.rank, page.score, _engines(best), best.chunk.chunk_id)
    return cells


def _engines(hit: Hit) -> dict[str, EngineScore]:
    return dict(hit.per_engine)


def engine_names(hits: Collection[Hit]) -> list[str]:
    """Every engine that ran for these hits, read from the hits (never a fixed list), in their order."""
    return list(dict.fromkeys(engine for hit in hits for engine in hit.per_engine))
