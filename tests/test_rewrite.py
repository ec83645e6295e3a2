"""Query rewriting against a real local HTTP server speaking Ollama's chat API."""

from __future__ import annotations

import socket

import pytest

from llm_server import FakeLlmServer, Reply, chat_reply
from retrieval_corpus import build_index
from ragloupe.retrieve.rewrite import clean_reply, protected_terms, restore_terms, rewrite_query
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace


def ollama_settings(settings, url: str, **changes):
    return settings.replace(llm_backend="ollama", ollama_base_url=url, ollama_model="fake-model",
                            **changes)


def replying(content: str):
    return lambda path, body: chat_reply(path, content)


def test_rewrite_is_appended_to_the_question_not_substituted(settings):
    with FakeLlmServer(replying("Seveso III obligations for operators of hazardous sites")) as server:
        result = rewrite_query("What must site operators do?", ollama_settings(settings, server.url))
    assert result.used
    assert result.rewrite == "Seveso III obligations for operators of hazardous sites"
    assert result.search_text == ("What must site operators do?\n"
                                  "Seveso III obligations for operators of hazardous sites")
    assert result.not_used_because == "" and result.restored == ()


def test_rewrite_request_asks_for_temperature_zero_fixed_seed_and_keeping_codes(settings):
    with FakeLlmServer(replying("a rewrite")) as server:
        rewrite_query("pipes of DN50", ollama_settings(settings, server.url, llm_seed=1234))
        path, request = server.requests[0]
    assert path == "/api/chat"
    assert request["options"]["temperature"] == 0
    assert request["options"]["seed"] == 1234
    system = request["messages"][0]["content"]
    assert "Keep every number" in system and "code" in system
    assert request["messages"][-1]["content"] == "pipes of DN50"


def test_codes_and_numbers_the_rewrite_dropped_are_put_back_and_recorded(settings):
    with FakeLlmServer(replying("flood damage to small pipes under the directive")) as server:
        result = rewrite_query("Flood damage to DN50 pipes of 10 mm under 2012/18/EU",
                               ollama_settings(settings, server.url))
    assert result.used
    assert result.restored == ("DN50", "10 mm", "2012/18/EU")  # recorded as data, for a face to word
    for term in result.restored:
        assert term in result.rewrite
    assert result.note == "terms the rewrite dropped were put back: DN50, 10 mm, 2012/18/EU"
    assert result.search_text.startswith("Flood damage to DN50 pipes")


def test_unreachable_llm_falls_back_to_the_question(settings):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = rewrite_query("capital expenditure", ollama_settings(settings, f"http://127.0.0.1:{port}"))
    assert not result.used and result.rewrite is None
    assert result.search_text == "capital expenditure"
    assert "cannot reach" in result.not_used_because


def test_empty_reply_falls_back_to_the_question(settings):
    with FakeLlmServer(replying("   ")) as server:
        result = rewrite_query("capital expenditure", ollama_settings(settings, server.url))
    assert not result.used and result.search_text == "capital expenditure"
    assert "empty" in result.not_used_because


def test_slow_llm_falls_back_after_the_rewrite_timeout(settings):
    slow = lambda path, body: Reply(chat_reply(path, "late").body, delay_s=2.0)  # noqa: E731
    with FakeLlmServer(slow) as server:
        result = rewrite_query("capital expenditure",
                               ollama_settings(settings, server.url, rewrite_timeout_s=0.3))
    assert not result.used and result.search_text == "capital expenditure"
    assert "did not answer within 0.3 s" in result.not_used_because


def test_server_error_falls_back_with_the_reason(settings):
    failing = lambda path, body: Reply(b'{"error": "model not found"}', status=404)  # noqa: E731
    with FakeLlmServer(failing) as server:
        result = rewrite_query("capital expenditure", ollama_settings(settings, server.url))
    assert not result.used and "404" in result.not_used_because


def test_rewrite_identical_to_the_question_is_not_used(settings):
    with FakeLlmServer(replying("Capital expenditure?")) as server:
        result = rewrite_query("capital expenditure", ollama_settings(settings, server.url))
    assert not result.used and result.search_text == "capital expenditure"
    assert result.not_used_because == "identical to the question"


def test_clean_reply_takes_the_first_line_without_label_or_quotes():
    assert clean_reply('Rewritten query: "flood damage to tanks"\nBecause ...') == "flood damage to tanks"
    assert clean_reply("\n\n  \n") == ""


def test_protected_terms_cover_codes_numbers_units_and_names():
    terms = protected_terms("Does ISO 31000 cover DN50 pipes of 10 mm, £1,559,285, Q_2025, "
                            "2012/18/EU, 90% and RAPID-N in llama3.2?")
    for term in ("ISO 31000", "DN50", "10 mm", "£1,559,285", "Q_2025", "2012/18/EU", "90%",
                 "RAPID-N", "llama3.2"):
        assert term in terms


def test_restore_terms_leaves_a_complete_rewrite_alone():
    assert restore_terms("DN50 pipes", "dn50 piping") == ("dn50 piping", [])


def test_search_with_rewrite_records_it_on_the_ranking(tmp_path, embedder):
    base = build_index(tmp_path, embedder)
    with FakeLlmServer(replying("lightning and flood triggered releases from storage tanks")) as server:
        ranking = search("What natural events cause tank spills?", "hybrid+rewrite", 5,
                         workspace=Workspace.open(ollama_settings(base, server.url)))
    assert ranking.rewrite_used
    assert ranking.rewrite == "lightning and flood triggered releases from storage tanks"
    assert "rewrite" in ranking.timings
    assert ranking.hits[0].chunk.chunk_id == "guidance-4.1"
    assert ranking.hits[0].per_engine["bm25"].rank is not None  # the rewrite's words reached BM25


def test_search_with_rewrite_still_answers_without_an_llm(tmp_path, embedder):
    settings = build_index(tmp_path, embedder)  # llm_backend="none"
    ranking = search("Seveso directive", "bm25+rewrite", 3, workspace=Workspace.open(settings))
    assert not ranking.rewrite_used and ranking.rewrite is None
    assert "no LLM is configured" in ranking.rewrite_not_used_because
    assert ranking.rewrite_note.startswith("rewrite not used: no LLM is configured")  # the CLI's line
    assert ranking.hits[0].chunk.chunk_id == "guidance-1"
