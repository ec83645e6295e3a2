"""The Chunk Explorer's queries: which chunks match a filter, how many, one page at a time.

Built for 100k chunks: counting and ordering read only ids and metadata
(never the texts), and only the chunks of the page on screen are read in full.
Free text is Chroma's ``$contains`` over the chunk text (case-sensitive), so
it runs inside the store rather than over texts pulled into Python.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ragloupe.models import Chunk
from ragloupe.retrieve.engines import chroma_where


@dataclass(frozen=True)
class Selection:
    """The chunks matching a filter, in reading order (doc, page, position), by id."""

    chunk_ids: tuple[str, ...]
    quality_counts: dict[str, int]

    @property
    def matching(self) -> int:
        return len(self.chunk_ids)

    def n_pages(self, page_size: int) -> int:
        return max(1, -(-self.matching // page_size))

    def page_ids(self, page: int, page_size: int) -> list[str]:
        """Ids on 1-based result page ``page``."""
        start = (max(1, page) - 1) * page_size
        return list(self.chunk_ids[start:start + page_size])


def select_chunks(store: Any, filters: dict | None = None, text: str = "",
                  kinds: tuple[str, ...] | None = None) -> Selection:
    """Every chunk matching ``filters`` (search filter keys) and containing ``text``,
    of one of ``kinds`` ("text", "table"; None: any). The kind is checked here, not
    in Chroma: chunks of an index built before table chunks have no kind and are text."""
    where = chroma_where(filters)
    where_document = {"$contains": text} if text.strip() else None
    rows: list[tuple[tuple, str, str]] = []
    offset = 0
    while True:
        got = store.collection.get(where=where, where_document=where_document,
                                   include=["metadatas"], limit=store.batch_size, offset=offset)
        for chunk_id, meta in zip(got["ids"], got["metadatas"]):
            if kinds is not None and meta.get("kind", "text") not in kinds:
                continue
            order = (str(meta.get("doc_id", "")), int(meta.get("page", 0)),
                     str(meta.get("record_id", "")), int(meta.get("position", 0)), chunk_id)
            rows.append((order, chunk_id, str(meta.get("quality", ""))))
        if len(got["ids"]) < store.batch_size:
            break
        offset += len(got["ids"])
    rows.sort()
    return Selection(chunk_ids=tuple(chunk_id for _, chunk_id, _ in rows),
                     quality_counts=dict(Counter(quality for _, _, quality in rows)))


def chunks_on_page(store: Any, selection: Selection, page: int, page_size: int) -> list[Chunk]:
    """The chunks of one result page, read in full."""
    return store.get_chunks(selection.page_ids(page, page_size))


def chunks_of_page(store: Any, doc_id: str, page: int) -> list[Chunk]:
    """Every chunk of one page of a document (prose and tables), read in full."""
    return store.all_chunks(chroma_where({"doc_ids": [doc_id], "pages": (page, page)}))
