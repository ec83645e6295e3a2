"""Each indexed document's fiscal period, learned from what the store holds, cached per store fingerprint.

The period comes from the document's own text (query_analysis.document_period:
title page, name, the periods it names most), so nothing is re-indexed and
a report added later gets its period the first time a search needs it.
Like the BM25 index (engines.lexical_index), the result is kept in memory
per (store location, content fingerprint), and recomputed when the store
changes. This module is the edge that reads the store; the reading of text
is pure and lives in query_analysis.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict

from ragloupe.config import Settings
from ragloupe.models import Chunk
from ragloupe.retrieve.query_analysis import DocumentPeriod, document_period

_CACHE_SIZE = 2
_cache: OrderedDict[tuple, dict[str, DocumentPeriod]] = OrderedDict()
_lock = threading.Lock()


def document_periods(store, settings: Settings, chunks: list[Chunk] | None = None) -> dict[str, DocumentPeriod]:
    """doc_id -> DocumentPeriod for every document in the store.

    ``chunks`` may be passed when the caller already holds every chunk of
    the store (the BM25 index does), to save reading them again.
    """
    key = (settings.chroma_host, settings.chroma_port, str(settings.path("index_dir")),
           settings.collection, store.fingerprint(), int(settings.fiscal_year_start_month))
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in (chunks if chunks is not None else store.all_chunks()):
        by_doc[chunk.doc_id].append(chunk)
    periods = {doc_id: document_period(doc_id, doc_chunks, int(settings.fiscal_year_start_month))
               for doc_id, doc_chunks in sorted(by_doc.items())}
    with _lock:
        _cache[key] = periods
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return periods
