"""Running headers and footers: found by repetition, stripped from page edges only."""

from __future__ import annotations

import json
from pathlib import Path

from rapidfuzz import fuzz

import pdf_factory as pf
from ragloupe.ingest import load_source
from ragloupe.ingest.boilerplate import find_running_lines, strip_running_lines

GRAMPIAN = Path(__file__).resolve().parents[1] / "data/benchmarks/grampian"


def _pages(n: int, header: str = "ACME ANNUAL REPORT", footer: str = "Page {n}") -> list[str]:
    return ["\n".join([header, *pf.body_lines(page), footer.format(n=page)])
            for page in range(1, n + 1)]


def _found(pages: list[str], **rules) -> list[list[str]]:
    """The display form of the running lines found on each page."""
    rules = {"min_share": 0.5, "min_pages": 3, "edge_lines": 2, "min_run": 0} | rules
    running = find_running_lines(pages, **rules)
    return [sorted(running.shown[key] for key in keys) for keys in running.per_page]


def test_lines_repeating_on_most_pages_are_found_ignoring_digits_and_case():
    pages = _pages(5)
    pages[2] = pages[2].replace("ACME ANNUAL REPORT", "Acme  Annual Report")

    assert _found(pages) == [["ACME ANNUAL REPORT", "Page #"]] * 5


def test_line_on_fewer_pages_than_the_share_is_kept():
    pages = _pages(6)
    for i in (1, 3, 5):
        pages[i] = pages[i].replace("ACME ANNUAL REPORT", f"Chapter heading {'ABC'[i // 2]}")

    assert _found(pages, min_share=0.6) == [["Page #"]] * 6


def test_short_document_keeps_every_line():
    assert _found(_pages(2)) == [[], []]


def test_short_line_on_consecutive_pages_is_a_section_running_head():
    pages = _pages(8, header="{head}")
    heads = ["Intro"] * 2 + ["PERFORMANCE REPORT (cont)"] * 3 + ["Other"] + ["ANNEX (cont)"] * 2
    pages = [page.replace("{head}", head) for page, head in zip(pages, heads)]

    found = _found(pages, min_share=0.9, min_run=3)

    assert [("PERFORMANCE REPORT (cont)" in f) for f in found] == [
        False, False, True, True, True, False, False, False]
    assert not any("ANNEX (cont)" in f for f in found)  # two pages are not a run
    assert all("Page #" in f for f in found)


def test_long_line_on_consecutive_pages_is_body_not_a_running_head():
    long_head = "1. Financial Performance and Position (cont) 1.2 Grampian Health Board"
    heads = ["Intro", "Summary"] + [long_head] * 4 + ["Notes", "Annex"]
    pages = [page.replace("ACME ANNUAL REPORT", head) for page, head in zip(_pages(8), heads)]

    found = _found(pages, min_share=0.9, min_run=3)

    assert found == [["Page #"]] * 8


def test_running_line_inside_the_body_is_kept():
    text = ("ACME ANNUAL REPORT\nIntro line\nSecond line\nACME ANNUAL REPORT\n"
            "Third line\nFourth line\nPage 3")

    page = strip_running_lines(text, frozenset({"acme annual report", "page #"}), edge_lines=2)

    assert page.text == "Intro line\nSecond line\nACME ANNUAL REPORT\nThird line\nFourth line"
    assert page.stripped == ("ACME ANNUAL REPORT", "Page 3")


def test_pdf_header_and_page_footer_are_stripped_and_recorded(tmp_path, settings):
    doc = load_source(pf.write_report_pdf(tmp_path / "report.pdf", n_pages=5), settings)

    assert sorted(doc.boilerplate) == ["ACME WATER ANNUAL REPORT #", "Page #"]
    for page in doc.pages:
        assert page.stripped == ("ACME WATER ANNUAL REPORT 2023", f"Page {page.page}")
        assert "ANNUAL REPORT" not in page.text and f"Page {page.page}" not in page.text
        assert page.text.split("\n") == pf.body_lines(page.page)


def test_shipped_grampian_pages_match_their_source_text_after_stripping(settings):
    doc = load_source(GRAMPIAN / "pdf" / "Grampian-2021-2022.pdf", settings)
    source = {row["page"]: row["text"] for row in
              map(json.loads, (GRAMPIAN / "pages" / "Grampian-2021-2022.jsonl").open())}

    def words(text: str) -> str:
        return " ".join(text.split())

    similarity = [fuzz.ratio(words(p.text), words(source[p.page])) for p in doc.pages]
    ends_match = [words(p.text).split()[-4:] == words(source[p.page]).split()[-4:]
                  for p in doc.pages]

    assert {"NHS GRAMPIAN", "Page #", "PERFORMANCE REPORT (cont)"} <= set(doc.boilerplate)
    assert len(doc.pages) == len(source) == 146
    assert min(similarity) >= 95
    assert sum(s >= 99 for s in similarity) >= 0.95 * len(similarity)
    assert all(ends_match)  # no page keeps its "Page N" footer
