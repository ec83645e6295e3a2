"""Table chunks: a page's tables as markdown tables, cut by the configured strategy.

A table chunk's text is a small document of its own:

    Table: Statutory financial targets          <- caption, when there is one
    Section: PERFORMANCE REPORT                 <- the page's section, when known
    | Target | Limit £'000 | Actual £'000 |     <- the header row, in EVERY chunk
    | --- | --- | --- |
    | Core Revenue Resource Limit | 1,278,771 | 1,278,002 |

so that a figure is embedded and BM25-indexed next to its column and row
names, which the flattened page text separates. ``parse_markdown_table``
reads the cells back (a pipe inside a cell is written ``\\|``).

Strategies (Settings.table_strategy): ``whole`` (one chunk per table, which
the model truncates past its input limit), ``rows`` (as many whole rows as
fit in chunk_tokens; a row is never split), ``row_blocks`` (table_block_rows
rows per chunk), ``two_stage`` (a summary chunk naming the columns and row
labels, then row blocks). Pure: same page and settings, same chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ragloupe.models import Table

STRATEGIES = ("off", "whole", "rows", "row_blocks", "two_stage")
_SEPARATOR = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


@dataclass(frozen=True)
class TablePiece:
    """One table chunk before it becomes a Chunk: its text and the body rows [row_start, row_end)."""

    text: str
    row_start: int
    row_end: int


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def preamble(table: Table, section: str) -> list[str]:
    lines = []
    if table.caption:
        lines.append(f"Table: {table.caption}" + (" (continued)" if table.continued else ""))
    if section:
        lines.append(f"Section: {section}")
    return lines


def markdown_table(table: Table, rows: Sequence[Sequence[str]], section: str = "") -> str:
    """The preamble, the header row, its separator, then ``rows``."""
    width = len(table.header) or max((len(r) for r in rows), default=1)
    header = table.header or ("",) * width
    lines = preamble(table, section) + [markdown_row(header), "| " + " | ".join(["---"] * width) + " |"]
    lines += [markdown_row(row) for row in rows]
    return "\n".join(lines)


def parse_markdown_table(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(header, rows) of the markdown table in a table chunk's text."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    rows = [_split_row(line) for line in lines if not _SEPARATOR.match(line.replace(" ", ""))]
    return (rows[0] if rows else ()), tuple(rows[1:])


def _split_row(line: str) -> tuple[str, ...]:
    inner = line.strip()[1:-1]
    cells = re.split(r"(?<!\\)\|", inner)
    return tuple(cell.strip().replace("\\|", "|") for cell in cells)


def summary_text(table: Table, section: str) -> str:
    """The two_stage summary: what the table is, its columns and its row labels."""
    lines = preamble(table, section)
    lines.append(f"Columns: {'; '.join(h for h in table.header if h) or '(no header row)'}")
    labels = [row[0] for row in table.rows if row and row[0]]
    lines.append(f"Rows ({len(table.rows)}): {'; '.join(labels)}")
    return "\n".join(lines)


def table_pieces(table: Table, strategy: str, section: str, block_rows: int,
                 budget: int, count_tokens: Callable[[Sequence[str]], list[int]]) -> list[TablePiece]:
    """The chunks one table becomes under ``strategy``.

    ``budget`` is the tokens a chunk may hold; ``count_tokens`` counts the
    tokens of each of a list of texts (the model's tokenizer, no special tokens).
    """
    rows = list(table.rows)
    if strategy == "whole" or not rows:
        return [TablePiece(markdown_table(table, rows, section), 0, len(rows))]
    if strategy == "rows":
        return _packed(table, rows, section, budget, count_tokens)
    if strategy in ("row_blocks", "two_stage"):
        size = max(1, block_rows)
        pieces = [TablePiece(markdown_table(table, rows[i:i + size], section), i, min(i + size, len(rows)))
                  for i in range(0, len(rows), size)]
        if strategy == "two_stage":
            pieces.insert(0, TablePiece(summary_text(table, section), 0, len(rows)))
        return pieces
    raise ValueError(f"unknown table strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")


def _packed(table: Table, rows: list, section: str, budget: int,
            count_tokens: Callable[[Sequence[str]], list[int]]) -> list[TablePiece]:
    """Rows packed greedily into chunks of at most ``budget`` tokens, header repeated.

    A row that alone exceeds the budget gets a chunk of its own (the model
    truncates it); rows are never split.
    """
    head = markdown_table(table, [], section)
    costs = count_tokens([head] + [markdown_row(row) for row in rows])
    head_cost, row_costs = costs[0], costs[1:]
    pieces, start, used = [], 0, head_cost
    for i, cost in enumerate(row_costs):
        if i > start and used + cost > budget:
            pieces.append(TablePiece(markdown_table(table, rows[start:i], section), start, i))
            start, used = i, head_cost
        used += cost
    pieces.append(TablePiece(markdown_table(table, rows[start:], section), start, len(rows)))
    return pieces


@dataclass(frozen=True)
class ChunkedTable:
    """One table as its chunks hold it: the header, every body row in order, caption, section."""

    page: int
    table_index: int
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str
    section: str
    chunk_ids: tuple[str, ...]


def tables_from_chunks(chunks: Sequence) -> list[ChunkedTable]:
    """The tables a document's table chunks were cut from, in (page, table) order: each table's
    row blocks joined back (the header once), so what is shown or served is what was indexed.
    A two_stage summary chunk holds no rows and adds none."""
    grouped: dict[tuple[int, int], list] = {}
    for chunk in chunks:
        if chunk.kind == "table":
            grouped.setdefault((chunk.page, chunk.table_index), []).append(chunk)
    out = []
    for (page, index), parts in sorted(grouped.items()):
        parts = sorted(parts, key=lambda c: (c.row_start, c.position))
        header: tuple[str, ...] = ()
        rows: list[tuple[str, ...]] = []
        for part in parts:
            part_header, part_rows = parse_markdown_table(part.text)
            header = header or part_header
            rows += part_rows
        caption = next((line[len("Table: "):].removesuffix(" (continued)")
                        for line in parts[0].text.splitlines() if line.startswith("Table: ")), "")
        out.append(ChunkedTable(page, index, tuple(header), tuple(rows), caption, parts[0].section,
                                tuple(c.chunk_id for c in parts)))
    return out
