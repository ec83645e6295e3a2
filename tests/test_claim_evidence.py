"""Per-claim evidence (generate.claim_evidence): each claim's best source excerpts, packed into
verification batches under a token budget; and the LLM seeing only those excerpts."""

from __future__ import annotations

import json

from check_fixtures import ACCOUNTS, ANSWER, NOTES, SUPPORT_QUOTE, claim_checker
from llm_server import FakeLlmServer
from ragloupe.generate.check import Source, check
from ragloupe.generate.claim_evidence import evidence_for_claims, pack_batches

FILLER = " ".join(f"Paragraph {i} describes the estates strategy and the ward refurbishment plan." for i in range(40))


def words(text: str) -> int:
    return len(text.split())


def test_each_claim_gets_the_sentences_that_share_its_words_with_their_neighbours():
    sources = [FILLER + " " + ACCOUNTS, NOTES]
    excerpts = evidence_for_claims(["The Core Revenue Resource Limit was £1,278,771 thousand.",
                                    "The Board reported an underspend of £0.769m."], sources)
    first = excerpts[0][0]
    assert first.source == 1 and SUPPORT_QUOTE in first.text
    assert sources[0][first.start:first.end] == first.text  # offsets are the source's own
    assert all(len(e.text) < 400 for group in excerpts for e in group)  # excerpts, not the whole source
    assert any(e.source == 2 and "underspend of £0.769m" in e.text for e in excerpts[1])


def test_batches_stay_under_the_budget_and_share_excerpts_once():
    sources = [ACCOUNTS, NOTES, FILLER]
    claims = ["Core Revenue Resource Limit 1,278,771.", "Outturn was 1,278,002.", "An underspend of £0.769m.",
              "The ward refurbishment plan."]
    excerpts = evidence_for_claims(claims, sources, per_claim=1)
    batches = pack_batches(excerpts, words, budget=40, max_claims=8)
    assert [c for b in batches for c in b.claims] == [0, 1, 2, 3]
    assert all(b.tokens <= 40 or len(b.claims) == 1 for b in batches)
    assert all(b.tokens == sum(words(e.text) for e in b.excerpts) for b in batches)
    assert all(len(set(b.excerpts)) == len(b.excerpts) for b in batches)
    assert len(pack_batches(excerpts, words, budget=10_000, max_claims=2)) == 2  # the claim cap still holds


def test_the_llm_sees_only_each_claims_excerpts_and_evidence_lands_in_the_source(settings, embedder):
    with FakeLlmServer(claim_checker) as server:
        llm = settings.replace(llm_backend="ollama", ollama_base_url=server.url, ollama_model="fake-model",
                               check_batch_tokens=200)
        long_accounts = FILLER + " " + ACCOUNTS
        result = check(ANSWER, [Source(long_accounts), Source(NOTES)], llm, embedder=embedder)
        prompts = [json.dumps(body) for _, body in server.requests if "Claims:" in json.dumps(body)]
    assert prompts and all(p.count("Paragraph") <= 2 for p in prompts)  # not the 40 filler sentences
    supported = result.claims[0]
    assert supported.verdict == "supported" and supported.source == 1
    assert long_accounts[supported.evidence_span.start:supported.evidence_span.end] == SUPPORT_QUOTE
    batches = result.as_dict()["claims"]["batches"]
    assert batches and all(b["tokens"] <= 200 for b in batches)
