"""EvidenceRAG's document endpoints under /api/v1/docs, answered from ragloupe's own records.

The manifest says what each document is (pages with quality and reason,
boilerplate, findings), the Store holds its chunks, the gold sets under
benchmarks_dir hold its evaluation questions. Search results are the
CLI's `--json` ranking: every hit carries each engine's rank and score.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, Query, Request

from ragloupe.api.schemas import RankRequest, SearchRequest
from ragloupe.errors import UnknownDocument

router = APIRouter(prefix="/api/v1/docs", tags=["documents"])

MAX_LOG_LINES = 5000
MAX_TABLES = 500


@router.get("")
def list_documents(request: Request) -> dict[str, Any]:
    """Every document in the index, with its title and counts."""
    entries = request.app.state.resources.manifest().complete()
    detail = [{"doc_id": e.doc_id, "title": e.title or e.doc_id, "kind": e.kind, "pages": len(e.pages),
               "chunks": e.n_chunks} for e in entries]
    return {"docs": [d["doc_id"] for d in detail], "docs_detail": detail}


@router.post("/rank")
def rank_documents(body: RankRequest, request: Request) -> dict[str, Any]:
    """Every document ranked by the cosine similarity of its best chunk to the question."""
    resources = request.app.state.resources
    entries = resources.manifest().complete()
    embedding = resources.embedder().encode([body.question])[0]
    store = resources.store()
    items, skipped = [], []
    for entry in entries:
        best = store.query(embedding, 1, where={"doc_id": entry.doc_id})
        if not best:
            skipped.append({"doc_id": entry.doc_id, "reason": "no chunks in the index"})
            continue
        chunk, distance = best[0]
        items.append({"doc_id": entry.doc_id, "title": entry.title or entry.doc_id,
                      "similarity": round(1.0 - distance, 6), "top_chunk_id": chunk.chunk_id,
                      "top_pages": [chunk.page], "top_unit": chunk.unit})
    items.sort(key=lambda item: (-item["similarity"], item["doc_id"]))
    ranked = items[:body.top_n]
    for rank, item in enumerate(ranked, start=1):
        item["rank"] = rank
    return {"question": body.question, "requested_top_n": body.top_n, "total_docs": len(entries),
            "ranked_docs": len(ranked), "items": ranked, "skipped_docs": skipped}


@router.get("/{doc_id}/stats")
def document_stats(doc_id: str, request: Request) -> dict[str, Any]:
    resources = request.app.state.resources
    entry = _entry(resources, doc_id)
    chunks = resources.store().all_chunks(where={"doc_id": doc_id})
    tables = [c for c in chunks if c.kind == "table"]
    questions = _questions(resources, doc_id)
    return {
        "doc_id": doc_id, "title": entry.title or doc_id, "kind": entry.kind, "path": entry.path,
        "sha256": entry.sha256, "page_count": len(entry.pages),
        "pages_indexed": sum(p.indexed for p in entry.pages),
        "quality": dict(sorted(Counter(p.quality for p in entry.pages).items())),
        "chunk_count": len(chunks), "table_chunk_count": len(tables),
        "table_count": len({(c.page, c.table_index) for c in tables}),
        "chunk_size_tokens": resources.settings.chunk_tokens,
        "chunk_overlap_tokens": resources.settings.chunk_overlap,
        "boilerplate_lines": len(entry.boilerplate), "findings": len(entry.findings),
        "has_eval_set": bool(questions), "eval_items": len(questions),
        # EvidenceRAG's provenance and availability fields
        "table_chunking": resources.settings.table_strategy, "tokenizer_backend": resources.settings.embedding_model,
        "has_pipeline_log": True, "has_tables_structured": bool(tables),
    }


@router.get("/{doc_id}/eval-items")
def eval_items(doc_id: str, request: Request) -> dict[str, Any]:
    """The gold questions about this document, with the pages (or records) that answer them."""
    resources = request.app.state.resources
    _entry(resources, doc_id)
    return {"label_type": "gold",
            "items": [{"query_id": q.query_id, "question": q.question, "expected_pages": list(q.expected_pages),
                       "expected_records": list(q.expected_records), "expected_answer": q.expected_answer,
                       "answer_type": q.answer_type or None, "difficulty": q.difficulty,
                       "evidence_layout": None, "category": q.category, "goldset": q.goldset}
                      for q in _questions(resources, doc_id)]}


@router.get("/{doc_id}/logs")
def document_log(doc_id: str, request: Request,
                 last_n: int = Query(200, ge=1, le=MAX_LOG_LINES)) -> dict[str, Any]:
    """What ingestion recorded for the document, one line per fact: every page's extraction
    method and quality (with the reason), the boilerplate stripped, the records findings."""
    entry = _entry(request.app.state.resources, doc_id)
    lines = [f"{entry.doc_id}: {entry.kind}, state {entry.state}, {len(entry.pages)} pages, "
             f"{entry.n_chunks} chunks, sha256 {entry.sha256[:12]}"]
    if entry.error:
        lines.append(f"refused: {entry.error}")
    lines += [f"boilerplate stripped: {line}" for line in entry.boilerplate]
    for page in entry.pages:
        where = f"record {page.record_id}" if page.record_id else f"page {page.page}"
        reason = f" ({page.reason})" if page.reason else ""
        lines.append(f"{where}: {page.quality}{reason}, {page.method}, {page.n_chars} chars, "
                     f"{page.n_chunks} chunks")
    for finding in entry.findings:
        lines.append(f"{finding.get('severity')} {finding.get('code')}: {finding.get('message')}")
    return {"doc_id": doc_id, "total_lines": len(lines), "lines": lines[-last_n:]}


@router.get("/{doc_id}/tables")
def document_tables(doc_id: str, request: Request, limit: int = Query(200, ge=1, le=MAX_TABLES),
                    page: int | None = Query(None, ge=1)) -> dict[str, Any]:
    """The document's tables under ``items`` (EvidenceRAG's shape: one per table, its chunks
    joined), and under ``tables`` its table chunks (a markdown table with its header, or a
    table's summary) with the table's index on its page and the body rows each chunk holds."""
    from ragloupe.api.page_view import table_items

    resources = request.app.state.resources
    entry = _entry(resources, doc_id)
    chunks = [c for c in resources.store().all_chunks(where={"doc_id": doc_id})
              if c.kind == "table" and (page is None or c.page == page)]
    items = table_items(chunks, {p.page: p.method for p in entry.pages})
    return {"doc_id": doc_id, "has_tables": bool(items), "total": len(items), "items": items[:limit],
            "total_chunks": len(chunks), "tables": [_chunk_view(c) for c in chunks[:limit]]}


@router.get("/{doc_id}/pages/{page_no}/chunks")
def page_chunks(doc_id: str, page_no: int, request: Request) -> dict[str, Any]:
    """The chunks of one page in reading order, with how much each overlaps the one before."""
    resources = request.app.state.resources
    entry = _entry(resources, doc_id)
    page = next((p for p in entry.pages if p.page == page_no), None)
    if page is None:
        raise UnknownDocument(f"{doc_id} has no page {page_no} (it has {len(entry.pages)})")
    from ragloupe.api.page_view import page_chunks as token_view

    chunks = resources.store().all_chunks(where={"$and": [{"doc_id": doc_id}, {"page": page_no}]})
    tokens = token_view(chunks, resources.embedder().tokenizer)
    views, previous = [], ""
    for chunk, inspected in zip(chunks, tokens["chunks"]):
        view = {**_chunk_view(chunk), **inspected}
        view["overlap_chars_with_previous"] = _overlap(previous, chunk.text)
        views.append(view)
        previous = chunk.text
    settings = resources.settings
    return {"doc_id": doc_id, "page": page_no, "quality": page.quality, "reason": page.reason,
            "method": page.method, "n_chars": page.n_chars, "stripped": list(page.stripped),
            "chunk_count": tokens["chunk_count"], "page_token_count": tokens["page_token_count"],
            "chunk_size_tokens": settings.chunk_tokens, "chunk_overlap_tokens": settings.chunk_overlap,
            "page_text": tokens["page_text"], "tokenizer_backend": settings.embedding_model,
            "tokenizer_exact_counting": True, "segment_aware_chunking": False, "chunks": views}


@router.post("/{doc_id}/search")
def search_document(doc_id: str, body: SearchRequest, request: Request) -> dict[str, Any]:
    """Retrieve within one document; optionally answer from the hits (needs an LLM)."""
    from ragloupe.api.search import run_search

    _entry(request.app.state.resources, doc_id)
    return run_search(body, request, doc_id=doc_id)


def _entry(resources: Any, doc_id: str) -> Any:
    entry = resources.manifest().documents.get(doc_id)
    if entry is None or entry.state != "complete":
        raise UnknownDocument(f"no document {doc_id!r} in the index; GET /api/v1/docs lists them")
    return entry


def _questions(resources: Any, doc_id: str) -> list[Any]:
    goldsets, _ = resources.goldsets()
    return [q for goldset in goldsets for q in goldset.queries if q.doc_id == doc_id]


def _chunk_view(chunk: Any) -> dict[str, Any]:
    return {"chunk_id": chunk.chunk_id, "page": chunk.page, "position": chunk.position,
            "section": chunk.section, "kind": chunk.kind, "n_tokens": chunk.n_tokens,
            "quality": chunk.quality, "record_id": chunk.record_id or None, "text": chunk.text,
            **({"table_index": chunk.table_index, "row_start": chunk.row_start, "row_end": chunk.row_end}
               if chunk.kind == "table" else {})}


def _overlap(previous: str, text: str) -> int:
    """Characters at the start of ``text`` that end ``previous`` (the chunk overlap as written)."""
    for size in range(min(len(previous), len(text)), 0, -1):
        if previous.endswith(text[:size]):
            return size
    return 0
