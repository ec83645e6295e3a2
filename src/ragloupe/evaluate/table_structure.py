"""The ICDAR 2013 table competition's structure metric: cell adjacency relations.

Written from its published definition (Göbel, Hassan, Oro, Orsi, "A
methodology for evaluating algorithms for table understanding in PDF
documents", DocEng 2012; "ICDAR 2013 Table Competition", ICDAR 2013):

- a table is a grid of cells, a cell possibly spanning several rows or
  columns; blank cells take no part;
- each non-blank cell is related to its nearest non-blank neighbour to the
  right (in every row it spans) and below (in every column it spans); a
  relation is (content, neighbour's content, direction);
- contents are compared with whitespace and accents ignored (and Unicode
  compatibility forms folded, so a ligature glyph equals its letters);
- the tables of a document are first paired one to one with the ground
  truth's (on the same page, by the cell contents they share); the relations
  of a paired table are compared as multisets, and an unpaired table's
  relations all count as missed (ground truth) or false (extraction);
- precision = correct / extracted relations, recall = correct / ground-truth
  relations, pooled over all tables of all documents (micro average), and
  also per document.

Pure: no file is read here except by ``read_ground_truth``.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence
from xml.etree import ElementTree


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    text: str
    end_row: int | None = None  # inclusive; None: the cell spans one row
    end_col: int | None = None

    @property
    def last_row(self) -> int:
        return self.row if self.end_row is None else max(self.row, self.end_row)

    @property
    def last_col(self) -> int:
        return self.col if self.end_col is None else max(self.col, self.end_col)


@dataclass(frozen=True)
class GridTable:
    """One table as the metric sees it: its page and its cells."""

    page: int
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Score:
    correct: int
    extracted: int
    expected: int
    tables_expected: int = 0
    tables_extracted: int = 0
    tables_paired: int = 0

    @property
    def precision(self) -> float:
        return self.correct / self.extracted if self.extracted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.expected if self.expected else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: "Score") -> "Score":
        return Score(*(a + b for a, b in zip(self.counts(), other.counts())))

    def counts(self) -> tuple[int, ...]:
        return (self.correct, self.extracted, self.expected, self.tables_expected,
                self.tables_extracted, self.tables_paired)

    def as_dict(self) -> dict:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4),
                "f1": round(self.f1, 4), "correct": self.correct, "extracted": self.extracted,
                "expected": self.expected, "tables_expected": self.tables_expected,
                "tables_extracted": self.tables_extracted, "tables_paired": self.tables_paired}


def normalise(text: str) -> str:
    """Content as compared: compatibility forms folded, accents and all whitespace dropped."""
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch) and not ch.isspace())


def relations(cells: Iterable[Cell]) -> Counter:
    """The adjacency relations of one table: (content, neighbour content, "right"/"below")."""
    filled = [c for c in cells if normalise(c.text)]
    at: dict[tuple[int, int], int] = {}
    for i, cell in enumerate(filled):
        for r in range(cell.row, cell.last_row + 1):
            for c in range(cell.col, cell.last_col + 1):
                at.setdefault((r, c), i)
    if not at:
        return Counter()
    last_row = max(r for r, _ in at)
    last_col = max(c for _, c in at)
    found: set[tuple[int, int, str]] = set()
    for i, cell in enumerate(filled):
        for r in range(cell.row, cell.last_row + 1):
            j = _first(at, ((r, c) for c in range(cell.last_col + 1, last_col + 1)), i)
            if j is not None:
                found.add((i, j, "right"))
        for c in range(cell.col, cell.last_col + 1):
            j = _first(at, ((r, c) for r in range(cell.last_row + 1, last_row + 1)), i)
            if j is not None:
                found.add((i, j, "below"))
    return Counter((normalise(filled[i].text), normalise(filled[j].text), way) for i, j, way in found)


def _first(at: dict, positions, own: int) -> int | None:
    for position in positions:
        j = at.get(position)
        if j is not None and j != own:
            return j
    return None


def grid_from_rows(rows: Sequence[Sequence[str | None]], page: int = 1) -> GridTable:
    """A table given as rows of cell strings; None marks a cell covered by the cell to its left
    (a header spanning several columns), "" a blank cell."""
    cells = []
    for r, row in enumerate(rows):
        c = 0
        while c < len(row):
            if row[c] is None:
                c += 1
                continue
            end = c
            while end + 1 < len(row) and row[end + 1] is None:
                end += 1
            cells.append(Cell(r, c, row[c], end_col=end if end > c else None))
            c = end + 1
    return GridTable(page, tuple(cells))


def _shared_cells(a: GridTable, b: GridTable) -> int:
    left = Counter(normalise(c.text) for c in a.cells if normalise(c.text))
    right = Counter(normalise(c.text) for c in b.cells if normalise(c.text))
    return sum((left & right).values())


def pair_tables(expected: Sequence[GridTable], extracted: Sequence[GridTable]) -> list[tuple[int, int]]:
    """One-to-one pairs (expected index, extracted index): tables on the same page, the pairs
    sharing most cell contents first; a table that shares no content with any stays unpaired."""
    candidates = sorted(((_shared_cells(g, t), i, j) for i, g in enumerate(expected)
                         for j, t in enumerate(extracted) if g.page == t.page),
                        key=lambda x: (-x[0], x[1], x[2]))
    used_g, used_t, pairs = set(), set(), []
    for shared, i, j in candidates:
        if shared == 0 or i in used_g or j in used_t:
            continue
        used_g.add(i)
        used_t.add(j)
        pairs.append((i, j))
    return sorted(pairs)


def score_document(expected: Sequence[GridTable], extracted: Sequence[GridTable]) -> Score:
    """The structure score of one document's extracted tables against its ground truth."""
    want = [relations(t.cells) for t in expected]
    got = [relations(t.cells) for t in extracted]
    pairs = pair_tables(expected, extracted)
    correct = sum(sum((want[i] & got[j]).values()) for i, j in pairs)
    return Score(correct, sum(sum(r.values()) for r in got), sum(sum(r.values()) for r in want),
                 len(expected), len(extracted), len(pairs))


def read_ground_truth(path: Path) -> list[GridTable]:
    """The tables of a competition structure file (``*-str.xml``): 0-based rows and columns,
    ``end-row``/``end-col`` where a cell spans; one GridTable per region (page)."""
    root = ElementTree.parse(path).getroot()
    tables = []
    for table in root.iter("table"):
        for region in table.iter("region"):
            cells = []
            for cell in region.iter("cell"):
                content = cell.find("content")
                end_row, end_col = cell.get("end-row"), cell.get("end-col")
                cells.append(Cell(int(cell.get("start-row")), int(cell.get("start-col")),
                                  content.text or "" if content is not None else "",
                                  int(end_row) if end_row is not None else None,
                                  int(end_col) if end_col is not None else None))
            tables.append(GridTable(int(region.get("page")), tuple(cells)))
    return tables


@dataclass
class Pooled:
    """Scores summed over documents, with the per-document ones kept."""

    total: Score = field(default_factory=lambda: Score(0, 0, 0))
    documents: dict[str, Score] = field(default_factory=dict)

    def add(self, doc_id: str, score: Score) -> None:
        self.documents[doc_id] = score
        self.total = self.total + score
