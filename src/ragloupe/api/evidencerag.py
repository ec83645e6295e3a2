"""EvidenceRAG's search request and response, over ragloupe's search (POST /api/v1/search and
/api/v1/docs/{doc_id}/search).

The response has every field of EvidenceRAG's SearchResponse (its app/api/schemas.py) and,
per retrieved chunk, the fields its UI reads; ragloupe's own ``ranking`` (every engine's
rank and score, fusion, learned contributions) rides alongside, as do ``gold``, and, when an
answer was generated, ``answer`` and ``screen``.

Its request fields act as they do there:

- retrieval_scope: doc (the document of the path), trust (every document of the same
  board: the doc_id without its years, "Grampian-2020-2021" -> "Grampian"), global (every
  document). lexical_scope is accepted; ragloupe's BM25 searches the same documents as
  its dense engine, so the scope applied to both is reported;
- filter_doc_id, filter_trust_id, filter_year (the year the document's own fiscal period
  starts or ends in, read from its text) narrow the documents; as in EvidenceRAG, filters
  that leave no document are dropped, and ``filter_notes`` says so;
- filter_is_table, filter_section_contains, filter_subsection_contains narrow the chunks:
  the best CHUNK_FILTER_DEPTH chunks of the scope are ranked, then filtered, then cut to k.
  ragloupe has one heading per chunk (section); the subsection filter reads the same;
- include_generated_answer: the answer from the hits with its citations; with no LLM the
  search still answers 200, generation_status "unavailable" and the reason in
  generation_debug (EvidenceRAG's fallback), never 503.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from ragloupe.errors import LlmBadOutput, LlmUnavailable

CHUNK_FILTER_DEPTH = 200  # chunks ranked before chunk-level filters, so k survive them
SNIPPET_CHARS = 280
_YEARS = re.compile(r"-\d{4}(?:-\d{4})?$")


def trust_of(doc_id: str) -> str:
    """'Grampian-2020-2021' -> 'Grampian' (EvidenceRAG's trust: the board a report belongs to)."""
    return _YEARS.sub("", doc_id) or doc_id


def scope_documents(body: Any, doc_id: str | None, documents: list[str],
                    years: dict[str, tuple[int, ...]]) -> tuple[list[str] | None, str, list[str]]:
    """The documents to search (None: all), the scope applied, and notes on dropped filters."""
    scope = body.retrieval_scope if doc_id else "global"
    base = [d for d in documents if (scope == "global" or d == doc_id
                                     or (scope == "trust" and trust_of(d) == trust_of(doc_id or "")))]
    chosen = [d for d in base
              if (not body.filter_doc_id or d == body.filter_doc_id)
              and (not body.filter_trust_id or trust_of(d).lower() == body.filter_trust_id.lower())
              and (body.filter_year is None or body.filter_year in years.get(d, ()))]
    notes = []
    if not chosen:
        chosen = base
        notes.append("the document filters (doc_id, trust_id, year) matched no document in the scope: dropped")
    if scope == "global" and chosen == documents:
        return None, scope, notes
    return chosen, scope, notes


def chunk_filter(body: Any):
    """A predicate over chunks for the chunk-level filters, or None when none is set."""
    section = (body.filter_section_contains or "").strip().lower()
    subsection = (body.filter_subsection_contains or "").strip().lower()
    if body.filter_is_table is None and not section and not subsection:
        return None

    def keep(chunk: Any) -> bool:
        heading = (chunk.section or "").lower()
        return ((body.filter_is_table is None or (chunk.kind == "table") == body.filter_is_table)
                and section in heading and subsection in heading)
    return keep


def filtered(ranking: Any, keep: Any, k: int) -> Any:
    """The ranking's hits that ``keep`` accepts, renumbered from 1, cut to k."""
    hits = [replace(hit, rank=i) for i, hit in enumerate((h for h in ranking.hits if keep(h.chunk)), start=1)]
    return replace(ranking, hits=tuple(hits[:k]))


def result_row(hit: Any, expected_pages: set[int]) -> dict[str, Any]:
    """One retrieved chunk as EvidenceRAG's results list holds it (plus doc_id and unit)."""
    chunk = hit.chunk
    dense, bm25 = hit.per_engine.get("dense"), hit.per_engine.get("bm25")
    table = chunk.kind == "table"
    text = chunk.text
    return {
        "rank": hit.rank, "chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "unit": chunk.unit,
        "pages": [chunk.page] if chunk.page else [], "score": hit.score,
        "fusion_score": hit.fused_score if hit.fused_score is not None else hit.score,
        "rrf_score": hit.rrf_score,
        "dense_rank": (dense.rank or 0) if dense else 0, "bm25_rank": (bm25.rank or 0) if bm25 else 0,
        "dense_raw_score": (dense.score or 0.0) if dense else 0.0,
        "bm25_raw_score": (bm25.score or 0.0) if bm25 else 0.0,
        "section_title": chunk.section or "", "subsection_title": "",
        "snippet": text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rstrip() + " ...",
        "chunk_text": text, "hit_expected_page": chunk.page in expected_pages,
        # EvidenceRAG's row blocks name their first and LAST body row (row_end_idx inclusive);
        # a ragloupe table chunk holds body rows [row_start, row_end)
        "is_table": table, "table_chunk_kind": "row_block" if table else None,
        "row_start_idx": chunk.row_start if table else None, "row_end_idx": chunk.row_end - 1 if table else None,
    }


def retrieval_config(settings: Any) -> dict[str, Any]:
    return {"fusion_strategy": settings.fusion, "rrf_k": settings.rrf_k, "dense_weight": settings.weight_dense,
            "bm25_weight": settings.weight_bm25, "enable_cross_encoder_rerank": False,
            # EvidenceRAG's UI prints this flag in its retrieval caption; ragloupe has one heading
            # per chunk and no subsection boost, so it is off rather than missing ("None")
            "enable_subsection_boost": False,
            "bm25_k1": settings.bm25_k1, "bm25_b": settings.bm25_b, "embedding_model": settings.embedding_model,
            "candidate_window": settings.candidate_window}


def generation(question: str, ranking: Any, resources: Any,
               gates: bool | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """EvidenceRAG's generated-answer fields, and ragloupe's answer and screen (empty when none).

    ``gates`` turns the gates before generation on or off for this answer (default: the
    setting); a failed gate is status "gated": no LLM call, the answer withheld, its gates
    and passages in ``answer``."""
    from ragloupe.api.pages import citation_links
    from ragloupe.generate.answer import answer
    from ragloupe.generate.groundedness import screen_answer

    started = time.perf_counter()
    settings = resources.settings if gates is None else resources.settings.replace(answer_gates=gates)
    debug: dict[str, Any] = {"provider": settings.llm_backend, "model": None, "error": None}
    try:
        result = answer(question, ranking, settings)
    except (LlmUnavailable, LlmBadOutput) as exc:
        status = "unavailable" if isinstance(exc, LlmUnavailable) else "error"
        debug.update(status=status, error=str(exc), latency_ms=round(1000 * (time.perf_counter() - started), 3))
        resources.generation.record("error", latency_ms=debug["latency_ms"])
        return _generated(None, [], status, None, debug), {}
    resources.metrics.stages(result.timings, prefix="answer_")
    if result.withheld:
        debug.update(status="gated", model=result.model, gates=result.gates.as_dict(),
                     latency_ms=round(1000 * (time.perf_counter() - started), 3))
        resources.generation.record("gated", latency_ms=debug["latency_ms"])
        return _generated(None, [], "gated", None, debug), {"answer": result.as_dict(), "screen": None}
    written = [c for c in result.citations]
    valid = [c for c in written if c.passage is not None]
    cited = [{"chunk_id": result.passages[c.passage - 1].chunk.chunk_id, "page": c.page
              or result.passages[c.passage - 1].chunk.page, **citation_links(c.doc_id, c.page, c.record_id)}
             for c in valid]
    status = "insufficient_evidence" if result.not_in_context or not valid else "ok"
    latency = round(1000 * (time.perf_counter() - started), 3)
    debug.update(status=status, model=result.model, latency_ms=latency, citations_parsed=len(written),
                 citations_valid=len(valid), citations_rejected=len(written) - len(valid),
                 context_chunks_used=len(result.passages), context_tokens=result.context_tokens)
    resources.generation.record(status, parsed=len(written), valid=len(valid), latency_ms=latency)
    confidence = len(valid) / len(written) if written and status == "ok" else None
    fields = _generated(result.text if status == "ok" else None, cited if status == "ok" else [], status,
                        confidence, debug)
    answer_data = result.as_dict()
    for citation in answer_data["citations"]:  # a link a client can follow to the cited page
        citation.update(citation_links(citation["doc_id"], citation["page"], citation["record_id"]))
    return fields, {"answer": answer_data, "screen": screen_answer(result).as_dict()}


def _generated(text: str | None, citations: list, status: str, confidence: float | None,
               debug: dict[str, Any]) -> dict[str, Any]:
    return {"generated_answer": text, "generated_answer_raw": None, "generated_citations": citations,
            "generation_status": status, "generation_confidence": confidence, "generation_debug": debug}


def skipped(resources: Any) -> dict[str, Any]:
    resources.generation.record("skipped")
    return _generated(None, [], "skipped", None, {"provider": resources.settings.llm_backend, "status": "skipped",
                                                  "reason": "include_generated_answer=false"})
