"""Each indexed document's fiscal period, learned from what the store holds, cached per store fingerprint.

The period comes from the document's own text (query_analysis.document_period:
title page, name, the periods it names most), so nothing is re-indexed and
a report added later gets its period the first time a search needs it.
Like the BM25 index (engines.lexical_index), the result is kept in memory
per (store location, content fingerprint), and recomputed when the store
changes; the chunks come from corpus.all_chunks, read once for all three.
This module is the edge that reads the store; the reading of text is pure
and lives in query_analysis.
"""

from __future__ import annotations

from collections import defaultdict

from ragloupe.config import Settings
from ragloupe.models import Chunk
from ragloupe.retrieve import corpus
from ragloupe.retrieve.query_analysis import DocumentPeriod, document_period

_cache: corpus.ContentCache[dict[str, DocumentPeriod]] = corpus.ContentCache()


def document_periods(store, settings: Settings) -> dict[str, DocumentPeriod]:
    """doc_id -> DocumentPeriod for every document in the store."""
    key = corpus.content_key(store, settings)
    month = int(settings.fiscal_year_start_month)

    def build() -> dict[str, DocumentPeriod]:
        by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for chunk in corpus.all_chunks(store, settings, key):
            by_doc[chunk.doc_id].append(chunk)
        return {doc_id: document_period(doc_id, doc_chunks, month)
                for doc_id, doc_chunks in sorted(by_doc.items())}

    return _cache.get(key + (month,), build)
