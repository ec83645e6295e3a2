"""Gates before generation (generate/answer_gates.py): the context is checked before any LLM call."""

from __future__ import annotations

import pytest

from api_server import ApiServer
from conftest import write_records
from llm_server import FakeLlmServer, chat_reply
from ragloupe.generate.answer import answer
from ragloupe.generate.answer_gates import check_gates, figure_gate, statements
from ragloupe.models import Chunk, Hit, Ranking

LIMIT_A = "The core revenue resource limit was £1,278,771 thousand for the year."
LIMIT_B = "The core revenue resource limit was £1,300,000 thousand for the year."
QUESTION = "What was the core revenue resource limit?"


def _chunk(chunk_id: str, text: str, page: int = 1, doc_id: str = "report", kind: str = "text") -> Chunk:
    return Chunk(chunk_id, doc_id, page, 0, text, len(text.split()), "clean", kind=kind)


def test_one_figure_stated_with_two_values_in_two_passages_fails_the_figure_gate():
    gate = figure_gate([_chunk("a", LIMIT_A, 2), _chunk("b", LIMIT_B, 9)], {})
    assert not gate.passed
    assert gate.problems == ("'core revenue resource limit' (report) is £1,278,771 thousand in [1] "
                             "but £1,300,000 thousand in [2]",)


def test_one_figure_written_two_ways_agrees():
    prose = _chunk("a", "The underspend against the core revenue resource limit was £0.769m.")
    table = _chunk("b", "| Item | £000 |\n|---|---|\n| Underspend against the core revenue resource limit | 769 |",
                   page=3, kind="table")
    assert figure_gate([prose, table], {}).passed


def test_different_years_and_different_documents_are_not_compared():
    by_year = [_chunk("a", "Staff costs in 2020/21 were £450m."), _chunk("b", "Staff costs in 2021/22 were £500m.")]
    assert figure_gate(by_year, {}).passed
    two_reports = [_chunk("a", LIMIT_A, doc_id="Grampian-2020-2021"),
                   _chunk("b", LIMIT_B, doc_id="Grampian-2021-2022")]
    assert figure_gate(two_reports, {}).passed
    # ... unless both documents are of the same fiscal period, which search says per hit.
    assert not figure_gate(two_reports, {"a": "period 2020/21", "b": "period 2020/21"}).passed


def test_table_figures_are_labelled_by_row_and_column_year():
    table = _chunk("t", "| Item | 2021 £000 | 2020 £000 |\n|---|---|---|\n| Staff costs | 1,500 | 1,450 |"
                        "\n| Section | 7.1 | 7.2 |", kind="table")
    # A bare 7.1 says nothing of what it is (a section number?): it is no figure to compare.
    assert [(s.label, s.quantity.raw) for s in statements(table, 1)] == [
        (("staff", "cost", "2021"), "1,500"), (("staff", "cost", "2020"), "1,450")]


def test_a_limit_and_its_underspend_are_two_figures_not_one():
    limit = _chunk("a", "The core revenue resource limit was £1,278,771 thousand.")
    underspend = _chunk("b", "The core revenue resource limit was underspent by £769 thousand.", page=4)
    assert figure_gate([limit, underspend], {}).passed


def test_a_passage_that_maps_to_no_indexed_unit_fails_the_citation_gate():
    chunks = [_chunk("a", LIMIT_A, 2), _chunk("b", "Other text.", 7)]
    report = check_gates(chunks, {"report#p2"})
    assert [g.name for g in report.failed] == ["citations"]
    assert "[2] report#p7 is not a unit the index manifest holds" in report.failed[0].problems[0]
    assert check_gates(chunks, {"report#p2", "report#p7"}).passed


def test_a_failed_gate_withholds_the_answer_and_spends_no_llm_call(settings):
    ranking = Ranking(QUESTION, "hybrid", (Hit(_chunk("a", LIMIT_A, 2), 1, 1.0),
                                            Hit(_chunk("b", LIMIT_B, 9), 2, 0.9)))
    with FakeLlmServer(lambda path, body: chat_reply(path, "It was £1,278,771 thousand [1].")) as llm:
        gated = settings.replace(llm_backend="ollama", ollama_base_url=llm.url, ollama_model="fake-model",
                                 answer_gates=True)
        result = answer(QUESTION, ranking, gated, count_tokens=lambda t: len(t.split()),
                        indexed_units={"report#p2", "report#p9"})
        assert llm.requests == []
        assert result.withheld and result.text == "" and [p.number for p in result.passages] == [1, 2]
        assert result.as_dict()["gates"]["failed"] == ["figures"]
        passed = answer(QUESTION, Ranking(QUESTION, "hybrid", ranking.hits[:1]), gated,
                        count_tokens=lambda t: len(t.split()), indexed_units={"report#p2"})
        assert len(llm.requests) == 1 and not passed.withheld and passed.gates.passed


@pytest.fixture
def conflicting_index(tmp_path, settings):
    """A real index of one records file whose two records give one figure two values."""
    from ragloupe.index.pipeline import run_index

    source = write_records(tmp_path / "budget.csv", [
        ("r1", "Budget summary", LIMIT_A + " The board met all three financial targets this year."),
        ("r2", "Budget restated", LIMIT_B + " The board met all three financial targets this year.")])
    summary = run_index([source], settings)
    assert not summary.errors
    return settings


def test_the_api_says_which_gate_failed_shows_the_passages_and_asks_no_llm(conflicting_index):
    with FakeLlmServer(lambda path, body: chat_reply(path, "It was £1,278,771 thousand [1].")) as llm:
        settings = conflicting_index.replace(llm_backend="ollama", ollama_base_url=llm.url,
                                             ollama_model="fake-model")
        with ApiServer(settings) as api:
            body = {"question": QUESTION, "k": 2, "include_generated_answer": True, "mode": "dense"}
            gated = api.client.post("/api/v1/search", json={**body, "gates": True})
            assert gated.status_code == 200, gated.text
            data = gated.json()
            assert llm.requests == []
            assert data["answer"]["withheld"] is True and data["screen"] is None
            assert data["generation_status"] == "gated" and data["generated_answer"] is None
            assert data["answer"]["gates"]["failed"] == ["figures"]
            assert {p["chunk"]["record_id"] for p in data["answer"]["passages"]} == {"r1", "r2"}
            ungated = api.client.post("/api/v1/search", json=body).json()  # the setting is off
            assert len(llm.requests) == 1 and ungated["answer"]["withheld"] is False
