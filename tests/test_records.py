"""Records files (CSV, JSON Lines): reading, validation findings, refusal."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ragloupe.ingest import format_findings, load_source, validate_records
from ragloupe.ingest.validate import find_welded_footnotes

GUIDANCE = Path(__file__).resolve().parents[1] / "data/benchmarks/natech/guidance.csv"

LONG = ("Natech accidents are technological accidents triggered by natural hazards; "
        "operators should assess them together with their usual process risks.")


def _csv(path: Path, rows: list[dict], header: list[str] | None = None) -> Path:
    header = header or list(rows[0])
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _codes(doc) -> list[tuple[str, str, int | None]]:
    return [(f.severity, f.code, f.row) for f in doc.findings]


# --- the shipped corpus --------------------------------------------------------

def test_shipped_guidance_loads_one_page_per_chapter_with_string_ids(settings):
    doc = load_source(GUIDANCE, settings)

    assert doc.error is None and not doc.blocked
    assert (doc.doc_id, doc.kind, len(doc.pages)) == ("guidance", "records", 44)
    ids = [p.record_id for p in doc.pages]
    assert len(set(ids)) == 44 and "4.6.2.2" in ids and "5.5" in ids
    first = doc.pages[0]
    assert (first.page, first.record_id, first.method) == (1, "1", "record")
    assert first.title and first.section == first.title
    assert all(p.indexable for p in doc.pages)


def test_shipped_guidance_reports_exactly_the_three_known_welded_footnotes(settings):
    doc = validate_records(GUIDANCE, settings)

    welded = {(f.record_id, f.message.split(": ", 2)[-1].split("'")[1])
              for f in doc.findings if f.code == "welded_footnote"}
    assert welded == {("1", "(2012/18/EC)1"), ("3", "ISO-310002"), ("4.2", "situations3.")}
    assert all(f.severity == "review" for f in doc.findings)
    assert len(doc.findings) == 3  # no short text, no missing title, nothing else


# --- reading --------------------------------------------------------------------

def test_dotted_ids_stay_strings_and_columns_match_case_insensitively(tmp_path, settings):
    path = _csv(tmp_path / "c.csv", [
        {"CHAPTER": "4.10", "TITLE": "Ten", "Body": LONG},
        {"CHAPTER": "4.1", "TITLE": "One", "Body": LONG}])

    doc = load_source(path, settings)

    assert [p.record_id for p in doc.pages] == ["4.10", "4.1"]
    assert [p.title for p in doc.pages] == ["Ten", "One"]


def test_semicolon_separated_csv_is_read(tmp_path, settings):
    path = tmp_path / "c.csv"
    path.write_text(f'Id;Title;Text\n"7";Seven;"{LONG}; more"\n', encoding="utf-8")

    doc = load_source(path, settings)

    assert [(p.record_id, p.title, p.text) for p in doc.pages] == [("7", "Seven", LONG + "; more")]


def test_page_field_is_used_when_present_else_the_ordinal(tmp_path, settings):
    path = _jsonl(tmp_path / "r.jsonl", [
        {"id": 7, "text": LONG, "title": "a", "page": 12},
        {"id": 8, "text": LONG, "title": "b"},
        {"id": 9, "text": LONG, "title": "c", "page": "x"}])

    doc = load_source(path, settings)

    assert [(p.record_id, p.page) for p in doc.pages] == [("7", 12), ("8", 2), ("9", 3)]
    assert _codes(doc) == [("review", "bad_page", 3)]


def test_section_field_is_kept_apart_from_the_title(tmp_path, settings):
    path = _jsonl(tmp_path / "r.jsonl", [{"id": "a", "title": "T", "section": "S", "text": LONG}])

    page = load_source(path, settings).pages[0]

    assert (page.title, page.section) == ("T", "S")


def test_file_without_a_text_column_is_refused_naming_the_candidates(tmp_path, settings):
    path = _csv(tmp_path / "c.csv", [{"id": "1", "words": LONG}])

    doc = load_source(path, settings)

    assert doc.error == "no text column: expected one of text, content, body (found: id, words)"
    assert doc.pages == ()


def test_unparseable_jsonl_line_is_a_blocking_finding_with_its_line_number(tmp_path, settings):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "a", "title": "t", "text": LONG}) + "\n\n"
                    + '{"id": "b", "text": "unterminated\n' + '["not", "an", "object"]\n')

    doc = load_source(path, settings)

    messages = [f.message for f in doc.findings if f.code == "parse_error"]
    assert len(messages) == 2
    assert messages[0].startswith("line 3: invalid JSON")
    assert messages[1] == "line 4: expected a JSON object, got list"
    assert doc.blocked and doc.pages == ()


def test_csv_row_with_a_wrong_field_count_is_a_blocking_finding(tmp_path, settings):
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,text\n1,One,"{LONG}"\n2,Two,"{LONG}",extra\n3,Three,"{LONG}"\n')

    doc = load_source(path, settings)

    assert [f.message for f in doc.findings] == ["line 3: 4 fields, the header has 3"]
    assert doc.error.startswith("refused: line 3: 4 fields")


def test_quoted_line_break_stays_inside_its_record_and_line_numbers_follow(tmp_path, settings):
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,text\n1,One,"{LONG}\nsecond line"\n2,Two,"{LONG}",extra\n')

    doc = load_source(path, settings)

    assert [f.message for f in doc.findings] == ["line 4: 4 fields, the header has 3"]


def test_unicode_line_separator_inside_a_field_does_not_split_the_record(tmp_path, settings):
    csv_path = tmp_path / "c.csv"
    csv_path.write_text(f'id,title,text\n1,One,"{LONG}\u2028more\x0cand more"\n', encoding="utf-8")
    jsonl_path = tmp_path / "r.jsonl"
    jsonl_path.write_text(json.dumps({"id": 1, "title": "One", "text": LONG + "\u2028x"},
                                     ensure_ascii=False) + "\n", encoding="utf-8")

    for path in (csv_path, jsonl_path):
        doc = load_source(path, settings)
        assert doc.findings == () and len(doc.pages) == 1


def test_csv_with_a_stray_quote_is_a_blocking_finding_with_its_line(tmp_path, settings):
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,text\n1,One,"{LONG}"\n2,Two,"{LONG}"x\n')

    doc = load_source(path, settings)

    assert [(f.code, f.message.split(":")[0]) for f in doc.findings] == [("parse_error", "line 3")]
    assert doc.blocked


def test_non_utf8_file_is_refused_with_the_line(tmp_path, settings):
    path = tmp_path / "c.csv"
    path.write_bytes(b"id,text\n1,caf\xe9 " + LONG.encode() + b"\n")

    doc = load_source(path, settings)

    assert doc.error.startswith("not UTF-8 text (line 2")


# --- blocking and review findings ---------------------------------------------

def test_empty_text_duplicate_id_and_missing_id_refuse_the_whole_file(tmp_path, settings):
    path = _csv(tmp_path / "c.csv", [
        {"id": "1", "title": "ok", "text": LONG},
        {"id": "2", "title": "empty", "text": "   "},
        {"id": "1", "title": "dup", "text": LONG},
        {"id": "", "title": "no id", "text": LONG}])

    doc = load_source(path, settings)

    assert _codes(doc) == [("blocking", "empty_text", 2), ("blocking", "duplicate_id", 3),
                           ("blocking", "missing_id", 4)]
    assert doc.blocked and doc.pages == ()
    assert doc.error == ("refused: row 2 (id 2): empty text; and 2 more blocking findings "
                         "(see `ragloupe validate`)")


def test_short_text_and_missing_title_are_review_findings_that_do_not_block(tmp_path, settings):
    path = _csv(tmp_path / "c.csv", [
        {"id": "1", "title": "Scope", "text": "1.1 Scope"},
        {"id": "2", "title": "", "text": LONG}])

    doc = load_source(path, settings)

    assert _codes(doc) == [("review", "short_text", 1), ("review", "missing_title", 2)]
    assert not doc.blocked and doc.error is None
    assert [p.record_id for p in doc.pages] == ["1", "2"]


def test_short_text_threshold_is_the_setting(tmp_path, settings):
    path = _csv(tmp_path / "c.csv", [{"id": "1", "title": "Scope", "text": "1.1 Scope of it"}])

    doc = load_source(path, settings.replace(record_min_chars=10))

    assert doc.findings == ()


def test_format_findings_gives_a_verdict_and_one_line_per_finding(tmp_path, settings):
    path = _csv(tmp_path / "c.csv", [
        {"id": "1", "title": "a", "text": LONG}, {"id": "1", "title": "b", "text": "short"}])

    report = format_findings(validate_records(path, settings))

    lines = report.splitlines()
    assert lines[0] == "c.csv: REFUSED (nothing will be indexed); 1 blocking and 1 review findings"
    assert lines[1].split()[:2] == ["blocking", "duplicate_id"]
    assert lines[2].split()[:2] == ["review", "short_text"]


# --- welded footnote markers ------------------------------------------------------

def _welded(*texts: str) -> list[str]:
    return [w.token for w in find_welded_footnotes(list(texts))]


def test_footnote_welded_after_a_bracket_word_or_standard_number_is_found():
    texts = ("the Seveso III Directive (2012/18/EC)1 applies",
             "in hazardous situations3. Then more",
             "an approach based on ISO-310002 in the context",
             "risk management follows ISO 31000:2009(E) here")

    assert _welded(*texts) == ["(2012/18/EC)1", "situations3.", "ISO-310002"]


def test_footnote_check_is_quiet_on_figure_1_next_to_figure_10():
    assert _welded("as shown in Figure 1 and", "compare Figure 10 with Figure 1.") == []


def test_footnote_check_is_quiet_on_a_section_next_to_its_subsection():
    assert _welded("see Section 4.6.1 for details", "Section 4.6.1.1 lists them",
                   "4.6.1.1 Scenarios follow from 4.6.1.") == []


def test_footnote_check_is_quiet_on_a_number_followed_by_a_full_stop():
    assert _welded("The directive was adopted in 2012.", "It covers 31000. Totals were 12.",
                   "see Table 4. and ISO 31000.") == []


def test_word_with_digits_that_recurs_is_a_name_not_a_footnote():
    assert _welded("the covid19 response", "during covid19 the board met") == []
