"""Gold sets: the three formats and their validation (ragloupe.evaluate.goldset)."""

import json
from pathlib import Path

import pytest

from ragloupe.errors import GoldSetInvalid
from ragloupe.evaluate.goldset import DocumentInfo, load_goldset, validate_goldset

BENCH = Path(__file__).resolve().parents[1] / "data/benchmarks"


def _write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_shipped_grampian_set_loads_with_categories_from_query_ids():
    gold = load_goldset(BENCH / "grampian/eval/Grampian-2020-2021.eval.json")
    assert gold.format == "grampian"
    assert len(gold.queries) == 50
    first = gold.queries[0]
    assert first.category == "FIN"
    assert first.expected_units == ("Grampian-2020-2021#p28",)
    assert {q.difficulty for q in gold.queries} == {"LEX", "MOD", "STR"}


def test_shipped_record_level_set_names_record_units():
    gold = load_goldset(BENCH / "natech/guidance.gold.json")
    assert gold.format == "records"
    assert len(gold.queries) >= 15
    assert all(q.level == "record" for q in gold.queries)
    assert gold.queries[0].expected_units[0].startswith("guidance#")


def test_flat_list_format_uses_document_stem(tmp_path):
    path = _write(tmp_path, "flat.json", [
        {"id": "a1", "question": "What was spent?", "expected_document": "Report-2020.pdf",
         "expected_pages": [3, "4"], "reference_answer": "£5m", "category": "FIN"}])
    gold = load_goldset(path)
    assert gold.format == "flat"
    (query,) = gold.queries
    assert (query.doc_id, query.expected_pages, query.expected_answer) == ("Report-2020", (3, 4), "£5m")


def test_duplicate_ids_keep_the_first_and_report_the_rest(tmp_path):
    path = _write(tmp_path, "dup.json", [
        {"id": "q1", "question": "first?", "expected_document": "d", "expected_pages": [1]},
        {"id": "q1", "question": "second?", "expected_document": "d", "expected_pages": [2]}])
    gold = load_goldset(path)
    assert [q.question for q in gold.queries] == ["first?"]
    assert [f.code for f in gold.findings] == ["duplicate_id"]


def test_empty_question_is_a_finding_and_the_rest_still_load(tmp_path):
    path = _write(tmp_path, "empty.json", {"_meta": {"doc_id": "d"}, "queries": [
        {"query_id": "q1", "question": "  ", "expected_pages": [1]},
        {"query_id": "q2", "question": "ok?", "expected_pages": [2]}]})
    gold = load_goldset(path)
    assert [q.query_id for q in gold.queries] == ["q2"]
    assert gold.findings[0].code == "empty_question"
    assert "q1" in gold.findings[0].message


def test_query_without_expected_unit_is_a_finding(tmp_path):
    path = _write(tmp_path, "nounit.json", {"_meta": {"doc_id": "d"}, "queries": [
        {"query_id": "q1", "question": "where?", "expected_pages": []}]})
    assert load_goldset(path).findings[0].code == "no_expected_unit"


def test_validation_reports_unknown_document_and_page_beyond_end(tmp_path):
    path = _write(tmp_path, "v.json", {"_meta": {}, "queries": [
        {"query_id": "q1", "question": "a?", "doc_id": "known", "expected_pages": [3, 12]},
        {"query_id": "q2", "question": "b?", "doc_id": "unknown", "expected_pages": [1]}]})
    findings = validate_goldset(load_goldset(path), {"known": DocumentInfo("known", n_pages=10)})
    by_code = {f.code: f for f in findings}
    assert set(by_code) == {"page_out_of_range", "unknown_document"}
    assert "page 12" in by_code["page_out_of_range"].message
    assert "10 pages" in by_code["page_out_of_range"].message
    assert by_code["unknown_document"].query_id == "q2"


def test_validation_reports_unknown_record(tmp_path):
    path = _write(tmp_path, "r.json", {"_meta": {"doc_id": "guidance"}, "queries": [
        {"query_id": "q1", "question": "a?", "expected_chapters": ["4.6.1", "9.9"]}]})
    docs = {"guidance": DocumentInfo("guidance", 44, record_ids=frozenset({"4.6.1"}))}
    (finding,) = validate_goldset(load_goldset(path), docs)
    assert finding.code == "unknown_record"
    assert "9.9" in finding.message


def test_not_json_is_refused_with_a_one_line_reason(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(GoldSetInvalid, match="not valid JSON"):
        load_goldset(path)


def test_unknown_shape_is_refused(tmp_path):
    with pytest.raises(GoldSetInvalid, match="unknown gold-set format"):
        load_goldset(_write(tmp_path, "odd.json", {"items": []}))


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(GoldSetInvalid, match="cannot read"):
        load_goldset(tmp_path / "nope.json")


# --- label audit ------------------------------------------------------------------

from ragloupe.evaluate.audit import ANSWER_ELSEWHERE, DISAGREES, audit_query  # noqa: E402
from ragloupe.evaluate.goldset import GoldQuery  # noqa: E402
from ragloupe.config import PROJECT_ROOT  # noqa: E402

BENCHMARKS = PROJECT_ROOT / "data" / "benchmarks"

TEXTS = {
    "d#p11": "Our vision, proudly working together to improve our health, is supported by themes.",
    "d#p12": "The core values of the Board are caring, listening and improving.",
    "d#p21": "Core Revenue Resource Limit 1,358,066 1,357,936 130",
    "d#p79": "Clinicians 11 14 193 166",
    "other#p12": "proudly working together to improve our health",
}


def _query(answer, pages, answer_type="text"):
    return GoldQuery("q", "?", "d", expected_pages=tuple(pages), expected_answer=answer,
                     answer_type=answer_type, goldset="g")


def test_answer_on_another_page_is_a_suspected_label_error():
    audit = audit_query(_query("Proudly working together to improve our health", [12]), TEXTS)
    assert audit.flagged and audit.category == ANSWER_ELSEWHERE
    assert audit.found_on == ("d#p11",)
    assert audit.status_on_expected == "absent"


def test_answer_on_expected_page_is_not_flagged():
    audit = audit_query(_query("£1,358,066 (£000)", [21], "number"), TEXTS)
    assert not audit.flagged
    assert audit.status_on_expected == "found"


def test_small_integers_elsewhere_do_not_flag_a_number_answer():
    audit = audit_query(_query("Average credit taken was 11 days (2020/21: 14 days)", [25], "number"), TEXTS)
    assert not audit.flagged


def test_answer_on_no_page_is_not_flagged():
    audit = audit_query(_query("£4.8 million", [21], "number"), TEXTS)
    assert not audit.flagged
    assert "no page" in audit.note


def test_query_without_answer_is_unchecked():
    assert audit_query(_query("", [12]), TEXTS).status_on_expected == "unchecked"


def test_words_with_other_figures_elsewhere_are_a_disagreement_not_another_page():
    texts = {**TEXTS, "d#p40": "Theatre activity (cont). In 2021/22 the median wait was 21 weeks "
                               "(2020/21: 18 weeks). Lists were validated."}
    audit = audit_query(_query("The median wait was 18 weeks (2020/21: 12 weeks)", [25], "number"), texts)
    assert audit.flagged and audit.category == DISAGREES
    assert audit.found_on == ("d#p40",) and "21 weeks" in audit.note


def test_the_expected_page_itself_can_disagree_with_the_gold_answer():
    texts = {**TEXTS, "d#p25": "In 2021/22 the median wait was 21 weeks (2020/21: 18 weeks)."}
    audit = audit_query(_query("The median wait was 18 weeks (2020/21: 12 weeks)", [25], "number"), texts)
    assert audit.status_on_expected == "partial"
    assert audit.flagged and audit.category == DISAGREES and audit.found_on == ("d#p25",)


def test_words_and_small_figures_together_elsewhere_are_the_answer_on_another_page():
    texts = {**TEXTS, "d#p41": "In 2021/22 the median wait was 18 weeks (2020/21: 12 weeks)."}
    audit = audit_query(_query("The median wait was 18 weeks (2020/21: 12 weeks)", [25], "number"), texts)
    assert audit.flagged and audit.category == ANSWER_ELSEWHERE and audit.found_on == ("d#p41",)


def test_a_sentence_without_the_gold_sets_computed_figure_does_not_disagree():
    texts = {**TEXTS, "d#p24": "Efficiency savings of £7.3 million were achieved against a target of "
                               "£5.2 million."}
    audit = audit_query(_query("Exceeded by £2.1 million (£7.3 million achieved against a target of "
                               "£5.2 million)", [24], "number"), texts)
    assert not audit.flagged


def test_a_real_report_sentence_disagreeing_with_an_altered_gold_answer_is_found():
    # Grampian 2021/22: "In 2021/22 91% of invoices by value (2020/21 97%) ... were paid within 30 days."
    texts = {}
    with open(BENCHMARKS / "grampian" / "pages" / "Grampian-2021-2022.jsonl", encoding="utf-8") as lines:
        for record in map(json.loads, lines):
            texts[f"d#p{record['page']}"] = record["text"]
    true = audit_query(_query("91% of invoices by value were paid within 30 days (2020/21: 97%)", [27],
                              "number"), texts)
    assert not true.flagged and true.status_on_expected == "found"
    altered = audit_query(_query("93% of invoices by value were paid within 30 days (2020/21: 97%)", [27],
                                 "number"), texts)
    assert altered.flagged and altered.category == DISAGREES and altered.found_on == ("d#p27",)
    assert "91%" in altered.note