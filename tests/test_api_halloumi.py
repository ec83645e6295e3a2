"""The EEA chatbot's Halloumi request (volto-eea-chatbot's useQualityMarkers: {answer, sources as
plain strings, maxContextSegments}) against a real server, with no LLM and with a local server
speaking Ollama's protocol. What the chatbot reads of the answer is pinned in pydantic models."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr

from api_server import ApiServer
from check_fixtures import ANSWER, SOURCES, SUPPORTED_SPAN, claim_checker
from llm_server import FakeLlmServer

CHATBOT_BODY = {"answer": ANSWER, "sources": [s["text"] for s in SOURCES], "maxContextSegments": 0}


class HalloumiClaim(BaseModel):
    model_config = ConfigDict(extra="forbid")
    claimString: StrictStr
    startOffset: StrictInt
    endOffset: StrictInt
    segmentIds: list[StrictStr]
    score: StrictFloat
    rationale: StrictStr
    skipped: StrictBool


class HalloumiSegment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: StrictStr
    startOffset: StrictInt
    endOffset: StrictInt


class HalloumiResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer_score: StrictFloat | None
    claims: list[HalloumiClaim]
    segments: dict[str, HalloumiSegment]


def _valid(data: dict) -> HalloumiResponse:
    parsed = HalloumiResponse.model_validate(data)
    joined = "".join(CHATBOT_BODY["sources"])
    for claim in parsed.claims:
        assert 0 <= claim.startOffset <= claim.endOffset <= len(ANSWER) and 0.0 <= claim.score <= 1.0
        assert all(i in parsed.segments for i in claim.segmentIds)
    for key, segment in parsed.segments.items():
        assert segment.id == key and 0 <= segment.startOffset < segment.endOffset <= len(joined)
    return parsed


@pytest.fixture(scope="module")
def no_llm(tmp_path_factory):
    from ragloupe.config import Settings

    root = tmp_path_factory.mktemp("halloumi")
    settings = Settings.from_env(llm_backend="none", index_dir=root / "index", logs_dir=root / "logs",
                                 runs_dir=root / "runs", raw_dir=root / "raw", api_max_sources=3)
    with ApiServer(settings) as server:
        yield server


def test_chatbot_body_without_an_llm_gets_claims_segments_and_a_plain_rationale(no_llm):
    response = no_llm.client.post("/halloumi/generate", json=CHATBOT_BODY)
    assert response.status_code == 200
    parsed = _valid(response.json())
    assert [ANSWER[c.startOffset:c.endOffset] for c in parsed.claims] == [
        SUPPORTED_SPAN + ".", "The Board received £50m of extra funding.", "It also opened a hospital."]
    assert [c.score for c in parsed.claims] == [1.0, 0.4, 0.4]
    assert all(c.rationale.startswith("No model judged meaning") for c in parsed.claims)
    joined = "".join(CHATBOT_BODY["sources"])
    segment = parsed.segments[parsed.claims[0].segmentIds[0]]
    assert joined[segment.startOffset:segment.endOffset] == "1,278,771"
    assert parsed.answer_score == pytest.approx(10 * 1.8 / 3, abs=0.01)


def test_check_without_an_llm_reports_the_seeds_dimensions_and_flags(no_llm):
    data = no_llm.client.post("/check", json=CHATBOT_BODY).json()
    assert data["claims"]["verifier"] == "model-free" and data["overall_verdict"] == "partially_supported"
    assert data["dimensions"]["hallucination_rate"] == 66.7 and len(data["hallucination_flags"]) == 2


def test_a_source_list_over_the_limit_is_422_naming_it(no_llm):
    response = no_llm.client.post("/halloumi/generate", json={**CHATBOT_BODY, "sources": ["s"] * 4})
    assert response.status_code == 422 and response.json()["error"].startswith("sources: 4 given, at most 3")


def test_chatbot_body_with_an_llm_is_verified_by_the_llm(tmp_path):
    from ragloupe.config import Settings

    with FakeLlmServer(claim_checker) as llm:
        settings = Settings.from_env(llm_backend="ollama", ollama_base_url=llm.url, ollama_model="fake-model",
                                     logs_dir=tmp_path / "logs", index_dir=tmp_path / "index",
                                     check_evidence="whole-sources")
        with ApiServer(settings) as server:
            response = server.client.post("/halloumi/generate", json=CHATBOT_BODY)
    assert response.status_code == 200
    parsed = _valid(response.json())
    assert [c.score for c in parsed.claims] == [1.0, 0.0, 0.4]
    assert parsed.claims[0].rationale == "The accounts state this limit."
    assert any("Claims:" in str(body) for _, body in llm.requests)
