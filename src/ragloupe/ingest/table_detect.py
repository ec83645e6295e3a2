"""Finding a page's tables and their cells, in the extraction child (pdfplumber).

Three kinds of table, tried in this order, a later kind only where no earlier
one was found:

1. Ruled: cells boxed by lines both ways (pdfplumber's lines strategy), its
   cells as pdfplumber reads them. Kept when most rows have two or more filled
   cells and its cells are not stacks of text lines; a table ruled around its
   rows but not between its columns (each body row one cell spanning the
   table) is read again as 2.
2. Row-ruled: horizontal rules between, or only around, rows (pdfplumber with
   horizontal lines and vertical text edges gives the region and the rules),
   the common style of statistical tables. Its cells are read from its words
   (table_grid.py): columns from the phrases' alignment, rows from the rules.
3. Unruled: columns of figures in free text (tables.py, ``figure_blocks``).

A candidate read from words is kept only when at least three rows, and most
of its rows, have two or more filled cells: running text between two rules
reads as one phrase per line, which is not a grid, and a region where more
than _MAX_RUNNING_TEXT of the lines hold a phrase wider than half the region
is running text (with, say, section numbers in a margin column). Any candidate is kept
only when at least _MIN_FILLED_SHARE of its cells hold text: a chart's
gridlines and axis labels make a grid of mostly empty cells. A ruled region
holding curves or slanted lines (a chart's data series) is no table either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragloupe.ingest.table_grid import read_grid, running_text_share

# A cell's shading drawn a few points inside its border adds rules beside the border's: columns
# a few points wide that hold no character. Rules this close are one rule (pdfplumber snaps 3 pt).
_RULED = {"snap_x_tolerance": 6}
_ROW_RULED = {"vertical_strategy": "text", "horizontal_strategy": "lines",
              "min_words_vertical": 3, "intersection_tolerance": 5}
# A ruled table's cell holding more than this many text lines on average is a stack of rows.
_MAX_LINES_PER_CELL = 2.5
# A chart's gridlines make a grid of mostly empty cells; a table's cells are mostly filled.
_MIN_FILLED_SHARE = 0.4
# Above this share of lines of running text, a region between rules is prose, not a table.
_MAX_RUNNING_TEXT = 0.3
# This many data-series strokes inside a ruled region make it a chart, not a table.
_MIN_PLOT_STROKES = 3


@dataclass(frozen=True)
class Candidate:
    bbox: tuple[float, float, float, float]
    rows: list[list[str | None]]
    kind: str  # "ruled", "row-ruled", "unruled"


def find_candidates(page) -> list[Candidate]:
    """The tables of one pdfplumber page, ruled ones first, none overlapping another."""
    from ragloupe.ingest.tables import figure_blocks

    plots = _plot_strokes(page)
    words = _PageWords(page)
    found: list[Candidate] = []
    for table in page.find_tables(_RULED):
        if _inside_count(table.bbox, plots) >= _MIN_PLOT_STROKES:
            continue  # a chart: its gridlines make cells, its data series are curves
        rows = table.extract()
        if _has_grid(rows) and not _stacked_rows(rows):
            found.append(Candidate(table.bbox, rows, "ruled"))
        elif len(rows) >= 2:  # ruled around its rows, not between its columns: read its words
            _add_read(found, page, table, "partly ruled", words)
    for table in page.find_tables(_ROW_RULED):
        if not _overlaps_any(table.bbox, found) and _inside_count(table.bbox, plots) < _MIN_PLOT_STROKES:
            _add_read(found, page, table, "row-ruled", words)
    if not found:
        found = [Candidate(bbox, rows, "unruled") for bbox, rows in figure_blocks(page)]
    return sorted(found, key=lambda c: (round(c.bbox[1]), c.bbox[0]))


def _add_read(found: list[Candidate], page, table, kind: str, page_words: "_PageWords") -> None:
    """Read a table's cells from its words, its rows from its rules; kept if it is a grid."""
    words = _words_touching(page_words.all(), table.bbox)
    if running_text_share(words, table.bbox[2] - table.bbox[0]) > _MAX_RUNNING_TEXT:
        return
    rows = read_grid(words, [row.bbox[1] for row in table.rows] + [table.rows[-1].bbox[3]])
    if _has_grid(rows, min_rows=3):
        found.append(Candidate(table.bbox, rows, kind))


def _plot_strokes(page) -> list[tuple[float, float, float, float]]:
    """Where the page draws slanted lines, or paths of five or more points that rise and fall
    (not flat rules, boxes or rounded corners drawn as paths): the data series of a chart."""
    slanted = [line for line in page.lines if _extent_over(line, 1)]
    series = [curve for curve in page.curves if len(curve.get("pts", ())) >= 5 and _extent_over(curve, 5)]
    return [(o["x0"], o["top"], o["x1"], o["bottom"]) for o in [*series, *slanted]]


def _extent_over(obj: dict, points: float) -> bool:
    return obj["x1"] - obj["x0"] > points and obj["bottom"] - obj["top"] > points


def _inside_count(bbox, boxes) -> int:
    x0, top, x1, bottom = bbox
    return sum(1 for a0, atop, a1, abottom in boxes
               if a0 >= x0 - 1 and a1 <= x1 + 1 and atop >= top - 1 and abottom <= bottom + 1)


class _PageWords:
    """The page's words, extracted once and only when a candidate needs them."""

    def __init__(self, page):
        self.page, self.words = page, None

    def all(self) -> list[dict]:
        if self.words is None:
            self.words = self.page.extract_words()
        return self.words


def _words_touching(page_words: list[dict], bbox) -> list[dict]:
    """The page's words inside ``bbox`` vertically and overlapping it horizontally, with the
    words that run on from them on their line (a header wider than the column of figures that
    made the table's edge: "Change" then "%")."""
    x0, top, x1, bottom = bbox
    inside = sorted((w for w in page_words if top <= (w["top"] + w["bottom"]) / 2 <= bottom),
                    key=lambda w: (round(w["top"]), w["x0"]))
    kept = [w for w in inside if w["x1"] > x0 and w["x0"] < x1]
    for word in inside:
        if word in kept or word["x0"] < x1:
            continue
        height = word["bottom"] - word["top"]
        if any(abs(k["top"] - word["top"]) <= 3 and 0 <= word["x0"] - k["x1"] < 0.5 * height for k in kept):
            kept.append(word)
    return kept


def _filled(row) -> int:
    return sum(1 for cell in row if (cell or "").strip())


def _has_grid(rows: list[list[str | None]], min_rows: int = 2) -> bool:
    """At least ``min_rows`` rows with two filled cells, in at least two columns, and those rows
    are most of the table (a table whose rows are single cells spanning it is not a grid)."""
    multi = [row for row in rows if _filled(row) >= 2]
    some = [row for row in rows if _filled(row) >= 1]
    cells = sum(1 for row in rows for cell in row if cell is not None)
    return (len(multi) >= min_rows and 2 * len(multi) >= len(some)
            and sum(map(_filled, rows)) >= _MIN_FILLED_SHARE * cells
            and max((len(r) for r in rows), default=0) >= 2)


def _stacked_rows(rows: list[list[str | None]]) -> bool:
    cells = [cell for row in rows for cell in row if (cell or "").strip()]
    lines = sum(cell.count("\n") + 1 for cell in cells)
    return bool(cells) and lines / len(cells) > _MAX_LINES_PER_CELL


def _overlaps_any(bbox, found: list[Candidate]) -> bool:
    x0, top, x1, bottom = bbox
    for other in found:
        a0, atop, a1, abottom = other.bbox
        if x0 < a1 and a0 < x1 and top < abottom and atop < bottom:
            return True
    return False


def _clip(bbox, page) -> tuple[float, float, float, float]:
    x0, top, x1, bottom = bbox
    return (max(x0, page.bbox[0]), max(top, page.bbox[1]),
            min(x1, page.bbox[2]), min(bottom, page.bbox[3]))
