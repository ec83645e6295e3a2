"""Faults that used to get through PDF ingestion (issue 12): a readable PDF
refused because of the image check, an extraction worker orphaned by a killed
indexer, glyph-name text layers indexed, and pages given the wrong reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pdf_factory as pf
import psutil
from ragloupe.ingest import load_source

RAGLOUPE = Path(sys.executable).with_name("ragloupe")


def test_pdf_whose_pages_share_nested_forms_is_read_within_the_time_limit(tmp_path, settings):
    # 100 forms that each list all 100 again: a walk that forgets what it has
    # visited opens 100 ** 4 of them per page, minutes of work; pypdf's own
    # extraction of this file takes milliseconds.
    path = pf.write_shared_forms_pdf(tmp_path / "forms.pdf", n_forms=100, n_pages=2)

    doc = load_source(path, settings.replace(pdf_timeout_s=10.0))

    assert doc.error is None
    assert [(p.page, p.quality) for p in doc.pages] == [(1, "clean"), (2, "clean")]


def test_image_reached_through_shared_forms_still_marks_a_scan(tmp_path, settings):
    path = pf.write_shared_forms_pdf(tmp_path / "scan.pdf", n_forms=30, n_pages=2,
                                     image=True, text=False)

    doc = load_source(path, settings.replace(ocr=False))  # the image check's own answer

    assert [(p.quality, p.reason) for p in doc.pages] == [("empty", "no text layer: needs OCR")] * 2


def _worker_of(indexer_pid: int, timeout_s: float) -> psutil.Process:
    """The extraction worker the indexer started, once it exists."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in psutil.Process(indexer_pid).children(recursive=True):
            try:
                if "ragloupe.ingest.worker" in " ".join(child.cmdline()):
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.1)
    raise AssertionError("the indexer never started its extraction worker")


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_worker_dies_with_an_indexer_killed_while_it_extracts(tmp_path, settings):
    corpus = tmp_path / "slow"
    corpus.mkdir()
    pf.write_slow_pdf(corpus / "slow.pdf", n_pages=100)  # tens of seconds of pypdf work
    indexer = subprocess.Popen([str(RAGLOUPE), "index", str(corpus)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        worker = _worker_of(indexer.pid, timeout_s=120)
        time.sleep(1.0)  # well inside its first pages
        assert indexer.poll() is None and not _gone(worker), "extraction ended before the kill"
        os.kill(indexer.pid, signal.SIGKILL)
        indexer.wait(30)

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _gone(worker):
            time.sleep(0.1)

        assert _gone(worker), f"worker {worker.pid} outlived its indexer"
    finally:
        if indexer.poll() is None:
            indexer.kill()
            indexer.wait(30)
        if worker is not None and not _gone(worker):
            worker.kill()


XFA_PLACEHOLDER = [
    "Please wait...",
    "If this message is not eventually replaced by the proper contents of the document, your PDF",
    "viewer may not be able to display this type of document.",
    "You can upgrade to the latest version of Adobe Reader for Windows\u00ae, Mac, or Linux\u00ae by",
    "visiting http://www.adobe.com/go/reader_download.",
    "For more assistance with Adobe Reader visit http://www.adobe.com/go/acrreader.",
]


def test_xfa_viewer_placeholder_is_rejected_as_an_xfa_form(tmp_path, settings):
    path = pf.write_text_pdf(tmp_path / "form.pdf", [XFA_PLACEHOLDER])

    doc = load_source(path, settings)

    assert [(p.quality, p.reason) for p in doc.pages] == [
        ("rejected", "XFA form: content not in the text layer")]


def test_text_layer_of_glyph_names_is_rejected_with_that_reason(tmp_path, settings):
    glyphs = ["".join(f"/g{(line * 31 + i * 7) % 200 + 3}" for i in range(14)) for line in range(12)]
    path = pf.write_text_pdf(tmp_path / "glyphs.pdf", [glyphs, pf.body_lines(2)])

    doc = load_source(path, settings)

    first, second = doc.pages
    assert first.quality == "rejected"
    assert first.reason.startswith("100% of the text is glyph names, not characters (/g3/g10/g17")
    assert second.quality == "clean"


def test_page_of_web_addresses_is_not_taken_for_glyph_names(tmp_path, settings):
    links = [f"https://www.nhsgrampian.org/about-us/board/papers/{year}/minutes-{year}.pdf"
             for year in range(2010, 2022)]
    path = pf.write_text_pdf(tmp_path / "links.pdf", [links])

    doc = load_source(path, settings)

    assert doc.pages[0].quality in ("clean", "degraded")


def test_page_whose_only_text_was_a_running_header_says_so(tmp_path, settings):
    pages = [["ACME WATER ANNUAL REPORT 2023", *pf.body_lines(n), f"Page {n}"] for n in range(1, 6)]
    pages[2] = ["ACME WATER ANNUAL REPORT 2023", "Page 3"]  # a page left blank but for its header
    path = pf.write_text_pdf(tmp_path / "report.pdf", pages)

    doc = load_source(path, settings)

    assert (doc.pages[2].quality, doc.pages[2].reason) == (
        "empty", "only running header/footer lines, which were stripped")
    assert doc.pages[2].stripped
