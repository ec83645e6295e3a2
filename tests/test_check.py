"""Checking an answer ragloupe did not write (generate.check) and `ragloupe check`, against
a real local server speaking Ollama's protocol for the LLM part."""

from __future__ import annotations

import json

import pytest

from check_fixtures import (ACCOUNTS, ANSWER, CONTRADICT_QUOTE, NOTES, SUPPORT_QUOTE, SUPPORTED_SPAN,
                            claim_checker)
from llm_server import FakeLlmServer
from ragloupe.cli import main
from ragloupe.generate.check import ALL_SOURCES, CITED, Source, check
from ragloupe.logs import read_llm_calls

SOURCES = [Source(ACCOUNTS, title="Accounts"), Source(NOTES, title="Notes")]


@pytest.fixture
def llm(settings):
    with FakeLlmServer(claim_checker) as server:
        yield server, settings.replace(llm_backend="ollama", ollama_base_url=server.url,
                                       ollama_model="fake-model")


def test_uncited_answer_is_checked_against_every_source(llm):
    _, settings = llm
    result = check(ANSWER, SOURCES, settings)
    assert result.citation_mode == ALL_SOURCES
    by_token = {t.token: t for t in result.screen.tokens}
    assert by_token["£1,278,771 (£000)"].verdict == "NOT_CONTRADICTED"
    assert by_token["£50m"].verdict == "UNSUPPORTED"
    assert result.screen.checkable_share == pytest.approx(2 / 3, abs=1e-3)


def test_claims_carry_verdict_rationale_confidence_and_located_evidence(llm):
    _, settings = llm
    result = check(ANSWER, SOURCES, settings)
    supported, contradicted, unverified = result.claims
    assert supported.verdict == "supported" and supported.source == 1
    assert ACCOUNTS[supported.evidence_span.start:supported.evidence_span.end] == SUPPORT_QUOTE
    assert supported.evidence_span.method == "exact"
    assert supported.rationale == "The accounts state this limit." and supported.confidence == 0.9
    assert ANSWER[supported.claim.span.start:supported.claim.span.end] == SUPPORTED_SPAN
    assert contradicted.verdict == "contradicted"
    assert NOTES[contradicted.evidence_span.start:contradicted.evidence_span.end] == CONTRADICT_QUOTE
    assert contradicted.confidence is None  # "high" is not a number from 0 to 1
    assert unverified.verdict == "unverified" and unverified.claim.span is None


def test_score_parts_add_up_to_the_score(llm):
    _, settings = llm
    parts = check(ANSWER, SOURCES, settings).score
    assert (parts["claims"], parts["supported"], parts["unverified"], parts["contradicted"]) == (3, 1, 1, 1)
    assert parts["raw"] == pytest.approx((1 + 0.4 - 2) / 3, abs=1e-4)
    assert parts["score"] == 0.0  # one contradiction outweighs a supported and an unverified claim
    assert parts["penalty"] == 0.0  # an uncited answer is checked against all sources: no citation owed


def test_cited_answer_uses_its_citations_and_locates_sentence_evidence(llm):
    _, settings = llm
    answer = "The Board reported an underspend of £0.769m [1]."
    result = check(answer, SOURCES, settings, claims=False)
    assert result.citation_mode == CITED
    assert result.screen.tokens[0].verdict == "MISATTRIBUTED"  # the figure is in source 2, not 1
    assert result.claims_status == "unavailable" and "not asked" in result.claims_reason


def test_with_the_llm_verifier_and_no_llm_the_screen_still_works_and_claims_say_why(settings):
    result = check(ANSWER, SOURCES, settings.replace(llm_backend="none", check_verifier="llm"))
    assert result.claims_status == "unavailable"
    assert "RAGLOUPE_LLM_BACKEND" in result.claims_reason
    assert result.screen.tokens and result.score["score"] is None
    assert result.as_dict()["dimensions"] is None and result.as_dict()["hallucination_flags"] == []


def test_without_an_llm_claims_are_checked_model_free_sentence_by_sentence(settings):
    result = check(ANSWER, SOURCES, settings.replace(llm_backend="none"))
    assert result.claims_status == "checked" and result.verifier == "model-free"
    figure, made_up, no_figure = result.claims
    assert [c.claim.span_text for c in result.claims] == [
        "The Core Revenue Resource Limit was £1,278,771 (£000).",
        "The Board received £50m of extra funding.", "It also opened a hospital."]
    assert figure.verdict == "supported" and figure.source == 1
    assert ACCOUNTS[figure.evidence_span.start:figure.evidence_span.end] == "1,278,771"
    assert made_up.verdict == "unverified" and "'£50m' is in none of the sources" in made_up.rationale
    assert no_figure.verdict == "unverified" and no_figure.evidence_span is None
    assert all(c.rationale.startswith("No model judged meaning") for c in result.claims)
    assert not any(c.verdict == "contradicted" for c in result.claims)  # only a reading of meaning could say so
    assert result.score["score"] == pytest.approx(10 * (1 + 0.4 + 0.4) / 3, abs=0.01)


def test_model_free_claims_are_table_rows_and_words_found_verbatim(settings):
    answer = ("| Line | Amount |\n|---|---|\n| Core limit | £1,278,771 (£000) |\n| Extra funding | £50m |\n\n"
              "The Board met every statutory financial target.")
    result = check(answer, SOURCES, settings.replace(check_verifier="model-free"))
    rows = [c.claim.span_text for c in result.claims]
    assert rows == ["| Core limit | £1,278,771 (£000) |", "| Extra funding | £50m |",
                    "The Board met every statutory financial target."]
    assert [c.verdict for c in result.claims] == ["supported", "unverified", "supported"]
    words = result.claims[2]
    assert ACCOUNTS[words.evidence_span.start:words.evidence_span.end] == "The Board met every statutory financial target."


def test_report_gives_seed_dimensions_overall_verdict_and_hallucination_flags(settings):
    data = check(ANSWER, SOURCES, settings.replace(check_verifier="model-free")).as_dict()
    assert data["dimensions"] == {"groundedness": 33.3, "contradiction_rate": 0.0,
                                  "hallucination_rate": 66.7, "completeness": 33.3}
    assert data["overall_verdict"] == "partially_supported"
    flags = data["hallucination_flags"]
    assert [f["claim_index"] for f in flags] == [1, 2] and all(f["verdict"] == "unverified" for f in flags)
    assert ANSWER[flags[0]["start"]:flags[0]["end"]] == "The Board received £50m of extra funding."


def test_every_llm_call_is_logged_as_a_json_line(llm):
    server, settings = llm
    check(ANSWER, SOURCES, settings)
    calls = read_llm_calls(settings)
    assert len(calls) == len(server.requests) == 2
    assert {c["outcome"] for c in calls} == {"ok"}
    assert all(c["backend"] == "ollama" and c["model"] == "fake-model" and c["prompt_chars"] > 100
               and c["duration_s"] >= 0 for c in calls)


def test_cli_check_prints_json(llm, tmp_path, capsys, monkeypatch):
    server, _ = llm
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
    monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
    (tmp_path / "answer.txt").write_text(ANSWER, encoding="utf-8")
    (tmp_path / "sources.json").write_text(json.dumps({"sources": [ACCOUNTS, {"text": NOTES, "title": "Notes"}]}),
                                           encoding="utf-8")
    code = main(["check", "--answer", str(tmp_path / "answer.txt"), "--sources", str(tmp_path / "sources.json"),
                 "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [c["verdict"] for c in data["claims"]["checks"]] == ["supported", "contradicted", "unverified"]
    assert data["sources"][1]["title"] == "Notes"


@pytest.mark.parametrize("content, reason", [
    ("[1, 2", "not valid JSON"), ("[]", "non-empty list"), ('[{"title": "no text"}]', "has no \"text\""),
])
def test_cli_check_refuses_bad_sources_with_one_line(tmp_path, capsys, content, reason):
    (tmp_path / "answer.txt").write_text(ANSWER, encoding="utf-8")
    (tmp_path / "sources.json").write_text(content, encoding="utf-8")
    code = main(["check", "--answer", str(tmp_path / "answer.txt"), "--sources", str(tmp_path / "sources.json")])
    err = capsys.readouterr().err
    assert code == 2 and reason in err and "Traceback" not in err
