"""answer(): context budget, prompt order, citations, refusals, and no LLM at all.

The ranking is built from real corpus pages (no index needed); the LLM is the
local fake server of llm_server.py; token counting uses the real bundled
embedding tokenizer.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from llm_server import FakeLlmServer, chat_reply, prompt_of
from ragloupe.errors import LlmUnavailable
from ragloupe.generate.answer import (CONSTRAINED, GENERATED, answer, confident_choice,
                                      context_token_counter, select_context, with_citation)
from ragloupe.generate.groundedness import screen_answer
from ragloupe.generate.llm import LlmClient
from ragloupe.generate.prompt import NOT_IN_CONTEXT
from ragloupe.models import Chunk, Hit, Ranking

BENCH = Path(__file__).resolve().parents[1] / "data" / "benchmarks"
QUESTION = "What was the Core Revenue Resource Limit for 2020/21?"


def page_chunk(page: int, doc: str = "Grampian-2020-2021", limit: int = 1200) -> Chunk:
    with open(BENCH / "grampian" / "pages" / f"{doc}.jsonl", encoding="utf-8") as lines:
        text = next(json.loads(l)["text"] for l in lines if json.loads(l)["page"] == page)
    return Chunk(chunk_id=f"{doc}-{page}-0", doc_id=doc, page=page, position=0, text=text[:limit],
                 n_tokens=0, quality="clean")


def record_chunk() -> Chunk:
    return Chunk(chunk_id="guidance-4.3", doc_id="guidance", page=9, position=0,
                 text="Lightning strikes have caused over 90% of all tank fires.", n_tokens=0,
                 quality="clean", record_id="4.3", title="Lightning")


def ranking_of(*chunks: Chunk) -> Ranking:
    hits = tuple(Hit(chunk=c, rank=i, score=1.0 / i) for i, c in enumerate(chunks, start=1))
    return Ranking(query=QUESTION, mode="hybrid", hits=hits)


@pytest.fixture(scope="module")
def count_tokens(embedder):
    from ragloupe.config import Settings

    return context_token_counter(Settings.from_env())


def llm_settings(settings, url: str, **extra):
    return settings.replace(llm_backend="ollama", ollama_base_url=url, ollama_model="fake-model",
                            llm_timeout_s=5, **extra)


def test_answer_maps_numbered_citations_to_units(settings, count_tokens):
    reply = "The Core Revenue Resource Limit was £1,278,771 (£000) [1]. Lightning: 90% [2]."
    with FakeLlmServer(lambda path, body: chat_reply(path, reply)) as server:
        result = answer(QUESTION, ranking_of(page_chunk(28), record_chunk()),
                        llm_settings(settings, server.url), count_tokens=count_tokens)
    assert result.text == reply
    assert result.cited_units == ("Grampian-2020-2021#p28", "guidance#4.3")
    assert [p.label for p in result.passages] == ["Grampian-2020-2021, page 28",
                                                  "guidance, record 4.3: Lightning"]
    assert result.model == "ollama:fake-model" and not result.not_in_context
    assert set(result.timings) >= {"context", "generate"}


def test_prompt_puts_documents_before_the_question(settings, count_tokens):
    with FakeLlmServer(lambda path, body: chat_reply(path, "x [1]")) as server:
        answer(QUESTION, ranking_of(page_chunk(28)), llm_settings(settings, server.url),
               count_tokens=count_tokens)
    request = server.requests[0][1]
    user = request["messages"][-1]["content"]
    assert user.index("[1] Grampian-2020-2021, page 28") < user.index(QUESTION)
    assert "do not contain the answer" in request["messages"][0]["content"]


def test_chunks_over_budget_are_cut_and_listed(count_tokens):
    long, short = page_chunk(28, limit=3000), page_chunk(29, limit=200)
    small = count_tokens(short.text) + 40
    kept, cut = select_context(ranking_of(short, long, page_chunk(30, limit=150)).hits,
                               budget_tokens=2 * small, count_tokens=count_tokens)
    assert [p.chunk.page for p in kept] == [29, 30]  # the long rank-2 chunk does not starve rank 3
    assert [c.unit for c in cut] == ["Grampian-2020-2021#p28"]
    assert "over the context budget" in cut[0].reason
    assert [p.number for p in kept] == [1, 2]


def test_budget_counts_real_tokens_of_each_passage(count_tokens):
    chunk = page_chunk(28, limit=400)
    kept, _ = select_context(ranking_of(chunk).hits, budget_tokens=10_000, count_tokens=count_tokens)
    assert kept[0].n_tokens > count_tokens(chunk.text)  # the label line is counted too


def test_top_hit_is_kept_even_alone_over_budget(count_tokens):
    kept, cut = select_context(ranking_of(page_chunk(28), page_chunk(29)).hits, budget_tokens=5,
                               count_tokens=count_tokens)
    assert [p.chunk.page for p in kept] == [28] and len(cut) == 1


def test_refusal_sets_not_in_context(settings, count_tokens):
    with FakeLlmServer(lambda path, body: chat_reply(path, NOT_IN_CONTEXT)) as server:
        result = answer("Who won the 1966 World Cup?", ranking_of(page_chunk(28)),
                        llm_settings(settings, server.url), count_tokens=count_tokens)
    assert result.not_in_context and result.citations == ()


def test_citation_beyond_the_passages_is_reported_unresolved(settings, count_tokens):
    with FakeLlmServer(lambda path, body: chat_reply(path, "It was £1,278,771 [4].")) as server:
        result = answer(QUESTION, ranking_of(page_chunk(28)), llm_settings(settings, server.url),
                        count_tokens=count_tokens)
    assert [c.raw for c in result.unresolved_citations] == ["[4]"]
    assert result.cited_units == ()


def test_written_out_page_reference_is_parsed(settings, count_tokens):
    reply = "The limit was £1,278,771 (Grampian-2020-2021, page 28); see also Grampian-2020-2021 p. 29."
    with FakeLlmServer(lambda path, body: chat_reply(path, reply)) as server:
        result = answer(QUESTION, ranking_of(page_chunk(28), page_chunk(29)),
                        llm_settings(settings, server.url), count_tokens=count_tokens)
    assert result.cited_units == ("Grampian-2020-2021#p28", "Grampian-2020-2021#p29")
    assert [c.passage for c in result.citations] == [1, 2]


def test_no_reachable_llm_raises_with_what_to_do(settings, count_tokens):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(LlmUnavailable, match="RAGLOUPE_LLM_BACKEND=embedded"):
        answer(QUESTION, ranking_of(page_chunk(28)), llm_settings(settings, f"http://127.0.0.1:{port}"),
               count_tokens=count_tokens)


def test_empty_ranking_answers_without_asking_the_model(settings, count_tokens):
    with FakeLlmServer() as server:
        result = answer(QUESTION, ranking_of(), llm_settings(settings, server.url), count_tokens=count_tokens)
    assert result.not_in_context and server.requests == []


def test_answer_is_json_ready(settings, count_tokens):
    with FakeLlmServer(lambda path, body: chat_reply(path, "£1,278,771 [1]")) as server:
        result = answer(QUESTION, ranking_of(page_chunk(28)), llm_settings(settings, server.url),
                        count_tokens=count_tokens)
    data = json.loads(json.dumps(result.as_dict()))
    assert data["passages"][0]["chunk"]["page"] == 28
    assert data["citations"][0]["unit"] == "Grampian-2020-2021#p28"
    assert prompt_of(server.requests[0][1]).count("[1] Grampian-2020-2021, page 28") == 1


def test_citation_evidence_highlights_the_backing_text(settings, count_tokens):
    from ragloupe.generate.evidence import citation_evidence

    reply = ("The Board is reporting an underspend of £0.769m against a breakeven target [1]. "
             "Also £1m [1].")
    with FakeLlmServer(lambda path, body: chat_reply(path, reply)) as server:
        result = answer(QUESTION, ranking_of(page_chunk(28, limit=3000)), llm_settings(settings, server.url),
                        count_tokens=count_tokens)
    first, second = citation_evidence(result)
    text = result.passages[0].chunk.text
    assert first.span.method == "fuzzy"
    assert text[first.span.start:first.span.end].startswith("The Board is reporting an underspend of £0.769m")
    assert second.span.method == "token" and text[second.span.start:second.span.end] == "£1m"


def test_a_sentence_with_a_figure_in_no_passage_gets_no_evidence_span(settings, count_tokens):
    from ragloupe.generate.evidence import citation_evidence

    reply = "The Board is reporting an underspend of £9,876,543 against a breakeven target [1]."
    with FakeLlmServer(lambda path, body: chat_reply(path, reply)) as server:
        result = answer(QUESTION, ranking_of(page_chunk(28, limit=3000)), llm_settings(settings, server.url),
                        count_tokens=count_tokens)
    (only,) = citation_evidence(result)
    # The words are the passage's ("evidence located (fuzzy)" before), the figure is nowhere.
    assert only.verdict == "UNSUPPORTED" and only.span is None
    assert only.finding == "£9,876,543 is in none of the passages: nothing in this passage is marked as evidence"


class ChoosingClient(LlmClient):
    """A client that answers ``reply`` and, like the embedded one, scores options (with fixed scores)."""

    backend, model = "fake", "chooser"

    def __init__(self, settings, reply: str, scores: list[float]):
        super().__init__(settings)
        self.reply, self.scores, self.asked = reply, scores, []

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        return self.reply

    def choose(self, prompt, options, system=None):
        self.asked.append((prompt, options))
        return max(range(len(self.scores)), key=self.scores.__getitem__), self.scores

    def available(self):
        return True, "fake"


def words(text: str) -> int:
    return len(text.split())


def test_uncited_answer_gets_the_passage_chosen_by_constrained_decoding(settings):
    client = ChoosingClient(settings, "The limit was £1,278,771.", scores=[-3.0, -0.5])
    result = answer(QUESTION, ranking_of(page_chunk(28), page_chunk(29)), settings, client=client,
                    count_tokens=words)
    prompt, options = client.asked[0]
    assert options == ["1]", "2]"]
    assert prompt.endswith("Answer: The limit was £1,278,771.\nThis answer is supported by passage [")
    assert result.text == "The limit was £1,278,771. [2]"
    assert result.cited_units == ("Grampian-2020-2021#p29",)
    assert result.citation_method == CONSTRAINED and result.support_scores == (-3.0, -0.5)
    assert [c.picked for c in result.citations] == [True]


def test_picked_citation_never_changes_the_screen_verdict(settings):
    # The figure is on page 28, passage [1]; the model cited nothing. Had the picked "[1]" counted,
    # the screen would say NOT_CONTRADICTED; as a guess it leaves the figure uncited: MISATTRIBUTED.
    client = ChoosingClient(settings, "The limit was £1,278,771.", scores=[-0.5, -3.0])
    result = answer(QUESTION, ranking_of(page_chunk(28), page_chunk(29)), settings, client=client,
                    count_tokens=words)
    assert result.text.endswith("[1]") and result.citation_method == CONSTRAINED
    checked = screen_answer(result)
    assert checked.verdict == "MISATTRIBUTED"
    assert checked.tokens[0].cited == () and checked.tokens[0].found_in == (1,)


def test_one_passage_is_never_picked_there_is_nothing_to_compare(settings):
    client = ChoosingClient(settings, "The limit was £1,278,771.", scores=[-0.1])
    result = answer(QUESTION, ranking_of(page_chunk(28)), settings, client=client, count_tokens=words)
    assert client.asked == [] and result.citations == () and result.citation_method == ""
    assert screen_answer(result).verdict == "MISATTRIBUTED"


def test_answer_citing_itself_is_not_given_a_chosen_citation(settings):
    client = ChoosingClient(settings, "The limit was £1,278,771 [1].", scores=[-3.0, -0.5])
    result = answer(QUESTION, ranking_of(page_chunk(28), page_chunk(29)), settings, client=client,
                    count_tokens=words)
    assert client.asked == [] and result.citation_method == GENERATED
    assert result.cited_units == ("Grampian-2020-2021#p28",)


def test_near_tie_between_passages_cites_nothing(settings):
    client = ChoosingClient(settings, "The limit was £1,278,771.", scores=[-1.0, -1.05])
    result = answer(QUESTION, ranking_of(page_chunk(28), page_chunk(29)), settings, client=client,
                    count_tokens=words)
    assert result.citations == () and result.citation_method == ""
    assert result.support_scores == (-1.0, -1.05)


def test_refusal_is_not_given_a_chosen_citation(settings):
    client = ChoosingClient(settings, NOT_IN_CONTEXT, scores=[-0.1])
    result = answer(QUESTION, ranking_of(page_chunk(28)), settings, client=client, count_tokens=words)
    assert client.asked == [] and result.citations == ()


def test_confident_choice_needs_a_margin_over_the_runner_up():
    assert confident_choice([-2.0, -0.5, -1.0], margin=0.1) == 1
    assert confident_choice([-1.0, -1.05], margin=0.1) is None
    assert confident_choice([-4.0], margin=0.1) is None
    assert confident_choice([], margin=0.1) is None


def test_chosen_citation_is_appended_to_the_last_sentence():
    assert with_citation("It was £1m. ", 2) == "It was £1m. [2]"
