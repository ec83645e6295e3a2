"""The HTTP API against the demo index: a real uvicorn server on loopback, a real HTTP client,
an API key set, and a local server speaking Ollama's protocol as the LLM."""

from __future__ import annotations

import json
import threading
import time

import pytest

from api_server import ApiServer
from conftest import DEMO_DOC_IDS
from check_fixtures import (ANSWER, CONTRADICT_QUOTE, CONTRADICTED_SPAN, DOWN_MARKER, SLOW_MARKER, SLOW_S,
                            SOURCES, SUPPORT_QUOTE, SUPPORTED_SPAN, claim_checker)
from llm_server import FakeLlmServer
from ragloupe.evaluate.runs import evaluate
from ragloupe.workspace import Workspace

KEY = "test-key-7f3a"
DOC = "Grampian-2020-2021"
LLM_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def api(demo_index, tmp_path_factory):
    """One server for the module: the demo index (read-only), two small evaluation runs, a key."""
    root = tmp_path_factory.mktemp("api")
    gold = json.loads((demo_index.path("benchmarks_dir") / "grampian" / "eval" / f"{DOC}.eval.json").read_text())
    gold["queries"] = gold["queries"][:3]
    (root / "small.eval.json").write_text(json.dumps(gold))
    with FakeLlmServer(claim_checker) as llm:
        settings = demo_index.replace(runs_dir=root / "runs", logs_dir=root / "logs", raw_dir=root / "raw",
                                      llm_backend="ollama", ollama_base_url=llm.url, ollama_model="fake-model",
                                      llm_timeout_s=LLM_TIMEOUT_S, api_key=KEY, api_max_sources=5)
        runs = [evaluate([root / "small.eval.json"], mode=mode,
                         workspace=Workspace.open(settings)).run_id for mode in ("bm25", "dense")]
        with ApiServer(settings, api_key=KEY) as server:
            server.runs = runs
            server.llm = llm
            yield server


# ----------------------------------------------------------------------------
# Health, keys

def test_health_needs_no_key_and_reports_index_and_llm(api):
    data = api.anonymous.get("/health").json()
    assert data["status"] == "ok" and data["version"]
    assert data["index"]["ready"] and data["index"]["documents"] == len(DEMO_DOC_IDS)
    assert data["llm"]["reachable"] is True and data["llm"]["backend"] == "ollama"
    assert api.anonymous.get("/api/v1/health").json()["ok"] is True


@pytest.mark.parametrize("method, path", [
    ("get", "/api/v1/docs"), ("get", "/api/v1/metrics"), ("get", "/metrics"), ("post", "/check"), ("post", "/halloumi/generate"),
    ("post", "/api/v1/search"), ("get", f"/api/v1/docs/{DOC}/stats"), ("get", "/api/v1/runs"),
    ("get", "/openapi.json"), ("post", "/api/v1/index"),
])
def test_every_endpoint_but_health_needs_the_key(api, method, path):
    missing = getattr(api.anonymous, method)(path)
    wrong = getattr(api.anonymous, method)(path, headers={"X-API-Key": KEY + "x"})
    assert missing.status_code == 401 and "missing X-API-Key" in missing.json()["error"]
    assert wrong.status_code == 401 and "wrong API key" in wrong.json()["error"]


# ----------------------------------------------------------------------------
# Answer checks

HALLOUMI_CLAIM_KEYS = {"claimString", "startOffset", "endOffset", "segmentIds", "score", "rationale", "skipped"}


def test_halloumi_contract(api):
    """The request and response shapes of Halloumi / rag-facts-check, pinned."""
    response = api.client.post("/halloumi/generate", json={"answer": ANSWER, "sources": SOURCES, "batch_size": 8})
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"answer_score", "claims", "segments"}
    assert isinstance(data["answer_score"], float) and 0 <= data["answer_score"] <= 10
    joined = "".join(s["text"] for s in SOURCES)
    for claim in data["claims"]:
        assert set(claim) == HALLOUMI_CLAIM_KEYS
        assert isinstance(claim["startOffset"], int) and isinstance(claim["endOffset"], int)
        assert isinstance(claim["segmentIds"], list) and all(isinstance(i, str) for i in claim["segmentIds"])
        assert isinstance(claim["rationale"], str) and isinstance(claim["skipped"], bool)
    for key, segment in data["segments"].items():
        assert set(segment) == {"id", "startOffset", "endOffset"} and segment["id"] == key
    supported, contradicted, unlocated = data["claims"]
    assert ANSWER[supported["startOffset"]:supported["endOffset"]] == SUPPORTED_SPAN == supported["claimString"]
    assert (supported["score"], contradicted["score"], unlocated["score"]) == (1.0, 0.0, 0.4)
    segment = data["segments"][supported["segmentIds"][0]]
    assert joined[segment["startOffset"]:segment["endOffset"]] == SUPPORT_QUOTE
    segment = data["segments"][contradicted["segmentIds"][0]]
    assert joined[segment["startOffset"]:segment["endOffset"]] == CONTRADICT_QUOTE
    assert ANSWER[contradicted["startOffset"]:contradicted["endOffset"]] == CONTRADICTED_SPAN
    assert unlocated["skipped"] is True and (unlocated["startOffset"], unlocated["endOffset"]) == (0, len(ANSWER))
    assert unlocated["segmentIds"] == []
    assert supported["rationale"] == "The accounts state this limit."


def test_batch_size_sets_claims_per_verification_call(api):
    before = len(api.llm.requests)
    api.client.post("/halloumi/generate", json={"answer": ANSWER, "sources": SOURCES, "batch_size": 1})
    prompts = [json.dumps(body) for _, body in api.llm.requests[before:]]
    assert sum("Claims:" in p for p in prompts) == 3  # three claims, one per call


def test_halloumi_takes_plain_string_sources_as_the_first_halloumi_sent(api):
    response = api.client.post("/halloumi/generate", json={"answer": ANSWER, "sources": [s["text"] for s in SOURCES],
                                                           "maxContextSegments": 0})
    assert response.status_code == 200 and len(response.json()["claims"]) == 3


def test_check_returns_screen_evidence_claims_and_score(api):
    data = api.client.post("/check", json={"answer": ANSWER, "sources": SOURCES}).json()
    assert data["screen"]["checkable_share"] > 0 and data["screen"]["tokens"]
    assert data["claims"]["status"] == "checked"
    first = data["claims"]["checks"][0]
    assert first["verdict"] == "supported" and first["confidence"] == 0.9
    assert first["evidence_span"]["method"] == "exact"
    assert data["score"]["claims"] == 3 and data["score"]["score"] is not None


def test_llm_down_is_503_with_the_reason(api):
    response = api.client.post("/halloumi/generate", json={"answer": ANSWER + DOWN_MARKER, "sources": SOURCES})
    assert response.status_code == 503 and "HTTP 503" in response.json()["error"]
    screen_only = api.client.post("/check", json={"answer": ANSWER + DOWN_MARKER, "sources": SOURCES})
    assert screen_only.status_code == 200 and screen_only.json()["claims"]["status"] == "unavailable"


def test_slow_llm_is_503_within_the_deadline_not_a_hang(api):
    started = time.monotonic()
    response = api.client.post("/halloumi/generate", json={"answer": ANSWER + SLOW_MARKER, "sources": SOURCES})
    assert response.status_code == 503 and "did not answer within" in response.json()["error"]
    assert time.monotonic() - started < SLOW_S


# ----------------------------------------------------------------------------
# Bad input

def test_malformed_json_is_422_naming_the_body(api):
    response = api.client.post("/check", content=b'{"answer": "x", "sources": [', headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"].startswith("body: not valid JSON")


@pytest.mark.parametrize("body, field", [
    ({"answer": 5, "sources": ["x"]}, "answer"),
    ({"answer": "x", "sources": [{"title": "no text"}]}, "sources.0.text"),
    ({"answer": "x", "sources": "not a list"}, "sources"),
    ({"answer": "x", "sources": ["x"], "batch_size": 0}, "batch_size"),
    ({"sources": ["x"]}, "answer"),
])
def test_wrong_type_is_422_naming_the_field(api, body, field):
    response = api.client.post("/halloumi/generate", json=body)
    assert response.status_code == 422
    assert any(p["field"] == field for p in response.json()["detail"]), response.json()


def test_too_many_sources_is_422(api):
    response = api.client.post("/check", json={"answer": "x", "sources": ["s"] * 6})
    assert response.status_code == 422 and "at most 5" in response.json()["error"]


def test_oversized_body_is_413_with_or_without_a_length(api):
    big = b'{"answer": "' + b"x" * (api.settings.api_max_body_kb * 1024 + 10) + b'", "sources": ["s"]}'
    declared = api.client.post("/check", content=big, headers={"content-type": "application/json"})
    assert declared.status_code == 413 and "limit" in declared.json()["error"]

    def streamed():
        for start in range(0, len(big), 65536):
            yield big[start:start + 65536]

    chunked = api.client.post("/check", content=streamed(), headers={"content-type": "application/json"})
    assert chunked.status_code == 413 and "limit" in chunked.json()["error"]


def test_an_internal_error_reaches_the_log_not_the_response(api, monkeypatch):
    import ragloupe.api.checks as checks

    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug in the check")

    monkeypatch.setattr(checks, "check", broken)
    response = api.client.post("/check", json={"answer": "x", "sources": ["s"]})
    assert response.status_code == 500
    assert "Traceback" not in response.text and "simulated bug" not in response.text
    log = (api.settings.path("logs_dir") / "ragloupe.log").read_text()
    assert "Traceback" in log and "simulated bug in the check" in log


# ----------------------------------------------------------------------------
# Search and documents

def test_search_carries_every_engines_rank_and_score(api):
    data = api.client.post("/api/v1/search", json={"question": "Core Revenue Resource Limit", "k": 5}).json()
    hits = data["ranking"]["hits"]
    assert len(hits) == 5 and [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
    assert all(set(h["per_engine"]) == {"dense", "bm25"} for h in hits)
    assert any(h["per_engine"]["bm25"]["rank"] is not None for h in hits)
    assert {h["chunk"]["doc_id"] for h in hits} <= {"Grampian-2020-2021", "Grampian-2021-2022", "Grampian-2022-2023", "guidance"}


def test_a_search_waits_for_a_free_slot_and_then_answers(api):
    """Searches run at most one per encoder thread at once; the rest wait their turn, not fail."""
    body = {"question": "Core Revenue Resource Limit", "k": 3}
    assert api.client.post("/api/v1/search", json=body).status_code == 200  # warm: answers in well under 1 s
    slots = api.app_resources.search_slots
    held = 0
    while slots.acquire(blocking=False):  # every slot taken, as by that many running searches
        held += 1
    assert held == api.settings.encoder_threads()
    answered: list[int] = []
    waiting = threading.Thread(target=lambda: answered.append(
        api.client.post("/api/v1/search", json=body).status_code))
    try:
        waiting.start()
        waiting.join(1.0)
        assert waiting.is_alive() and not answered  # queued behind the slots
    finally:
        for _ in range(held):
            slots.release()
    waiting.join(60)
    assert answered == [200]


def test_document_search_stays_in_its_document_and_places_the_gold_page(api):
    gold = api.client.get(f"/api/v1/docs/{DOC}/eval-items").json()["items"][0]
    data = api.client.post(f"/api/v1/docs/{DOC}/search",
                           json={"question": gold["question"], "k": 5, "query_id": gold["query_id"]}).json()
    assert {h["chunk"]["doc_id"] for h in data["ranking"]["hits"]} == {DOC}
    assert data["gold"]["expected_units"] == [f"{DOC}#p{p}" for p in gold["expected_pages"]]
    assert data["gold"]["first_relevant_rank"] is None or data["gold"]["first_relevant_rank"] >= 1


def test_document_search_can_answer_with_the_llm(api):
    data = api.client.post(f"/api/v1/docs/{DOC}/search", json={"question": "What was the Core Revenue Resource Limit?",
                                                               "k": 3, "include_generated_answer": True}).json()
    assert data["answer"]["text"].endswith("[1].") and data["answer"]["citations"][0]["passage"] == 1
    assert data["screen"]["verdict"] in {"NOT_CONTRADICTED", "UNSUPPORTED", "MISATTRIBUTED", "DERIVED"}


def test_a_cited_page_carries_links_that_open_the_indexed_file_at_that_page(api):
    import hashlib
    import struct

    from ragloupe.index.manifest import Manifest

    data = api.client.post(f"/api/v1/docs/{DOC}/search", json={"question": "What was the Core Revenue Resource Limit?",
                                                               "k": 3, "include_generated_answer": True}).json()
    citation = data["answer"]["citations"][0]
    page = citation["page"]
    assert citation["link"] == f"/api/v1/docs/{DOC}/file#page={page}"
    assert data["generated_citations"][0]["page_image"] == f"/api/v1/docs/{DOC}/pages/{page}/image"
    pdf = api.client.get(citation["link"].split("#")[0])
    entry = Manifest.load(api.settings).documents[DOC]
    assert pdf.headers["content-type"] == "application/pdf"
    assert hashlib.sha256(pdf.content).hexdigest() == entry.sha256
    image = api.client.get(citation["page_image"], params={"width": 400})
    assert image.headers["content-type"] == "image/png" and image.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">I", image.content[16:20])[0] == 400  # the PNG's own width field
    missing = api.client.get(f"/api/v1/docs/{DOC}/pages/9999/image")
    assert missing.status_code == 404 and "has no page 9999" in missing.json()["error"]


def test_rank_orders_every_document_by_its_best_chunk(api):
    data = api.client.post("/api/v1/docs/rank", json={"question": "natech accidents triggered by floods and earthquakes"}).json()
    assert data["total_docs"] == len(DEMO_DOC_IDS)
    assert [i["rank"] for i in data["items"]] == list(range(1, len(DEMO_DOC_IDS) + 1))
    assert data["items"][0]["doc_id"] == "guidance"
    similarities = [i["similarity"] for i in data["items"]]
    assert similarities == sorted(similarities, reverse=True)


def test_documents_list_stats_and_logs_come_from_the_manifest(api):
    docs = api.client.get("/api/v1/docs").json()
    assert docs["docs"] == list(DEMO_DOC_IDS)
    stats = api.client.get(f"/api/v1/docs/{DOC}/stats").json()
    assert stats["page_count"] == sum(stats["quality"].values()) and stats["chunk_count"] > 100
    assert stats["has_eval_set"] and stats["eval_items"] == 50
    log = api.client.get(f"/api/v1/docs/{DOC}/logs", params={"last_n": 5000}).json()
    assert any(line.startswith("page 1: ") for line in log["lines"])
    assert len(api.client.get(f"/api/v1/docs/{DOC}/logs", params={"last_n": 3}).json()["lines"]) == 3


def test_tables_endpoint_lists_the_table_chunks_the_index_holds(api):
    from ragloupe.index.store import open_store

    expected = [c.chunk_id for c in open_store(api.settings).all_chunks(where={"doc_id": DOC}) if c.kind == "table"]
    data = api.client.get(f"/api/v1/docs/{DOC}/tables", params={"limit": 500}).json()
    assert [t["chunk_id"] for t in data["tables"]] == expected and data["total"] == len(expected)
    assert api.client.get(f"/api/v1/docs/{DOC}/stats").json()["table_chunk_count"] == len(expected)


def test_page_chunks_come_in_reading_order_with_their_overlap(api):
    data = api.client.get(f"/api/v1/docs/{DOC}/pages/28/chunks").json()
    positions = [c["position"] for c in data["chunks"]]
    assert data["quality"] == "clean" and positions == sorted(positions) and len(positions) >= 1
    assert data["chunks"][0]["overlap_chars_with_previous"] == 0


@pytest.mark.parametrize("path", [f"/api/v1/docs/nope/stats", f"/api/v1/docs/{DOC}/pages/9999/chunks",
                                  "/api/v1/docs/..%2F..%2Fetc/stats", "/api/v1/runs/nope", "/api/v1/jobs/job-0"])
def test_unknown_things_are_404_with_a_reason(api, path):
    response = api.client.get(path)
    assert response.status_code == 404 and response.json()["error"]


# ----------------------------------------------------------------------------
# Runs, upload, metrics

def test_runs_list_show_and_compare(api):
    listed = api.client.get("/api/v1/runs").json()["runs"]
    assert {r["run_id"] for r in listed} == set(api.runs)
    shown = api.client.get(f"/api/v1/runs/{api.runs[0]}").json()
    assert shown["run_id"] == api.runs[0] and shown["mode"] == "bm25" and shown["n_queries"] == 3
    compared = api.client.get("/api/v1/runs/compare", params={"a": api.runs[0], "b": api.runs[1]})
    assert compared.status_code == 200 and compared.json()
    traversal = api.client.get("/api/v1/runs/compare", params={"a": "../../etc/passwd", "b": api.runs[1]})
    assert traversal.status_code == 404


def test_upload_is_off_unless_switched_on(api):
    response = api.client.post("/api/v1/docs/upload", json={"filename": "a.pdf", "content_base64": "JVBERi0="})
    assert response.status_code == 403 and "RAGLOUPE_API_UPLOAD=true" in response.json()["error"]


def test_metrics_count_requests_and_time_stages_in_prometheus_text(api):
    api.client.post("/api/v1/search", json={"question": "capital expenditure", "k": 3})
    response = api.client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert '# TYPE ragloupe_http_requests_total counter' in text
    assert 'ragloupe_http_requests_total{method="POST",route="/api/v1/search",status="200"}' in text
    assert 'ragloupe_http_request_duration_seconds_bucket{method="POST",route="/api/v1/search",le="+Inf"}' in text
    assert 'ragloupe_stage_duration_seconds_count{stage="search_query_embedding"}' in text
    assert 'ragloupe_stage_duration_seconds_count{stage="check_screen"}' in text


def test_interactive_docs_are_served_locally(api):
    page = api.client.get("/docs").text
    assert "/static/swagger/swagger-ui-bundle.js" in page and "cdn" not in page
    assert api.client.get("/static/swagger/swagger-ui-bundle.js").status_code == 200
    assert "/halloumi/generate" in api.client.get("/openapi.json").json()["paths"]
