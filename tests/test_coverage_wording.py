"""The coverage audit's wording dimension: a gold set whose questions copy their pages only tests
word matching, and the audit says so; questions worded as a reader would ask them pass silently."""

from __future__ import annotations

import pytest

from ragloupe.config import PROJECT_ROOT
from ragloupe.evaluate import coverage as C
from ragloupe.evaluate.coverage_sources import document_layouts
from ragloupe.evaluate.goldset import GoldQuery, GoldSet, load_goldset
from ragloupe.index.lexical import tokenize

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
DOC = "Grampian-2021-2022"
WARNING = "use their gold pages' own words"

# Written from the pages of the 2021/22 report, in a reader's words, not the page's.
PARAPHRASED = {
    12: "Which three principles does the health board say guide all its work?",
    20: "How much money did the northern council area's joint care partnership put aside that year?",
    41: "Which firm checks the books of the charitable money held for the health service?",
    58: "When will the long-range strategy go before the governing body for sign-off?",
    77: "What help with wellbeing was offered to employees who were struggling?",
    95: "Under which rules on bookkeeping were these yearly figures drawn up?",
    104: "How are gifts from charities and generous individuals treated?",
    118: "What did running each division of the organisation cost, split by area?",
    130: "What is set aside for getting rid of the particle accelerator?",
    140: "Who holds the votes on the bodies that combine health and social care locally?",
    6: "How many people work for the organisation?",
    30: "Did spending stay inside the limits the government set?",
}


@pytest.fixture(scope="module")
def layouts(demo_index):
    from ragloupe.index.store import open_store

    return document_layouts(demo_index, {"Grampian-2020-2021", DOC, "Grampian-2022-2023"}, open_store(demo_index))


def paraphrased() -> GoldSet:
    queries = tuple(GoldQuery(f"p{page}", question, DOC, expected_pages=(page,), goldset="paraphrased")
                    for page, question in PARAPHRASED.items())
    return GoldSet("paraphrased", "paraphrased.json", "grampian", "paraphrased", queries)


def test_the_shipped_benchmark_sets_are_warned_about_as_word_matching(layouts):
    result = C.audit([load_goldset(path) for path in GRAMPIAN], layouts)
    for group in result["goldsets"]:
        wording = group["wording"]
        assert wording["judged"] and wording["only_word_matching"], group["name"]
        assert wording["gold_share"] >= C.WORDING_WARN_SHARE
        assert any(w.startswith(f"{group['name']}: ") and WARNING in w for w in result["warnings"])


def test_a_paraphrased_set_is_not_warned_about(layouts):
    result = C.audit([paraphrased()], layouts)
    wording = result["goldsets"][0]["wording"]
    assert wording["judged"] and wording["n_placed"] == len(PARAPHRASED)
    assert wording["gold_share"] < C.WORDING_WARN_SHARE and not wording["only_word_matching"]
    assert not any(WARNING in w for w in result["warnings"])


def test_a_question_copying_its_page_is_word_matched_and_one_in_other_words_is_not():
    layout = C.DocumentLayout("D", 2, (C.UnitPlace("D#p1", 1, "", False), C.UnitPlace("D#p2", 2, "", False)),
                              terms={"D#p1": frozenset(tokenize("The provision made for disposal of the Cyclotron")),
                                     "D#p2": frozenset(tokenize("Pensions of staff who retire early"))})
    copied = GoldQuery("c", "What provision is made for disposal of the Cyclotron?", "D", expected_pages=(1,))
    reworded = GoldQuery("r", "What is put aside to scrap the particle accelerator?", "D", expected_pages=(1,))
    assert C.question_wording(copied, layout)["word_matched"]
    assert C.question_wording(copied, layout)["gold_share"] == 1.0
    assert C.question_wording(reworded, layout)["gold_share"] == 0.0


def test_a_small_set_is_described_not_judged(layouts):
    queries = tuple(GoldQuery(f"q{i}", q.question, q.doc_id, expected_pages=q.expected_pages)
                    for i, q in enumerate(load_goldset(GRAMPIAN[1]).queries[:C.MIN_WORDING_QUESTIONS - 1]))
    result = C.audit([GoldSet("few", "few.json", "grampian", "few", queries)], layouts)
    assert not result["goldsets"][0]["wording"]["judged"]
    assert not any(WARNING in w for w in result["warnings"])


def test_the_shipped_paraphrased_sets_are_not_warned_about(layouts):
    sets = [load_goldset(path) for path in sorted((PROJECT_ROOT / "data/benchmarks/grampian/paraphrased").glob("*.json"))]
    assert len(sets) == 3
    result = C.audit(sets, layouts)
    for group in result["goldsets"]:
        wording = group["wording"]
        assert wording["judged"] and not wording["only_word_matching"], group["name"]
    assert not any(WARNING in w for w in result["warnings"])
