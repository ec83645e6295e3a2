"""Tables on PDF pages: found with pdfplumber in the extraction child, tidied here.

In the child: ``looks_tabular`` decides from pypdf's reading whether a page
is worth opening with pdfplumber (it draws rules, or has lines of numbers);
``extract_within`` runs ``extract_tables`` under the page's time share.
Candidates come from table_detect.py (ruled, row-ruled, then unruled tables
of figures, ``figure_blocks`` here: pdfplumber's text strategy, kept only
when it really is a table of figures, since it otherwise slices running
text into fake columns, "Financial Perform" | "ance and"). Each table's
region is cut out of the page's prose, so no cell is indexed twice, and the
line above it is kept as its caption.

In the parent (pure): ``table_from_raw`` turns cell rows into a Table with
its header rows as printed and one joined header row (stacked header rows
joined per column, cells a merged header spans filled in), and
``carry_headers`` gives a table that runs on from the previous page that
page's header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from ragloupe.models import Table
from ragloupe.ingest.table_grid import phrases, text_lines
from ragloupe.numbers import YEAR_PATTERN

# A figure as tables print it: 1,559,285  (1,234)  -12.5  £769  45%  and "-" for nil.
_VALUE = re.compile(r"^[(\-–−]?[£$€]?\(?[\d][\d,]*(?:\.\d+)?\)?%?$|^[-–—]$")
# Header-like figures: years and financial years (2023, 2022/23), units (£'000, £000s).
_HEADER_FIGURE = re.compile(rf"^{YEAR_PATTERN}(?:[/-]\d{{2,4}})?$|^£\s?'?000'?s?$", re.IGNORECASE)
# Any number as a table prints it, years included: 2019/20  12.5%  (102.7-103.6)  $1.1M  n=45
_NUMBER = re.compile(r"^[(\[]?[-+–−]?[£$€]?\d[\d,.]*(?:[-–/]\d[\d,.]*)?%?[)\]]?(?:[MKkmbn]|bn)?[.,;:]?$")
# A page drawing this many straight lines or rectangles may hold a ruled table.
_MIN_RULES = 2
_RULE_OPERATOR = re.compile(rb"(?<![A-Za-z])(?:re|l)\s")
_MIN_TABULAR_LINES = 3
_MIN_VALUE_SHARE_OF_LINE = 0.4
_MAX_HEADER_ROWS = 5
_PROSE_WIDTH = 0.5  # a phrase wider than this share of a table's width is running text
_TEXT_STRATEGY = {"vertical_strategy": "text", "horizontal_strategy": "text",
                  "min_words_vertical": 3, "min_words_horizontal": 2}
# A column found from word alignment is a column of figures when this share of its filled
# body cells are figures; prose cut into columns scores near zero.
_MIN_VALUE_SHARE_OF_COLUMN = 0.6
_LINE_TOLERANCE = 3  # points: words this close vertically sit on one line
_CAPTION_GAP = 40  # points above a table searched for its caption (up to three lines)
_FIGURE_NAME = re.compile(r"^(?:Figure|Fig\.|Chart|Graph|Diagram|Map)\s*[\dA-Z]", re.IGNORECASE)
_TABLE_NAME = re.compile(r"\b(?:Table|Exhibit|Schedule)\s+[\dA-Z]+\b")


def is_value(cell: str | None) -> bool:
    """True for a figure that is data (not a year or a unit heading a column)."""
    text = (cell or "").strip().replace(" ", "")
    return bool(text) and bool(_VALUE.match(text)) and not _HEADER_FIGURE.match(text)


def looks_tabular(text: str, ruled: bool = False) -> bool:
    """Cheap test on a page's plain text: does it draw rules, or are there several lines made
    mostly of numbers (figures, years, percentages, ranges)?

    Decides whether pdfplumber (about ten times slower than pypdf) looks at the page.
    """
    if ruled:
        return True
    hits = 0
    for line in text.splitlines():
        tokens = line.split()
        values = sum(1 for t in tokens if _NUMBER.match(t))
        if values >= 2 and values >= _MIN_VALUE_SHARE_OF_LINE * len(tokens):
            hits += 1
            if hits >= _MIN_TABULAR_LINES:
                return True
    return False


def draws_rules(page) -> bool:
    """True when a pypdf page's content stream draws a few lines or rectangles."""
    contents = page.get_contents()
    if contents is None:
        return False
    return len(_RULE_OPERATOR.findall(contents.get_data(), 0)) >= _MIN_RULES


# --------------------------------------------------------------- in the child

@dataclass(frozen=True)
class RawTable:
    rows: list[list[str | None]]
    bbox: tuple[float, float, float, float]
    caption: str


@dataclass(frozen=True)
class PageTables:
    tables: list[RawTable]
    prose: str  # the page's text outside the tables


_RETRY_S = 0.02  # CPU seconds between further stops, once a page is past its time


class TableTimeout(BaseException):
    """Table detection on one page ran past its time.

    A BaseException, like KeyboardInterrupt: the signal lands anywhere inside pdfminer,
    whose ``except Exception`` clauses would otherwise turn it into a parse error."""


def extract_within(page, seconds: float) -> PageTables:
    """``extract_tables`` stopped after ``seconds`` of CPU time (TableTimeout).

    CPU time, not wall time: on a machine another job keeps busy, a page's detection waits
    for the core as long again, and a wall-clock budget then dropped the tables of pages
    an idle machine reads (20 chunks of the demo index differed so at load 8). A page that
    never ends still burns CPU, so the limit still stops it. pdfplumber is pure Python, so
    a SIGPROF raised into it stops it between bytecodes. Only the main thread can take a
    signal (the extraction child's is); elsewhere no limit is set.

    The timer repeats every ``_RETRY_S`` of CPU time until detection ends: a signal can land
    where Python swallows what it raises (a weak reference's callback during garbage
    collection prints "Exception ignored" and carries on), and a single shot then let the
    page run to its end.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return extract_tables(page)

    finished = False

    def stop(signum, frame):
        if not finished:
            raise TableTimeout()

    previous = signal.signal(signal.SIGPROF, stop)
    try:
        signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-6), _RETRY_S)
        found = extract_tables(page)
        finished = True
        return found
    finally:
        finished = True
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def extract_tables(page) -> PageTables:
    """The tables of one pdfplumber page and the page's text without them."""
    from ragloupe.ingest.table_detect import find_candidates

    candidates = find_candidates(page)
    if not candidates:
        return PageTables([], "")
    prose_page = page
    tables = []
    for candidate in candidates:
        caption = _caption_above(page, candidate.bbox)
        if _FIGURE_NAME.match(caption):
            continue  # "Figure 1: Population by age group": a chart whose bars made a grid
        tables.append(RawTable(candidate.rows, candidate.bbox, caption))
        prose_page = prose_page.outside_bbox(_clip(candidate.bbox, page))
    if not tables:
        return PageTables([], "")
    return PageTables(tables, prose_page.extract_text() or "")


def figure_blocks(page) -> list[tuple[tuple, list[list[str | None]]]]:
    """Tables of figures in free text: pdfplumber's text grid, cut into runs of figure rows."""
    return [block for table in page.find_tables(_TEXT_STRATEGY) for block in _figure_blocks(page, table)]


def _figure_blocks(page, table) -> list[tuple[tuple, list[list[str | None]]]]:
    """Runs of rows of a text-strategy candidate that form a table of figures.

    The text strategy lays one grid over everything aligned on the page,
    prose included, and puts an empty row between text lines. Empty rows are
    dropped; the rest is cut into runs of rows with two or more filled cells,
    and a run is kept only when it has figure rows and its non-first columns
    are mostly figures (with up to three header rows above). The grid also
    cuts long row labels and header words at chance alignments ("Aberdeen R" |
    "oyal Infirmary"), so a kept run is read again word by word against the
    extents of its columns of figures (``_read_between``).
    """
    lines = [(row.bbox, cells) for row, cells in zip(table.rows, table.extract())
             if any((c or "").strip() for c in cells)]
    blocks, current = [], []
    for bbox, cells in lines + [(None, [])]:
        if sum(1 for c in cells if (c or "").strip()) >= 2:
            current.append((bbox, cells))
        elif current:
            blocks.append(current)
            current = []
    kept = []
    for block in blocks:
        rows = [cells for _, cells in block]
        first_value = next((i for i, row in enumerate(rows) if any(is_value(c) for c in row[1:])), None)
        if first_value is None:
            continue
        start = _header_start(page, block, first_value)  # prose right above is not the header
        block, rows, first_value = block[start:], rows[start:], first_value - start
        if first_value > _MAX_HEADER_ROWS:
            continue
        n_header = first_value
        last_value = max(i for i, row in enumerate(rows) if any(is_value(c) for c in row[1:]))
        block, rows = block[:last_value + 1], rows[:last_value + 1]  # prose below is not the table
        body = rows[n_header:]
        if len(body) < 2 or not _figure_columns(body):
            continue
        boxes = [bbox for bbox, _ in block]
        bbox = (min(b[0] for b in boxes), boxes[0][1], max(b[2] for b in boxes), boxes[-1][3])
        rows = _read_between(page, bbox, n_header) or rows
        rows = [[None if i < n_header - 1 and j > 0 and not (c or "").strip() else c
                 for j, c in enumerate(row)] for i, row in enumerate(rows)]
        kept.append((bbox, rows))
    return kept


def _header_start(page, block, first_value: int) -> int:
    """The first row of a block's header: the rows above its first figure row up to the nearest
    line of running text (a phrase wider than _PROSE_WIDTH of the block), which is not a header."""

    x0 = min(bbox[0] for bbox, _ in block)
    x1 = max(bbox[2] for bbox, _ in block)
    for i in range(first_value - 1, -1, -1):
        bbox = block[i][0]
        words = page.crop((x0, bbox[1], x1, bbox[3])).extract_words()
        widest = max((p[-1]["x1"] - p[0]["x0"] for line in text_lines(words) for p in phrases(line)),
                     default=0)
        if widest > _PROSE_WIDTH * (x1 - x0):
            return i + 1
    return 0


def _read_between(page, bbox, n_header: int) -> list[list[str | None]]:
    """The rows inside ``bbox`` read again word by word.

    Columns are the extents of the figures in the body rows (figures of one
    column overlap, whether set left- or right-aligned); words left of the
    first column make the row label. Each line's words are grouped into
    phrases (a word gap under half the text height), and a phrase goes to the
    column it overlaps most, else the nearest: a header wider than its figures
    ("2023 £'000" over "83,217") stays whole in its column.
    """
    region = page.crop((page.bbox[0], bbox[1], page.bbox[2], bbox[3]))
    lines = text_lines(region.extract_words())
    figures = [{"x0": phrase[0]["x0"], "x1": phrase[-1]["x1"]} for line in lines[n_header:]
               for phrase in phrases(line) if is_value(" ".join(w["text"] for w in phrase))]
    spans = _figure_spans(figures)
    if not spans:
        return []
    label_end = spans[0][0] - _LINE_TOLERANCE
    rows = []
    for line in lines:
        cells: list[list[str]] = [[] for _ in range(len(spans) + 1)]
        for phrase in phrases(line):
            x0, x1 = phrase[0]["x0"], phrase[-1]["x1"]
            text = " ".join(w["text"] for w in phrase)
            if x1 <= label_end:
                cells[0].append(text)
                continue
            overlaps = [min(x1, b) - max(x0, a) for a, b in spans]
            best = max(range(len(spans)), key=lambda j: overlaps[j])
            if overlaps[best] <= 0:
                best = min(range(len(spans)), key=lambda j: abs((x0 + x1) / 2 - sum(spans[j]) / 2))
            cells[best + 1].append(text)
        rows.append([" ".join(c) for c in cells])
    return rows


def _figure_spans(figures: list[dict]) -> list[tuple[float, float]]:
    """Overlapping extents of figures merged into column extents, left to right."""
    spans: list[list[float]] = []
    for word in sorted(figures, key=lambda w: w["x0"]):
        if spans and word["x0"] <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], word["x1"])
        else:
            spans.append([word["x0"], word["x1"]])
    return [(a, b) for a, b in spans]


def _figure_columns(body: list[list[str | None]]) -> bool:
    cells = [c for row in body for c in row[1:] if (c or "").strip()]
    return bool(cells) and sum(map(is_value, cells)) >= _MIN_VALUE_SHARE_OF_COLUMN * len(cells)


def _clip(bbox, page) -> tuple[float, float, float, float]:
    x0, top, x1, bottom = bbox
    return (max(x0, page.bbox[0]), max(top, page.bbox[1]),
            min(x1, page.bbox[2]), min(bottom, page.bbox[3]))


def _caption_above(page, bbox) -> str:
    """The caption just above the table: from the nearest line naming a table or figure
    ("Table 4: ...", "Figure 1: ...", a caption wrapped over up to three lines), else the
    last line of text above it."""
    top = bbox[1]
    if top <= page.bbox[1] + 1:
        return ""
    above = page.within_bbox((page.bbox[0], max(page.bbox[1], top - _CAPTION_GAP), page.bbox[2], top))
    lines = [line.strip() for line in (above.extract_text() or "").splitlines() if line.strip()][-3:]
    for i in range(len(lines) - 1, -1, -1):
        # "... as shown below. Table 4: Targets" -> "Table 4: Targets"
        named = _TABLE_NAME.search(lines[i]) or _FIGURE_NAME.match(lines[i])
        if named:
            return " ".join([lines[i][named.start():], *lines[i + 1:]])
    return lines[-1] if lines else ""


# --------------------------------------------------------------- in the parent

def _clean(cell: str | None) -> str:
    return " ".join((cell or "").split())


def table_from_raw(index: int, raw: dict) -> Table:
    """Cell rows from the child -> a Table with one header row.

    Header rows are the rows above the first row holding a figure (at most
    three). In a header row a merged cell spans empty (None) cells to its
    right, so those are filled from the left, except in the last header row,
    whose empty cells are real ("" over a row-label column). Stacked header
    rows are joined per column: "Group" / "2023" / "£'000" -> "Group 2023 £'000".
    """
    rows = [list(row) for row in raw.get("rows", ()) if any(_clean(c) for c in row)]
    width = max((len(row) for row in rows), default=0)
    rows = [row + [None] * (width - len(row)) for row in rows]
    keep = [j for j in range(width) if any(_clean(row[j]) for row in rows)]
    rows = [[row[j] for j in keep] for row in rows]
    n_header = header_depth(rows)
    header_rows = []
    for i, row in enumerate(rows[:n_header]):
        filled, last = [], None
        for cell in row:
            if cell is None and i < n_header - 1 and last is not None:
                filled.append(last)
            else:
                filled.append(_clean(cell))
                last = _clean(cell) if cell is not None else last
        header_rows.append(filled)
    header = tuple(" ".join(part for part in column if part) for column in zip(*header_rows)) \
        if header_rows else ()
    body = tuple(tuple(_clean(c) for c in row) for row in rows[n_header:])
    printed = tuple(tuple(None if c is None and j > 0 else _clean(c) for j, c in enumerate(row))
                    for row in rows[:n_header])
    return Table(index=index, header=header, rows=body, caption=_clean(raw.get("caption", "")),
                 header_rows=printed)


def header_depth(rows: Sequence[Sequence[str | None]]) -> int:
    """How many of the rows are header rows: those above the first row with a figure after its
    label (at most _MAX_HEADER_ROWS); a table of words has one header row."""
    first_value = next((i for i, row in enumerate(rows) if any(is_value(c) for c in row[1:])), None)
    depth = 1 if first_value is None else min(first_value, _MAX_HEADER_ROWS)
    return min(depth, max(len(rows) - 1, 0))


def carry_headers(pages: Sequence[Sequence[Table]]) -> list[list[Table]]:
    """Give a table that continues from the previous page that page's header and caption.

    A page's first table continues the previous page's last table when it
    has no header row of its own (or repeats the same one) and the same
    number of columns.
    """
    out: list[list[Table]] = []
    previous: Table | None = None
    for tables in pages:
        tables = list(tables)
        if tables and previous is not None:
            first = tables[0]
            same_width = len(first.rows[0] if first.rows else first.header) == len(previous.header)
            if same_width and (not first.header or first.header == previous.header):
                tables[0] = replace(first, header=previous.header,
                                    caption=first.caption or previous.caption, continued=True)
        out.append(tables)
        previous = tables[-1] if tables else None
    return out


def table_grid_rows(table: Table) -> list[tuple[str | None, ...]]:
    """The table as printed: its header rows (None where a header spans from the left), then
    its body rows; what the structure benchmark scores and the app shows."""
    header_rows = list(table.header_rows) or ([table.header] if table.header else [])
    return header_rows + list(table.rows)
