"""`ragloupe answer` end to end over the demo index, with the local fake LLM server."""

from __future__ import annotations

import json
import socket

from llm_server import FakeLlmServer, chat_reply
from ragloupe.cli import main

QUESTION = "What was the Core Revenue Resource Limit for 2020/21?"


def use_fake_ollama(monkeypatch, url: str) -> None:
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", url)
    monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")


def test_answer_command_returns_answer_passages_and_screen(demo_env, monkeypatch, capsys):
    with FakeLlmServer(lambda path, body: chat_reply(path, "The limit was £1,278,771 (£000) [1].")) as server:
        use_fake_ollama(monkeypatch, server.url)
        code = main(["answer", QUESTION, "--doc", "Grampian-2020-2021", "--k", "3", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    passages = data["answer"]["passages"]
    assert passages and {p["chunk"]["doc_id"] for p in passages} == {"Grampian-2020-2021"}
    assert data["answer"]["citations"][0]["passage"] == 1
    assert data["screen"]["verdict"] in {"NOT_CONTRADICTED", "MISATTRIBUTED", "UNSUPPORTED", "DERIVED"}
    assert "£1,278,771" in data["screen"]["tokens"][0]["token"]


def test_answer_command_without_llm_prints_one_line_and_what_to_do(demo_env, monkeypatch, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    use_fake_ollama(monkeypatch, f"http://127.0.0.1:{port}")
    code = main(["answer", QUESTION, "--k", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "RAGLOUPE_LLM_BACKEND=embedded" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_answer_command_with_claims_reports_the_score(demo_env, monkeypatch, capsys):
    from llm_server import prompt_of

    def handler(path, request):
        prompt = prompt_of(request)
        if "Claims:" in prompt:
            return chat_reply(path, json.dumps({"results": [
                {"id": 1, "verdict": "supported", "source": 1, "quote": "1,278,771"}]}))
        if "atomic factual claim" in prompt:
            return chat_reply(path, json.dumps({"claims": [
                {"claim": "The limit was £1,278,771 thousand.", "span": "The limit was £1,278,771 (£000)"}]}))
        return chat_reply(path, "The limit was £1,278,771 (£000) [1].")

    with FakeLlmServer(handler) as server:
        use_fake_ollama(monkeypatch, server.url)
        code = main(["answer", QUESTION, "--doc", "Grampian-2020-2021", "--k", "3", "--claims", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["claims"]["counts"]["supported"] == 1
    assert data["claims"]["score"] == 10.0


def test_answer_command_keeps_the_answer_when_claims_reply_is_not_json(demo_env, monkeypatch, capsys):
    with FakeLlmServer(lambda path, body: chat_reply(path, "The limit was £1,278,771 (£000) [1].")) as server:
        use_fake_ollama(monkeypatch, server.url)
        code = main(["answer", QUESTION, "--doc", "Grampian-2020-2021", "--k", "3", "--claims"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("The limit was £1,278,771 (£000) [1].")
    assert "claims: not checked" in out
