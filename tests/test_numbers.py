"""Number, currency and answer matching (ragloupe.numbers)."""

import json
from pathlib import Path

import pytest

from ragloupe.numbers import (
    content_tokens,
    extract_quantities,
    key_quantities,
    match_answer,
    quantity_in_text,
    same_quantity,
)

PAGES = Path(__file__).resolve().parents[1] / "data/benchmarks/grampian/pages"


def _page(doc_id: str, page: int) -> str:
    for line in (PAGES / f"{doc_id}.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["page"] == page:
            return record["text"]
    raise KeyError(page)


def _one(text: str):
    (quantity,) = extract_quantities(text)
    return quantity


def test_thousands_note_matches_plain_table_figure():
    assert quantity_in_text(_one("£1,559,285 (£000)"), "Total 1,559,285 1,558,000") is not None


def test_thousands_note_matches_millions_in_prose():
    assert same_quantity(_one("£769 (£000)"), _one("£0.769m"))


def test_spelled_out_thousands_match_millions_in_prose():
    assert same_quantity(_one("£769,000"), _one("£0.769m"))


def test_million_word_and_m_suffix_are_the_same_scale():
    assert same_quantity(_one("£6.7 million"), _one("£6.7m"))


def test_different_figures_do_not_match():
    assert not same_quantity(_one("£1,278,771 (£000)"), _one("1,278,002"))


def test_figures_differing_in_their_last_digit_do_not_match():
    assert not same_quantity(_one("£1,278,773 (£000)"), _one("1,278,771"))


def test_percent_never_matches_a_plain_number():
    assert not same_quantity(_one("71.8%"), _one("71.8"))


def test_m_without_currency_is_not_million():
    assert _one("a 10 m wide road").scale == 1.0


def test_digits_glued_to_codes_are_not_figures():
    assert extract_quantities("COVID-19 rules, ISO-310002, Q4") == []


def test_financial_year_suffix_is_not_a_figure():
    values = [q.value for q in extract_quantities("in 2020/21 the board")]
    assert values == [2020.0]


def test_thousands_column_header_is_not_a_figure():
    assert extract_quantities("Outturn £000's") == []


def test_quantity_span_points_at_the_figure():
    text = "The Board received £48.6 million during the year"
    (quantity,) = extract_quantities(text)
    assert text[quantity.start:quantity.end] == "£48.6 million"


def test_years_are_not_key_figures_of_a_number_answer():
    keys = key_quantities("Decreased by £11 million from £1,453 million in 2021/22")
    assert [k.raw for k in keys] == ["£11 million", "£1,453 million"]


def test_small_plain_integer_is_not_distinctive():
    assert not _one("11 days").distinctive
    assert _one("£11").distinctive


def test_number_answer_found_on_its_gold_page():
    page = _page("Grampian-2020-2021", 28)
    assert match_answer("£1,278,771 (£000)", page, "number").status == "found"


def test_underspend_in_pounds_found_via_prose_millions():
    page = _page("Grampian-2020-2021", 28)
    assert match_answer("Underspend of £769,000", page, "number").status == "found"


def test_number_answer_absent_from_another_page():
    page = _page("Grampian-2020-2021", 6)
    match = match_answer("£1,278,771 (£000)", page, "number")
    assert match.status == "absent"
    assert match.missing == ("£1,278,771 (£000)",)


def test_derived_figure_makes_answer_partial():
    page = _page("Grampian-2022-2023", 24)
    match = match_answer(
        "Exceeded by £4.8 million (achieved £10.2 million against target of £5.4 million)",
        page, "number")
    assert match.status == "partial"
    assert "£4.8 million" in match.missing


def test_text_answer_found_by_content_words():
    page = _page("Grampian-2020-2021", 6)
    assert match_answer("half-million people who live in Grampian", page, "text").status == "found"


def test_text_answer_absent_from_unrelated_text():
    match = match_answer("Caring, listening and improving", "Capital resource limit 43,316", "text")
    assert match.status == "absent"
    assert match.share == 0.0


def test_content_tokens_split_hyphens_and_drop_stopwords():
    assert content_tokens("Operation Rainbow (April–May 2020)") == ["operation", "rainbow", "april", "may"]


@pytest.mark.parametrize("written", ["£1,421 million", "£1,421m", "£1.421 billion", "£1.421bn"])
def test_scale_words_agree(written):
    assert same_quantity(_one("£1,421 million"), _one(written))


def test_every_stage_takes_its_stopwords_from_the_one_list_module():
    from ragloupe import numbers, textrules
    from ragloupe.index import lexical
    from ragloupe.ui import text

    assert lexical.STOPWORDS is textrules.BM25_STOPWORDS
    assert numbers.STOPWORDS is textrules.ANSWER_STOPWORDS
    assert text._STOPWORDS is textrules.HIGHLIGHT_STOPWORDS
    # The shared function words are dropped everywhere; negations only where answers are matched.
    assert textrules.FUNCTION_WORDS <= lexical.STOPWORDS & numbers.STOPWORDS & text._STOPWORDS
    assert "not" in numbers.STOPWORDS and "not" not in lexical.STOPWORDS
