"""The Ollama and OpenAI-compatible clients against a real local HTTP server."""

from __future__ import annotations

import socket
import time

import pytest

from llm_server import FakeLlmServer, Reply, ollama_chat, openai_chat
from local_servers import free_port
from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable, SettingsInvalid
from ragloupe.generate.llm import get_client


def settings_for(url: str, backend: str, **extra) -> Settings:
    values = dict(llm_backend=backend, ollama_base_url=url, ollama_model="fake-model",
                  openai_base_url=url, openai_model="fake-model", openai_api_key="sk-test",
                  llm_timeout_s=1.0)
    return Settings.from_env(**{**values, **extra})


@pytest.fixture(params=["ollama", "openai"])
def backend(request) -> str:
    return request.param


def test_ollama_client_returns_message_and_sends_deterministic_options():
    with FakeLlmServer(lambda path, body: ollama_chat("  The limit was £1m [1].  ")) as server:
        client = get_client(settings_for(server.url, "ollama", llm_seed=7, llm_max_tokens=99))
        text = client.generate("question", system="rules")
    assert text == "The limit was £1m [1]."
    path, request = server.requests[0]
    assert path == "/api/chat"
    assert request["stream"] is False
    assert request["think"] is False
    assert request["options"] == {"temperature": 0, "seed": 7, "num_predict": 99}
    assert [m["role"] for m in request["messages"]] == ["system", "user"]


def test_openai_client_posts_chat_completions_with_key_and_seed():
    with FakeLlmServer(lambda path, body: openai_chat("Answer [1]")) as server:
        client = get_client(settings_for(server.url, "openai", llm_seed=3))
        assert client.generate("q") == "Answer [1]"
    path, request = server.requests[0]
    assert path == "/v1/chat/completions"
    assert request["temperature"] == 0 and request["seed"] == 3
    assert request["model"] == "fake-model"


def test_openai_base_url_with_v1_is_not_doubled():
    with FakeLlmServer(lambda path, body: openai_chat("fine")) as server:
        client = get_client(settings_for(server.url + "/v1/", "openai"))
        client.generate("q")
    assert server.requests[0][0] == "/v1/chat/completions"


def test_slow_server_times_out_with_clear_message(backend):
    slow = Reply(ollama_chat("late").body, delay_s=3.0)
    with FakeLlmServer(lambda path, body: slow) as server:
        client = get_client(settings_for(server.url, backend, llm_timeout_s=0.5))
        started = time.monotonic()
        with pytest.raises(LlmUnavailable, match="did not answer within 0.5 s"):
            client.generate("q")
    assert time.monotonic() - started < 2.5


def test_trickling_reply_cannot_outlast_the_deadline(backend):
    body = (openai_chat if backend == "openai" else ollama_chat)("x" * 200).body
    with FakeLlmServer(lambda path, req: Reply(body, trickle_s=0.05)) as server:
        client = get_client(settings_for(server.url, backend, llm_timeout_s=0.5))
        started = time.monotonic()
        with pytest.raises(LlmUnavailable, match="did not answer within"):
            client.generate("q")
    assert time.monotonic() - started < 2.5


def test_empty_answer_is_bad_output(backend):
    make = openai_chat if backend == "openai" else ollama_chat
    with FakeLlmServer(lambda path, body: make("   \n")) as server:
        with pytest.raises(LlmBadOutput, match="empty answer"):
            get_client(settings_for(server.url, backend)).generate("q")


def test_non_json_reply_is_bad_output(backend):
    with FakeLlmServer(lambda path, body: Reply(b"<html>proxy error</html>")) as server:
        with pytest.raises(LlmBadOutput, match="not JSON: <html>proxy error"):
            get_client(settings_for(server.url, backend)).generate("q")


def test_json_without_message_is_bad_output(backend):
    with FakeLlmServer(lambda path, body: Reply(b'{"done": true, "choices": []}')) as server:
        with pytest.raises(LlmBadOutput):
            get_client(settings_for(server.url, backend)).generate("q")


def test_http_error_names_status_and_server_reason(backend):
    error = Reply(b'{"error": "model \'fake-model\' not found, try pulling it first"}', status=404)
    with FakeLlmServer(lambda path, body: error) as server:
        with pytest.raises(LlmUnavailable, match="HTTP 404: model 'fake-model' not found"):
            get_client(settings_for(server.url, backend)).generate("q")


def test_rejected_api_key_says_which_setting_to_check():
    with FakeLlmServer(lambda path, body: Reply(b'{"error": {"message": "bad key"}}', status=401)) as server:
        with pytest.raises(LlmUnavailable, match="OPENAI_API_KEY"):
            get_client(settings_for(server.url, "openai")).generate("q")


def test_unreachable_port_is_unavailable_not_a_hang(backend):
    url = f"http://127.0.0.1:{free_port()}"
    client = get_client(settings_for(url, backend))
    with pytest.raises(LlmUnavailable, match="cannot reach .*connection refused"):
        client.generate("q")
    ok, reason = client.available()
    assert not ok and "connection refused" in reason


def test_ollama_available_checks_the_model_is_pulled():
    with FakeLlmServer(models=("llama3.2",)) as server:
        settings = settings_for(server.url, "ollama")
        assert get_client(settings.replace(ollama_model="llama3.2")).available()[0]
        ok, reason = get_client(settings.replace(ollama_model="qwen3")).available()
    assert not ok and "ollama pull qwen3" in reason


def test_openai_without_base_url_says_what_to_set():
    client = get_client(Settings.from_env(llm_backend="openai", openai_base_url="", openai_model="m"))
    ok, reason = client.available()
    assert not ok and "OPENAI_BASE_URL" in reason
    with pytest.raises(LlmUnavailable, match="OPENAI_BASE_URL"):
        client.generate("q")


def test_backend_none_explains_how_to_get_an_llm():
    client = get_client(Settings.from_env(llm_backend="none"))
    assert client.available()[0] is False
    with pytest.raises(LlmUnavailable, match="RAGLOUPE_LLM_BACKEND=embedded"):
        client.generate("q")


def test_unknown_backend_is_refused_with_the_choices():
    # Settings are validated when they are read, so the client is never asked for.
    with pytest.raises(SettingsInvalid, match="ollama, openai, embedded, none"):
        get_client(Settings.from_env(llm_backend="gpt"))


def test_per_call_timeout_overrides_the_setting():
    slow = Reply(ollama_chat("late").body, delay_s=1.5)
    with FakeLlmServer(lambda path, body: slow) as server:
        client = get_client(settings_for(server.url, "ollama", llm_timeout_s=10))
        with pytest.raises(LlmUnavailable, match="within 0.3 s"):
            client.generate("q", timeout_s=0.3)


def test_port_that_does_not_speak_http_is_bad_output(backend):
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer_garbage():
        connection, _ = listener.accept()
        connection.recv(65536)
        connection.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        connection.close()

    thread = threading.Thread(target=answer_garbage, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with pytest.raises(LlmBadOutput, match="not valid HTTP"):
            get_client(settings_for(url, backend)).generate("q")
    finally:
        thread.join(timeout=2)
        listener.close()
