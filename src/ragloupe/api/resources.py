"""What the endpoints share for the life of one server: settings, metrics, the workspace
(the open index, the embedder and what is built from the index), the gold sets and the
indexing jobs."""

from __future__ import annotations

import threading
from typing import Any

from ragloupe.api.metrics import Metrics
from ragloupe.config import Settings
from ragloupe.errors import RagloupeError


WARM_UP_WAIT_S = 300.0  # a search waits at most this long for the warm-up, then goes on alone
WARM_UP_QUESTION = "What was the total expenditure and the number of staff in the year?"


class Resources:
    """Opened once, on first use or by warm_up as the server starts; each behind its own lock,
    so a health check never waits for the model to load."""

    def __init__(self, settings: Settings):
        from ragloupe.api.indexing import IndexJobs
        from ragloupe.api.metrics import GenerationCounters

        self.settings = settings
        self.metrics = Metrics()
        self.generation = GenerationCounters()
        self.jobs = IndexJobs(settings)
        self._store_lock = threading.Lock()
        self._model_lock = threading.Lock()
        self._gold_lock = threading.Lock()
        self._workspace_lock = threading.Lock()
        # At most one search at once per core this process encodes with; the others wait here.
        # More at once only take turns on the GIL and the cores: with `serve --workers 2` and 16
        # clients, 15.6 searches/s without this, 17.9-18.9 with it (benchmarks/api_load.py).
        self.search_slots = threading.BoundedSemaphore(settings.encoder_threads())
        self._store: Any = None
        self._embedder: Any = None
        self._goldsets: tuple[list, list[str]] | None = None
        self._workspace: Any = None
        self.model_loading = False
        self.model_error = ""
        self.warm_up_state = "not started"  # running | done: the model, BM25 and the caches
        self._warmed = threading.Event()
        self._warmed.set()  # nothing to wait for until start_warm_up

    def store(self) -> Any:
        with self._store_lock:
            if self._store is None:
                from ragloupe.index.store import open_store

                self._store = open_store(self.settings)
            return self._store

    def embedder(self) -> Any:
        """The model, behind a BatchingEmbedder: concurrent searches share encode() calls."""
        with self._model_lock:
            if self._embedder is None:
                from ragloupe.api.batching import BatchingEmbedder
                from ragloupe.index.embedder import get_embedder

                self.model_loading = True
                try:
                    self._embedder = BatchingEmbedder(get_embedder(self.settings))
                finally:
                    self.model_loading = False
            return self._embedder

    def workspace(self) -> Any:
        """The server's Workspace over store() and embedder() (the model loaded when a search first needs
        it): every search shares its BM25, corpus views, periods and learned model."""
        store = self.store()
        with self._workspace_lock:
            if self._workspace is None:
                from ragloupe.workspace import Workspace

                self._workspace = Workspace.open(self.settings, store=store, load_embedder=self.embedder)
            return self._workspace

    def model_status(self) -> dict[str, Any]:
        """Whether the embedding model is loaded, loading, or failed to load; never waits for it."""
        state = "loaded" if self._embedder is not None else "loading" if self.model_loading else \
            "failed" if self.model_error else "not loaded"
        return {"state": state, "name": self.settings.embedding_model, "error": self.model_error or None,
                "warm_up": self.warm_up_state}

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
        with self._gold_lock:
            if self._goldsets is None:
                from ragloupe.diagnostics.gold import find_goldsets, load_goldsets

                self._goldsets = load_goldsets(find_goldsets(self.settings))
            return self._goldsets

    def start_warm_up(self) -> None:
        """Warm up in a background thread; searches wait for it (wait_for_warm_up)."""
        self._warmed.clear()
        threading.Thread(target=self.warm_up, name="warm-up", daemon=True).start()

    def wait_for_warm_up(self, timeout_s: float = WARM_UP_WAIT_S) -> None:
        """Let a search that arrives during the warm-up wait for it instead of building the same
        caches a second time beside it (two builds under one GIL take twice as long)."""
        self._warmed.wait(timeout_s)

    def warm_up(self) -> None:
        """Load the model, then what the first search needs (BM25, the caches, the documents' sentence
        vectors when the index lacks them) with one search;
        an empty or broken index is reported when searched, a model that fails to load in health."""
        from ragloupe.retrieve.search import search

        self.warm_up_state = "running"
        self.model_loading = True  # said at once, before the model lock is even taken
        loader = threading.Thread(target=self._load_model_quietly, name="model-load", daemon=True)
        loader.start()
        try:
            if self.store().count() == 0:
                return
            workspace = self.workspace()
            workspace.chunk_columns()  # once, before the two threads that read them
            dense = threading.Thread(target=_quietly(workspace.open_dense_index), name="dense-open", daemon=True)
            dense.start()  # Chroma's vector index, read beside the rest
            # What the indexer saved (the BM25, learned fusion's views, the periods), read while the model loads.
            workspace.corpus_views(workspace.lexical())
            workspace.periods()
            loader.join()  # the model, or its error from embedder() below
            dense.join()
            # Sentence vectors the indexer did not write (an index from before them, built at weight 0,
            # or embedded by another model): encoded and saved now, not by the first user's search.
            workspace.encode_missing_sentences()
            # A question with words both engines find, so fusion (learned fusion's per-chunk
            # features included) builds its caches now; "warm up" alone left them to the first user.
            search(WARM_UP_QUESTION, explain=True, workspace=self.workspace())
        except Exception as exc:  # nothing to warm is not an error worth stopping the server for
            from ragloupe.logs import log_exception

            if self._embedder is None:
                self.model_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if not isinstance(exc, RagloupeError):
                log_exception(exc, self.settings)
        finally:
            loader.join()
            self.model_loading = False
            self.warm_up_state = "done"
            self._warmed.set()

    def _load_model_quietly(self) -> None:
        try:
            self.embedder()
        except Exception:  # noqa: BLE001  the warm-up's own embedder() call reports it
            pass


def _quietly(step):
    """``step`` for a warm-up thread: what fails is met again, and reported, by the search that needs it."""
    def run() -> None:
        try:
            step()
        except Exception:  # noqa: BLE001
            pass
    return run
