"""Structured documents (HTML, DOCX) as pages: blocks in reading order -> Pages by section.

A structured document has no printed pages, so ragloupe makes them: a page is
one section, from a heading to the next heading, and a section longer than
``PAGE_CHARS`` continues on further pages, cut between blocks (a paragraph or
a table is never cut). Why sections: a citation "page 4" of a web page means
nothing to a reader, but page 4 whose section is "2 Budget › 2.1 Capital" is
somewhere they can find; and a page stays about the size of a printed one,
so page-level retrieval (one unit per page, gold sets judging pages) works
on these documents as it does on PDFs. A heading with no text under it
before the next heading starts no page of its own: it joins the next
section's page and its path.

Each page carries its heading path in ``Page.section`` ("Budget › Capital"),
which the chunker gives its chunks, and its tables as ``Table`` records, the
same as a PDF page's. Pure functions over ``Block`` records; the readers
(html_doc.py, docx_doc.py) make the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ragloupe.config import Settings
from ragloupe.ingest.quality import assess_page
from ragloupe.models import Page, Table

# About one printed page of prose (500 words): a longer section goes on over several pages.
PAGE_CHARS = 3000
SECTION_SEPARATOR = " › "


@dataclass(frozen=True)
class Block:
    """One block of a document in reading order: a heading, a paragraph or a table."""

    kind: str  # "heading" | "text" | "table"
    text: str = ""  # heading or paragraph text
    level: int = 0  # headings: 1 (h1, Heading 1, Title) .. 6
    rows: tuple[tuple[str, ...], ...] = ()  # tables: every row, header first
    header_rows: int = 1  # tables: how many of ``rows`` are header rows (0: none marked)
    caption: str = ""  # tables: their own caption, when the document gives one


@dataclass
class _Draft:
    """A page being filled: its section path, text lines and tables."""

    section: str
    lines: list[str] = field(default_factory=list)
    tables: list[Block] = field(default_factory=list)
    body_chars: int = 0  # paragraph and table text, headings not counted

    def has_body(self) -> bool:
        return self.body_chars > 0


def table_record(index: int, block: Block, section: str) -> Table:
    """A table block as the Table record PDF pages carry: one header row, body rows of
    equal width; several header rows are joined per column ("Group" over "2023" ->
    "Group 2023"); the caption is the table's own, else the section it sits in."""
    width = max(len(row) for row in block.rows)
    rows = [tuple(cell.strip() for cell in row) + ("",) * (width - len(row)) for row in block.rows]
    # One header row at least, and one body row at least: a table of header cells only
    # (every row <th>) keeps its last row as its body.
    head_count = min(max(block.header_rows, 1), len(rows) - 1)
    head, body = rows[:head_count], rows[head_count:]
    header = tuple(" ".join(dict.fromkeys(cell for cell in column if cell)) for column in zip(*head)) \
        if head else ()
    caption = block.caption.strip() or section.rsplit(SECTION_SEPARATOR, 1)[-1]
    return Table(index=index, header=header, rows=tuple(body), caption=caption)


def _heading_path(stack: list[tuple[int, str]]) -> str:
    return SECTION_SEPARATOR.join(text for _, text in stack)


def paginate(blocks: Iterable[Block], page_chars: int = PAGE_CHARS) -> list[_Draft]:
    """Blocks -> page drafts: a new page at each heading that follows some text, and
    when a page's text passes ``page_chars`` (between blocks, never inside one)."""
    drafts: list[_Draft] = []
    stack: list[tuple[int, str]] = []  # (level, heading) of the headings in force
    current = _Draft(section="")
    for block in blocks:
        if block.kind == "heading":
            if current.has_body():
                drafts.append(current)
                current = _Draft(section="")
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.text))
            current.lines.append(block.text)
            current.section = _heading_path(stack)
            continue
        size = len(block.text) if block.kind == "text" else sum(len(c) for r in block.rows for c in r)
        if current.has_body() and current.body_chars + size > page_chars:
            drafts.append(current)
            current = _Draft(section=_heading_path(stack))
        if block.kind == "text":
            current.lines.append(block.text)
        else:
            current.tables.append(block)
        current.body_chars += max(size, 1)
    if current.has_body() or current.lines:
        drafts.append(current)
    return drafts


def build_pages(doc_id: str, blocks: Sequence[Block], method: str,
                settings: Settings) -> tuple[Page, ...]:
    """Graded pages of a structured document (see the module docstring)."""
    pages = []
    for number, draft in enumerate(paginate(blocks), start=1):
        text = "\n".join(draft.lines).strip()
        tables = tuple(table_record(i, block, draft.section) for i, block in enumerate(draft.tables))
        cells = "\n".join(" ".join(row) for table in tables for row in (table.header, *table.rows))
        graded = assess_page(f"{text}\n{cells}" if cells else text, settings)
        pages.append(Page(doc_id, number, text, method, graded.quality, graded.reason,
                          section=draft.section or None, tables=tables))
    return tuple(pages)


def has_content(blocks: Sequence[Block]) -> bool:
    """True when the blocks hold any text or table cell at all."""
    return any(block.text.strip() or any(c.strip() for r in block.rows for c in r) for block in blocks)
