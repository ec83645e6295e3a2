"""The gold-set coverage audit: it flags a gold set drawn from one part of its documents, stays
silent on a stratified one, and warns when a learned model leans on what the skew explains."""

from __future__ import annotations

import json

import pytest

from ragloupe.config import PROJECT_ROOT
from ragloupe.evaluate import coverage as C
from ragloupe.evaluate import coverage_text as W
from ragloupe.evaluate.coverage_sources import coverage_report, document_layouts
from ragloupe.evaluate.goldset import GoldQuery, GoldSet, load_goldset
from ragloupe.models import Chunk

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
POSITION_MODEL = C.ModelWeights("a model weighting position",
                                {"bm25_rr": 0.8, "page_position": -2.9, "dense_rr": 1.1})
CONTENT_MODEL = C.ModelWeights("a model without position features",
                               {"bm25_rr": 0.8, "page_bm25_rel": 1.8, "dense_missing": -1.4})


def layout(doc_id: str, n_pages: int, sections: dict[int, str] | None = None,
           tables: set[int] = frozenset()) -> C.DocumentLayout:
    sections = sections or {}
    return C.DocumentLayout(doc_id, n_pages, tuple(
        C.UnitPlace(f"{doc_id}#p{p}", p, sections.get(p, C.NO_SECTION), p in tables)
        for p in range(1, n_pages + 1)))


def goldset(name: str, pages_by_doc: dict[str, list[int]]) -> GoldSet:
    queries = tuple(GoldQuery(f"{name}-{doc}-{i}", f"question {i}", doc, expected_pages=(page,), goldset=name)
                    for doc, pages in pages_by_doc.items() for i, page in enumerate(pages))
    return GoldSet(name, f"{name}.json", "grampian", name, queries)


@pytest.fixture(scope="module")
def reports() -> dict[str, C.DocumentLayout]:
    return {f"R{i}": layout(f"R{i}", n) for i, n in enumerate((133, 146, 154))}


def early(reports) -> GoldSet:
    """Fifty questions per report, all on pages 4-33, as the shipped benchmark's are."""
    return goldset("early", {doc: [4 + i % 30 for i in range(50)] for doc in reports})


def stratified(layouts) -> GoldSet:
    """One gold page in the middle of each tenth of each document."""
    return goldset("stratified", {doc: [int((t + 0.5) * lay.n_units / 10) + 1 for t in range(10)]
                                  for doc, lay in layouts.items()})


def test_a_set_drawn_from_the_first_pages_is_flagged_on_position(reports):
    result = C.audit([early(reports)], reports)
    position = result["goldsets"][0]["dimensions"]["position"]
    assert position["skewed"] and result["flagged"]
    window = position["flagged"][0]
    assert window["flag"] == "over" and window["share"] > 0.9 and window["expected"] <= 0.3
    assert window["strata"][0] == "0"  # the run of tenths starts at the front of the documents
    said = f"{W.percent(window['share'])} of the gold pages are in the first"
    assert any(said in w and f"(expected {W.percent(window['expected'])})" in w for w in result["warnings"])


def test_a_stratified_set_is_not_flagged(reports):
    result = C.audit([stratified(reports)], reports)
    assert not result["flagged"] and result["warnings"] == []
    assert result["goldsets"][0]["judged"]  # 30 questions: judged, and found even


def test_a_small_set_is_described_not_judged(reports):
    tiny = goldset("tiny", {"R0": [1, 2, 3, 4, 5]})
    result = C.audit([tiny], reports, [POSITION_MODEL])
    group = result["goldsets"][0]
    assert not group["judged"] and not group["skewed"] and result["warnings"] == []
    assert group["dimensions"]["position"]["strata"][0]["share"] == pytest.approx(1.0)
    assert group["note"] == ("5 question(s) placed: too few to judge (at least 20); shares are shown, "
                             "nothing is flagged")


def test_a_set_about_documents_not_in_the_index_says_that_not_too_few(reports):
    elsewhere = goldset("elsewhere", {"not-indexed": [1, 2, 3]})
    (group,) = C.audit([elsewhere], reports, [])["goldsets"]
    assert group["n_placed"] == 0 and not group["judged"]
    assert group["note"] == "none of its 3 question(s) placed: their documents are not in this index"


def test_the_model_warning_fires_for_a_model_weighting_position_on_a_skewed_set(reports):
    result = C.audit([early(reports)], reports, [POSITION_MODEL, CONTENT_MODEL])
    position_model, content_model = result["models"]
    assert len(position_model["warnings"]) == 1
    warning = position_model["warnings"][0]
    assert "largest weight on page position" in warning and "favours early pages" in warning
    assert "expect it to fail on questions about the rest of a document" in warning
    assert content_model["warnings"] == []
    assert warning in result["warnings"]


def test_no_model_warning_on_a_stratified_set(reports):
    result = C.audit([stratified(reports)], reports, [POSITION_MODEL])
    assert result["models"][0]["warnings"] == []


def test_a_position_weight_that_is_not_among_the_largest_does_not_warn(reports):
    small = C.ModelWeights("a model that barely reads position",
                           {"bm25_rr": 2.0, "page_bm25_rel": 1.8, "page_position": -0.2})
    assert C.audit([early(reports)], reports, [small])["models"][0]["warnings"] == []


def test_a_set_without_table_pages_is_flagged_and_a_table_weight_warned_about():
    layouts = {"A": layout("A", 100, tables=set(range(61, 101)))}  # the last 40 pages are tables
    prose_only = goldset("prose", {"A": [1 + (i * 60) // 40 for i in range(40)]})
    table_model = C.ModelWeights("a table-leaning model", {"is_table": -1.5, "bm25_rr": 1.0})
    result = C.audit([prose_only], layouts, [table_model])
    kind = result["goldsets"][0]["dimensions"]["kind"]
    assert kind["skewed"] and kind["finding"] == "no gold page is a table page (expected 40%)"
    assert "expect it to fail on questions about table pages" in result["models"][0]["warnings"][0]


def test_sections_are_compared_with_their_share_of_the_pages():
    sections = {p: "PERFORMANCE REPORT" if p <= 30 else "ACCOUNTS" for p in range(1, 121)}
    layouts = {"A": layout("A", 120, sections)}
    # pages spread over the whole report but only inside the performance report's 30 pages
    performance = goldset("perf", {"A": [1 + i % 30 for i in range(40)]})
    found = C.audit([performance], layouts)["goldsets"][0]["dimensions"]["section"]["finding"]
    assert found.startswith("100% of the gold pages are in the section “PERFORMANCE REPORT” (expected 25%)")


def test_a_question_with_several_gold_pages_counts_once():
    layouts = {"A": layout("A", 100)}
    two_pages = GoldSet("g", "g.json", "grampian", "g", (
        GoldQuery("q1", "question", "A", expected_pages=(5, 95)),))
    strata = C.audit([two_pages], layouts)["goldsets"][0]["dimensions"]["position"]["strata"]
    assert strata[0]["share"] == pytest.approx(0.5) and strata[9]["share"] == pytest.approx(0.5)


def test_layout_reads_sections_tables_and_figure_dense_pages():
    def chunk(page: int, text: str, section: str = "", kind: str = "text") -> Chunk:
        return Chunk(f"c{page}-{kind}", "D", page, 0, text, 10, "clean", section=section, kind=kind)

    figures = "Note 12 Provisions " + " ".join(["1,234", "(56)", "7.5%", "£12"] * 5)
    lay = C.layout_from_chunks("D", 5, [
        chunk(1, "The board met six times in the year.", "PERFORMANCE REPORT › OVERVIEW (cont)"),
        chunk(2, figures), chunk(3, "| a | b |", kind="table"), chunk(4, "A prose page.")], table_pages=[4])
    places = {p.ordinal: p for p in lay.units}
    assert places[1].section == "PERFORMANCE REPORT" and not places[1].table
    assert places[2].section == C.NO_SECTION and places[2].table  # figures flattened from a table
    assert places[3].table and places[4].table  # a table chunk; a table the manifest cut out
    assert lay.n_units == 5 and 5 not in places  # page 5 has no chunk: not where an answer can be


def test_span_words():
    assert W.span_words([0, 1]) == "first fifth"
    assert W.span_words([0, 1, 2]) == "first three tenths"
    assert W.span_words([5, 6, 7, 8, 9]) == "last half"
    assert W.span_words([3]) == "4th tenth"
    assert W.span_words([0, 4, 5]) == "first tenth and 5th-6th tenths"


def test_model_weights_come_from_the_model_file_by_feature_name(tmp_path):
    from ragloupe.retrieve import learned

    data = json.loads(learned.SHIPPED.read_text(encoding="utf-8"))
    weights = learned.feature_weights(learned.from_json(json.dumps(data)))
    assert list(weights) == data["features"]
    assert list(weights.values()) == pytest.approx(data["coefficients"])


# --- on the demo index ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_layouts(demo_index) -> dict[str, C.DocumentLayout]:
    from ragloupe.index.store import open_store

    doc_ids = {q.doc_id for path in GRAMPIAN for q in load_goldset(path).queries}
    return document_layouts(demo_index, doc_ids, open_store(demo_index))


def test_the_shipped_benchmark_questions_are_flagged_on_the_demo_index(demo_layouts):
    sets = [load_goldset(path) for path in GRAMPIAN]
    result = C.audit(sets, demo_layouts, [POSITION_MODEL])
    pooled = result["pooled"]["page"]
    assert pooled["n_placed"] == 150 and pooled["dimensions"]["position"]["skewed"]
    window = pooled["dimensions"]["position"]["flagged"][0]
    assert window["flag"] == "over" and window["share"] > 0.95 and window["expected"] < 0.35
    assert result["models"][0]["warnings"], "a model weighting position must be warned about on this set"


def test_a_set_stratified_over_the_demo_reports_is_silent(demo_layouts):
    result = C.audit([stratified(demo_layouts)], demo_layouts, [POSITION_MODEL])
    assert not result["flagged"] and result["warnings"] == []


def test_coverage_report_reads_the_index_for_the_gold_documents(demo_index, workspace_of):
    result = coverage_report([load_goldset(GRAMPIAN[0])], demo_index, workspace_of(demo_index).store, mode="bm25")
    group = result["goldsets"][0]
    assert group["n_placed"] == group["n_questions"] == 50 and result["models"] == []
    assert group["skewed"] and any(w.startswith("Grampian-2020-2021: ") for w in result["warnings"])


def test_record_gold_sets_are_worded_as_records():
    records = C.DocumentLayout("guide", 40, tuple(
        C.UnitPlace(f"guide#{n}", n, f"chapter {1 + (n - 1) // 10}", False) for n in range(1, 41)))
    first_chapter = GoldSet("g", "g.json", "records", "g", tuple(
        GoldQuery(f"q{i}", "question", "guide", expected_records=(str(1 + i % 10),)) for i in range(30)))
    result = C.audit([first_chapter], {"guide": records})
    assert result["flagged"] and all("the gold records" in w and "pages" not in w for w in result["warnings"])


def test_train_learned_audits_the_model_it_writes(demo_env, tmp_path, capsys):
    from ragloupe.cli import main
    from ragloupe.retrieve import learned

    paths = []
    for source in GRAMPIAN:  # the first 3 questions of each report: training is the cost here
        data = json.loads(source.read_text(encoding="utf-8"))
        data["queries"] = data["queries"][:3]
        paths.append(tmp_path / source.name)
        paths[-1].write_text(json.dumps(data), encoding="utf-8")
    out_file = tmp_path / "model.json"
    assert main(["tune", *map(str, paths), "--train-learned", "--out", str(out_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    audited = out["coverage"]["models"][0]
    assert audited["label"] == "the model just trained"
    assert audited["trained_on"] == [p.name.removesuffix(".eval.json") for p in paths]
    written = learned.feature_weights(learned.from_json(out_file.read_text(encoding="utf-8")))
    assert [lead["feature"] for lead in audited["leaning"]] == \
        [lead["feature"] for lead in C.leaning_features(written)]
    assert not out["coverage"]["pooled"]["page"]["judged"]  # 9 questions: described, not judged
    # These questions are among those the shipped query adapter learned from and the default embedding
    # model was fine-tuned on, and the model's dense features read both: its leave-one-document-out
    # figure is in-sample, and the report says so.
    assert out["coverage"]["query_adapter"]["learned_from"] == 9
    assert out["coverage"]["embedding_model"]["learned_from"] == 9
    assert main(["tune", *map(str, paths), "--train-learned", "--out", str(out_file)]) == 0
    said = capsys.readouterr().out
    assert ("(in-sample for the query adapter, which learned from 9 of these questions, and the embedding "
            "model, fine-tuned on 9 of them: below)") in said
    assert "9 of these 9 questions are among those the shipped query adapter learned from" in said
    assert "9 of these 9 questions are among the gold questions the embedding model" in said
