"""ContentCache: the cache a Workspace keeps of what it builds from a store's content.

The chunk BM25, the whole-unit indexes, the documents' periods and learned
fusion's corpus views are each built in memory from every chunk of the store
(ragloupe.workspace.Workspace), and each build is kept in a ``ContentCache``
keyed by Workspace.content_key: where the store is and its content fingerprint
(Store.fingerprint, which changes with the collection, its chunk count and the
indexer's content marker). A re-index therefore gives a new key, and the
chunks are read again instead of a stale copy being served.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar


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

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
