"""No LLM call outlives its timeout, however slowly the server answers (issue 12, item 1).

A real local HTTP server sends its status line and headers one byte at a
time: each byte arrives well within a socket timeout, so only a deadline
over the whole request (connect, headers and body) ends the wait.
"""

from __future__ import annotations


import pytest

from llm_server import FakeLlmServer, Reply, chat_reply
from local_servers import run_bounded
from ragloupe.cli import main
from ragloupe.config import Settings
from ragloupe.errors import LlmUnavailable
from ragloupe.generate.llm import get_client
from ragloupe.retrieve.rewrite import rewrite_query


def trickled_head(path: str, body: dict) -> Reply:
    reply = chat_reply(path, "late")
    reply.head_trickle_s = 1.0
    return reply



@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_headers_trickled_a_byte_a_second_time_out_at_the_deadline(backend):
    with FakeLlmServer(trickled_head) as server:
        settings = Settings.from_env(llm_backend=backend, ollama_base_url=server.url,
                                     openai_base_url=server.url, ollama_model="fake-model",
                                     openai_model="fake-model", llm_timeout_s=2.0)
        # The trickled headers alone take 90 s: ending well before that is the deadline's doing,
        # and the message says which deadline it was. The limit is generous (no timing assert).
        outcome, _ = run_bounded(lambda: get_client(settings).generate("q"), limit_s=45)

    assert isinstance(outcome.get("error"), LlmUnavailable)
    assert "did not answer within 2 s" in str(outcome["error"])


def test_query_rewrite_falls_back_at_its_own_timeout_when_headers_trickle():
    with FakeLlmServer(trickled_head) as server:
        settings = Settings.from_env(llm_backend="ollama", ollama_base_url=server.url,
                                     ollama_model="fake-model", rewrite_timeout_s=1.0)
        outcome, _ = run_bounded(lambda: rewrite_query("flood defence budget", settings),
                                 limit_s=45)  # generous: the trickled headers alone take 90 s

    rewrite = outcome["result"]
    assert not rewrite.used and "did not answer within 1 s" in rewrite.not_used_because


def test_answer_command_gives_up_at_the_llm_timeout(demo_env, monkeypatch, capsys):
    with FakeLlmServer(trickled_head) as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
        monkeypatch.setenv("RAGLOUPE_LLM_TIMEOUT_S", "2")
        outcome, _ = run_bounded(lambda: main(["answer", "What was the revenue limit?", "--k", "2"]),
                                 limit_s=60)  # retrieval first; the trickled headers alone take 90 s

    err = capsys.readouterr().err
    assert outcome.get("result") == 2
    assert "did not answer within 2 s" in err and "Traceback" not in err
