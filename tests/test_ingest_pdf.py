"""PDF ingestion: discovery, page extraction, and every kind of bad input.

The PDFs are real files written by tests/pdf_factory.py and read by the real
pypdf in the real extraction child process.
"""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path

import pytest

import pdf_factory as pf
from ragloupe.ingest import discover_sources, load_source
from ragloupe.ingest import worker

GRAMPIAN_PDF = Path(__file__).resolve().parents[1] / "data/benchmarks/grampian/pdf"


def test_discover_sources_walks_directories_sorted_and_skips_hidden_and_unsupported(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    wanted = [tmp_path / "a.PDF", tmp_path / "b" / "records.jsonl", tmp_path / "z.csv"]
    for path in wanted + [tmp_path / "notes.txt", tmp_path / ".hidden" / "x.pdf"]:
        path.write_text("x")
    loose = tmp_path.parent / f"{tmp_path.name}-loose.pdf"
    loose.write_text("x")

    found = discover_sources([tmp_path, loose, tmp_path / "z.csv"])

    assert found == sorted(p.resolve() for p in wanted + [loose])


def test_doc_id_is_the_file_stem_and_sha256_hashes_the_bytes(tmp_path, settings):
    path = pf.write_report_pdf(tmp_path / "Annual-Report-2023.pdf", n_pages=2)

    doc = load_source(path, settings)

    assert doc.doc_id == "Annual-Report-2023"
    assert doc.kind == "pdf"
    assert doc.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_text_pages_come_out_in_order_with_method_quality_and_title(tmp_path, settings):
    path = pf.write_report_pdf(tmp_path / "report.pdf", n_pages=4)

    doc = load_source(path, settings)

    assert doc.error is None and not doc.blocked
    assert doc.title == "ACME report"
    assert [p.page for p in doc.pages] == [1, 2, 3, 4]
    for page in doc.pages:
        assert page.text.startswith(f"Section {page.page} reports")
        assert (page.method, page.quality, page.reason) == ("pypdf-plain", "clean", "")
        assert page.indexable


@pytest.mark.parametrize("in_form", [False, True], ids=["page-image", "image-in-form"])
def test_image_only_scan_is_recorded_as_needing_ocr_when_ocr_is_off(tmp_path, settings, in_form):
    doc = load_source(pf.write_scan_pdf(tmp_path / "scan.pdf", 2, in_form), settings.replace(ocr=False))

    assert doc.error is None
    assert [(p.page, p.quality, p.reason) for p in doc.pages] == [
        (1, "empty", "no text layer: needs OCR"), (2, "empty", "no text layer: needs OCR")]
    assert not any(p.indexable for p in doc.pages)


def test_image_without_words_stays_empty_with_what_ocr_found(tmp_path, settings):
    doc = load_source(pf.write_scan_pdf(tmp_path / "scan.pdf", 1), settings)

    assert [(p.quality, p.reason) for p in doc.pages] == [
        ("empty", "no text layer: needs OCR; OCR found no text on the page")]


def test_pdf_that_needs_a_password_is_refused(tmp_path, settings):
    doc = load_source(pf.write_encrypted_pdf(tmp_path / "locked.pdf", "s3cret"), settings)

    assert doc.error == "encrypted: needs a password"
    assert doc.blocked and doc.pages == ()


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_pdf_encrypted_with_an_empty_user_password_opens(tmp_path, settings, algorithm):
    doc = load_source(pf.write_encrypted_pdf(tmp_path / "open.pdf", "", algorithm), settings)

    assert doc.error is None
    assert [p.quality for p in doc.pages] == ["clean", "clean"]
    assert doc.pages[1].text.startswith("Section 2 reports")


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.99])
def test_truncated_pdf_is_refused_as_corrupt(tmp_path, settings, keep):
    doc = load_source(pf.write_truncated_pdf(tmp_path / "cut.pdf", keep), settings)

    assert doc.error.startswith("truncated or corrupt PDF")
    assert doc.pages == ()


def test_zero_byte_pdf_is_refused(tmp_path, settings):
    doc = load_source(pf.write_zero_byte_pdf(tmp_path / "empty.pdf"), settings)

    assert doc.error == "empty file (0 bytes)"
    assert doc.pages == ()


def test_other_file_renamed_pdf_is_refused(tmp_path, settings):
    doc = load_source(pf.write_renamed_non_pdf(tmp_path / "photo.pdf"), settings)

    assert doc.error.startswith("not a PDF")
    assert doc.pages == ()


def test_missing_file_is_refused_with_a_reason(tmp_path, settings):
    doc = load_source(tmp_path / "gone.pdf", settings)

    assert doc.error.startswith("cannot read file")


def test_page_pypdf_fails_on_is_read_by_the_second_extractor(tmp_path, settings):
    path = pf.write_broken_page_pdf(tmp_path / "broken.pdf", broken_page=2, n_pages=3)

    doc = load_source(path, settings)

    assert doc.error is None
    assert [(p.page, p.quality, p.method) for p in doc.pages] == [
        (1, "clean", "pypdf-plain"), (2, "clean", "pdfminer"), (3, "clean", "pypdf-plain")]
    assert doc.pages[1].text.startswith("Section 2 reports")
    assert doc.pages[2].text.startswith("Section 3 reports")


@pytest.mark.parametrize("filter_name", ["/A85", "/AHx"])
def test_page_with_an_abbreviated_filter_name_comes_back(tmp_path, settings, filter_name):
    path = pf.write_abbreviated_filter_pdf(tmp_path / "abbreviated.pdf", filter_name)

    doc = load_source(path, settings)

    first = doc.pages[0]
    assert (first.quality, first.method, first.reason) == ("clean", "pdfminer", "")
    assert first.text.startswith("Section 1 reports")
    assert doc.pages[1].method == "pypdf-plain"


def test_page_no_extractor_can_read_loses_only_that_page_with_a_plain_reason(tmp_path, settings):
    path = tmp_path / "jbig2.pdf"
    path.write_bytes(pf.build_pdf([
        {"content": pf.text_content(pf.body_lines(1))},
        {"content": b"\x80\x0b\x60\x50\x22", "filter": "/JBIG2Decode"},
        {"content": pf.text_content(pf.body_lines(3))}]))

    doc = load_source(path, settings)

    assert [(p.page, p.quality) for p in doc.pages] == [(1, "clean"), (2, "rejected"), (3, "clean")]
    assert doc.pages[1].reason == ("extraction failed: its content uses JBIG2 compression, "
                                   "which needs the jbig2dec program")
    assert doc.pages[1].text == ""


def test_scanned_page_is_read_by_ocr_with_its_confidence(tmp_path, settings):
    lines = ["Annual report of the water board", "Total capital spending was 4,250 pounds"]
    path = pf.write_text_scan_pdf(tmp_path / "scan.pdf", [lines])

    doc = load_source(path, settings)

    page = doc.pages[0]
    assert page.method == "ocr" and page.indexable
    assert page.text.split() == " ".join(lines).split()
    assert 50 < page.confidence <= 100
    assert page.quality == "degraded"
    assert page.reason == f"text read by OCR (mean word confidence {page.confidence:.0f}%)"


def test_slow_pdf_is_stopped_at_the_time_limit_and_the_next_file_goes_in(tmp_path, settings):
    slow = pf.write_hungry_pdf(tmp_path / "slow.pdf")
    good = pf.write_report_pdf(tmp_path / "good.pdf", n_pages=3)
    limited = settings.replace(pdf_timeout_s=1.0, pdf_max_memory_mb=0)

    doc = load_source(slow, limited)
    # The next file goes in through the worker that replaced the stopped one; its limit is a
    # generous deadline, as a three-page PDF on a loaded machine can take more than 1 s.
    after = load_source(good, limited.replace(pdf_timeout_s=60.0))

    assert doc.error == "extraction exceeded 1 s"
    assert doc.pages == ()
    assert after.error is None and len(after.pages) == 3


def test_memory_hungry_pdf_is_stopped_at_the_memory_limit_and_the_next_file_goes_in(
        tmp_path, settings):
    hungry = pf.write_hungry_pdf(tmp_path / "hungry.pdf")
    good = pf.write_report_pdf(tmp_path / "good.pdf", n_pages=3)
    limited = settings.replace(pdf_max_memory_mb=150)

    doc = load_source(hungry, limited)
    after = load_source(good, limited)

    assert doc.error.startswith("extraction exceeded the 150 MB memory limit")
    assert doc.pages == ()
    assert after.error is None and len(after.pages) == 3


def test_one_extraction_child_serves_a_whole_batch(tmp_path, settings):
    paths = [pf.write_report_pdf(tmp_path / f"r{i}.pdf", n_pages=3) for i in range(3)]

    pids = []
    for path in paths:
        assert load_source(path, settings).error is None
        pids.append(worker.child_pid())

    assert pids[0] is not None and pids == [pids[0]] * 3


def test_extraction_child_killed_between_files_is_replaced(tmp_path, settings):
    first = pf.write_report_pdf(tmp_path / "first.pdf", n_pages=3)
    second = pf.write_report_pdf(tmp_path / "second.pdf", n_pages=4)
    assert load_source(first, settings).error is None
    os.kill(worker.child_pid(), signal.SIGKILL)

    doc = load_source(second, settings)

    assert doc.error is None and len(doc.pages) == 4


def test_bad_files_do_not_stop_the_good_ones(tmp_path, settings):
    pf.write_zero_byte_pdf(tmp_path / "a-empty.pdf")
    pf.write_encrypted_pdf(tmp_path / "b-locked.pdf", "pw")
    pf.write_report_pdf(tmp_path / "c-good.pdf", n_pages=3)
    pf.write_truncated_pdf(tmp_path / "d-cut.pdf")
    pf.write_text_pdf(tmp_path / "e-good.pdf", [pf.body_lines(1)])

    docs = {d.doc_id: d for d in (load_source(p, settings) for p in discover_sources([tmp_path]))}

    assert {name for name, d in docs.items() if d.error} == {"a-empty", "b-locked", "d-cut"}
    assert len(docs["c-good"].pages) == 3 and len(docs["e-good"].pages) == 1


def test_symbol_glyphs_degrade_a_page_and_ligature_glyphs_become_letters(tmp_path, settings):
    lines = pf.body_lines(1) + ["~ first point ~ second point ~ third point",
                                "the ^rst ^eld of the o_ce"]
    path = pf.write_remapped_pdf(tmp_path / "symbols.pdf", lines,
                                 {"~": "\uf0d8", "^": "\ufb01", "_": "\ufb03"})

    page = load_source(path, settings).pages[0]

    assert (page.quality, page.reason) == ("degraded", "private-use glyphs (U+F0D8) x3")
    assert page.text.endswith("the first field of the office")


def test_page_of_unmapped_glyphs_is_rejected(tmp_path, settings):
    letters = "abcdefghijklmnopqrstuvwxyz"
    path = pf.write_remapped_pdf(tmp_path / "glyphs.pdf", pf.body_lines(1),
                                 {c: chr(0xF000 + i) for i, c in enumerate(letters)})

    page = load_source(path, settings).pages[0]

    assert page.quality == "rejected"
    assert page.reason.startswith("9") and "of characters are unreadable glyphs" in page.reason
    assert not page.indexable


def test_shipped_grampian_cover_page_without_text_is_recorded_empty(settings):
    doc = load_source(GRAMPIAN_PDF / "Grampian-2020-2021.pdf", settings)

    assert len(doc.pages) == 133
    assert doc.pages[0].quality == "empty"
    assert doc.pages[0].stripped == ("NHS GRAMPIAN", "Page 1")
    assert sum(p.indexable for p in doc.pages) == 132
