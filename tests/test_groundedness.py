"""The groundedness screen on real corpus text (Grampian 2020/21 and the JRC Natech guidance)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragloupe.generate.groundedness import extract_checkables, screen, split_sentences

BENCH = Path(__file__).resolve().parents[1] / "data" / "benchmarks"


def grampian_page(page: int, doc: str = "Grampian-2020-2021") -> str:
    with open(BENCH / "grampian" / "pages" / f"{doc}.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["page"] == page:
                return record["text"]
    raise LookupError(page)


def natech_record(chapter: str) -> str:
    with open(BENCH / "natech" / "guidance.csv", encoding="utf-8", newline="") as rows:
        return next(r["Content"] for r in csv.DictReader(rows) if r["Chapter"] == chapter)


def bracket_citations(text: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(start=m.start(), end=m.end(), passage=int(m.group(1)))
            for m in re.finditer(r"\[(\d+)\]", text)]


def run_screen(answer: str, passages: list[str]):
    return screen(answer, bracket_citations(answer), passages)


@pytest.fixture(scope="module")
def finance_pages() -> list[str]:
    """[1] page 28 (statutory targets table), [2] page 29 (a neighbouring finance page)."""
    return [grampian_page(28), grampian_page(29)]


def test_true_figure_cited_to_its_page_is_not_contradicted(finance_pages):
    result = run_screen("The Core Revenue Resource Limit was £1,278,771 (£000) [1].", finance_pages)
    assert result.verdict == "NOT_CONTRADICTED"
    assert result.tokens[0].found_in == (1,)


def test_altered_figure_is_unsupported(finance_pages):
    result = run_screen("The Core Revenue Resource Limit was £1,278,717 (£000) [1].", finance_pages)
    assert result.verdict == "UNSUPPORTED"
    assert result.tokens[0].found_in == ()


def test_last_digit_of_a_seven_digit_figure_matters(finance_pages):
    assert run_screen("The limit was £1,278,773 (£000) [1].", finance_pages).verdict == "UNSUPPORTED"


def test_right_figure_cited_to_wrong_page_is_misattributed(finance_pages):
    result = run_screen("The Core Revenue Resource Limit was £1,278,771 (£000) [2].", finance_pages)
    assert result.verdict == "MISATTRIBUTED"
    assert result.tokens[0].cited == (2,) and result.tokens[0].found_in == (1,)


def test_uncited_figure_found_in_a_passage_is_misattributed(finance_pages):
    assert run_screen("The cash requirement was £1,298,124 (£000).", finance_pages).verdict == "MISATTRIBUTED"


def test_variance_stated_with_its_operands_is_derived(finance_pages):
    # 1,311,111 (total revenue limit) - 1,298,124 (cash requirement) = 12,987: printed nowhere.
    assert "12,987" not in finance_pages[0] and "12,987" not in finance_pages[1]
    result = run_screen("The total revenue limit of £1,311,111 (£000) exceeded the cash requirement of "
                        "£1,298,124 (£000) by £12,987 (£000) [1].", finance_pages)
    assert [t.verdict for t in result.tokens] == ["NOT_CONTRADICTED", "NOT_CONTRADICTED", "DERIVED"]
    assert "1,311,111" in result.tokens[2].evidence and "1,298,124" in result.tokens[2].evidence


def test_precise_variance_of_two_page_figures_is_derived_from_the_page(finance_pages):
    # The answer does not state what it was computed from, but 12,987 = 1,311,111 − 1,298,124 on the
    # page, and so few five-digit figures equal some arithmetic of that page that chance cannot explain it.
    for answer in ("The limit exceeded the cash requirement by £12,987 (£000) [1].",
                   "That is a headroom of £12.987m [1]."):
        token = run_screen(answer, finance_pages).tokens[0]
        assert token.verdict == "DERIVED"
        assert "1,311,111 − 1,298,124, both in passage [1]" in token.evidence
    assert run_screen("That is a headroom of £12.986m [1].", finance_pages).verdict == "UNSUPPORTED"


def test_passage_arithmetic_is_tried_only_where_chance_cannot_explain_it():
    sparse = ["Zone A extends 300 m from the plant and zone B extends a further 200 m."]
    total = run_screen("The zones extend 500 m in total [1].", sparse).tokens[0]
    assert total.verdict == "DERIVED" and "300 m + 200 m" in total.evidence
    assert run_screen("Zone A is 100 m longer than zone B [1].", sparse).verdict == "DERIVED"
    assert run_screen("The zones extend 600 m in total [1].", sparse).verdict == "UNSUPPORTED"
    # The same sum on a passage holding every tenth length from 100 m to 990 m: a random length
    # would equal some sum or difference there, so the true sum is not taken as evidence.
    dense = [sparse[0] + " Other distances: " + ", ".join(f"{v} m" for v in range(105, 1000, 10))]
    assert run_screen("The zones extend 500 m in total [1].", dense).verdict == "UNSUPPORTED"


def test_percentage_stated_with_its_operands_is_derived(finance_pages):
    # 1,278,002 / 1,278,771 = 99.9399 %
    result = run_screen("The Board spent £1,278,002 (£000) of its core limit of £1,278,771 (£000), "
                        "99.94% [1].", finance_pages)
    assert [t.verdict for t in result.tokens] == ["NOT_CONTRADICTED", "NOT_CONTRADICTED", "DERIVED"]
    # Without its operands it is the same share of two figures of the page, which at two decimals
    # chance would explain for under 2% of percentages; one hundredth off is not.
    assert run_screen("The Board spent 99.94% of its core limit [1].", finance_pages).verdict == "DERIVED"
    assert run_screen("The Board spent 99.95% of its core limit [1].", finance_pages).verdict == "UNSUPPORTED"


def test_sum_and_difference_of_two_cited_lengths_are_derived():
    # JRC Natech guidance 4.6.1.1: hole sizes of 10 mm and 50 mm (and others) for leak scenarios.
    passage = [natech_record("4.6.1.1")]
    assert "10 mm" in passage[0] and "50 mm" in passage[0] and "60 mm" not in passage[0]
    total = run_screen("Holes of 10 mm and 50 mm are assumed, 60 mm together [1].", passage)
    assert [t.verdict for t in total.tokens] == ["NOT_CONTRADICTED", "NOT_CONTRADICTED", "DERIVED"]
    gap = run_screen("Holes of 10 mm and 50 mm are assumed, a difference of 40 mm [1].", passage)
    assert gap.tokens[-1].verdict == "DERIVED"
    wrong = run_screen("Holes of 10 mm and 50 mm are assumed, 70 mm together [1].", passage)
    assert wrong.tokens[-1].verdict == "UNSUPPORTED"


def test_arithmetic_needs_operands_in_the_same_unit():
    passage = [natech_record("4.6.1.1")]
    mixed = run_screen("Holes of 10 mm and 50 mm are assumed, £60m together [1].", passage)
    assert mixed.tokens[-1].verdict == "UNSUPPORTED"


def test_arithmetic_needs_operands_the_sentence_cites(finance_pages):
    # The same sum, but its operands are cited to the other page, where they are not.
    result = run_screen("The total revenue limit of £1,311,111 (£000) exceeded the cash requirement of "
                        "£1,298,124 (£000) by £12,987 (£000) [2].", finance_pages)
    assert [t.verdict for t in result.tokens] == ["MISATTRIBUTED", "MISATTRIBUTED", "UNSUPPORTED"]


def test_money_never_matches_a_length_or_a_duration():
    passage = ["The pipe wall was 1.3 mm thick after 47.3 years in service."]
    assert run_screen("Repairs cost £1.3m [1].", passage).verdict == "UNSUPPORTED"
    assert run_screen("Funding of £47.3m was received [1].", passage).verdict == "UNSUPPORTED"
    assert run_screen("The wall was 1.3 mm thick [1].", passage).verdict == "NOT_CONTRADICTED"


def test_made_up_percentages_on_a_cash_flow_page_do_not_pass():
    import random

    page = grampian_page(84)  # the consolidated cash flow statement: over two hundred figures
    rng, passed, tried = random.Random(7), 0, 0
    written = set(re.findall(r"\d+(?:\.\d+)?", page))
    while tried < 200:
        value = f"{rng.uniform(0.1, 99.9):.1f}"
        if value in written:
            continue
        tried += 1
        verdict = run_screen(f"Cash grew by {value}% over the year [1].", [page]).verdict
        passed += verdict in ("NOT_CONTRADICTED", "DERIVED")
    assert passed == 0


def test_rounded_figure_is_refused_where_a_page_matches_random_figures_by_chance():
    sparse = ["Capital receipts were £12,287 (£000) in the year."]
    assert run_screen("Capital receipts were £12.3m [1].", sparse).verdict == "NOT_CONTRADICTED"
    dense = [sparse[0] + " Other lines: " + ", ".join(f"{v:,}" for v in range(10_050, 99_950, 900))]
    result = run_screen("Capital receipts were £12.3m [1].", dense)
    assert result.verdict == "UNSUPPORTED"
    assert "rounds to '£12,287 (£000)'" in result.tokens[0].evidence and "by chance" in result.tokens[0].evidence


def test_coarse_figure_is_not_explained_by_chance_arithmetic(finance_pages):
    # £6.3m is in no passage; with two significant digits some pair of figures would sum to it.
    assert run_screen("Funding of £6.3m was banked [1].", finance_pages).verdict == "UNSUPPORTED"


def test_coarse_figure_is_derived_only_when_the_answer_shows_its_operands():
    # Grampian 2022/23 page 24: savings of £10.2 million against a target of £5.4 million.
    page = [grampian_page(24, "Grampian-2022-2023")]
    shown = run_screen("Savings exceeded the target by £4.8 million (£10.2 million achieved against "
                       "£5.4 million) [1].", page)
    assert [t.verdict for t in shown.tokens] == ["DERIVED", "NOT_CONTRADICTED", "NOT_CONTRADICTED"]
    bare = run_screen("Savings exceeded the target by £4.8 million [1].", page)
    assert bare.verdict == "UNSUPPORTED"


def test_arithmetic_uses_only_the_cited_passages(finance_pages):
    result = run_screen("The total revenue limit exceeded the cash requirement by £12,987 (£000) [2].",
                        finance_pages)
    assert result.verdict == "UNSUPPORTED"


def test_prose_scale_matches_table_in_thousands(finance_pages):
    result = run_screen("The Board reported an underspend of £0.769m [1].", finance_pages)
    assert result.verdict == "NOT_CONTRADICTED"


def test_sentence_without_figures_is_unverifiable_not_a_pass(finance_pages):
    result = run_screen("Grampian Health Board achieved all three financial targets [1].", finance_pages)
    assert result.verdict == "UNVERIFIABLE"
    assert result.tokens == () and result.checkable_share == 0.0


NEGATED = "NHS Grampian did not receive £47.3m of non-repayable funding [1]."


@pytest.mark.xfail(strict=True, reason="known false pass: the screen matches figures, not meaning, "
                                       "so a negated sentence whose figure is on the cited page "
                                       "passes as NOT_CONTRADICTED (groundedness.LIMITS)")
def test_a_negated_claim_is_not_passed(finance_pages):
    assert run_screen(NEGATED, finance_pages).verdict != "NOT_CONTRADICTED"


def test_the_screen_names_negation_among_its_limits(finance_pages):
    assert "negated" in run_screen(NEGATED, finance_pages).limits


def test_one_unsupported_figure_makes_the_answer_unsupported(finance_pages):
    result = run_screen("The limit was £1,278,771 (£000) [1]. The outturn was £1,278,999 (£000) [1].",
                        finance_pages)
    assert [t.verdict for t in result.tokens] == ["NOT_CONTRADICTED", "UNSUPPORTED"]
    assert result.verdict == "UNSUPPORTED"


def test_checkable_share_counts_sentences_with_tokens(finance_pages):
    result = run_screen("The Board met its targets [1]. The limit was £1,278,771 (£000) [1].", finance_pages)
    assert (result.n_sentences, result.n_checkable_sentences) == (2, 1)
    assert result.checkable_share == 0.5


def test_uncited_sentence_takes_the_next_citation_of_its_paragraph(finance_pages):
    result = run_screen("The core limit was £1,278,771 (£000). The outturn was £1,278,002 (£000) [1].",
                        finance_pages)
    assert result.verdict == "NOT_CONTRADICTED"


def test_sentence_citing_a_missing_passage_does_not_borrow_citations(finance_pages):
    text = "The core limit was £1,278,771 (£000) [7]. The outturn was £1,278,002 (£000) [1]."
    citations = [SimpleNamespace(start=text.index("[7]"), end=text.index("[7]") + 3, passage=None),
                 SimpleNamespace(start=text.index("[1]"), end=text.index("[1]") + 3, passage=1)]
    result = screen(text, citations, finance_pages)
    assert [t.verdict for t in result.tokens] == ["MISATTRIBUTED", "NOT_CONTRADICTED"]


def test_standard_and_eu_act_are_checked_against_records():
    passages = [natech_record("3.2"), natech_record("1")]
    ok = run_screen("Risk criteria follow ISO 31000 [1]. The Seveso III Directive 2012/18/EU applies [2].",
                    passages)
    assert [(t.kind, t.verdict) for t in ok.tokens] == [("standard", "NOT_CONTRADICTED"),
                                                         ("eu_act", "NOT_CONTRADICTED")]
    wrong = run_screen("Risk criteria follow ISO 31010 [1].", passages)
    assert wrong.verdict == "UNSUPPORTED"


def test_quantity_with_unit_must_match_its_unit():
    passage = [natech_record("4.6.1.1")]
    assert run_screen("A minor leak is a hole of 10 mm [1].", passage).verdict == "NOT_CONTRADICTED"
    assert run_screen("A minor leak is a hole of 10 m [1].", passage).verdict == "UNSUPPORTED"


def test_percentage_from_record_text():
    passage = [natech_record("4.3")]
    assert run_screen("Lightning caused over 90% of tank fires [1].", passage).verdict == "NOT_CONTRADICTED"
    assert run_screen("Lightning caused over 80% of tank fires [1].", passage).verdict == "UNSUPPORTED"


def test_checkables_skip_years_citations_and_page_numbers():
    kinds = [(c.raw, c.kind) for c in extract_checkables(
        "In 2020/21 (page 28) the limit was £1,278,771 [3], with 3.5 m/s winds and API 650 tanks.")]
    assert kinds == [("£1,278,771", "quantity"), ("3.5 m/s", "quantity"), ("API 650", "standard")]


def test_citation_after_full_stop_stays_with_its_sentence():
    text = "First figure is £5m. [1] Second sentence here."
    first, second = split_sentences(text)
    assert text[first[0]:first[1]] == "First figure is £5m. [1]"
    assert text[second[0]:second[1]] == "Second sentence here."


def test_found_token_carries_its_offsets_in_the_passage(finance_pages):
    result = run_screen("NHS Grampian received £47.3m [1].", finance_pages)
    number, start, end = result.tokens[0].passage_spans[0]
    assert number == 1 and finance_pages[0][start:end] == "£47.3m"
