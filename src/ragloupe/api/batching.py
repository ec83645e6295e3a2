"""Query embeddings for concurrent requests, computed together.

A server answering many searches at once spends most of each one embedding
a short query, and a transformer encodes sixteen short texts in little more
time than one. BatchingEmbedder hands the model every query that arrived
while it was busy, in one encode() call: the first request to find the
model free encodes its own batch; requests arriving meanwhile queue, and
when it is done, the oldest of them leads the next batch with all of them.
No request waits on a timer, so a lone request pays nothing extra. The
vectors are those of one-at-a-time encoding up to float rounding (padding
is masked out; the last digits of a float32 may differ).

It stands in for an index.embedder.Embedder wherever search() takes one.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

MAX_BATCH = 64  # texts per encode() call


class _Request:
    def __init__(self, texts: Sequence[str]):
        self.texts = list(texts)
        self.done = threading.Event()
        self.lead = False  # set instead of a result: this request runs the next batch
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None


class BatchingEmbedder:
    def __init__(self, embedder: Any, max_batch: int = MAX_BATCH):
        self.inner = embedder
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Request] = []
        self._busy = False
        self.batches = 0  # encode() calls made, for the metrics and the tests
        self.largest_batch = 0

    def __getattr__(self, name: str) -> Any:  # model_name, tokenizer, dimension ...
        return getattr(self.inner, name)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        request = _Request(texts)
        with self._lock:
            self._queue.append(request)
            lead = not self._busy
            self._busy = True
        if not lead:
            request.done.wait()
            if not request.lead:
                return self._result(request)
        self._run_batch()
        return self._result(request)

    def _run_batch(self) -> None:
        """Encode what is queued (this request's batch), then pass the lead on or free the model."""
        with self._lock:
            batch, taken = [], 0
            while self._queue and (not batch or taken + len(self._queue[0].texts) <= self.max_batch):
                taken += len(self._queue[0].texts)
                batch.append(self._queue.pop(0))
        try:
            vectors = self.inner.encode([t for r in batch for t in r.texts])
            start = 0
            for r in batch:
                r.vectors = vectors[start:start + len(r.texts)]
                start += len(r.texts)
        except BaseException as exc:  # every waiter gets the error, not a hang
            for r in batch:
                r.error = exc
        with self._lock:
            self.batches += 1
            self.largest_batch = max(self.largest_batch, len(batch))
            if self._queue:
                successor = self._queue[0]
                successor.lead = True
                successor.done.set()
            else:
                self._busy = False
        for r in batch:
            r.lead = False
            r.done.set()

    @staticmethod
    def _result(request: _Request) -> np.ndarray:
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors
