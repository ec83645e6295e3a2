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

from ragloupe.table_chunks import parse_markdown_table


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
    """One item per (page, table): id, shape, summary and markdown (``methods``: page -> extraction)."""
    tables: dict[tuple[int, int], list[Any]] = {}
    for chunk in chunks:
        if chunk.kind == "table":
            tables.setdefault((chunk.page, chunk.table_index), []).append(chunk)
    items = []
    for (page, index), parts in sorted(tables.items()):
        header, rows = [], []
        for part in sorted(parts, key=lambda c: (c.row_start, c.position)):
            part_header, part_rows = parse_markdown_table(part.text)
            header = header or list(part_header)
            rows += [list(r) for r in part_rows]
        markdown = _markdown(header, rows) if header or rows else parts[0].text
        items.append({"table_id": f"p{page}-t{index}", "page": page, "table_index": index,
                      "table_type": "table" if header or rows else "summary",
                      "rows": len(rows), "cols": len(header) or max((len(r) for r in rows), default=0),
                      "extraction_method": methods.get(page, ""), "table_summary": _summary(parts[0], header),
                      "table_markdown": markdown, "chunk_ids": [c.chunk_id for c in parts]})
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
