"""Showing table chunks and a page's prose and tables side by side, as data.

A table chunk's text is a markdown table, but it is never handed to
markdown: its cells are read back (``parse_markdown_table``) and shown with
st.dataframe, which renders each cell as inert text, and the caption and
section lines go through st.text. The cell values come from the document,
so "**bold**", "<b>" or "[x](http://...)" in a cell stay visible characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
import streamlit as st

from ragloupe.models import Chunk
from ragloupe.table_chunks import ChunkedTable, parse_markdown_table, tables_from_chunks
from ragloupe.ui.text import highlight_html

KINDS = ("text", "table")
_PAGE_DPI = 80  # the page picture beside its tables: enough to read a table's figures


def table_frame(chunk: Chunk) -> pd.DataFrame:
    """The cells of a table chunk as a DataFrame (column names made unique and non-empty)."""
    return cells_frame(*parse_markdown_table(chunk.text))


def table_preamble(chunk: Chunk) -> str:
    """The lines above the table (caption, section) or a two_stage summary's text."""
    return "\n".join(line for line in chunk.text.splitlines() if not line.startswith("|"))


def show_chunk(chunk: Chunk, terms: Iterable[str] = ()) -> None:
    """A chunk's content: a table chunk as a table of cells, a text chunk as marked-up inert text."""
    if chunk.kind != "table":
        st.html(highlight_html(chunk.text, list(terms)))
        return
    preamble = table_preamble(chunk)
    if preamble:
        st.text(preamble)
    frame = table_frame(chunk)
    if len(frame.columns):
        st.caption(f"table {chunk.table_index + 1} on the page, rows {chunk.row_start + 1}–{chunk.row_end}")
        st.dataframe(frame, hide_index=True, width="stretch")


def page_side_by_side(chunks: list[Chunk], terms: Iterable[str] = ()) -> None:
    """One page's prose chunks on the left, its table chunks on the right."""
    prose = [c for c in chunks if c.kind != "table"]
    tables = [c for c in chunks if c.kind == "table"]
    left, right = st.columns(2)
    with left:
        _chunk_column("Prose", prose, "No prose chunk on this page.", terms)
    with right:
        _chunk_column("Tables", tables, "No table was found on this page.", terms)


def _chunk_column(heading: str, chunks: list[Chunk], when_none: str, terms: Iterable[str]) -> None:
    """One side of page_side_by_side: the heading with the chunk count, then each chunk or ``when_none``."""
    st.subheader(f"{heading} ({len(chunks)} chunks)")
    for chunk in chunks:
        st.caption(f"chunk {chunk.position} · {chunk.n_tokens} tokens")
        show_chunk(chunk, terms)
    if not chunks:
        st.caption(when_none)


def cells_frame(header: Sequence[str], rows: Sequence[Sequence[str]]) -> pd.DataFrame:
    """Cells as a DataFrame of strings, column names made unique and non-empty."""
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    names, seen = [], {}
    for i in range(width):
        name = header[i] if i < len(header) and header[i] else f"column {i + 1}"
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    body = [list(r) + [""] * (width - len(r)) for r in rows]
    return pd.DataFrame(body, columns=names, dtype=str)


def page_picture(path: str, page: int):
    """The PDF page as printed (a PIL image), or None when the file cannot be drawn."""
    try:
        import pypdfium2

        document = pypdfium2.PdfDocument(path)
        try:
            return document[page - 1].render(scale=_PAGE_DPI / 72).to_pil()
        finally:
            document.close()
    except Exception:  # a moved or unreadable file: the tables are still shown
        return None


def page_beside_tables(path: str, page: int, chunks: list[Chunk]) -> None:
    """The page as printed on the left, each table on it as extracted (all its rows) on the right,
    so a mis-read table shows at a glance."""
    tables = [t for t in tables_from_chunks(chunks) if t.header or t.rows]
    left, right = st.columns(2)
    with left:
        st.subheader("The page as printed")
        picture = page_picture(path, page) if path.lower().endswith(".pdf") else None
        if picture is None:
            st.caption("The page cannot be drawn (not a PDF, or the file has moved).")
        else:
            st.image(picture, width="stretch")
    with right:
        st.subheader(f"Its tables as extracted ({len(tables)})")
        for table in tables:
            _show_table(table)
        if not tables:
            st.caption("No table was found on this page.")


def _show_table(table: ChunkedTable) -> None:
    lines = [f"Table {table.table_index + 1}" + (f": {table.caption}" if table.caption else "")]
    if table.section:
        lines.append(f"Section: {table.section}")
    st.text("\n".join(lines))
    st.caption(f"{len(table.rows)} rows × {len(table.header)} columns, from {len(table.chunk_ids)} chunks")
    st.dataframe(cells_frame(table.header, table.rows), hide_index=True, width="stretch")
