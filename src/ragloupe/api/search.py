"""Search over HTTP: POST /api/v1/search (the whole index, or the documents asked for).

The result is the CLI's `search --json` ranking (both engines always run,
so every hit carries the dense and the BM25 rank and score), plus, when a
gold question id is given, where its gold units landed, and, when asked, an
answer from the hits with its groundedness screen (503 without an LLM).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from ragloupe.api.schemas import SearchRequest

router = APIRouter(prefix="/api/v1", tags=["search"])


@router.post("/search")
def search_index(body: SearchRequest, request: Request) -> dict[str, Any]:
    return run_search(body, request)


def run_search(body: SearchRequest, request: Request) -> dict[str, Any]:
    from ragloupe.retrieve.search import ranking_to_dict, search

    resources = request.app.state.resources
    filters = {"doc_ids": body.doc_ids} if body.doc_ids else None
    ranking = search(body.question, body.mode, body.k, filters, resources.settings, explain=True,
                     store=resources.store(), embedder=resources.embedder())
    resources.metrics.stages(ranking.timings, prefix="search_")
    result: dict[str, Any] = {"ranking": ranking_to_dict(ranking)}
    if body.query_id:
        result["gold"] = _gold(body.query_id, ranking, resources)
    if body.include_generated_answer:
        result.update(_answer(body.question, ranking, resources))
    return result


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


def _answer(question: str, ranking: Any, resources: Any) -> dict[str, Any]:
    from ragloupe.generate.answer import answer
    from ragloupe.generate.groundedness import screen_answer

    result = answer(question, ranking, resources.settings)  # LlmUnavailable -> 503
    resources.metrics.stages(result.timings, prefix="answer_")
    return {"answer": result.as_dict(), "screen": screen_answer(result).as_dict()}
