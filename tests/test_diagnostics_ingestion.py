"""The Chunk Explorer's ingestion report, computed from a manifest (no Streamlit)."""

from __future__ import annotations

from pathlib import Path

from ragloupe.diagnostics.ingestion import ingestion_report, page_entry, stripped_from
from ragloupe.index.manifest import DocumentEntry, Manifest, PageEntry
from ragloupe.models import Chunk


def _manifest() -> Manifest:
    report = DocumentEntry(
        doc_id="report", path="/raw/report.pdf", sha256="a", kind="pdf", state="complete",
        chunk_ids=("c1",), boilerplate=("NHS Grampian Annual Report",),
        pages=(PageEntry(1, "clean", "", "pypdf-plain", 900, n_chunks=1, stripped=("Page 1",)),
               PageEntry(2, "empty", "no text layer: needs OCR", "pypdf-plain", 0),
               PageEntry(3, "degraded", "text read by OCR", "ocr", 400, n_chunks=1, confidence=91.0)))
    other = DocumentEntry(doc_id="other", path="/raw/other.pdf", sha256="b", kind="pdf",
                          state="complete", pages=(PageEntry(1, "rejected", "unreadable glyphs",
                                                             "pdfminer", 5),))
    refused = DocumentEntry(doc_id="broken", path="/raw/broken.csv", sha256="c", kind="records",
                            state="refused", error="missing id column")
    return Manifest(path=Path("/index/manifest.json"),
                    documents={e.doc_id: e for e in (report, other, refused)})


def test_the_report_lists_left_out_pages_reread_pages_stripped_lines_and_refused_files():
    report = ingestion_report(_manifest())
    assert report.excluded == [
        {"document": "other", "page": 1, "quality": "rejected", "reason": "unreadable glyphs",
         "method": "pdfminer (fallback or tables)"},
        {"document": "report", "page": 2, "quality": "empty", "reason": "no text layer: needs OCR",
         "method": "pypdf-plain"}]
    assert report.read_again == [
        {"document": "other", "page": 1, "method": "pdfminer (fallback or tables)",
         "quality": "rejected", "reason": "unreadable glyphs"},
        {"document": "report", "page": 3, "method": "OCR (confidence 91%)", "quality": "degraded",
         "reason": "text read by OCR"}]
    assert report.stripped == [{"document": "report", "line": "NHS Grampian Annual Report"}]
    assert report.refused == [{"document": "broken", "reason": "missing id column"}]


def test_the_report_keeps_to_the_chosen_documents():
    report = ingestion_report(_manifest(), ["report"])
    assert {row["document"] for row in report.excluded + report.read_again + report.stripped} == {"report"}
    assert report.refused == []


def test_a_page_and_what_was_stripped_from_a_chunks_page():
    manifest = _manifest()
    assert page_entry(manifest, "report", 3).method == "ocr"
    assert page_entry(manifest, "report", 9) is None
    chunk = Chunk(chunk_id="c1", doc_id="report", page=1, position=0, text="x", n_tokens=1,
                  quality="clean")
    assert stripped_from(manifest, chunk) == ("Page 1",)
