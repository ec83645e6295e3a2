"""Each indexed document's fiscal period, learned from its own chunks.

The period comes from the document's own text (query_analysis.document_period:
title page, name, the periods it names most), so nothing is re-indexed and
a report added later gets its period the first time a search needs it.
Pure: Workspace.periods reads the chunks and keeps the result per store content.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ragloupe.models import Chunk
from ragloupe.retrieve.query_analysis import DocumentPeriod, document_period


# The format of what periods_of returns as index.derived_saved keeps it: bump it by hand when the periods
# found change (here or in query_analysis), so no copy saved by older code is loaded.
PERIODS_FORMAT = 1


def periods_of(chunks: Iterable[Chunk], fy_start_month: int = 4) -> dict[str, DocumentPeriod]:
    """doc_id -> DocumentPeriod for every document the chunks come from."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_doc[chunk.doc_id].append(chunk)
    return {doc_id: document_period(doc_id, doc_chunks, fy_start_month)
            for doc_id, doc_chunks in sorted(by_doc.items())}
