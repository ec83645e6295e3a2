"""The demo PDFs' shipped extraction (tests/demo_extractions.py) is what the extraction child
answers today, and a request it does not hold is extracted for real."""

from __future__ import annotations

from dataclasses import asdict

from conftest import DEMO_TABLE_PDFS
from demo_extractions import ShippedExtractions

from ragloupe.ingest import pdf
from ragloupe.ingest.pdf import ExtractOptions


def _request(path, settings, **changes):
    options = {**asdict(ExtractOptions.from_settings(settings)), **changes}
    return {"path": str(path.resolve()), "options": options}


def test_a_shipped_answer_is_the_childs_answer_today(settings):
    smallest = min(DEMO_TABLE_PDFS, key=lambda p: p.stat().st_size)
    request = _request(smallest, settings, tables=True)
    calls = []
    shipped = ShippedExtractions(lambda *args: calls.append(args) or {"error": "not shipped"})
    answer = shipped(request, settings.pdf_timeout_s, settings.pdf_max_memory_mb)
    assert calls == [], "the shipped file does not hold this demo PDF: run tests/demo_extractions.py"
    fresh = pdf.extract_in_child(request, settings.pdf_timeout_s, settings.pdf_max_memory_mb)
    assert answer == fresh and len(fresh["ok"]["pages"]) >= 1


def test_a_request_not_shipped_is_extracted_by_the_child_and_counted(settings):
    smallest = min(DEMO_TABLE_PDFS, key=lambda p: p.stat().st_size)
    request = _request(smallest, settings, tables=True, min_chars=7)  # options no build asks for
    shipped = ShippedExtractions(pdf.extract_in_child)
    answer = shipped(request, settings.pdf_timeout_s, settings.pdf_max_memory_mb)
    assert (shipped.extracted, shipped.looked_up) == (1, 1)
    assert answer["ok"]["pages"][0]["text"].strip()
