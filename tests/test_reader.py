"""The +read modes: an LLM reads the question with each first candidate and reorders them.

The HTTP backends are tested against a real local server speaking the
protocols (tests/llm_server.py); the embedded Gemma really runs on CPU.
"""

from __future__ import annotations

import json

import pytest

from llm_server import FakeLlmServer, Reply, chat_reply, prompt_of
from ragloupe.retrieve.reader import blend, embedded_scores, passage_text
from ragloupe.retrieve.search import fetch, replay, search


def _openai_yes_no(yes: bool) -> Reply:
    """A one-token chat completion with the log-probabilities of its alternatives."""
    top = [{"token": "Yes", "logprob": -0.1 if yes else -3.0}, {"token": "No", "logprob": -3.0 if yes else -0.1}]
    first = {"token": top[0 if yes else 1]["token"], "logprob": -0.1, "top_logprobs": top}
    return Reply(json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": first["token"]},
                                          "logprobs": {"content": [first]}}]}).encode())


def test_blend_weight_zero_keeps_the_prior_order_and_one_takes_the_readers():
    prior, read = [0.9, 0.5, 0.1], [-2.0, 0.0, 3.0]
    kept, taken = blend(prior, read, 0.0), blend(prior, read, 1.0)
    assert sorted(range(3), key=lambda i: -kept[i]) == [0, 1, 2]
    assert sorted(range(3), key=lambda i: -taken[i]) == [2, 1, 0]


def test_openai_reader_moves_the_passage_it_says_yes_to_first_and_search_equals_replay(demo_index, workspace_of):
    workspace = workspace_of(demo_index)
    question = "What was the total revenue for the year?"
    plain = search(question, mode="hybrid", k=10, workspace=workspace.with_settings(demo_index))
    third = plain.hits[2].chunk
    marker = passage_text(third, 600)[:120]

    with FakeLlmServer(lambda path, body: _openai_yes_no(marker in prompt_of(body))) as server:
        settings = demo_index.replace(llm_backend="openai", openai_base_url=server.url, openai_model="fake-model",
                                      reader_window=5, reader_weight=1.0)
        read = search(question, mode="hybrid+read", k=10, workspace=workspace.with_settings(settings))
        asked = len(server.requests)
        fetched = fetch(question, "hybrid+read", 10, None, workspace=workspace.with_settings(settings))
        replayed = replay(fetched, settings)

    assert read.hits[0].chunk.chunk_id == third.chunk_id and read.hits[0].rerank_change == 2
    assert read.reranker == "reader:openai:fake-model"
    assert [h.chunk.chunk_id for h in read.hits[5:]] == [h.chunk.chunk_id for h in plain.hits[5:]]
    # Five passages read once; the replay reads the same scores from the cache, asking nothing.
    assert asked == 5 and len(server.requests) == 5
    assert [h.chunk.chunk_id for h in replayed.hits] == [h.chunk.chunk_id for h in read.hits]


def test_a_server_without_logprobs_is_asked_once_for_a_listwise_order(demo_index, workspace_of):
    workspace = workspace_of(demo_index)
    question = "How many staff did the organisation employ?"
    plain = search(question, mode="hybrid", k=10, workspace=workspace.with_settings(demo_index))

    def handler(path, body):
        return chat_reply(path, "3, 1" if "List the numbers" in prompt_of(body) else "Yes")

    with FakeLlmServer(handler) as server:
        settings = demo_index.replace(llm_backend="ollama", ollama_base_url=server.url, ollama_model="fake-model",
                                      reader_window=4, reader_weight=1.0)
        read = search(question, mode="hybrid+read", k=10, workspace=workspace.with_settings(settings))
    # One yes/no request found no log-probabilities; one listwise request ordered the four.
    assert len(server.requests) == 2 and server.requests[0][1]["logprobs"] is True
    assert [h.chunk.chunk_id for h in read.hits[:4]] == [plain.hits[i].chunk.chunk_id for i in (2, 0, 1, 3)]
    assert read.reranker == "reader:ollama:fake-model"


@pytest.mark.embedded_llm
def test_embedded_reader_finds_the_question_likelier_after_the_passage_that_answers_it(settings):
    settings = settings.replace(llm_backend="embedded")
    question = "How many vaccine doses were given in Grampian?"
    answers = embedded_scores(settings, question, "In Grampian 990,238 vaccine doses were given during the year.")
    other = embedded_scores(settings, question, "The capital resource limit was met and property was revalued.")
    assert answers["likelihood"] > other["likelihood"]


def test_an_unreachable_llm_leaves_fusions_order_and_the_ranking_says_why(demo_index, workspace_of):
    workspace = workspace_of(demo_index)
    question = "What was the total revenue for the year?"
    settings = demo_index.replace(llm_backend="ollama", ollama_base_url="http://127.0.0.1:9", llm_timeout_s=2.0)
    plain = search(question, mode="hybrid", k=10, workspace=workspace.with_settings(settings))
    read = search(question, mode="hybrid+read", k=10, workspace=workspace.with_settings(settings))
    assert [h.chunk.chunk_id for h in read.hits] == [h.chunk.chunk_id for h in plain.hits]
    assert read.reranker.startswith("reader:ollama:") and "unavailable" in read.reranker
