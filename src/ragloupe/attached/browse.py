"""An attached Chroma collection browsed read-only, with a BM25 built over its texts.

The Chunk Explorer shows what someone else's pipeline put in its collection (each chunk's
document, page and text, as ragloupe names them) and, for a question, that collection's own
texts ranked by BM25 beside ragloupe's dense ranking of the user's index: one row per rank,
so a reader sees whether their chunks would be found by words where ragloupe's model finds
the page by meaning. Nothing is written to the collection (chroma_engine.py reads a copy).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragloupe.attached.chroma_engine import ChromaEngine
from ragloupe.index import lexical
from ragloupe.models import Chunk
from ragloupe.retrieve.search import search


@dataclass(frozen=True)
class CollectionView:
    """Every chunk of an attached collection and the BM25 over their texts."""

    name: str
    chunks: tuple[Chunk, ...]
    bm25: lexical.LexicalIndex

    def documents(self) -> list[str]:
        return sorted({chunk.doc_id for chunk in self.chunks})

    def chunks_of(self, doc_id: str | None = None, text: str = "") -> list[Chunk]:
        """The chunks of one document (or all), holding ``text`` when given (case-sensitive)."""
        return [c for c in self.chunks if (not doc_id or c.doc_id == doc_id) and (not text or text in c.text)]


@dataclass(frozen=True)
class RankRow:
    """One rank: the collection's BM25 hit there and ragloupe's dense hit there."""

    rank: int
    theirs_unit: str
    theirs_bm25: float | None
    theirs_text: str
    yours_unit: str
    yours_dense: float | None


def chroma_engines(registry) -> list[str]:
    """The attached engines that are Chroma collections (what the Chunk Explorer can browse)."""
    return [name for name, entry in registry.entries.items() if isinstance(entry.engine, ChromaEngine)]


def collection_view(engine: ChromaEngine, k1: float = 1.5, b: float = 0.75, backend: str = "bm25s") -> CollectionView:
    """Read every chunk of the attached collection once and build the BM25 over them."""
    chunks = tuple(engine.chunks())
    return CollectionView(engine.name, chunks, lexical.build_index(chunks, k1, b, backend))


def bm25_beside_dense(view: CollectionView, question: str, workspace, k: int = 10) -> list[RankRow]:
    """The collection's chunks ranked by BM25 for ``question`` beside ragloupe's dense ranking of the
    user's own index (the workspace's), rank by rank."""
    theirs = lexical.search(view.bm25, question, k)
    yours = search(question, "dense", k, workspace=workspace).hits
    rows = []
    for rank in range(1, max(len(theirs), len(yours)) + 1):
        their = theirs[rank - 1] if rank <= len(theirs) else None
        your = yours[rank - 1] if rank <= len(yours) else None
        rows.append(RankRow(rank, their[0].unit if their else "", their[1] if their else None,
                            their[0].text if their else "", your.chunk.unit if your else "",
                            your.per_engine["dense"].score if your else None))
    return rows
