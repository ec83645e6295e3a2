"""Evidence spans located in real page text: the PDF's extracted text (with its line
breaks) and the corpus's page text (running text), Grampian 2020/21 page 28."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pypdf import PdfReader

from ragloupe.generate.spans import clean_quote, find_span

BENCH = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "grampian"


@pytest.fixture(scope="module")
def pdf_page() -> str:
    return PdfReader(BENCH / "pdf" / "Grampian-2020-2021.pdf").pages[27].extract_text()


@pytest.fixture(scope="module")
def running_page() -> str:
    with open(BENCH / "pages" / "Grampian-2020-2021.jsonl", encoding="utf-8") as lines:
        return next(json.loads(l)["text"] for l in lines if json.loads(l)["page"] == 28)


def test_smart_quotes_and_ellipses_around_a_quote_are_stripped():
    assert clean_quote("  “…the Board’s in year financial performance...”  ") == \
        "the Board’s in year financial performance"


def test_exact_quote_is_found_with_its_offsets(pdf_page):
    quote = "“Health Boards are required to contain their net expenditure within these”"
    span = find_span(quote, pdf_page)
    assert span.method == "exact"
    assert pdf_page[span.start:span.end] == quote.strip("“”")


def test_quote_across_a_line_break_matches_whitespace_flexibly(pdf_page, running_page):
    quote = "consolidated with the main Board accounts for group accounting purposes"
    assert "consolidated\nwith" in pdf_page  # the PDF breaks the line inside the quote
    span = find_span(quote, pdf_page)
    assert span.method == "whitespace"
    assert " ".join(pdf_page[span.start:span.end].split()) == quote


def test_hyphenation_and_apostrophe_style_match_normalised(running_page):
    # The page writes "non- repayable" (a line-end hyphen) and "Board’s" (a smart apostrophe).
    span = find_span("additional non-repayable funding was provided", running_page)
    assert span.method == "normalised"
    assert running_page[span.start:span.end] == "additional non- repayable funding was provided"
    assert find_span("considering the Board's in year financial performance", running_page).method == "normalised"


def test_paraphrased_quote_falls_back_to_fuzzy_alignment(running_page):
    quote = "Grampian Health Board has achieved all three financial targets for the year"
    span = find_span(quote, running_page)
    assert span.method == "fuzzy" and 85 <= span.score < 100
    assert "successfully achieved all three financial targets" in running_page[span.start:span.end]


def test_unrelated_quote_has_no_span(running_page):
    assert find_span("The hospital opened a new cardiac ward in Aberdeen", running_page) is None


def test_short_quote_is_not_matched_fuzzily(running_page):
    assert find_span("xqz 7", running_page) is None


def test_quote_with_inner_ellipsis_spans_its_pieces_in_order(pdf_page):
    span = find_span("The three annual financial targets … Cash Requirement", pdf_page)
    assert span.method == "elided"
    found = pdf_page[span.start:span.end]
    assert found.startswith("The three annual financial targets") and found.endswith("Cash Requirement")


def test_figure_from_a_table_is_found(running_page):
    span = find_span("Core Revenue Resource Limit 1,278,771 1,278,002 769", running_page)
    assert span is not None and span.method == "exact"
