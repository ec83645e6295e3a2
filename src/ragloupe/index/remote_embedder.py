"""Embeddings from a server: Ollama's /api/embed, or any OpenAI-compatible /v1/embeddings.

RAGLOUPE_EMBEDDING_BACKEND=ollama or openai sends chunk and question texts to
the server the user configured, RAGLOUPE_EMBEDDING_MODEL naming the server's
model ("mxbai-embed-large", "text-embedding-3-small"). Texts go in batches of
``embed_batch_size``, each request under one deadline of
``embedding_timeout_s`` (the LLM clients' rule, ragloupe.httpjson): a server
that stalls or trickles costs a one-line error, never a hang. Vectors are
checked (one per text, one dimension, finite numbers) and L2-normalised, so
they sit in Chroma like the bundled model's.

Chunking still counts tokens with the bundled model's tokenizer, a stand-in
for the server model's own (which ragloupe cannot see): chunks are capped at
``MAX_TOKENS`` of its tokens, and the server truncates what its model cannot
read (Ollama is asked to, with ``truncate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ragloupe.config import BUNDLED_MODEL, TUNED_MODEL, Settings
from ragloupe.errors import EmbeddingServerBadOutput, EmbeddingServerUnavailable
from ragloupe.httpjson import Service, request_json, snippet

BACKENDS = ("ollama", "openai")
MAX_TOKENS = 512  # mxbai-embed-large, bge and e5 models read 512; larger chunks would be cut
_PROBE_TIMEOUT_S = 5.0


@dataclass
class RemoteEncoder:
    """One embedding server and model; ``encode`` has the Embedder's contract."""

    backend: str  # ollama | openai
    model: str
    base_url: str  # Ollama's root, or the OpenAI-compatible root ending in /v1
    timeout_s: float
    api_key: str = ""
    known_dimension: int | None = field(default=None, repr=False)

    @property
    def service(self) -> Service:
        who = "the Ollama embedding server" if self.backend == "ollama" \
            else "the OpenAI-compatible embedding server"
        return Service(who, EmbeddingServerUnavailable, EmbeddingServerBadOutput,
                       timeout_hint="raise RAGLOUPE_EMBEDDING_TIMEOUT_S or send smaller batches "
                                    "(RAGLOUPE_EMBED_BATCH_SIZE)",
                       key_hint="RAGLOUPE_EMBEDDING_API_KEY or OPENAI_API_KEY",
                       kind="an embedding server")

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/api/embed" if self.backend == "ollama" else f"{self.base_url}/embeddings"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text, one request per batch."""
        rows = [self._embed_batch(list(texts[start:start + batch_size]))
                for start in range(0, len(texts), max(batch_size, 1))]
        if not rows:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        vectors = np.concatenate(rows)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def dimension(self) -> int:
        """The model's vector size, asked of the server once (one short text) when not yet seen."""
        if self.known_dimension is None:
            self._embed_batch(["dimension"])
        return int(self.known_dimension)

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        if self.backend == "ollama":
            payload = {"model": self.model, "input": batch, "truncate": True}
        else:
            payload = {"model": self.model, "input": batch, "encoding_format": "float"}
        data = request_json("POST", self.endpoint, payload, self.timeout_s, self.service,
                            headers=self._headers())
        if data.get("error"):
            error = data["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise EmbeddingServerUnavailable(f"{self.service.who}: {snippet(message)}")
        vectors = self._vectors(data)
        return self._checked(vectors, len(batch))

    def _vectors(self, data: dict) -> list:
        """The reply's vectors in input order (OpenAI's carry an index each)."""
        if self.backend == "ollama":
            vectors = data.get("embeddings")
        else:
            items = data.get("data")
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                vectors = None
            else:
                vectors = [i.get("embedding") for i in sorted(items, key=lambda i: i.get("index", 0))]
        if not isinstance(vectors, list):
            raise EmbeddingServerBadOutput(f"{self.service.who} sent a reply without embeddings: "
                                           f"{snippet(str(data))}")
        return vectors

    def _checked(self, vectors: list, expected: int) -> np.ndarray:
        who = self.service.who
        if len(vectors) != expected:
            raise EmbeddingServerBadOutput(f"{who} sent {len(vectors)} embeddings for {expected} texts")
        sizes = {len(v) if isinstance(v, list) else -1 for v in vectors}
        if len(sizes) != 1 or min(sizes) <= 0:
            raise EmbeddingServerBadOutput(f"{who} sent embeddings of differing or no size")
        (size,) = sizes
        if self.known_dimension is not None and size != self.known_dimension:
            raise EmbeddingServerBadOutput(f"{who} sent {size}-dimensional embeddings after "
                                           f"{self.known_dimension}-dimensional ones")
        try:
            array = np.asarray(vectors, dtype=np.float64)
        except (TypeError, ValueError):
            raise EmbeddingServerBadOutput(f"{who} sent embeddings that are not numbers") from None
        if not np.isfinite(array).all():
            raise EmbeddingServerBadOutput(f"{who} sent embeddings with NaN or infinite values")
        self.known_dimension = size
        return array.astype(np.float32)

    def available(self) -> tuple[bool, str]:
        """(True, what serves) when the server answers an embedding request for the model."""
        probe = RemoteEncoder(self.backend, self.model, self.base_url,
                              min(self.timeout_s, _PROBE_TIMEOUT_S), self.api_key)
        try:
            size = probe.dimension()
        except (EmbeddingServerUnavailable, EmbeddingServerBadOutput) as exc:
            return False, str(exc)
        return True, f"{self.endpoint} embeds with {self.model} ({size} dimensions)"


def encoder_for(settings: Settings) -> RemoteEncoder:
    """The server encoder the settings name; a setting that cannot work is a named error."""
    backend = settings.embedding_backend
    if settings.embedding_model in (BUNDLED_MODEL, TUNED_MODEL) or not settings.embedding_model.strip():
        raise EmbeddingServerUnavailable(
            f"RAGLOUPE_EMBEDDING_BACKEND={backend} needs RAGLOUPE_EMBEDDING_MODEL set to a model the "
            "server serves (e.g. mxbai-embed-large)")
    if backend == "ollama":
        base = (settings.embedding_base_url or settings.ollama_base_url).rstrip("/")
        return RemoteEncoder("ollama", settings.embedding_model, base, settings.embedding_timeout_s)
    base = (settings.embedding_base_url or settings.openai_base_url).rstrip("/")
    if not base:
        raise EmbeddingServerUnavailable(
            "RAGLOUPE_EMBEDDING_BACKEND=openai needs RAGLOUPE_EMBEDDING_BASE_URL or OPENAI_BASE_URL "
            "(e.g. http://127.0.0.1:8080/v1)")
    base = base if base.endswith("/v1") else f"{base}/v1"
    return RemoteEncoder("openai", settings.embedding_model, base, settings.embedding_timeout_s,
                         api_key=settings.embedding_api_key or settings.openai_api_key)
