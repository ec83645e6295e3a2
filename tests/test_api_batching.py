"""Concurrent query embeddings share encode() calls and get the vectors they would alone."""

from __future__ import annotations

import threading

import numpy as np

from ragloupe.api.batching import BatchingEmbedder


def test_concurrent_encodes_are_batched_and_match_single_encodes(embedder):
    batching = BatchingEmbedder(embedder)
    texts = [f"capital expenditure on site {n} in the year" for n in range(12)]
    results: dict[int, np.ndarray] = {}
    gate = threading.Barrier(len(texts))

    def ask(n: int) -> None:
        gate.wait()
        results[n] = batching.encode([texts[n]])

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    alone = embedder.encode(texts)
    for n in range(len(texts)):
        assert results[n].shape == (1, alone.shape[1])
        np.testing.assert_allclose(results[n][0], alone[n], atol=1e-5)
    assert batching.batches < len(texts) and batching.largest_batch > 1
    assert batching.model_name == embedder.model_name  # the search cache keys on it
