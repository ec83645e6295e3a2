"""EvidenceRAG's API payloads as pydantic models, written from its app/api/schemas.py (the
request and response models) and from the fields its Streamlit UI (app/ui/streamlit_app.py)
reads of each endpoint. ragloupe's answers are validated against these in the contract tests;
extra fields (ragloupe's own ranking ...) are allowed, as EvidenceRAG's clients ignore them."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


# ---------------------------------------------------------------- app/api/schemas.py

class SearchCitation(_Open):
    chunk_id: str
    page: int


class SearchResponse(_Open):
    question: str
    k: int
    retrieval_mode: str
    retrieval_config: dict[str, Any]
    retrieval_scope: str
    lexical_scope: str
    filters_applied: dict[str, Any]
    query_id: Optional[str] = None
    expected_pages: list[int] = []
    expected_answer: Optional[str] = None
    expected_subsection: Optional[str] = None
    answer_type: Optional[str] = None
    hit_at_k: bool
    predicted_answer: Optional[str] = None
    predicted_answer_raw: Optional[str] = None
    answer_source_chunk_id: Optional[str] = None
    answer_debug: dict[str, Any] = {}
    include_generated_answer: bool = False
    generated_answer: Optional[str] = None
    generated_answer_raw: Optional[str] = None
    generated_citations: list[SearchCitation] = []
    generation_status: str = "skipped"
    generation_confidence: Optional[float] = None
    generation_debug: dict[str, Any] = {}
    results: list[dict[str, Any]] = []


class MetricsResponse(_Open):
    generation_counts: dict[str, int]
    citation_counts: dict[str, int]
    derived: dict[str, Optional[float]]


class GenerationCounts(_Open):
    """The counters the UI's System Metrics tab shows (Gen Total, OK, Skipped, Insufficient, Error)."""

    total: StrictInt
    ok: StrictInt
    skipped: StrictInt
    insufficient_evidence: StrictInt
    error: StrictInt


class CitationCounts(_Open):
    parsed_total: StrictInt
    valid_total: StrictInt
    rejected_total: StrictInt


class DerivedMetrics(_Open):
    """Rates the tab formats as percentages and milliseconds ("n/a" when None)."""

    citation_valid_rate: Optional[float]
    citation_rejected_rate: Optional[float]
    generation_avg_latency_ms: Optional[float]


class SystemMetrics(_Open):
    generation_counts: GenerationCounts
    citation_counts: CitationCounts
    derived: DerivedMetrics


# ---------------------------------------------------------------- what the UI reads

class RetrievalConfig(_Open):
    """The keys of SearchResponse.retrieval_config the UI prints in its "Retrieval config:" caption."""

    rrf_k: StrictInt
    dense_weight: float
    bm25_weight: float
    enable_subsection_boost: StrictBool


class GenerationDebug(_Open):
    """What the UI's "Generation:" caption and its error line read of generation_debug."""

    provider: StrictStr
    status: StrictStr
    model: Optional[str] = None
    error: Optional[str] = None


class SearchResult(_Open):
    """The 18 fields the UI reads of each entry of SearchResponse.results (results table, cards)."""

    rank: StrictInt
    chunk_id: StrictStr
    pages: list[StrictInt]
    score: float
    fusion_score: float
    rrf_score: Optional[float]
    dense_rank: StrictInt
    bm25_rank: StrictInt
    dense_raw_score: float
    bm25_raw_score: float
    section_title: StrictStr
    subsection_title: StrictStr
    snippet: StrictStr
    chunk_text: StrictStr
    hit_expected_page: StrictBool
    is_table: StrictBool
    table_chunk_kind: Optional[str]
    row_start_idx: Optional[int]
    row_end_idx: Optional[int]


class Health(_Open):
    ok: StrictBool
    ollama_reachable: StrictBool
    ollama_detail: StrictStr
    generation_enabled: StrictBool


class DocDetail(_Open):
    doc_id: StrictStr
    title: StrictStr


class Docs(_Open):
    docs: list[StrictStr]
    docs_detail: list[DocDetail]


class DocStats(_Open):
    page_count: StrictInt
    chunk_count: StrictInt
    table_chunk_count: StrictInt
    table_count: StrictInt
    chunk_size_tokens: Optional[int]
    chunk_overlap_tokens: Optional[int]
    tokenizer_backend: StrictStr
    table_chunking: StrictStr
    has_eval_set: StrictBool
    has_pipeline_log: StrictBool
    has_tables_structured: StrictBool


class EvalItem(_Open):
    query_id: StrictStr
    question: StrictStr
    expected_pages: list[int]
    expected_answer: Optional[str]
    answer_type: Optional[str]
    difficulty: Optional[str]
    evidence_layout: Optional[str]


class EvalItems(_Open):
    label_type: Literal["gold", "silver"]  # "silver" makes the UI warn the answers are not human-checked
    items: list[EvalItem]


class TableItem(_Open):
    page: StrictInt
    table_id: StrictStr
    table_type: StrictStr
    rows: StrictInt
    cols: StrictInt
    extraction_method: StrictStr
    table_summary: StrictStr
    table_markdown: StrictStr


class Tables(_Open):
    has_tables: StrictBool
    items: list[TableItem]
    total: StrictInt


class InspectedChunk(_Open):
    chunk_id: StrictStr
    is_table: StrictBool
    tokens: list[StrictStr]
    token_start: StrictInt
    token_end: StrictInt
    overlap_prev_tokens: StrictInt
    overlap_next_tokens: StrictInt
    section_title: StrictStr


class PageChunks(_Open):
    tokenizer_backend: StrictStr  # the inspector's "Artifact tokenizer" / "Inspector tokenizer" captions
    tokenizer_exact_counting: StrictBool
    segment_aware_chunking: StrictBool
    chunk_count: StrictInt
    page_token_count: StrictInt
    chunk_size_tokens: StrictInt
    chunk_overlap_tokens: StrictInt
    page_text: StrictStr
    chunks: list[InspectedChunk]


class RankedDoc(_Open):
    doc_id: StrictStr
    title: StrictStr
    similarity: float
    top_chunk_id: StrictStr
    top_pages: list[int]
    rank: StrictInt


class DocRank(_Open):
    question: StrictStr
    requested_top_n: StrictInt
    total_docs: StrictInt
    ranked_docs: StrictInt
    items: list[RankedDoc]
    skipped_docs: list[dict[str, Any]]
