"""Running headers and footers: find the lines a document repeats, strip them from page edges.

Only the first and last ``boilerplate_edge_lines`` non-blank lines of a page
are candidates. Two lines are the same running line when they are equal
ignoring digits, case and spacing, so "Page 7" and "Page 8" are one line. A
candidate is a running line

- everywhere in the document when it appears on at least
  ``boilerplate_min_share`` of the pages that have text (the document
  header, the "Page N" footer);
- on a stretch of pages when it is short (at most 8 words) and appears on at
  least ``boilerplate_min_run`` consecutive pages (a section running head
  such as "PERFORMANCE REPORT (cont)" that repeats through its section but is
  far from half the pages).

Running lines are removed from page edges only: the same words inside the
body stay, because there they are content. Documents with fewer than
``boilerplate_min_pages`` text pages are left alone, since with two pages
every line of a one-line footer "repeats". Stripping never empties a
document: when removing the running lines would leave no page with any text
(four pages that each read only "habibi"), those lines are the document's
content and nothing is stripped. What was removed is kept per page
(``Page.stripped``) and per document (``SourceDoc.boilerplate``).

Pure functions over page texts; the PDF loader applies them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple, Sequence

_DIGITS = re.compile(r"\d+")
# A section running head is short ("PERFORMANCE REPORT (cont)"). A longer
# line repeated at the top of consecutive pages is a continued heading of the
# body ("1. Financial Performance and Position (cont) 1.2 ..."): content.
_MAX_HEAD_WORDS = 8


class StrippedPage(NamedTuple):
    text: str  # the page text without its running header/footer lines
    stripped: tuple[str, ...]  # the lines removed, as they were on the page


@dataclass(frozen=True)
class RunningLines:
    """The running lines of one document."""

    per_page: tuple[frozenset[str], ...]  # line keys to strip, one set per given page
    shown: dict[str, str]  # line key -> how to display it ("Page #"), in first-seen order

    def display(self) -> tuple[str, ...]:
        """Every running line, for SourceDoc.boilerplate."""
        used = set().union(*self.per_page) if self.per_page else set()
        return tuple(shown for key, shown in self.shown.items() if key in used)


def line_key(line: str) -> str:
    """What two lines must share to count as the same running line."""
    return _DIGITS.sub("#", " ".join(line.split())).casefold()


def _display(line: str) -> str:
    """How a running line is shown in the document's boilerplate list: 'Page #'."""
    return _DIGITS.sub("#", " ".join(line.split()))


def _edge_indexes(lines: Sequence[str], edge_lines: int) -> list[int]:
    """Indexes of the first and last ``edge_lines`` non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) <= 2 * edge_lines:
        return filled
    return filled[:edge_lines] + filled[-edge_lines:]


def _runs(positions: list[int]) -> list[list[int]]:
    """[1, 2, 3, 7, 8] -> [[1, 2, 3], [7, 8]]."""
    runs: list[list[int]] = []
    for position in positions:
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    return runs


def find_running_lines(page_texts: Sequence[str], min_share: float, min_pages: int,
                       edge_lines: int, min_run: int = 0) -> RunningLines:
    """Which edge lines to strip from which page (see the module docstring).

    ``page_texts`` is the document's pages in order; pages without text take
    part in nothing and break runs. ``min_run`` 0 turns the run rule off.
    """
    with_text = [i for i, text in enumerate(page_texts) if text.strip()]
    empty = RunningLines(tuple(frozenset() for _ in page_texts), {})
    if len(with_text) < max(min_pages, 1):
        return empty
    pages_of: dict[str, list[int]] = defaultdict(list)  # key -> positions among text pages
    shown: dict[str, str] = {}
    for position, index in enumerate(with_text):
        lines = page_texts[index].splitlines()
        keys = {}
        for i in _edge_indexes(lines, edge_lines):
            keys.setdefault(line_key(lines[i]), _display(lines[i]))
        for key, display in keys.items():  # a line counts once per page
            pages_of[key].append(position)
            shown.setdefault(key, display)

    strip: dict[int, set[str]] = defaultdict(set)  # index into page_texts -> keys
    for key, positions in pages_of.items():
        if len(positions) >= min_share * len(with_text):
            chosen = positions
        elif min_run > 0 and len(key.split()) <= _MAX_HEAD_WORDS:
            chosen = [p for run in _runs(positions) if len(run) >= min_run for p in run]
        else:
            chosen = []
        for position in chosen:
            strip[with_text[position]].add(key)
    per_page = tuple(frozenset(strip.get(i, ())) for i in range(len(page_texts)))
    if all(not strip_running_lines(page_texts[i], per_page[i], edge_lines).text for i in with_text):
        return empty  # nothing but "running" lines: they are the document's content
    return RunningLines(per_page, shown)


def strip_running_lines(text: str, keys: frozenset[str], edge_lines: int) -> StrippedPage:
    """Remove the given running lines from one page's edges; the rest is trimmed."""
    if not keys:
        return StrippedPage(text.strip(), ())
    lines = text.splitlines()
    drop = {i for i in _edge_indexes(lines, edge_lines) if line_key(lines[i]) in keys}
    kept = [line for i, line in enumerate(lines) if i not in drop]
    removed = tuple(lines[i].strip() for i in sorted(drop))
    return StrippedPage("\n".join(kept).strip(), removed)
