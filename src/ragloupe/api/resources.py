"""What the endpoints share for the life of one server: settings, metrics, the open
index, the embedder, the gold sets and the indexing jobs."""

from __future__ import annotations

import threading
from typing import Any

from ragloupe.api.metrics import Metrics
from ragloupe.config import Settings
from ragloupe.errors import RagloupeError


class Resources:
    """Opened lazily, once: the first search loads the model, later ones reuse it."""

    def __init__(self, settings: Settings):
        from ragloupe.api.indexing import IndexJobs

        self.settings = settings
        self.metrics = Metrics()
        self.jobs = IndexJobs(settings)
        self._lock = threading.Lock()
        self._store: Any = None
        self._embedder: Any = None
        self._goldsets: tuple[list, list[str]] | None = None

    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                from ragloupe.index.store import open_store

                self._store = open_store(self.settings)
            return self._store

    def embedder(self) -> Any:
        """The model, behind a BatchingEmbedder: concurrent searches share encode() calls."""
        with self._lock:
            if self._embedder is None:
                from ragloupe.api.batching import BatchingEmbedder
                from ragloupe.index.embedder import get_embedder

                self._embedder = BatchingEmbedder(get_embedder(self.settings))
            return self._embedder

    def batching_stats(self) -> list[tuple[str, str, int]]:
        """How the query encoder batched concurrent searches: (metric name, type, value)."""
        if self._embedder is None:
            return []
        return [("ragloupe_query_embedding_batches_total", "counter", self._embedder.batches),
                ("ragloupe_query_embedding_largest_batch", "gauge", self._embedder.largest_batch)]

    def manifest(self) -> Any:
        """Read fresh on every call: an indexing job may have changed it."""
        from ragloupe.index.manifest import Manifest

        return Manifest.load(self.settings)

    def goldsets(self) -> tuple[list, list[str]]:
        """The gold sets under benchmarks_dir, and the files that could not be read."""
        with self._lock:
            if self._goldsets is None:
                from ragloupe.diagnostics.gold import find_goldsets, load_goldsets

                self._goldsets = load_goldsets(find_goldsets(self.settings))
            return self._goldsets

    def warm_up(self) -> None:
        """Load what the first search needs; an empty or broken index is reported when searched."""
        from ragloupe.retrieve.search import search

        try:
            if self.store().count() == 0:
                return
            search("warm up", k=1, settings=self.settings, explain=True, store=self.store(),
                   embedder=self.embedder())
        except Exception as exc:  # nothing to warm is not an error worth stopping the server for
            from ragloupe.logs import log_exception

            if not isinstance(exc, RagloupeError):
                log_exception(exc, self.settings)
