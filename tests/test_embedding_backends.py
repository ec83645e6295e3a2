"""Embedding backends that a server runs (issue 23, item 1): Ollama's /api/embed and an
OpenAI-compatible /v1/embeddings, against a real local HTTP server speaking each protocol;
and RAGLOUPE_DEVICE for the bundled model and the cross-encoder (run here on CPU only)."""

from __future__ import annotations

import numpy as np
import pytest
from embedding_server import DIMENSION, embed_reply, word_vector
from llm_server import FakeLlmServer, Reply
from local_servers import free_port, run_bounded
from test_rerank import tiny_cross_encoder  # noqa: F401  (the fixture)

from ragloupe.config import Settings
from ragloupe.devices import DeviceUnavailable, available_devices, resolve_device
from ragloupe.errors import StaleIndex
from ragloupe.index.embedder import get_embedder
from ragloupe.index.pipeline import run_index
from ragloupe.index.remote_embedder import (EmbeddingServerBadOutput, EmbeddingServerUnavailable,
                                            encoder_for)
from ragloupe.retrieve import rerank
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

TEXTS = ["flood defences on the river", "waiting times for planned care", "pump station B",
         "capital spending rose", "the board agreed a plan"]


def server_settings(server, backend: str, **changes) -> Settings:
    return Settings.from_env(embedding_backend=backend, embedding_model="fake-embed",
                             embedding_base_url=server.url, **changes)


@pytest.mark.parametrize("backend, path", [("ollama", "/api/embed"), ("openai", "/v1/embeddings")])
def test_texts_go_in_batches_and_come_back_normalised_in_order(backend, path):
    with FakeLlmServer(embed_reply) as server:
        embedder = get_embedder(server_settings(server, backend, embed_batch_size=2))
        vectors = embedder.encode(TEXTS)
    assert [p for p, _ in server.requests] == [path] * 3  # 5 texts, 2 a request
    assert [r["input"] for _, r in server.requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:]]
    assert all(r["model"] == "fake-embed" for _, r in server.requests)
    expected = np.asarray([word_vector(t) for t in TEXTS])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.shape == (5, DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(vectors, expected, atol=1e-6)
    assert embedder.dimension == DIMENSION


def test_ollama_is_asked_to_truncate_what_its_model_cannot_read():
    with FakeLlmServer(embed_reply) as server:
        get_embedder(server_settings(server, "ollama")).encode(["one text"])
    assert server.requests[0][1]["truncate"] is True


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_a_server_trickling_its_headers_times_out_at_the_deadline(backend):
    def trickled(path, request):
        reply = embed_reply(path, request)
        reply.head_trickle_s = 1.0
        return reply

    with FakeLlmServer(trickled) as server:
        embedder = get_embedder(server_settings(server, backend, embedding_timeout_s=1.5))
        outcome, elapsed = run_bounded(lambda: embedder.encode(["late"]), limit_s=8)
    assert isinstance(outcome.get("error"), EmbeddingServerUnavailable)
    assert "did not answer within 1.5 s" in str(outcome["error"])
    assert "RAGLOUPE_EMBEDDING_TIMEOUT_S" in str(outcome["error"])
    assert elapsed < 4


def test_a_missing_model_is_the_servers_own_words():
    def not_found(path, request):
        return Reply(b'{"error": "model \\"fake-embed\\" not found, try pulling it first"}', status=404)

    with FakeLlmServer(not_found) as server:
        with pytest.raises(EmbeddingServerUnavailable, match="HTTP 404: model .fake-embed. not found"):
            get_embedder(server_settings(server, "ollama")).encode(["x"])


def test_one_vector_short_is_a_bad_reply_not_a_misaligned_index():
    def short(path, request):
        return embed_reply(path, {**request, "input": request["input"][:-1]})

    with FakeLlmServer(short) as server:
        with pytest.raises(EmbeddingServerBadOutput, match="sent 1 embeddings for 2 texts"):
            get_embedder(server_settings(server, "openai")).encode(["a", "b"])


def test_a_closed_port_says_the_server_cannot_be_reached():
    settings = Settings.from_env(embedding_backend="ollama", embedding_model="fake-embed",
                                 embedding_base_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(EmbeddingServerUnavailable, match="cannot reach .* connection refused"):
        get_embedder(settings).encode(["x"])


def test_a_server_backend_needs_the_servers_model_name():
    with pytest.raises(EmbeddingServerUnavailable, match="needs RAGLOUPE_EMBEDDING_MODEL"):
        encoder_for(Settings.from_env(embedding_backend="ollama"))
    with pytest.raises(EmbeddingServerUnavailable, match="OPENAI_BASE_URL"):
        encoder_for(Settings.from_env(embedding_backend="openai", embedding_model="m",
                                      openai_base_url=""))


def test_switching_to_a_server_backend_asks_for_a_rebuild_then_indexes_and_searches(small_corpus):
    run_index([small_corpus], Settings.from_env())
    with FakeLlmServer(embed_reply) as server:
        settings = server_settings(server, "ollama")
        with pytest.raises(StaleIndex, match="--rebuild"):
            run_index([small_corpus], settings)
        summary = run_index([small_corpus], settings, rebuild=True)
        assert summary.errors == [] and summary.chunks > 0
        server.requests.clear()
        ranking = search("waiting times for planned care", mode="dense", k=3, workspace=Workspace.open(settings))
    assert [path for path, _ in server.requests] == ["/api/embed"]  # the question, embedded there
    assert ranking.hits and "waiting times" in ranking.hits[0].chunk.text


def test_auto_is_the_best_device_torch_has_and_the_cpu_is_always_one():
    assert available_devices()[-1] == "cpu"
    assert resolve_device("auto") == available_devices()[0]
    assert resolve_device("cpu") == "cpu"


def test_a_device_torch_cannot_use_is_a_named_error():
    if "cuda" in available_devices():
        assert resolve_device("cuda") == "cuda"
    else:
        with pytest.raises(DeviceUnavailable, match="RAGLOUPE_DEVICE=cuda, but torch .* cannot use cuda"):
            resolve_device("cuda")


def test_bundled_model_loads_on_the_device_asked_for():
    embedder = get_embedder(Settings.from_env(device="cpu", embedding_backend="torch"))
    assert embedder.model.device.type == "cpu"
    auto = get_embedder(Settings.from_env(device="auto", embedding_backend="torch"))
    assert auto.model.device.type == resolve_device("auto")


def test_cross_encoder_loads_on_the_device_asked_for(tiny_cross_encoder):  # noqa: F811
    model = rerank.get_cross_encoder(tiny_cross_encoder, "cpu")
    assert model.model.device.type == "cpu"
    assert rerank.get_cross_encoder(tiny_cross_encoder, "auto").model.device.type == resolve_device("auto")
