"""Evaluation runs over the real demo index (ragloupe.evaluate.runs / compare)."""

import json
from pathlib import Path

import pytest

from llm_server import FakeLlmServer, chat_reply, prompt_of
from ragloupe.errors import NothingToScore, RunNotFound
from ragloupe.evaluate.compare import compare
from ragloupe.evaluate.goldset import load_goldset
from ragloupe.evaluate.runs import canonical_json, evaluate, list_runs, load_run
from ragloupe.workspace import Workspace

QUESTIONS = [
    {"query_id": "Q_2021_FIN_05", "question": "What was the Total Revenue Resource Limit for 2020/21?",
     "doc_id": "Grampian-2020-2021", "expected_pages": [28], "expected_answer": "£1,311,111 (£000)",
     "answer_type": "number", "difficulty": "LEX"},
    {"query_id": "Q_2021_STR_01", "question": "How many staff does NHS Grampian directly employ?",
     "doc_id": "Grampian-2020-2021", "expected_pages": [6], "expected_answer": "17,700 directly employed staff",
     "answer_type": "number", "difficulty": "MOD"},
    {"query_id": "Q_2019_FIN_01", "question": "What was the deficit in 2018/19?",
     "doc_id": "Grampian-2018-2019", "expected_pages": [3], "expected_answer": "£1 million",
     "answer_type": "number", "difficulty": "LEX"},
]


@pytest.fixture(scope="module")
def gold_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gold") / "mini.eval.json"
    path.write_text(json.dumps({"_meta": {"doc_id": "Grampian-2020-2021"}, "queries": QUESTIONS}),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run_settings(demo_index, tmp_path_factory):
    """The demo index, with this module's own runs directory."""
    return demo_index.replace(runs_dir=tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def hybrid_run(gold_path, run_settings, workspace_of):
    """One hybrid run shared by the read-only tests below (the only run written to runs_dir)."""
    return evaluate([gold_path], mode="hybrid", ks=(1, 3, 5),
                    workspace=workspace_of(run_settings))


def _by_id(report):
    return {q["query_id"]: q for q in report.data["queries"]}


def test_report_is_written_under_runs_dir(hybrid_run, run_settings):
    assert hybrid_run.path.parent == run_settings.path("runs_dir")
    assert json.loads(hybrid_run.path.read_text(encoding="utf-8"))["run_id"] == hybrid_run.run_id


def test_repeated_run_gives_byte_identical_report_apart_from_timings(hybrid_run, gold_path, run_settings, workspace_of):
    first_bytes = hybrid_run.path.read_bytes()
    again = evaluate([gold_path], mode="hybrid", ks=(1, 3, 5),
                     workspace=workspace_of(run_settings))
    assert again.run_id == hybrid_run.run_id
    strip = lambda raw: canonical_json({k: v for k, v in json.loads(raw).items() if k != "timings"})  # noqa: E731
    assert strip(first_bytes) == strip(again.path.read_bytes())
    assert canonical_json(hybrid_run.data) == canonical_json(again.data)


def test_question_about_a_document_not_in_the_index_is_not_scored_and_the_report_says_so(hybrid_run):
    # Grampian-2018-2019 is not in the demo index: no ranking of it could find page 3, so the
    # question is neither a 0 in the figures nor an FP1, and the report names it.
    assert "Q_2019_FIN_01" not in _by_id(hybrid_run)
    assert hybrid_run.data["n_queries"] == 2
    assert hybrid_run.aggregates["hit@1"]["n"] == 2
    assert sum(hybrid_run.data["failures"]["counts"].values()) == 2
    section = hybrid_run.data["not_indexed"]
    assert section["text"] == ("1 of 3 questions asks about a document not in this index (Grampian-2018-2019): "
                               "not scored; the figures are over the other 2")
    assert section["queries"] == [{"goldset": "mini", "query_id": "Q_2019_FIN_01", "doc_id": "Grampian-2018-2019"}]
    assert [f["code"] for f in hybrid_run.data["findings"]] == ["unknown_document"]


def test_a_run_whose_questions_all_ask_about_documents_not_in_the_index_has_no_figure(
        tmp_path, run_settings, workspace_of):
    gold = tmp_path / "absent.eval.json"
    gold.write_text(json.dumps({"queries": [QUESTIONS[2], {**QUESTIONS[2], "query_id": "Q_2019_FIN_02"}]}),
                    encoding="utf-8")
    with pytest.raises(NothingToScore) as refused:
        evaluate([gold], mode="bm25", ks=(1,), workspace=workspace_of(run_settings))
    assert str(refused.value) == ("none of the 2 questions can be scored: they ask about a document not in "
                                  "this index (Grampian-2018-2019); index it, then evaluate again")
    assert not list(run_settings.path("runs_dir").glob("bm25-*.json"))  # no run of no figure is written


def test_query_metrics_follow_first_relevant_rank(hybrid_run):
    for query in hybrid_run.data["queries"]:
        rank = query["first_relevant_rank"]
        assert query["metrics"]["hit@1"] == (1.0 if rank == 1 else 0.0)
        assert query["metrics"]["rr"] == (round(1 / rank, 4) if rank and rank <= 5 else 0.0)


def test_failure_codes_agree_with_ranks(hybrid_run):
    for query in hybrid_run.data["queries"]:
        code, rank = query["failure"]["code"], query["first_relevant_rank"]
        if code == "FP2":
            assert rank is None or rank > 1
        if code in ("HIT", "FP3"):
            assert rank == 1
    counts = hybrid_run.data["failures"]["counts"]
    assert sum(counts.values()) == len(hybrid_run.data["queries"])


def test_generation_codes_are_reported_as_not_assessed_without_answers(hybrid_run):
    generation = hybrid_run.data["failures"]["generation"]
    assert generation["assessed"] is False
    assert "not assessed" in generation["note"]


def test_scope_doc_ranks_only_the_gold_document(hybrid_run):
    for query in _by_id(hybrid_run).values():
        assert all(item["unit"].startswith(query["doc_id"] + "#") for item in query["ranked"])


def test_report_carries_settings_and_fingerprints(hybrid_run, gold_path, run_settings):
    data = hybrid_run.data
    assert data["settings"]["fusion"] == run_settings.fusion
    assert data["settings"]["learned_fallback"] == run_settings.learned_fallback
    assert "index_dir" not in data["settings"]
    assert data["fingerprints"]["goldsets"]["mini"] == load_goldset(gold_path).sha256
    assert data["fingerprints"]["index"]


def test_rank_survival_never_decreases(hybrid_run):
    shares = [point["share"] for point in hybrid_run.data["rank_survival"]]
    assert shares == sorted(shares)


def test_record_level_gold_set_is_evaluated_on_records(run_settings, workspace_of):
    gold = Path(__file__).resolve().parents[1] / "data/benchmarks/natech/guidance.gold.json"
    report = evaluate([gold], mode="bm25", ks=(1, 5),
                      workspace=workspace_of(run_settings), write=False)
    assert report.data["findings"] == []
    assert all(q["failure"]["code"] != "FP1" for q in report.data["queries"])
    assert all(item["unit"].startswith("guidance#") for q in report.data["queries"] for item in q["ranked"])


def test_runs_are_listed_and_loaded_by_id_prefix(hybrid_run, run_settings):
    (row,) = list_runs(run_settings)
    assert row["run_id"] == hybrid_run.run_id
    loaded = load_run(hybrid_run.run_id[:-3], run_settings)
    assert loaded.data == hybrid_run.data


def test_unknown_run_is_a_clear_error(run_settings):
    with pytest.raises(RunNotFound, match="no run matching"):
        load_run("nothing-like-this", run_settings)


def test_run_compared_with_itself_shows_no_difference(hybrid_run):
    result = compare(hybrid_run, hybrid_run)
    assert not result.improved and not result.regressed
    assert result.metrics["hit@1"]["p_value"] == 1.0
    assert all(v.startswith("no measurable difference") for v in result.verdicts)


def test_compare_lists_improved_queries(hybrid_run, gold_path, run_settings, workspace_of):
    dense = evaluate([gold_path], mode="dense", ks=(1, 3, 5),
                     workspace=workspace_of(run_settings), write=False)
    result = compare(dense, hybrid_run)
    ranks = {q["query_id"]: (q["first_relevant_rank"], _by_id(hybrid_run)[q["query_id"]]["first_relevant_rank"])
             for q in dense.data["queries"]}
    for row in result.improved:
        before, after = ranks[row["query_id"]]
        assert after is not None and (before is None or after < before)
    # every scored question is paired (the one about a document not in the index is in neither run)
    assert len(result.improved) + len(result.regressed) + len(result.unchanged) == hybrid_run.data["n_queries"]


def test_answers_get_generation_codes(gold_path, run_settings):
    def reply(path, request):
        if QUESTIONS[1]["question"] in prompt_of(request):
            return chat_reply(path, "NHS Grampian employs about 18,000 staff [1].")
        return chat_reply(path, "The Total Revenue Resource Limit was £1,311,111 thousand [1].")

    with FakeLlmServer(reply) as server:
        settings = run_settings.replace(llm_backend="ollama", ollama_base_url=server.url,
                                        ollama_model="fake-model", llm_timeout_s=5.0)
        report = evaluate([gold_path], mode="hybrid", ks=(1,), answers=True, write=False,
                          workspace=Workspace.open(settings))
    codes = {q["query_id"]: q["answer"]["failure"]["code"] for q in report.data["queries"]}
    assert codes["Q_2021_FIN_05"] == "HIT"
    assert codes["Q_2021_STR_01"] == "FP6"
    assert "Q_2019_FIN_01" not in codes  # its document is not in the index: no answer is asked for
    assert report.data["failures"]["generation"]["assessed"] is True


def test_fp2_notes_when_the_top_unit_also_holds_the_answer(settings):
    from ragloupe.evaluate.audit import LabelAudit
    from ragloupe.evaluate.goldset import GoldQuery
    from ragloupe.evaluate.runs import IndexSnapshot, score_query
    from ragloupe.models import Chunk, Hit, PageHit, Ranking

    def hit(page, rank, text):
        chunk = Chunk(f"c{page}", "d", page, 0, text, 10, "clean")
        return Hit(chunk, rank, 1.0 / rank), PageHit(f"d#p{page}", "d", page, "", rank, 1.0 / rank,
                                                    (chunk.chunk_id,), rank)

    texts = {"d#p84": "Cash requirement 1,298,124", "d#p28": "Cash Requirement 1,298,124 1,298,124"}
    (h1, p1), (h2, p2) = hit(84, 1, texts["d#p84"]), hit(28, 2, texts["d#p28"])
    ranking = Ranking("q", "hybrid", (h1, h2), pages=(p1, p2))
    snapshot = IndexSnapshot({}, frozenset(texts), {}, texts, "fp")
    query = GoldQuery("q1", "cash?", "d", expected_pages=(28,), expected_answer="£1,298,124 (£000)",
                      answer_type="number", goldset="g")
    result = score_query(query, ranking, (1, 3), 1, snapshot, int(settings.top_k),
                         LabelAudit("q1", "g", "found", False))
    assert result["failure"]["code"] == "FP2"
    assert result["failure"]["details"]["top_unit_holds_answer"] is True
    assert "also holds the gold answer" in result["failure"]["evidence"]


def test_verdict_names_the_winner_only_when_significant():
    from ragloupe.evaluate.compare import verdict

    win = {"a": 0.62, "b": 0.69, "diff": 0.07, "p_value": 0.01, "significant": True}
    assert verdict("hit@1", win, "dense", "hybrid") == "hybrid beats dense on Hit@1 by 0.07, p = 0.010"
    loss = {**win, "diff": -0.07, "a": 0.69, "b": 0.62}
    assert verdict("mrr", loss, "dense", "hybrid").startswith("dense beats hybrid on MRR")
    tie = {**win, "p_value": 0.4, "significant": False}
    assert verdict("hit@1", tie, "dense", "hybrid").startswith("no measurable difference on Hit@1")


def test_each_query_keeps_its_rewritten_and_final_query_and_retrieved_chunk_ids(gold_path, run_settings):
    from ragloupe.retrieve.rewrite import rewrite_query
    from ragloupe.retrieve.search import search

    rewrite = "revenue resource limit outturn for the financial year"
    with FakeLlmServer(lambda path, request: chat_reply(path, rewrite)) as server:
        settings = run_settings.replace(llm_backend="ollama", ollama_base_url=server.url,
                                        ollama_model="fake-model", llm_timeout_s=5.0)
        report = evaluate([gold_path], mode="hybrid+rewrite", ks=(1, 3), write=False,
                          workspace=Workspace.open(settings))
        question = QUESTIONS[0]["question"]
        expected = rewrite_query(question, settings)
        ranking = search(question, "hybrid+rewrite", 100, {"doc_ids": [QUESTIONS[0]["doc_id"]]},
                         workspace=Workspace.open(settings))
    entry = _by_id(report)["Q_2021_FIN_05"]
    assert entry["query_path"]["question"] == question
    assert entry["query_path"]["rewritten"] == expected.rewrite and rewrite in expected.rewrite
    assert entry["query_path"]["rewrite_used"] is True
    assert entry["query_path"]["final"] == expected.search_text != question
    assert entry["retrieved_chunk_ids"] == [h.chunk.chunk_id for h in ranking.hits][:len(entry["retrieved_chunk_ids"])]
    assert len(entry["retrieved_chunk_ids"]) >= len(entry["ranked"])
    # The question whose document is not indexed is not searched: it is not among the scored ones.
    assert "Q_2019_FIN_01" not in _by_id(report)
