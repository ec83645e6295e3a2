"""Several retrieval modes in one table: a row per page (or chunk), a cell per mode.

Side-by-side lists make a reader hunt for the same page in three columns.
Here each unit appears once, and each mode's cell says where that mode put
it: its final rank and each engine's rank and raw score. A mode that did
not list the unit at all has no cell (None), which the page shows as "—",
never as rank 0.

Pure: Rankings in, rows out. The rankings should hold every fused candidate
(search() with k equal to the candidate window), so a unit that one mode
puts in its top k and another at rank 37 shows 37 there, not "—".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ragloupe.models import Chunk, EngineScore, Hit, Ranking

LEVELS = ("page", "chunk")
ENGINES = ("dense", "bm25")


@dataclass(frozen=True)
class ModeCell:
    """Where one mode put one row.

    rank and score are the mode's final ones (for a page: its rank in the
    mode's page view). engines holds each engine's rank and raw score of the
    chunk the mode ranked best for this row; an engine that did not list
    that chunk has EngineScore(None, None).
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

    @property
    def best_rank(self) -> int:
        return min(cell.rank for cell in self.cells.values() if cell is not None)


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
    chunks = {hit.chunk.chunk_id: hit.chunk for ranking in rankings.values() for hit in ranking.hits}
    keys = {key for cells in cells_by_mode.values() for key, cell in cells.items() if cell.rank <= k}
    rows = []
    for key in keys:
        cells = {mode: cells_by_mode[mode].get(key) for mode in rankings}
        listed = [cell for cell in cells.values() if cell is not None]
        best = min(listed, key=lambda cell: cell.rank)
        chunk = chunks[best.chunk_id]
        rows.append(ComparisonRow(
            key=key, unit=chunk.unit, doc_id=chunk.doc_id, page=chunk.page,
            record_id=chunk.record_id, section=chunk.section, gold=chunk.unit in gold_units,
            chunk=chunk, cells=cells))
    far = 10**9
    rows.sort(key=lambda row: (row.best_rank,
                               tuple(c.rank if c else far for c in row.cells.values()), row.key))
    return rows


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
    absent = EngineScore(None, None)
    return {engine: hit.per_engine.get(engine, absent) for engine in ENGINES}
