"""Request bodies. Pydantic checks types, so a wrong type is a 422 that names the field;
limits that depend on settings (how many sources) are checked in the endpoints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field

from ragloupe.generate.claims import BATCH_SIZE


class SourceIn(BaseModel):
    """One source as Halloumi's clients send it (rag-facts-check's HalloumiSource)."""

    model_config = ConfigDict(extra="ignore")
    text: str
    title: str | None = None
    source_type: str | None = None
    link: str | None = None


def _plain_text_source(value: Any) -> Any:
    """A source given as a plain string (as the first Halloumi sent them) is its text."""
    return {"text": value} if isinstance(value, str) else value


Sources = list[Annotated[SourceIn, BeforeValidator(_plain_text_source)]]


class HalloumiRequest(BaseModel):
    """POST /halloumi/generate. Sources may also be plain strings, as the first Halloumi sent them;
    other fields Halloumi clients send (maxContextSegments ...) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")
    answer: str = Field(min_length=1)
    sources: Sources = Field(min_length=1)
    batch_size: int = Field(BATCH_SIZE, ge=1, le=64, description="claims per verification call")


class CheckRequest(HalloumiRequest):
    """POST /check: the same input, and whether to ask the LLM about claims at all."""

    claims: bool = Field(True, description="false: the screen and evidence only, no LLM")


class SearchRequest(BaseModel):
    """POST /api/v1/search and /api/v1/docs/{doc_id}/search: EvidenceRAG's request (its
    app/api/schemas.py SearchRequest), and ragloupe's mode and doc_ids. How each field acts:
    api/evidencerag.py."""

    model_config = ConfigDict(extra="ignore")
    question: str = Field(min_length=1, max_length=2000)
    k: int = Field(10, ge=1, le=100)
    mode: str | None = Field(None, description="dense | bm25 | hybrid | hybrid+rerank, or an engine by name "
                                                     "(GET /api/v1/engines): NAME, hybrid+NAME (default: RAGLOUPE_MODE)")
    doc_ids: list[str] = Field(default_factory=list, description="whole-index search only: restrict to these")
    query_id: str | None = Field(None, description="a gold question id: the result says where its gold pages landed")
    include_generated_answer: bool = Field(False, description="also answer from the hits (200 without an LLM: "
                                                              "generation_status says why)")
    retrieval_scope: Literal["doc", "trust", "global"] = "doc"
    lexical_scope: Literal["doc", "trust", "global"] = "doc"
    filter_doc_id: str | None = None
    filter_trust_id: str | None = None
    filter_year: int | None = None
    filter_is_table: bool | None = None
    filter_section_contains: str | None = None
    filter_subsection_contains: str | None = None
    gen_max_context_chunks: int | None = Field(None, ge=1, le=20, description="accepted; RAGLOUPE_CONTEXT_BUDGET_TOKENS rules")
    gen_max_context_chars: int | None = Field(None, ge=1000, le=50000, description="accepted, not used")
    gen_max_chunk_chars: int | None = Field(None, ge=200, le=10000, description="accepted, not used")
    gen_timeout_seconds: float | None = Field(None, ge=1.0, le=300.0, description="accepted; RAGLOUPE_LLM_TIMEOUT_S rules")
    gates: bool | None = Field(None, description="gates before generation for this answer "
                                                 "(default: RAGLOUPE_ANSWER_GATES)")


class RankRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    top_n: int = Field(10, ge=1, le=1000)


class UploadRequest(BaseModel):
    """POST /api/v1/docs/upload: one file, base64-encoded (EvidenceRAG's pdf_filename / pdf_base64
    are accepted too); .pdf, .html, .htm, .docx, .csv or .jsonl."""

    filename: str = Field(min_length=1, max_length=255,
                          validation_alias=AliasChoices("filename", "pdf_filename"))
    content_base64: str = Field(min_length=1, validation_alias=AliasChoices("content_base64", "pdf_base64"))
