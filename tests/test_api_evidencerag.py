"""EvidenceRAG's clients against ragloupe: every /api/v1 answer from a real server on the demo
index validated against pydantic models of EvidenceRAG's payloads (tests/evidencerag_models.py),
and its request fields acting as they do there. No LLM is configured: a generated answer falls
back as EvidenceRAG's does (200, generation_status says why)."""

from __future__ import annotations

import threading

import httpx
import pytest

import evidencerag_models as er
from api_server import ApiServer

DOC = "Grampian-2020-2021"
GRAMPIAN = {"Grampian-2020-2021", "Grampian-2021-2022", "Grampian-2022-2023"}


@pytest.fixture(scope="module")
def api(demo_index, tmp_path_factory):
    root = tmp_path_factory.mktemp("evidencerag")
    settings = demo_index.replace(runs_dir=root / "runs", logs_dir=root / "logs", raw_dir=root / "raw",
                                  llm_backend="none")
    with ApiServer(settings) as server:
        yield server


def search(api, body: dict, doc: str | None = DOC) -> dict:
    path = f"/api/v1/docs/{doc}/search" if doc else "/api/v1/search"
    response = api.client.post(path, json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    er.SearchResponse.model_validate(data)
    er.RetrievalConfig.model_validate(data["retrieval_config"])
    er.GenerationDebug.model_validate(data["generation_debug"])
    for row in data["results"]:
        er.SearchResult.model_validate(row)
    return data


def test_health_says_generation_is_off_and_the_model_state(api):
    data = api.anonymous.get("/api/v1/health").json()
    er.Health.model_validate(data)
    assert data["generation_enabled"] is False and data["ollama_reachable"] is False
    assert data["model"]["state"] in {"loaded", "not loaded"}


def test_health_answers_while_the_model_loads(demo_index, tmp_path, monkeypatch):
    """The model load is held on an event; health must answer meanwhile, saying so."""
    import ragloupe.index.embedder as embedder_module

    release, loading = threading.Event(), threading.Event()
    real = embedder_module.get_embedder

    def slow_load(settings):
        loading.set()
        release.wait(60)
        return real(settings)

    monkeypatch.setattr(embedder_module, "get_embedder", slow_load)
    settings = demo_index.replace(logs_dir=tmp_path / "logs", llm_backend="none")
    with ApiServer(settings) as server:
        warm = threading.Thread(target=server.app_resources.warm_up, daemon=True)
        warm.start()
        assert loading.wait(30)
        try:
            data = httpx.get(f"{server.url}/api/v1/health", timeout=4).json()  # EvidenceRAG's UI waits 4 s
        finally:
            release.set()
        warm.join(60)
    assert data["ok"] is True and data["model"]["state"] == "loading"


def test_documents_stats_and_eval_items_have_the_fields_the_ui_reads(api):
    docs = er.Docs.model_validate(api.client.get("/api/v1/docs").json())
    assert DOC in docs.docs and {d.doc_id for d in docs.docs_detail} == set(docs.docs)
    stats = er.DocStats.model_validate(api.client.get(f"/api/v1/docs/{DOC}/stats").json())
    assert stats.chunk_size_tokens == 256 and stats.table_chunking == "row_blocks"
    items = er.EvalItems.model_validate(api.client.get(f"/api/v1/docs/{DOC}/eval-items").json()).items
    assert len(items) == stats.model_extra["eval_items"] and items[0].expected_pages


def test_a_document_without_tables_lists_none_under_items(api):
    # The demo index holds no table chunks; an uploaded statement's tables: test_api_indexing.py.
    data = er.Tables.model_validate(api.client.get(f"/api/v1/docs/{DOC}/tables").json())
    assert (data.has_tables, data.items, data.total) == (False, [], 0)


def test_page_chunks_carry_tokens_offsets_and_overlaps(api):
    data = er.PageChunks.model_validate(api.client.get(f"/api/v1/docs/{DOC}/pages/28/chunks").json())
    assert data.chunk_count == len(data.chunks) >= 1 and data.page_text
    text = [c for c in data.chunks if not c.is_table]
    for before, after in zip(text, text[1:]):
        assert after.token_start == before.token_end - after.overlap_prev_tokens
        assert before.overlap_next_tokens == after.overlap_prev_tokens
        assert before.tokens[len(before.tokens) - after.overlap_prev_tokens:] == after.tokens[:after.overlap_prev_tokens]
    assert all(c.token_end - c.token_start == len(c.tokens) for c in data.chunks)


def test_document_search_has_evidenceragss_fields_and_places_the_gold_page(api):
    item = api.client.get(f"/api/v1/docs/{DOC}/eval-items").json()["items"][0]
    data = search(api, {"question": item["question"], "k": 5, "query_id": item["query_id"]})
    assert data["question"] == item["question"] and data["retrieval_scope"] == "doc"
    assert {r["doc_id"] for r in data["results"]} == {DOC} and len(data["results"]) == 5
    assert data["expected_pages"] == item["expected_pages"]
    assert data["hit_at_k"] == any(set(r["pages"]) & set(item["expected_pages"]) for r in data["results"])
    assert data["ranking"]["hits"] and data["generation_status"] == "skipped"


def test_retrieval_scope_trust_and_global_widen_the_documents(api):
    question = {"question": "natech risk assessment and the Core Revenue Resource Limit", "k": 40}
    trust = search(api, {**question, "retrieval_scope": "trust"})
    assert {r["doc_id"] for r in trust["results"]} <= GRAMPIAN and len({r["doc_id"] for r in trust["results"]}) > 1
    whole = search(api, {**question, "retrieval_scope": "global"})
    assert "guidance" in {r["doc_id"] for r in whole["results"]}


def test_chunk_filters_keep_only_prose_or_a_section(api):
    question = {"question": "expenditure", "k": 8}
    tables = search(api, {**question, "filter_is_table": True})  # the demo index has no table chunks
    assert tables["results"] == [] and "chunk filters" in tables["filter_notes"][0]
    prose = search(api, {**question, "filter_is_table": False})
    assert [r["rank"] for r in prose["results"]] == list(range(1, 9))
    assert prose["results"] and not any(r["is_table"] for r in prose["results"])
    heading = next(r["section_title"] for r in prose["results"] if r["section_title"])
    word = heading.split()[0].lower()
    section = search(api, {**question, "filter_section_contains": word})
    assert section["results"] and all(word in r["section_title"].lower() for r in section["results"])


def test_filter_year_keeps_the_documents_of_that_fiscal_year(api):
    data = search(api, {"question": "capital expenditure", "k": 20, "retrieval_scope": "global",
                        "filter_year": 2022}, doc=DOC)
    assert {r["doc_id"] for r in data["results"]} <= {"Grampian-2021-2022", "Grampian-2022-2023"}
    assert data["filters_applied"]["year"] == 2022 and not data["filter_notes"]


def test_generated_answer_without_an_llm_falls_back_with_200_and_is_counted(api):
    before = er.MetricsResponse.model_validate(api.client.get("/api/v1/metrics").json())
    data = search(api, {"question": "What was the Core Revenue Resource Limit?", "k": 3,
                        "include_generated_answer": True})
    assert data["generation_status"] == "unavailable" and data["generated_answer"] is None
    assert "RAGLOUPE_LLM_BACKEND" in data["generation_debug"]["error"] and data["results"]
    after = er.MetricsResponse.model_validate(api.client.get("/api/v1/metrics").json())
    assert after.generation_counts["total"] == before.generation_counts["total"] + 1
    assert after.generation_counts["error"] == before.generation_counts["error"] + 1


def test_metrics_are_json_counters_and_prometheus_text_is_at_metrics(api):
    search(api, {"question": "staff numbers", "k": 2})
    body = api.client.get("/api/v1/metrics").json()
    data = er.MetricsResponse.model_validate(body)
    er.SystemMetrics.model_validate(body)
    assert data.generation_counts["skipped"] >= 1 and set(data.citation_counts) == {
        "parsed_total", "valid_total", "rejected_total"}
    assert "ragloupe_http_requests_total" in api.client.get("/metrics").text


def test_rank_orders_documents(api):
    data = er.DocRank.model_validate(api.client.post("/api/v1/docs/rank", json={"question": "natech floods"}).json())
    assert [i.rank for i in data.items] == list(range(1, data.ranked_docs + 1))


@pytest.mark.parametrize("body, field", [
    ({"question": "x", "retrieval_scope": "planet"}, "retrieval_scope"),
    ({"question": "x", "k": 0}, "k"), ({"question": "x", "filter_year": "last"}, "filter_year"),
    ({"question": "x", "filter_is_table": "sometimes"}, "filter_is_table"), ({"k": 3}, "question"),
])
def test_a_bad_search_body_is_422_naming_the_field(api, body, field):
    response = api.client.post(f"/api/v1/docs/{DOC}/search", json=body)
    assert response.status_code == 422 and any(p["field"] == field for p in response.json()["detail"])
