"""What ingestion did to each document, from the index manifest: the Chunk Explorer's view.

One manifest read per page run feeds every part of the page: the pages left
out and why, the pages read by OCR or the fallback extractor, the running
headers and footers stripped, the refused files, and what was stripped from
the page a chunk comes from. Rows are plain dicts, ready for a table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ragloupe.index.manifest import Manifest, PageEntry
from ragloupe.models import Chunk

READ_AGAIN = ("ocr", "pdfminer")  # methods other than the first extractor


def method_label(method: str, confidence: float | None) -> str:
    """'OCR (confidence 91%)', 'pdfminer (fallback or tables)', 'pypdf' for the page lists."""
    if method == "ocr":
        return f"OCR (confidence {confidence:.0f}%)" if confidence is not None else "OCR"
    if method == "pdfminer":
        return "pdfminer (fallback or tables)"
    return method or "—"


@dataclass(frozen=True)
class IngestionReport:
    """The "what ingestion left out" tables for some documents."""

    excluded: list[dict]    # pages not indexed, with quality and reason
    read_again: list[dict]  # pages read by OCR or the fallback extractor
    stripped: list[dict]    # running header and footer lines removed
    refused: list[dict]     # files refused as a whole


def ingestion_report(manifest: Manifest, doc_ids: Iterable[str] = ()) -> IngestionReport:
    """The report for ``doc_ids`` (every document in the manifest when empty)."""
    shown = set(doc_ids) or set(manifest.documents)
    complete = [entry for entry in manifest.complete() if entry.doc_id in shown]
    return IngestionReport(
        excluded=[{"document": doc_id, "page": page.record_id or page.page, "quality": page.quality,
                   "reason": page.reason, "method": method_label(page.method, page.confidence)}
                  for doc_id, page in manifest.excluded_pages() if doc_id in shown],
        read_again=[{"document": entry.doc_id, "page": page.page,
                     "method": method_label(page.method, page.confidence),
                     "quality": page.quality, "reason": page.reason}
                    for entry in complete for page in entry.pages if page.method in READ_AGAIN],
        stripped=[{"document": entry.doc_id, "line": line}
                  for entry in complete for line in entry.boilerplate],
        refused=[{"document": entry.doc_id, "reason": entry.error or "blocking findings"}
                 for entry in manifest.refused() if entry.doc_id in shown])


def page_entry(manifest: Manifest, doc_id: str, page: int) -> PageEntry | None:
    """What the manifest records about one page of a document (None: no such page)."""
    return next((entry for entry in manifest.pages(doc_id) if entry.page == page), None)


def stripped_from(manifest: Manifest, chunk: Chunk) -> tuple[str, ...]:
    """The running header/footer lines stripped from the page ``chunk`` comes from."""
    return next((page.stripped for page in manifest.pages(chunk.doc_id)
                 if page.page == chunk.page and page.record_id == chunk.record_id), ())
