"""Search over HTTP: POST /api/v1/search (the whole index, or the documents asked for), and the
search behind POST /api/v1/docs/{doc_id}/search.

The answer is EvidenceRAG's SearchResponse (api/evidencerag.py says how each of its request
fields acts), with ragloupe's own ``ranking`` alongside: the CLI's `search --json` ranking,
both engines always run, so every hit carries the dense and the BM25 rank and score. With a
gold question id, ``gold`` says where its gold units landed; with include_generated_answer,
an answer from the hits with its groundedness screen (200 without an LLM:
generation_status says why). ``mode`` may name an engine (a plugin's or one attached with
`ragloupe attach`); GET /api/v1/engines lists them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from ragloupe.api import evidencerag
from ragloupe.api.schemas import SearchRequest

router = APIRouter(prefix="/api/v1", tags=["search"])


@router.get("/engines")
def list_engines(request: Request) -> dict[str, Any]:
    """The engines a mode can name (built-in, plugins, attached) with what each score means, and the
    plugins or attachments left out, each with its reason."""
    registry = request.app.state.resources.workspace().engines()
    return {"engines": registry.describe(), "problems": list(registry.problems)}


@router.post("/search")
def search_index(body: SearchRequest, request: Request) -> dict[str, Any]:
    return run_search(body, request)


def run_search(body: SearchRequest, request: Request, doc_id: str | None = None) -> dict[str, Any]:
    from ragloupe.retrieve.search import ranking_to_dict, search

    resources = request.app.state.resources
    resources.wait_for_warm_up()
    documents, scope, notes = _documents(body, doc_id, resources)
    keep = evidencerag.chunk_filter(body)
    depth = max(body.k, evidencerag.CHUNK_FILTER_DEPTH) if keep else body.k
    with resources.search_slots:
        ranking = search(body.question, body.mode, depth, {"doc_ids": documents} if documents else None,
                         explain=True, workspace=resources.workspace())
    if keep:
        ranking = evidencerag.filtered(ranking, keep, body.k)
        if not ranking.hits:
            notes.append("no chunk in the scope passes the chunk filters (is_table, section)")
    resources.metrics.stages(ranking.timings, prefix="search_")
    query = _gold_query(body.query_id, resources)
    expected = set(query.expected_pages) if query else set()
    results = [evidencerag.result_row(hit, expected) for hit in ranking.hits]
    result: dict[str, Any] = {
        "question": body.question, "k": body.k, "retrieval_mode": ranking.mode,
        "retrieval_config": evidencerag.retrieval_config(resources.settings),
        "retrieval_scope": scope, "lexical_scope": scope, "filters_applied": _filters(body),
        "filter_notes": notes, "query_id": body.query_id,
        "expected_pages": list(query.expected_pages) if query else [],
        "expected_answer": query.expected_answer if query else None, "expected_subsection": None,
        "answer_type": (query.answer_type or None) if query else None,
        "hit_at_k": bool(expected & {p for r in results for p in r["pages"]}),
        "predicted_answer": None, "predicted_answer_raw": None, "answer_source_chunk_id": None,
        "answer_debug": {"note": "ragloupe has no extractive answerer: ask include_generated_answer"},
        "include_generated_answer": body.include_generated_answer, "results": results,
        "ranking": ranking_to_dict(ranking)}
    if body.query_id:
        result["gold"] = _gold(body.query_id, ranking, resources)
    if body.include_generated_answer:
        fields, extra = evidencerag.generation(body.question, ranking, resources, body.gates)
        result.update(fields, **extra)
    else:
        result.update(evidencerag.skipped(resources))
    return result


def _documents(body: SearchRequest, doc_id: str | None, resources: Any) -> tuple[list[str] | None, str, list[str]]:
    """The documents the scope and document filters leave (None: every one)."""
    if doc_id is None and body.doc_ids:
        return list(body.doc_ids), "global", []
    documents = [e.doc_id for e in resources.manifest().complete()]
    years: dict[str, tuple[int, ...]] = {}
    if body.filter_year is not None:
        periods = resources.workspace().periods()
        years = {d: (p.period.start, p.period.end) for d, p in periods.items() if p.period is not None}
    return evidencerag.scope_documents(body, doc_id, documents, years)


def _filters(body: SearchRequest) -> dict[str, Any]:
    return {"doc_id": body.filter_doc_id, "trust_id": body.filter_trust_id, "year": body.filter_year,
            "is_table": body.filter_is_table, "section_contains": body.filter_section_contains,
            "subsection_contains": body.filter_subsection_contains}


def _gold_query(query_id: str | None, resources: Any) -> Any:
    if not query_id:
        return None
    goldsets, _ = resources.goldsets()
    return next((q for g in goldsets for q in g.queries if q.query_id == query_id), None)


def _gold(query_id: str, ranking: Any, resources: Any) -> dict[str, Any]:
    """The gold units of ``query_id`` and the rank of the first one in the page view."""
    goldsets, _ = resources.goldsets()
    queries = [q for g in goldsets for q in g.queries if q.query_id == query_id]
    if not queries:
        return {"query_id": query_id, "found": False, "note": "no gold question with this id"}
    units = {unit for q in queries for unit in q.expected_units}
    ranks = [p.rank for p in ranking.pages if p.unit in units]
    return {"query_id": query_id, "found": True, "expected_units": sorted(units),
            "first_relevant_rank": min(ranks) if ranks else None}
