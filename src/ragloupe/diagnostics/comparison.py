"""Several retrieval modes in one table: a row per page (or chunk), read at a glance.

Side-by-side lists make a reader hunt for the same page in three columns,
and repeating every engine's columns per mode made three modes twenty
columns wide. Here each unit appears once with what does not depend on the
mode said once (each engine's rank and raw score, the RRF score, learned
fusion's score) and then one final-rank column per mode. A mode that did not
list the unit has no cell (None), shown as "—", never as rank 0; a row where
the modes disagree is flagged so the page can highlight it.

The table the page draws and the CSV file it offers are one view model
(comparison_table): the same column names (an engine's rank is "dense
engine #", a mode's final rank "dense mode #"), the same values, and an
empty cell where the screen shows "—". The engines are read from the hits
(Hit.per_engine), so an attached outside engine gets its own columns.

Pure: Rankings in, rows out. The rankings should hold every fused candidate
(search() with k equal to the candidate window), so a unit that one mode
puts in its top k and another at rank 37 shows 37 there, not "—".
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ragloupe.models import Chunk, EngineScore, Hit, Ranking

LEVELS = ("page", "chunk")
BUILT_IN_ENGINES = ("dense", "bm25")  # shown first, in this order; any other engine after them by name
# What an engine's raw score is called in a column header; any other engine's is its "score".
ENGINE_SCORE_NAMES = {"dense": "cosine", "bm25": "score"}
ENGINE_SCORE_MEANINGS = {"dense": "cosine similarity of the chunk to the question",
                         "bm25": "Okapi BM25 score of the chunk"}
FUSION_NAMES = {"rrf": "reciprocal rank (RRF)", "minmax": "min-max scores", "learned": "learned (model)"}
_ABSENT = EngineScore(None, None)


@dataclass(frozen=True)
class EngineCell:
    """One engine's best rank of a row's chunks, with that chunk's raw score and which chunk it is."""

    rank: int
    score: float | None
    chunk: Chunk


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
    # Said once per row: each engine's best rank of the row's chunks, with that chunk (None: not listed).
    engines: dict[str, EngineCell | None] = field(default_factory=dict)
    rrf_score: float | None = None  # the best weighted RRF score of the row's chunks
    learned_hit: Hit | None = None  # the hit learned fusion scored best for the row, for "why this rank"
    chunks: dict[str, Chunk] = field(default_factory=dict)  # every chunk of the row the modes listed, by id

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


def engine_names(rankings: Mapping[str, Ranking]) -> list[str]:
    """Every engine the rankings' hits carry a view of: dense and bm25 first, then the others by name."""
    seen = {engine for ranking in rankings.values() for hit in ranking.hits for engine in hit.per_engine}
    return [e for e in BUILT_IN_ENGINES if e in seen] + sorted(seen - set(BUILT_IN_ENGINES))


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
    engines = engine_names(rankings)
    cells_by_mode = {mode: (_page_cells(ranking, engines) if level == "page" else _chunk_cells(ranking, engines))
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
            chunk=chunk, cells=cells, engines=best_engine_cells(held, engines),
            rrf_score=max((h.rrf_score for h in held if h.rrf_score is not None), default=None),
            learned_hit=max((h for h in held if h.learned is not None), default=None,
                            key=lambda h: h.learned.probability),
            chunks={h.chunk.chunk_id: h.chunk for h in held}))
    far = 10**9  # orders the rows only; never shown or exported
    rows.sort(key=lambda row: (row.best_rank,
                               tuple(c.rank if c else far for c in row.cells.values()), row.key))
    return rows


def best_engine_cells(hits: Collection[Hit], engines: Sequence[str]) -> dict[str, EngineCell | None]:
    """Each engine's best (lowest) rank over these hits, with the chunk it ranked so (None: it listed
    none); the same best rank a run report gives a unit (runs.ranking_view), so the table and the
    failure audit agree."""
    out: dict[str, EngineCell | None] = {}
    for engine in engines:
        listed = [(h.per_engine[engine], h.chunk) for h in hits
                  if engine in h.per_engine and h.per_engine[engine].rank is not None]
        if not listed:
            out[engine] = None
            continue
        view, chunk = min(listed, key=lambda pair: (pair[0].rank, pair[1].chunk_id))
        out[engine] = EngineCell(view.rank, view.score, chunk)
    return out


def _chunk_cells(ranking: Ranking, engines: Sequence[str]) -> dict[str, ModeCell]:
    return {hit.chunk.chunk_id: ModeCell(hit.rank, hit.score, _engines(hit, engines), hit.chunk.chunk_id)
            for hit in ranking.hits}


def _page_cells(ranking: Ranking, engines: Sequence[str]) -> dict[str, ModeCell]:
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
        cells[page.unit] = ModeCell(page.rank, page.score, _engines(best, engines), best.chunk.chunk_id)
    return cells


def _engines(hit: Hit, engines: Sequence[str]) -> dict[str, EngineScore]:
    return {engine: hit.per_engine.get(engine, _ABSENT) for engine in engines}


# ---------------------------------------------------------------------------- fusion used

@dataclass(frozen=True)
class FusionUsed:
    """What fused a mode's engines, as the ranking reports it, and whether it is what was asked for."""

    mode: str
    asked: str  # the fusion the search asked for ("learned", "rrf", "minmax")
    used: str  # the fusion that ranked ("" for a one-engine mode)
    reason: str  # why it is not the one asked for, when it is not

    @property
    def fell_back(self) -> bool:
        return bool(self.used) and self.used != self.asked

    def warning(self) -> str:
        """One line a user cannot miss: what was asked, what ranked instead, and why."""
        return (f"{self.mode}: {FUSION_NAMES.get(self.asked, self.asked)} fusion was asked for, but this "
                f"search was fused by {FUSION_NAMES.get(self.used, self.used)}"
                + (f" because {self.reason}" if self.reason else "") + ".")


def fusion_used(mode: str, ranking: Ranking, asked: str) -> FusionUsed:
    """Read Ranking.fusion ("minmax (learned fusion was trained on pages, ...)") as a FusionUsed."""
    label = ranking.fusion or ""
    used, _, rest = label.partition(" (")
    return FusionUsed(mode, asked, used.strip(), rest[:-1] if rest.endswith(")") else rest)


# ---------------------------------------------------------------------------- the table and its file

@dataclass(frozen=True)
class TableColumn:
    """One column as shown and as exported: its header is its name in the CSV file too."""

    name: str
    kind: str  # "text", "rank" (engine), "score", "mode" (a mode's final rank)
    help: str = ""
    decimals: int = 3
    width: str = "number"  # "mark", "doc", "page", "number", "section": the page sizes columns by this
    mode: str = ""  # for a mode's column


@dataclass(frozen=True)
class ComparisonTable:
    """The comparison as the screen draws it and the CSV carries it: records keyed by header,
    None where the screen shows "—" (the file leaves that cell empty)."""

    columns: tuple[TableColumn, ...]
    records: tuple[dict, ...]
    k: int

    @property
    def names(self) -> list[str]:
        return [column.name for column in self.columns]

    def named(self, kind: str) -> list[str]:
        return [column.name for column in self.columns if column.kind == kind]


def engine_rank_column(engine: str) -> str:
    return f"{engine} engine #"


def engine_score_column(engine: str) -> str:
    return f"{engine} engine {ENGINE_SCORE_NAMES.get(engine, 'score')}"


def mode_column(mode: str, fusion: FusionUsed | None = None) -> str:
    """'hybrid mode #', or 'hybrid mode # (min-max, not learned)' when its fusion fell back."""
    name = f"{mode} mode #"
    if fusion is not None and fusion.fell_back:
        name += f" ({fusion.used}, not {fusion.asked})"
    return name


def comparison_table(rows: Sequence[ComparisonRow], modes: Sequence[str], k: int, level: str = "page",
                     show_doc: bool = True, engines: Sequence[str] | None = None,
                     fusions: Mapping[str, FusionUsed] | None = None) -> ComparisonTable:
    """The table the page shows and the file it exports: where the row is, each mode's final rank
    (what the table compares, so it stays in view), each engine's rank and raw score, RRF, learned,
    then the section."""
    fusions = fusions or {}
    if engines is None:
        engines = [e for e in BUILT_IN_ENGINES] + sorted({e for row in rows for e in row.engines}
                                                         - set(BUILT_IN_ENGINES))
    unit_name = "record" if any(row.record_id for row in rows) else "page"
    columns = [TableColumn("gold", "text", "★: a gold unit of the question", width="mark")]
    if show_doc:
        columns.append(TableColumn("doc", "text", "the document", width="doc"))
    columns.append(TableColumn(unit_name, "text", "the page number (or the record id)", width="page"))
    if level == "chunk":
        columns += [TableColumn("chunk", "text", "the chunk's position on its page (0: the first)",
                                width="page"),
                    TableColumn("kind", "text", "text, or table (a table chunk)", width="page")]
    for mode in modes:
        fusion = fusions.get(mode)
        note = f"; {fusion.warning()}" if fusion is not None and fusion.fell_back else ""
        columns.append(TableColumn(mode_column(mode, fusion), "mode",
                                   f"the final rank the {mode} mode gave this {unit_name if level == 'page' else 'chunk'} "
                                   f"(grey: below its top k){note}", mode=mode))
    of_what = "of this row's chunks" if level == "page" else "of this chunk"
    for engine in engines:
        columns.append(TableColumn(engine_rank_column(engine), "rank",
                                   f"the {engine} engine's best rank {of_what} (the same in every mode; "
                                   "— when the engine did not list it)"))
        columns.append(TableColumn(engine_score_column(engine), "score",
                                   f"the {engine} engine's raw score of that chunk: "
                                   + ENGINE_SCORE_MEANINGS.get(engine, "as the engine reports it")))
    columns.append(TableColumn("RRF score", "score", "the best weighted reciprocal-rank-fusion score "
                               + of_what, decimals=4))
    columns.append(TableColumn("learned score", "score", "learned fusion's probability for its best chunk "
                               "of this row (— when no mode fused it with the learned model)"))
    columns.append(TableColumn("section", "text", "the section heading above the chunk", width="section"))
    records = tuple(_record(row, columns, engines, level, show_doc, unit_name) for row in rows)
    return ComparisonTable(tuple(columns), records, k)


def _record(row: ComparisonRow, columns: list[TableColumn], engines: Sequence[str], level: str,
            show_doc: bool, unit_name: str) -> dict:
    record: dict = {"gold": "★" if row.gold else ""}
    if show_doc:
        record["doc"] = row.doc_id
    record[unit_name] = row.record_id or str(row.page)
    if level == "chunk":
        record["chunk"] = str(row.chunk.position)
        record["kind"] = row.chunk.kind
    for engine in engines:
        cell = row.engines.get(engine)
        record[engine_rank_column(engine)] = None if cell is None else cell.rank
        record[engine_score_column(engine)] = None if cell is None else cell.score
    record["RRF score"] = row.rrf_score
    record["learned score"] = row.learned_score
    for column in columns:
        if column.kind == "mode":
            cell = row.cells.get(column.mode)
            record[column.name] = None if cell is None else cell.rank
    record["section"] = row.section or ""
    return record


def comparison_csv(table: ComparisonTable) -> str:
    """The table as CSV: the screen's headers, its values, and an empty cell for "not listed"."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.names)
    for record in table.records:
        writer.writerow(["" if record.get(name) is None else record[name] for name in table.names])
    return out.getvalue()


# ---------------------------------------------------------------------------- the opened row

def row_detail(row: ComparisonRow, modes: Sequence[str], level: str = "page",
               engines: Sequence[str] | None = None) -> list[str]:
    """The opened row in labelled lines that match the table: which engine or mode each number is,
    page or chunk, and which chunk of the page each number is about."""
    engines = list(engines if engines is not None else row.engines)
    unit = "record" if row.record_id else "page"
    lines = []
    if level == "page":
        said = []
        for engine in engines:
            cell = row.engines.get(engine)
            said.append(f"{engine} engine —" if cell is None else
                        f"{engine} engine #{cell.rank} · {ENGINE_SCORE_NAMES.get(engine, 'score')} "
                        f"{_score(cell.score)} (chunk {cell.chunk.position})")
        lines.append(f"Engines, best chunk of this {unit} (the table's engine columns): " + "; ".join(said))
    for mode in modes:
        cell = row.cells.get(mode)
        if cell is None:
            lines.append(f"{mode} mode: not listed")
            continue
        chunk = row.chunks.get(cell.chunk_id)
        position = chunk.position if chunk is not None else "?"
        numbers = []
        for engine in engines:
            view = cell.engines.get(engine, _ABSENT)
            text = (f"{engine} engine —" if view.rank is None else
                    f"{engine} engine #{view.rank} · {ENGINE_SCORE_NAMES.get(engine, 'score')} {_score(view.score)}")
            table_cell = row.engines.get(engine)
            if level == "page" and table_cell is not None and table_cell.chunk.chunk_id != cell.chunk_id:
                text += f" (the table's {engine} engine #{table_cell.rank} is chunk {table_cell.chunk.position})"
            numbers.append(text)
        if level == "page":
            lines.append(f"{mode} mode #{cell.rank} · {unit} score {_score(cell.score, 4)}; its best chunk "
                         f"is chunk {position}: " + "; ".join(numbers))
        else:
            lines.append(f"{mode} mode #{cell.rank} · chunk score {_score(cell.score, 4)}; " + "; ".join(numbers))
    return lines


def _score(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"
