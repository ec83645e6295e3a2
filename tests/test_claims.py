"""Claim extraction, verification and the 0-10 score, with the local fake LLM server
returning canned JSON and the real Grampian page 28 text as the source."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from llm_server import FakeLlmServer, Reply, chat_reply, prompt_of
from ragloupe.errors import LlmBadOutput
from ragloupe.generate.claims import (ClaimCheck, Claim, check_claims, extract_claims, score_claims,
                                      split_answer, verify_claims)
from ragloupe.generate.llm import get_client

BENCH = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "grampian"

ANSWER = ("The Core Revenue Resource Limit was £1,278,771 (£000) [1]. The actual outturn was "
          "£1,278,002 (£000) [1]. NHS Grampian received £50m of extra funding. "
          "The Board overspent its limit [1].")
CLAIMS = {"claims": [
    {"claim": "The Core Revenue Resource Limit was £1,278,771 thousand.",
     "span": "The Core Revenue Resource Limit was £1,278,771 (£000)"},
    {"claim": "The actual outturn was £1,278,002 thousand.", "span": "The actual outturn was £1,278,002 (£000)"},
    {"claim": "The actual outturn was £1,278,002k.", "span": "The actual outturn was £1,278,002 (£000)"},
    {"claim": "NHS Grampian received £50m of extra funding.", "span": "NHS Grampian received £50m of extra funding"},
    {"claim": "The Board overspent its limit.", "span": "The Board overspent its limit"},
]}
RESULTS = {"results": [
    {"id": 1, "verdict": "supported", "source": 1, "quote": "Core Revenue Resource Limit 1,278,771"},
    {"id": 2, "verdict": "supported", "source": 1, "quote": "“Core Revenue Resource Limit 1,278,771 1,278,002”"},
    {"id": 3, "verdict": "unverified", "source": None, "quote": ""},
    {"id": 4, "verdict": "contradicted", "source": 1,
     "quote": "The Board is reporting an underspend of £0.769m"},
]}


@pytest.fixture(scope="module")
def page28() -> str:
    with open(BENCH / "pages" / "Grampian-2020-2021.jsonl", encoding="utf-8") as lines:
        return next(json.loads(l)["text"] for l in lines if json.loads(l)["page"] == 28)


def canned(extract: dict, verify: dict):
    def handler(path: str, request: dict) -> Reply:
        wanted = verify if "Claims:" in prompt_of(request) else extract
        return chat_reply(path, "Here you go:\n```json\n" + json.dumps(wanted) + "\n```")
    return handler


def client_for(settings, url: str):
    return get_client(settings.replace(llm_backend="ollama", ollama_base_url=url,
                                       ollama_model="fake-model", llm_timeout_s=5))


def answer_of(text: str, page: str) -> SimpleNamespace:
    import re

    citations = [SimpleNamespace(start=m.start(), end=m.end(), passage=1) for m in re.finditer(r"\[1\]", text)]
    passage = SimpleNamespace(chunk=SimpleNamespace(text=page))
    return SimpleNamespace(text=text, citations=citations, passages=[passage])


def test_split_keeps_table_header_with_every_row_group():
    header = "| Target | Limit | Outturn |\n|---|---|---|"
    rows = [f"| Target {i} | 1,{i:03d} | 1,{i:03d} |" for i in range(40)]
    text = "Intro sentence about targets.\n\n" + header + "\n" + "\n".join(rows) + "\n\nClosing remark."
    pieces = split_answer(text, max_chars=300)
    tables = [p for p in pieces if p.lstrip().startswith("|")]
    assert len(tables) > 1
    assert all(t.startswith(header + "\n") for t in tables)
    assert sorted(r for t in tables for r in t.splitlines()[2:]) == sorted(rows)
    assert pieces[0] == "Intro sentence about targets." and pieces[-1] == "Closing remark."


def test_short_answer_is_one_piece():
    assert split_answer(ANSWER) == [ANSWER]


def test_claims_are_extracted_with_spans_and_deduplicated(settings):
    with FakeLlmServer(canned(CLAIMS, RESULTS)) as server:
        claims = extract_claims(client_for(settings, server.url), ANSWER, answer_of(ANSWER, "").citations)
    assert len(claims) == 4  # the two claims with the same span are one
    first = claims[0]
    assert ANSWER[first.span.start:first.span.end] == "The Core Revenue Resource Limit was £1,278,771 (£000)"
    assert [c.cited for c in claims] == [True, True, False, True]


def test_verification_maps_evidence_quotes_to_spans(settings, page28):
    with FakeLlmServer(canned(CLAIMS, RESULTS)) as server:
        client = client_for(settings, server.url)
        claims = extract_claims(client, ANSWER, answer_of(ANSWER, page28).citations)
        checks = verify_claims(client, claims, [page28])
    assert [c.verdict for c in checks] == ["supported", "supported", "unverified", "contradicted"]
    supported = checks[1]
    assert page28[supported.evidence_span.start:supported.evidence_span.end] == \
        "Core Revenue Resource Limit 1,278,771 1,278,002"
    assert checks[3].source == 1 and checks[3].evidence_span is not None


def test_supported_verdict_with_invented_quote_is_downgraded(settings, page28):
    invented = {"results": [{"id": 1, "verdict": "supported", "source": 1,
                             "quote": "the Board was awarded a gold star for outstanding budgeting"}]}
    with FakeLlmServer(canned(CLAIMS, invented)) as server:
        checks = verify_claims(client_for(settings, server.url),
                               [Claim("x", "x", None, True)], [page28])
    assert checks[0].verdict == "unverified" and "downgraded" in checks[0].note


def test_claims_missing_from_the_reply_are_unverified(settings, page28):
    partial = {"results": [{"id": 1, "verdict": "supported", "source": 1,
                            "quote": "Core Revenue Resource Limit 1,278,771"}]}
    claims = [Claim("a", "a", None, True), Claim("b", "b", None, True)]
    with FakeLlmServer(canned(CLAIMS, partial)) as server:
        checks = verify_claims(client_for(settings, server.url), claims, [page28])
    assert [c.verdict for c in checks] == ["supported", "unverified"]
    assert "no verdict" in checks[1].note


def test_claims_are_verified_in_batches(settings, page28):
    with FakeLlmServer(canned(CLAIMS, RESULTS)) as server:
        claims = [Claim(f"claim {i}", f"claim {i}", None, True) for i in range(5)]
        verify_claims(client_for(settings, server.url), claims, [page28], batch_size=2)
    verify_requests = [r for _, r in server.requests if "Claims:" in prompt_of(r)]
    assert len(verify_requests) == 3
    assert "1. claim 4" in prompt_of(verify_requests[-1])


def test_score_follows_the_documented_formula():
    def check(verdict: str, cited: bool) -> ClaimCheck:
        return ClaimCheck(Claim("c", "c", None, cited), verdict, 1, "", None)

    # raw = (1 + 1 + 0.4 - 2) / 4 = 0.1; one of two supported claims uncited: x (1 - 0.3 * 0.5)
    checks = [check("supported", True), check("supported", False), check("unverified", True),
              check("contradicted", True)]
    assert score_claims(checks) == pytest.approx(10 * 0.1 * 0.85)
    assert score_claims([check("supported", True)] * 3) == 10.0
    assert score_claims([check("unverified", True)]) == pytest.approx(4.0)
    assert score_claims([check("contradicted", True), check("supported", True)]) == 0.0
    assert score_claims([]) is None


def test_check_claims_scores_a_whole_answer(settings, page28):
    with FakeLlmServer(canned(CLAIMS, RESULTS)) as server:
        report = check_claims(answer_of(ANSWER, page28), client_for(settings, server.url))
    assert report.counts() == {"supported": 2, "unverified": 1, "contradicted": 1}
    # raw = (2 + 0.4 - 2) / 4 = 0.1; both supported claims cited: no penalty.
    assert report.score == pytest.approx(1.0)
    assert json.loads(json.dumps(report.as_dict()))["counts"]["contradicted"] == 1


def test_reply_without_json_is_bad_output(settings):
    with FakeLlmServer(lambda path, body: chat_reply(path, "Sure! The claims are: the limit.")) as server:
        with pytest.raises(LlmBadOutput, match="no JSON list of 'claims'"):
            extract_claims(client_for(settings, server.url), ANSWER)


def test_citation_brackets_in_prose_are_not_taken_for_json(settings):
    with FakeLlmServer(lambda path, body: chat_reply(path, "The limit was £1,278,771 [1].")) as server:
        with pytest.raises(LlmBadOutput):
            extract_claims(client_for(settings, server.url), ANSWER)
