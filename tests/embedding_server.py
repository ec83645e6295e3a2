"""Embedding replies in Ollama's (/api/embed) and OpenAI's (/v1/embeddings) protocols, for
tests/llm_server.FakeLlmServer: the real local HTTP server that stands in for a remote model.

The vectors are a bag of hashed words (``DIMENSION`` buckets), so texts that share words
are near each other and a dense search over them finds the chunk a question's words are in.
"""

from __future__ import annotations

import hashlib
import json
import re

from llm_server import Reply

DIMENSION = 64


def word_vector(text: str) -> list[float]:
    vector = [0.0] * DIMENSION
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSION] += 1.0
    vector[0] += 0.01  # never the zero vector
    return vector


def embed_reply(path: str, request: dict) -> Reply:
    """The reply to an embedding request, in the protocol its path belongs to."""
    texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
    vectors = [word_vector(t) for t in texts]
    if path.endswith("/api/embed"):
        return Reply(json.dumps({"model": request["model"], "embeddings": vectors}).encode())
    # OpenAI's items carry their index; sent in reverse so a client must put them in order.
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return Reply(json.dumps({"object": "list", "model": request["model"], "data": data[::-1],
                             "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode())
