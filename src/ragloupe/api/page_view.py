"""The page and table views of EvidenceRAG's document endpoints, from ragloupe's chunks.

- page_chunks: the chunk inspector its UI draws: each chunk's tokens (the embedding model's
  own tokenizer, the one chunking counts with), where it starts and ends in the page's token
  stream, and how many tokens it shares with the chunk before and after it (the overlap
  chunking wrote); page_text is the page as indexed (its text chunks with the overlaps
  taken out, boilerplate already stripped; tables are in their own chunks);
- table_items: one item per table (its chunks joined: the header once, then every body row),
  with its shape, as EvidenceRAG's /tables lists them under ``items``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ragloupe.table_chunks import tables_from_chunks


def page_chunks(chunks: Sequence[Any], tokenizer: Any) -> dict[str, Any]:
    """chunk_count, page_token_count, page_text and the per-chunk token views."""
    views: list[dict[str, Any]] = []
    previous: list[str] = []
    position = 0
    text_parts: list[str] = []
    for chunk in chunks:
        tokens = tokenizer.tokenize(chunk.text)
        table = chunk.kind == "table"
        overlap = 0 if table else _shared(previous, tokens)
        start = position - overlap
        views.append({"chunk_id": chunk.chunk_id, "is_table": table, "tokens": tokens,
                      "token_start": start, "token_end": start + len(tokens),
                      "overlap_prev_tokens": overlap, "overlap_next_tokens": 0,
                      "section_title": chunk.section or "", "subsection_title": "", "segment_title": None})
        if views[:-1] and overlap:
            views[-2]["overlap_next_tokens"] = overlap
        if not table:
            text_parts.append(_without_overlap(text_parts, chunk.text))
            previous = tokens
        position = start + len(tokens)
    return {"chunk_count": len(views), "page_token_count": position, "page_text": "".join(text_parts).strip(),
            "chunks": views}


def _shared(previous: list[str], tokens: list[str]) -> int:
    """Tokens at the start of ``tokens`` that end ``previous`` (the overlap, in tokens)."""
    for size in range(min(len(previous), len(tokens)), 0, -1):
        if previous[-size:] == tokens[:size]:
            return size
    return 0


def _without_overlap(parts: list[str], text: str) -> str:
    """``text`` minus the characters it repeats from the end of the text so far."""
    if not parts:
        return text
    so_far = parts[-1]
    for size in range(min(len(so_far), len(text)), 0, -1):
        if so_far.endswith(text[:size]):
            return text[size:]
    return " " + text


def table_items(chunks: Sequence[Any], methods: dict[int, str]) -> list[dict[str, Any]]:
    """One item per (page, table): id, shape, summary and markdown (``methods``: page -> extraction),
    and the table as extracted (header, cells, caption, section), as the Chunk Explorer shows it."""
    by_id = {c.chunk_id: c for c in chunks}
    items = []
    for table in tables_from_chunks(chunks):
        header, rows = list(table.header), [list(r) for r in table.rows]
        first = by_id[table.chunk_ids[0]]
        markdown = _markdown(header, rows) if header or rows else first.text
        items.append({"table_id": f"p{table.page}-t{table.table_index}", "page": table.page,
                      "table_index": table.table_index,
                      "table_type": "table" if header or rows else "summary",
                      "rows": len(rows), "cols": len(header) or max((len(r) for r in rows), default=0),
                      "extraction_method": methods.get(table.page, ""),
                      "table_summary": _summary(first, header), "table_markdown": markdown,
                      "header": header, "cells": rows, "caption": table.caption, "section": table.section,
                      "chunk_ids": list(table.chunk_ids)})
    return items


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    width = max([len(header)] + [len(r) for r in rows])
    head = header + [""] * (width - len(header))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
    return "\n".join(lines)


def _summary(chunk: Any, header: list[str]) -> str:
    where = f"page {chunk.page}" + (f", under '{chunk.section}'" if chunk.section else "")
    columns = ", ".join(h for h in header if h) or "no header"
    return f"Table {chunk.table_index + 1} of {where}: columns {columns}"
