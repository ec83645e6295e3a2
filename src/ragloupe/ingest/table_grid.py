"""A table region's cells read from its words: columns from alignment, rows from rules or lines.

pdfplumber's text strategy puts column edges where the words of *some* lines
align, and crops each cell at those edges, so a centred header wider than its
right-aligned figures is cut into pieces ("Domestic (%) Imp" | "orted (%)").
Here a line's words are first grouped into phrases (words closer than half
the text height), and the columns are the extents of the phrases of the
table's fullest lines (the lines with the most phrases: body rows, not
headers spanning several columns) merged where they overlap. Every phrase of
every line then goes to the column it overlaps; a phrase overlapping several
columns is a cell spanning them (None in the columns it covers after the
first), which is how a spanning header comes back.

Rows are the bands between the horizontal rules when the table has them (a
cell's wrapped lines stay one cell), else one row per text line, with a
wrapped row label (a line holding only a label that starts in lower case, or
that follows a label ending in a connecting word) joined to its row.
"""

from __future__ import annotations

from typing import Sequence

_LINE_TOLERANCE = 3  # points: words this close vertically sit on one line
_PHRASE_GAP = 0.5  # of the text height: a wider gap between two words starts a new phrase
_MIN_OVERLAP = 0.5  # of a phrase's width: it covers a column it overlaps at least this much
_CONNECTORS = ("and", "or", "of", "the", "in", "for", "to", "with", "by", "from", "on", "at", ",", "-", "&")


def text_lines(words: list[dict]) -> list[list[dict]]:
    """Words grouped into lines (tops within _LINE_TOLERANCE), each sorted left to right."""
    lines: list[list[dict]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        if lines and abs(lines[-1][0]["top"] - word["top"]) <= _LINE_TOLERANCE:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [sorted(line, key=lambda w: w["x0"]) for line in lines]


def phrases(line: list[dict]) -> list[list[dict]]:
    """A line's words grouped into phrases: a gap under half the text height joins two words."""
    out: list[list[dict]] = []
    for word in line:
        height = word["bottom"] - word["top"]
        if out and word["x0"] - out[-1][-1]["x1"] < _PHRASE_GAP * height:
            out[-1].append(word)
        else:
            out.append([word])
    return out


def _extent(phrase: list[dict]) -> tuple[float, float]:
    return phrase[0]["x0"], phrase[-1]["x1"]


def _text(phrase: list[dict]) -> str:
    return " ".join(w["text"] for w in phrase)


def columns(lines: Sequence[list[list[dict]]]) -> list[tuple[float, float]]:
    """Column extents from the phrases of the fullest lines (``lines`` already in phrases)."""
    counts = sorted(len(line) for line in lines if len(line) >= 2)
    if not counts:
        return []
    full = counts[len(counts) // 2]  # the median phrase count of the lines with two or more
    spans: list[list[float]] = []
    extents = sorted(_extent(p) for line in lines if len(line) >= full for p in line)
    for x0, x1 in extents:
        if spans and x0 <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], x1)
        else:
            spans.append([x0, x1])
    return [(a, b) for a, b in spans]


def _place(phrase: list[dict], spans: list[tuple[float, float]]) -> tuple[int, int]:
    """The first and last column a phrase covers."""
    x0, x1 = _extent(phrase)
    width = max(x1 - x0, 1.0)
    covered = [j for j, (a, b) in enumerate(spans)
               if min(x1, b) - max(x0, a) >= _MIN_OVERLAP * min(width, b - a)]
    if covered:
        return covered[0], covered[-1]
    nearest = min(range(len(spans)), key=lambda j: abs((x0 + x1) / 2 - sum(spans[j]) / 2))
    return nearest, nearest


def line_cells(line: list[list[dict]], spans: list[tuple[float, float]]) -> list[str | None]:
    """One line's phrases laid into the columns: "" where nothing is, None after a spanning cell."""
    cells: list[str | None] = [""] * len(spans)
    for phrase in line:
        first, last = _place(phrase, spans)
        cells[first] = f"{cells[first]} {_text(phrase)}".strip() if cells[first] else _text(phrase)
        for j in range(first + 1, last + 1):
            if not cells[j]:
                cells[j] = None
    return cells


def read_grid(words: list[dict], row_edges: Sequence[float] = ()) -> list[list[str | None]]:
    """The rows of cells of a table region's words; ``row_edges`` are the rules, top to bottom
    (each row's top, then the last row's bottom), when the table is ruled between rows: lines
    outside them are not the table's."""
    lines = [phrases(line) for line in text_lines(words)]
    spans = columns(lines)
    if len(spans) < 2:
        return []
    rows = [(line[0][0]["top"], line_cells(line, spans)) for line in lines]
    if row_edges:
        inside = [(top, cells) for top, cells in rows
                  if row_edges[0] - _LINE_TOLERANCE <= top <= row_edges[-1]]
        return _by_bands(inside, row_edges[:-1])
    return _join_wrapped(rows)


def _by_bands(rows: list[tuple[float, list]], edges: Sequence[float]) -> list[list[str | None]]:
    """Lines between the same two rules are one row, their cells joined per column (a wrapped
    cell), unless two or more of them fill several columns: then the rule groups rows, and
    each such line is a row of its own."""
    bands: dict[int, list[list]] = {}
    for top, cells in rows:
        bands.setdefault(sum(1 for edge in edges if edge <= top + _LINE_TOLERANCE), []).append(cells)
    out: list[list[str | None]] = []
    for band in (bands[b] for b in sorted(bands)):
        if sum(1 for cells in band if sum(1 for c in cells if c) >= 2) >= 2:
            out += _join_wrapped([(0.0, cells) for cells in band])
            continue
        merged = list(band[0])
        for cells in band[1:]:
            for j, cell in enumerate(cells):
                if cell:
                    merged[j] = f"{merged[j]} {cell}".strip() if merged[j] else cell
        out.append(merged)
    return out


def _join_wrapped(rows: list[tuple[float, list]]) -> list[list[str | None]]:
    """A line holding only a row label joins the row it belongs to when it is a wrapped piece."""
    out: list[list[str | None]] = []
    for _, cells in rows:
        label_only = bool(cells[0]) and not any(c for c in cells[1:])
        if out and label_only and _continues(out[-1][0] or "", cells[0]):
            out[-1][0] = f"{out[-1][0]} {cells[0]}"
            continue
        if out and not label_only and _label_only(out[-1]) and not cells[0] and len(out) > 1:
            out[-1] = [out[-1][0]] + cells[1:]  # a label on the line above its figures
            continue
        out.append(list(cells))
    return out


def _label_only(cells: list) -> bool:
    return bool(cells[0]) and not any(c for c in cells[1:])


def _continues(previous: str, piece: str) -> bool:
    """True when ``piece`` reads as the rest of the label ``previous``."""
    if not previous:
        return False
    return piece[:1].islower() or previous.split()[-1].lower() in _CONNECTORS


def running_text_share(words: list[dict], width: float) -> float:
    """The share of the lines of ``words`` holding a phrase wider than half of ``width``."""
    lines = [phrases(line) for line in text_lines(words)]
    if not lines or width <= 0:
        return 0.0
    wide = sum(1 for line in lines if max(_extent(p)[1] - _extent(p)[0] for p in line) > 0.5 * width)
    return wide / len(lines)
