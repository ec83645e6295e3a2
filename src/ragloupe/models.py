"""The records that travel through the flow, defined once and imported everywhere.

Small frozen dataclasses: Page and SourceDoc come out of ingestion, Chunk out of
chunking and the index, Hit and Ranking out of retrieval. The evaluation and
answer stages define their own records next to the code that makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Quality = Literal["clean", "figures", "degraded", "empty", "rejected"]
# A page of figures (a financial statement) is as searchable as a clean page: numbers are searched.
INDEXABLE: frozenset[str] = frozenset({"clean", "figures", "degraded"})
ChunkKind = Literal["text", "table"]


@dataclass(frozen=True)
class Table:
    """A table found on a PDF page: a header row and body rows of cell strings.

    ``header`` is one row even when the document stacks several header rows
    (their words are joined per column: "Group" over "2023" -> "Group 2023").
    ``caption`` is the "Table 3: ..." line above it, else the nearest heading.
    """

    index: int  # 0-based, in reading order on its page
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    continued: bool = False  # the table goes on from the previous page (header carried over)
    # The header rows as printed, before they were joined into ``header``; None marks a cell
    # covered by a header spanning it from the left.
    header_rows: tuple[tuple[str | None, ...], ...] = ()


@dataclass(frozen=True)
class Page:
    """One PDF page, one record of a CSV/JSONL corpus, or one page of an HTML/DOCX
    document (a section, see ingest/sections.py), after extraction."""

    doc_id: str
    page: int  # 1-based PDF page number; for records, the record's page field or its 1-based ordinal
    text: str  # boilerplate already stripped
    method: str  # e.g. "pypdf-plain", "pypdf-layout", "record"
    quality: Quality
    reason: str  # plain words a person can act on; "" only for clean pages
    record_id: str | None = None  # the record's id (records only)
    title: str | None = None  # the record's title (records only)
    # The record's section field; for HTML/DOCX pages their heading path ("Budget › Capital").
    section: str | None = None
    stripped: tuple[str, ...] = ()  # boilerplate lines removed from this page
    tables: tuple[Table, ...] = ()  # tables cut out of ``text`` (PDF pages, table strategy on)
    confidence: float | None = None  # OCR pages: mean word confidence, 0-100

    @property
    def indexable(self) -> bool:
        return self.quality in INDEXABLE


@dataclass(frozen=True)
class Finding:
    """A records-validation finding. Blocking findings refuse the whole file."""

    severity: Literal["blocking", "review"]
    code: str  # empty_text | duplicate_id | missing_id | short_text | missing_title | welded_footnote | ...
    message: str
    row: int | None = None  # 1-based data row (header not counted)
    record_id: str | None = None


@dataclass(frozen=True)
class SourceDoc:
    """Everything ingestion learned about one source file."""

    doc_id: str
    path: str
    kind: Literal["pdf", "html", "docx", "records"]
    sha256: str
    pages: tuple[Page, ...] = ()
    boilerplate: tuple[str, ...] = ()  # running header/footer lines stripped from this document
    findings: tuple[Finding, ...] = ()
    error: str | None = None  # set when the whole file is refused; then nothing of it is indexed
    title: str | None = None

    @property
    def blocked(self) -> bool:
        return self.error is not None or any(f.severity == "blocking" for f in self.findings)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str  # stable: derived from (file sha256, page, position)
    doc_id: str
    page: int
    position: int  # 0-based index of the chunk within its page
    text: str
    n_tokens: int
    quality: Quality
    section: str = ""  # heading detected above the chunk, or the record title
    reason: str = ""  # the page's quality reason
    method: str = ""  # the page's extraction method
    record_id: str = ""  # records only
    title: str = ""  # records only
    source_sha256: str = ""
    # What Settings.chunk_context puts before the text for the engines ("<title> › <section>");
    # empty when it is off. Never shown as the chunk's text.
    context: str = ""
    kind: ChunkKind = "text"  # "table": a markdown table (or a table's summary), see table_chunks.py
    table_index: int = -1  # the table's index on its page; -1 for text
    row_start: int = -1  # table chunks: body rows [row_start, row_end) of the table; -1 for text
    row_end: int = -1

    @property
    def search_text(self) -> str:
        """The text the embedder and BM25 read: the context line, then the chunk's own text."""
        return f"{self.context}\n{self.text}" if self.context else self.text

    @property
    def unit(self) -> str:
        """What gold sets judge: a page of a PDF, or a record of a records file."""
        return unit_id(self.doc_id, self.page, self.record_id)

    def metadata(self) -> dict[str, str | int]:
        """Flat metadata for Chroma (scalar values only)."""
        return {
            "doc_id": self.doc_id, "page": self.page, "position": self.position,
            "n_tokens": self.n_tokens, "quality": self.quality, "section": self.section,
            "reason": self.reason, "method": self.method, "record_id": self.record_id,
            "title": self.title, "source_sha256": self.source_sha256, "context": self.context,
            "kind": self.kind, "table_index": self.table_index, "row_start": self.row_start,
            "row_end": self.row_end,
        }

    @classmethod
    def from_store(cls, chunk_id: str, text: str, meta: dict) -> "Chunk":
        return cls(
            chunk_id=chunk_id, doc_id=str(meta["doc_id"]), page=int(meta["page"]),
            position=int(meta.get("position", 0)), text=text or "",
            n_tokens=int(meta.get("n_tokens", 0)), quality=meta.get("quality", "clean"),
            section=str(meta.get("section", "")), reason=str(meta.get("reason", "")),
            method=str(meta.get("method", "")), record_id=str(meta.get("record_id", "")),
            title=str(meta.get("title", "")), source_sha256=str(meta.get("source_sha256", "")),
            context=str(meta.get("context", "")),
            # Indexes built before table chunks existed hold text chunks only.
            kind=meta.get("kind", "text"), table_index=int(meta.get("table_index", -1)),
            row_start=int(meta.get("row_start", -1)), row_end=int(meta.get("row_end", -1)),
        )


def unit_id(doc_id: str, page: int, record_id: str = "") -> str:
    """'Grampian-2020-2021#p28' for a page, 'guidance#4.6.1' for a record."""
    return f"{doc_id}#{record_id}" if record_id else f"{doc_id}#p{page}"


@dataclass(frozen=True)
class EngineScore:
    """One engine's view of a hit. rank is 1-based; None means the engine did not list it.

    score is the engine's raw score: for dense, the cosine similarity of the
    question's embedding with the chunk's (1 - distance), blended with its best
    sentence's at RAGLOUPE_DENSE_SENTENCE_WEIGHT (index/sentences.py), in
    [-1, 1]; the Okapi BM25 score for bm25. distance is the dense engine's
    cosine distance to the chunk's own embedding, as Chroma returned it.
    """

    rank: int | None
    score: float | None
    distance: float | None = None


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    rank: int  # final 1-based rank
    score: float  # the score the final order is sorted by
    per_engine: dict[str, EngineScore] = field(default_factory=dict)  # "dense", "bm25"
    fused_score: float | None = None
    rerank_score: float | None = None
    rerank_change: int | None = None  # positive: moved up by that many places
    margin: float | None = None  # score minus the next hit's score; None for the last
    # Query analysis (when on): the fiscal period the hit's document reports on, learned from its
    # text, and how it matches the question's (1 same, 0.5 another period the question names, 0 no;
    # None when the question names no period).
    doc_period: str = ""
    period_match: float | None = None
    rrf_score: float | None = None  # weighted RRF over the mode's engines, whatever fusion ranked the hit
    learned: "LearnedScore | None" = None  # learned fusion's account of the hit, when it ranked it


@dataclass(frozen=True)
class LearnedScore:
    """Why learned fusion ranked a hit where it did: logit = intercept + sum(contributions), exactly.

    A contribution is the feature's coefficient times its standardised value
    (retrieve/learned.py); ``values`` are the raw feature values.
    """

    logit: float
    probability: float  # sigmoid(logit): the hit's score under learned fusion
    intercept: float
    contributions: dict[str, float] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PageHit:
    """A unit (page or record) ranked by aggregating its chunks' hits."""

    unit: str
    doc_id: str
    page: int
    record_id: str
    rank: int
    score: float
    chunk_ids: tuple[str, ...]
    best_chunk_rank: int | None  # None: found only by a whole-unit signal (Settings.unit_view)
    # Under Settings.unit_view, each signal's view of the unit: "chunks" (the chunk view
    # above), "unit_bm25", "unit_dense" (retrieve/units.py). Empty when the view is off.
    signals: dict[str, EngineScore] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranking:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    pages: tuple[PageHit, ...] = ()
    rewrite: str | None = None  # the LLM rewrite, when one was asked for
    rewrite_used: bool = False
    rewrite_not_used_because: str = ""  # why the rewrite asked for was not used ("" when it was)
    rewrite_restored: tuple[str, ...] = ()  # the question's terms the LLM's rewrite dropped, put back
    cut_at: int | None = None  # where a dynamic cut stopped the list, if it did
    filters: dict = field(default_factory=dict)
    fusion: str = ""  # "rrf" | "minmax" when two engines were fused, "" for one engine
    reranker: str = ""  # "lexical" | "cross-encoder:<model>" when a reranker ran
    candidates: int = 0  # length of the fused candidate list the page view was built from
    query_analysis: dict = field(default_factory=dict)  # what query analysis read, when it ran
    # The fusion that ranked the candidates, by name ("learned" | "minmax" | "rrf"; "" for one engine),
    # and, when it is not the configured one, why (learned fusion standing aside for its fallback).
    fused_by: str = ""
    fusion_fallback: str = ""

    @property
    def rewrite_note(self) -> str:
        """The rewrite's outcome in one line (the CLI and run reports)."""
        return rewrite_note(self.rewrite_not_used_because, self.rewrite_restored)


def rewrite_note(not_used_because: str, restored: tuple[str, ...]) -> str:
    """One line for a rewrite's outcome: why it was not used, or which of the question's terms the
    LLM dropped and got back ("" when it was used whole). Faces that say more word the fields."""
    if not_used_because:
        return f"rewrite not used: {not_used_because}"
    return f"terms the rewrite dropped were put back: {', '.join(restored)}" if restored else ""
