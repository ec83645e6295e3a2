"""The failure taxonomy: retrieval codes FP1-FP3 and generation codes FP4-FP7."""

from ragloupe.evaluate.taxonomy import (
    NOT_ASSESSED,
    TAXONOMY,
    IndexView,
    RankingView,
    classify_answer,
    classify_retrieval,
)

GOLD = "r#p28"
PAGE_TEXT = ("Core Revenue Resource Limit 1,278,771 1,278,002 769 Non-Core Revenue Resource Limit "
             "32,340 32,340 - Total 1,311,111 1,310,342 769")
INDEX = IndexView(indexed_units=frozenset({GOLD, "r#p6", "r#p29"}), page_text={GOLD: PAGE_TEXT})


def _ranking(units, retrieved=None, engine_ranks=None):
    return RankingView(ranked_units=tuple(units), retrieved_text=retrieved or {},
                       engine_ranks=engine_ranks or {})


# --- retrieval -----------------------------------------------------------------

def test_unindexed_page_is_fp1_with_ingestion_reason():
    index = IndexView(indexed_units=frozenset({"r#p6"}),
                      unit_notes={"r#p14": "page 14 rejected: no text layer"})
    failure = classify_retrieval(["r#p14"], 1, _ranking(["r#p6"]), index)
    assert failure.code == "FP1"
    assert "no text layer" in failure.evidence


def test_missing_document_is_fp1():
    failure = classify_retrieval(["gone#p3"], 1, _ranking(["r#p6"]), INDEX)
    assert failure.code == "FP1"
    assert "page 3 of gone" in failure.evidence


def test_indexed_page_below_k_is_fp2_with_rank_and_best_engine():
    ranking = _ranking(["r#p6", "r#p29", GOLD],
                       engine_ranks={GOLD: {"dense": 9, "bm25": 2}})
    failure = classify_retrieval([GOLD], 1, ranking, INDEX)
    assert failure.code == "FP2"
    assert failure.details["rank"] == 3
    assert failure.details["best_engine"] == "bm25"
    assert failure.details["best_engine_rank"] == 2


def test_page_outside_the_window_is_fp2_without_rank():
    failure = classify_retrieval([GOLD], 3, _ranking(["r#p6", "r#p29"]), INDEX)
    assert failure.code == "FP2"
    assert failure.details["rank"] is None


def test_retrieved_page_whose_chunks_lack_the_answer_is_fp3():
    ranking = _ranking([GOLD], retrieved={GOLD: "Non-Core Revenue Resource Limit 32,340"})
    failure = classify_retrieval([GOLD], 1, ranking, INDEX, "£1,278,771 (£000)", "number")
    assert failure.code == "FP3"
    assert "1,278,771" in failure.evidence


def test_retrieved_page_with_the_answer_in_its_chunks_is_hit():
    ranking = _ranking([GOLD], retrieved={GOLD: PAGE_TEXT})
    failure = classify_retrieval([GOLD], 1, ranking, INDEX, "£1,278,771 (£000)", "number")
    assert failure.code == "HIT"
    assert failure.details["rank"] == 1


def test_answer_absent_from_the_page_itself_is_not_blamed_on_chunking():
    ranking = _ranking([GOLD], retrieved={GOLD: "unrelated"})
    failure = classify_retrieval([GOLD], 1, ranking, INDEX, "£99.9 million", "number")
    assert failure.code == "HIT"


def test_any_expected_page_in_top_k_counts():
    failure = classify_retrieval(["r#p6", GOLD], 2, _ranking(["r#p29", GOLD, "r#p6"]), INDEX)
    assert failure.code == "HIT"


# --- generation ----------------------------------------------------------------

CONTEXT = "The Board received £48.6 million during the year from the Scottish Government."


def test_complete_answer_is_hit():
    assert classify_answer("£48.6 million", "number", CONTEXT, "It received £48.6m.").code == "HIT"


def test_refusal_with_answer_in_context_is_fp4():
    failure = classify_answer("£48.6 million", "number", CONTEXT,
                              "The context does not contain this information.")
    assert failure.code == "FP4"


def test_refusal_without_answer_in_context_is_not_assessed():
    failure = classify_answer("£48.6 million", "number", "nothing relevant",
                              "The context does not contain this information.")
    assert failure.code == NOT_ASSESSED


def test_text_reply_to_number_question_is_fp5():
    failure = classify_answer("£48.6 million", "number", CONTEXT,
                              "A supplementary allocation from the government covered the costs.")
    assert failure.code == "FP5"


def test_bare_figure_for_text_question_is_fp5():
    failure = classify_answer("Caring, listening and improving", "text", "values: caring, listening",
                              "£48.6 million")
    assert failure.code == "FP5"


def test_a_different_figure_with_the_answer_in_context_is_not_extracted_fp4():
    failure = classify_answer("£48.6 million", "number", CONTEXT, "It received £46.3 million.")
    assert failure.code == "FP4"
    assert failure.details["given"] == ["£46.3 million"]


def test_the_gold_figure_at_a_coarser_precision_is_too_general_fp6():
    failure = classify_answer("£48.6 million", "number", CONTEXT, "It received about £49 million.")
    assert failure.code == "FP6" and failure.evidence.startswith("too general")


def test_the_gold_figure_at_a_finer_precision_is_too_specific_fp6():
    failure = classify_answer("about 18,000 staff", "number", "NHS Grampian employs 17,712 people.",
                              "NHS Grampian employs 17,712 staff.")
    assert failure.code == "FP6" and failure.evidence.startswith("too specific")


def test_an_amount_where_a_percentage_was_asked_for_is_wrong_format_fp5():
    context = "Costs grew by 5.2% to £48.6 million."
    failure = classify_answer("5.2%", "number", context, "Costs grew to £48.6 million.",
                              question="By what percentage did costs grow?")
    assert failure.code == "FP5" and "percentage" in failure.evidence


def test_one_item_where_a_list_was_asked_for_is_wrong_format_fp5():
    context = "The core values of the Board are caring, listening and improving."
    failure = classify_answer("Caring, listening and improving", "text", context, "Caring.",
                              question="List the Board's core values.")
    assert failure.code == "FP5" and "list" in failure.evidence


def test_part_of_multi_part_answer_is_fp7():
    context = "Spend was £41.04 million: £23.06 million by NHS Grampian and £17.97 million by the IJBs."
    failure = classify_answer("£41.04 million total (£23.06 million NHS Grampian, £17.97 million IJBs)",
                              "number", context, "In total £41.04 million was spent.")
    assert failure.code == "FP7"
    assert "£23.06 million" in failure.details["missing"]


def test_a_part_the_context_never_held_is_not_an_incomplete_answer():
    failure = classify_answer("£41.04 million total (£23.06 million NHS Grampian, £17.97 million IJBs)",
                              "number", "In total £41.04 million was spent.", "In total £41.04 million was spent.")
    assert failure.code == NOT_ASSESSED


def test_every_code_has_its_definition_with_barnetts_meaning():
    assert set(TAXONOMY) == {"FP1", "FP2", "FP3", "FP4", "FP5", "FP6", "FP7", "HIT"}
    assert "ignores the format" in TAXONOMY["FP5"]
    assert "too general or too specific" in TAXONOMY["FP6"]


def test_text_answer_missing_content_in_context_is_fp4():
    failure = classify_answer("Caring, listening and improving", "text",
                              "The core values of the Board are caring, listening and improving.",
                              "The Board values its staff and patients.")
    assert failure.code == "FP4"
