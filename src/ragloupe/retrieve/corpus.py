"""Every chunk the store holds, read once per store content, and the caches built over it.

The chunk BM25 (engines.lexical_index), the whole-unit index
(units.unit_index) and the documents' periods (doc_periods.document_periods)
are each built in memory from every chunk of the store. Reading them all from
Chroma is the slow part of a first search, so they are read once here and
shared, and each in-memory build is kept in a ``ContentCache``.

Everything is keyed by ``content_key``: where the store is and its content
fingerprint (Store.fingerprint, which changes with the collection, its chunk
count and the indexer's content marker). A re-index therefore gives a new key,
and the chunks are read again instead of a stale copy being served.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

from ragloupe.config import Settings
from ragloupe.models import Chunk

Built = TypeVar("Built")

# Two entries per cache: a k1/b sweep, or two stores in turn, alternate
# without rebuilding every call, while an old index is soon let go.
CACHE_SIZE = 2


class ContentCache(Generic[Built]):
    """A small thread-safe least-recently-used cache of what is built from a store's content."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._entries: OrderedDict[Hashable, Built] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], Built]) -> Built:
        """The entry for ``key``, built with ``build()`` when it is not held."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        # Built outside the lock: a second thread may build the same entry once more,
        # which costs time but never correctness.
        built = build()
        with self._lock:
            self._entries[key] = built
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return built

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_chunks: ContentCache[tuple[Chunk, ...]] = ContentCache()


def content_key(store, settings: Settings) -> tuple:
    """Where the store is and what it holds now: the key of everything built from its content."""
    return (settings.chroma_host, settings.chroma_port, str(settings.path("index_dir")),
            settings.collection, store.fingerprint())


def all_chunks(store, settings: Settings, key: tuple | None = None) -> tuple[Chunk, ...]:
    """Every chunk the store holds, in reading order, read from the store once per content.

    ``key`` is ``content_key(store, settings)`` when the caller already has it,
    which spares the store a second fingerprint round trip. The tuple is shared
    by every caller: it is not to be changed.
    """
    return _chunks.get(key or content_key(store, settings), lambda: tuple(store.all_chunks()))


def clear() -> None:
    """Forget every chunk read so far (a benchmark releasing a large index)."""
    _chunks.clear()
