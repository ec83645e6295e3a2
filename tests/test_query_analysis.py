"""Query analysis: fiscal periods, amounts and codes written many ways, document periods, and search with them."""

from __future__ import annotations

from collections import defaultdict

import pytest

from retrieval_corpus import build_index, corpus_chunks
from ragloupe.models import Chunk
from ragloupe.numbers import extract_quantities, is_year
from ragloupe.retrieve.expansion import bm25_expansion
from ragloupe.retrieve.query_analysis import (
    FEATURES, Period, analyze, document_period, match_features, prefer_period)
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

FY_2020_21 = Period(2020, 2021)


@pytest.mark.parametrize("question", [
    "What was the deficit in 2020/21?",
    "What was the deficit in 2020-21?",
    "What was the deficit in 2020\u201321?",
    "What was the deficit in 2020/2021?",
    "What was the deficit in FY2020/21?",
    "What was the deficit in the financial year 2020-21?",
    "What was the deficit for the year ended 31 March 2021?",
    "What was the deficit in 2021?",
    "What was the deficit in FY21?",
    "What was the deficit at 31 March 2021?",
])
def test_every_written_form_of_a_fiscal_year_is_the_same_period(question):
    analysis = analyze(question)
    assert analysis.target_period == FY_2020_21
    assert analysis.target_period.label == "2020/21"


@pytest.mark.parametrize("question", [
    "How much was £2021 spent on?",
    "Were 2021 staff redeployed?",
    "What does ISO 2021 cover?",
    "How many beds were open?",
    "How much will the population grow over the 25-year period from 2012?",
])
def test_a_bare_number_names_no_period(question):
    assert analyze(question).periods == ()


@pytest.mark.parametrize("year", [1899, 1900, 1999, 2021, 2099, 2100, 2101])
def test_a_bare_year_names_a_period_exactly_when_numbers_calls_it_a_year(year):
    """One year rule (numbers.YEAR_PATTERN): query analysis and answer matching never disagree."""
    names_a_period = bool(analyze(f"What was the deficit in {year}?").periods)
    (figure,) = extract_quantities(str(year))
    assert names_a_period == is_year(figure) == (1900 <= year <= 2099)


def test_two_periods_target_the_later_one():
    analysis = analyze("How did IJB reserves change between 2020/21 and 2021/22?")
    assert analysis.named_periods == {Period(2020, 2021), Period(2021, 2022)}
    assert analysis.target_period == Period(2021, 2022)
    months = analyze("By what percentage did attendances rise in March 2022 compared to March 2021?")
    assert months.target_period == Period(2021, 2022)


def test_year_ended_december_is_a_calendar_year():
    assert analyze("Revenue for the year ended 31 December 2021").target_period == Period(2021, 2021)


def test_fiscal_year_start_month_moves_the_month_to_its_year():
    assert analyze("Attendances in March 2022").target_period == Period(2021, 2022)
    assert analyze("Attendances in March 2022", fy_start_month=1).target_period == Period(2022, 2022)


@pytest.mark.parametrize("written", ["£1.2m", "£1,200k", "£1,200,000", "£1.2 million", "1.2 million pounds"])
def test_amounts_in_different_notations_have_the_same_value(written):
    (amount,) = analyze(f"Was {written} spent in 2020/21?").amounts
    assert amount.scaled == pytest.approx(1_200_000)


def test_thousands_column_amount_and_percentages_are_read():
    amounts = analyze("Was the limit £1,278,771 (£000) or 12.5% higher?").amounts
    assert [a.scaled for a in amounts] == [pytest.approx(1_278_771_000), pytest.approx(12.5)]
    assert [a.percent for a in amounts] == [False, True]


@pytest.mark.parametrize("written, code", [
    ("ISO 31000", "iso 31000"), ("ISO31000", "iso 31000"), ("iso-31000", "iso 31000"),
    ("EN 1473", "en 1473"), ("EN1473", "en 1473"), ("API 650", "api 650"),
    ("Directive 2012/18/EU", "2012/18/eu"), ("Seveso III", "2012/18/eu"), ("Seveso-III", "2012/18/eu"),
])
def test_codes_with_and_without_spaces_are_one_code(written, code):
    assert [c.code for c in analyze(f"What does {written} require?").codes] == [code]


def test_a_code_number_is_neither_an_amount_nor_a_period():
    analysis = analyze("Which clauses of ISO 31000 and Directive 2012/18/EU apply?")
    assert analysis.amounts == () and analysis.periods == ()


def test_bm25_expansion_adds_the_variants_the_index_keeps_whole():
    expansion = bm25_expansion(analyze("What was spent in 2020/21 under ISO 31000?"))
    assert "2020/2021" in expansion and "iso31000" in expansion
    assert "2020/21" not in expansion  # the question has it already
    assert "2020" not in expansion and "21" not in expansion  # parts would match every year


def test_match_features_find_variants_in_a_chunk():
    analysis = analyze("Was £1.2m spent on ISO 31000 work in 2020/21?")
    chunk = Chunk(chunk_id="c", doc_id="d", page=1, position=0, quality="clean", n_tokens=20,
                  text="In 2020/2021 the board spent £1,200,000 on ISO-31000 risk work.")
    features = match_features(analysis, chunk, doc_period=FY_2020_21)
    assert list(features) == list(FEATURES)
    assert features["period_in_chunk"] == 1.0
    assert features["amount_match"] == 1.0
    assert features["code_match"] == 1.0
    assert features["doc_period_match"] == 1.0
    other = match_features(analysis, chunk, doc_period=Period(2018, 2019))
    assert other["doc_period_match"] == 0.0


def test_prefer_period_leaves_scores_alone_without_a_period():
    scores = [0.9, 0.5, 0.1]
    periods = [Period(2021, 2022), FY_2020_21, None]
    same, matches = prefer_period(analyze("How many beds were open?"), periods, scores, 1.0)
    assert same == scores and matches == [0.0, 0.0, 0.0]
    one_document, _ = prefer_period(analyze("How many beds in 2020/21?"), [FY_2020_21] * 3, scores, 1.0)
    assert one_document == scores
    boosted, matches = prefer_period(analyze("How many beds in 2020/21?"), periods, scores, 1.0)
    assert matches == [0.0, 1.0, 0.0]
    assert max(range(3), key=boosted.__getitem__) == 1


def test_document_period_of_each_demo_report(demo_index):
    from ragloupe.index.store import open_store

    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in open_store(demo_index).all_chunks():
        by_doc[chunk.doc_id].append(chunk)
    found = {doc_id: document_period(doc_id, chunks) for doc_id, chunks in by_doc.items()}
    assert found["Grampian-2020-2021"].period == Period(2020, 2021)
    assert found["Grampian-2021-2022"].period == Period(2021, 2022)
    assert found["Grampian-2022-2023"].period == Period(2022, 2023)
    assert "year ended 31 march 2021" in found["Grampian-2020-2021"].evidence
    assert found["guidance"].period is None


def test_whole_index_question_goes_to_its_years_report(demo_index, workspace_of):
    """Real reports: a question naming its year is answered from that year's report only."""
    question = "What was the Core Capital Resource Limit for the year ended 31 March 2022?"
    ranking = search(question, k=10,
                     workspace=workspace_of(demo_index), query_analysis=True, period_filter=True)
    assert ranking.filters["doc_ids"] == ["Grampian-2021-2022"]
    assert {h.chunk.doc_id for h in ranking.hits} == {"Grampian-2021-2022"}
    assert all(h.doc_period == "2021/22" and h.period_match == 1.0 for h in ranking.hits)
    undated = search("What is a Natech accident?", k=10, workspace=workspace_of(demo_index),
                     query_analysis=True, period_filter=True)
    assert "doc_ids" not in undated.filters and undated.hits[0].chunk.doc_id == "guidance"


def test_document_period_ignores_the_name_when_text_says_otherwise():
    pages = [Chunk(chunk_id="t", doc_id="report-2019-20", page=1, position=0, quality="clean",
                   n_tokens=9, text="Annual report and accounts for the year ended 31 March 2023")]
    assert document_period("report-2019-20", pages).period == Period(2022, 2023)


def _report_chunks(doc_id: str, title: str, savings: str) -> list[Chunk]:
    texts = [title, savings]
    return [Chunk(chunk_id=f"{doc_id}-p{n}", doc_id=doc_id, page=n, position=0, text=text,
                  n_tokens=len(text.split()), quality="clean") for n, text in enumerate(texts, start=1)]


@pytest.fixture(scope="module")
def two_years(tmp_path_factory, embedder):
    """Two annual reports, and the guidance records so that BM25's idf has a corpus to count over.

    The 2021/22 savings page shares more words with the questions below
    than the 2020/21 one does, so without analysis the wrong year wins.
    """
    chunks = ([c for c in corpus_chunks() if c.doc_id == "guidance"]
              + _report_chunks("board-a", "Board annual report and accounts, year ended 31 March 2021",
                               "Cost improvement programmes released £24.1m, short of the £25.0m target.")
              + _report_chunks("board-b", "Board annual report and accounts, year ended 31 March 2022",
                               "Efficiency savings delivered in the year were £26.4m against an "
                               "efficiency savings target of £26.0m."))
    return build_index(tmp_path_factory.mktemp("years"), embedder, chunks)


def _rank(ranking, chunk_id: str) -> int:
    return next(h.rank for h in ranking.hits if h.chunk.chunk_id == chunk_id)


@pytest.mark.parametrize("question", [
    "How much in efficiency savings was delivered in 2020/21?",
    "How much in efficiency savings was delivered in the year ended 31 March 2021?",
])
def test_period_boost_prefers_the_report_of_the_named_year(two_years, question):
    plain = search(question, "hybrid", 6, query_analysis=False, workspace=Workspace.open(two_years))
    assert plain.hits[0].chunk.chunk_id == "board-b-p2"  # the wrong year wins on words
    assert plain.hits[0].period_match is None and plain.query_analysis == {}
    analysed = search(question, "hybrid", 6, query_analysis=True,
                      period_filter=False, period_boost=1.0, workspace=Workspace.open(two_years))
    top = analysed.hits[0]
    assert top.chunk.doc_id == "board-a"
    assert _rank(analysed, "board-a-p2") < _rank(analysed, "board-b-p2")
    assert top.doc_period == "2020/21" and top.period_match == 1.0
    assert analysed.query_analysis["target_period"] == "2020/21"
    assert "period" in analysed.timings and "query_analysis" in analysed.timings


def test_period_filter_searches_only_the_report_of_the_named_year(two_years):
    ranking = search("How much in efficiency savings was delivered in 2020/21?", "hybrid", 6,
                     query_analysis=True, period_filter=True, workspace=Workspace.open(two_years))
    assert ranking.filters["doc_ids"] == ["board-a"]
    assert ranking.query_analysis["period_scope"] == ["board-a"]
    assert {h.chunk.doc_id for h in ranking.hits} == {"board-a"}


def test_period_filter_leaves_a_document_filter_alone(two_years):
    ranking = search("How much in efficiency savings was delivered in 2020/21?", "hybrid", 6,
                     filters={"doc_ids": ["board-b"]},
                     query_analysis=True, period_filter=True, workspace=Workspace.open(two_years))
    assert ranking.filters["doc_ids"] == ["board-b"] and ranking.query_analysis["period_scope"] == []
    assert ranking.hits[0].chunk.chunk_id == "board-b-p2"


def test_period_filter_searches_everything_when_no_document_is_of_that_year(two_years):
    ranking = search("How much in efficiency savings was delivered in 2016/17?", "hybrid", 9,
                     query_analysis=True, period_filter=True, workspace=Workspace.open(two_years))
    assert "doc_ids" not in ranking.filters
    assert {h.chunk.doc_id for h in ranking.hits} == {"board-a", "board-b", "guidance"}


def test_search_without_a_period_keeps_the_order(two_years):
    question = "How much in efficiency savings was delivered?"
    plain = search(question, "hybrid", 9, query_analysis=False, workspace=Workspace.open(two_years))
    analysed = search(question, "hybrid", 9, query_analysis=True,
                      period_filter=True, period_boost=1.0, workspace=Workspace.open(two_years))
    assert [h.chunk.chunk_id for h in analysed.hits] == [h.chunk.chunk_id for h in plain.hits]
    assert [h.score for h in analysed.hits] == [h.score for h in plain.hits]
    assert all(h.period_match is None for h in analysed.hits)
    assert {h.doc_period for h in analysed.hits} == {"2020/21", "2021/22", ""}  # guidance: none


def test_bm25_with_analysis_meets_the_period_written_another_way(tmp_path, embedder):
    chunks = [Chunk(chunk_id=f"c{n}", doc_id="report", page=n, position=0, quality="clean",
                    n_tokens=len(text.split()), text=text) for n, text in enumerate([
                        "Agency staff spending on nursing agency staff rose in 2019/20.",
                        "In 2020/2021 spending on agency staff was £3.1m.",
                        "Ward refurbishment was completed on time."], start=1)]
    settings = build_index(tmp_path, embedder, chunks)
    question = "What was agency staff spending on nursing in 2020/21?"
    plain = search(question, "bm25", 3, query_analysis=True, query_expansion=False, workspace=Workspace.open(settings))
    assert plain.hits[0].chunk.chunk_id == "c1"
    analysed = search(question, "bm25", 3, query_analysis=True, query_expansion=True,
                      workspace=Workspace.open(settings))
    assert analysed.hits[0].chunk.chunk_id == "c2"
    assert "2020/2021" in analysed.query_analysis["bm25_expansion"]


def test_amount_values_agree_with_numbers_module():
    """The analysis reads amounts with numbers.py, so the two never disagree on a value."""
    text = "Was £0.4 million covered?"
    assert analyze(text).amounts[0].scaled == extract_quantities(text)[0].scaled
