"""`ragloupe eval`, `compare` and `runs` from the command line."""

import json
from pathlib import Path

import pytest

from ragloupe.cli import main

GOLD = {"_meta": {"doc_id": "Grampian-2020-2021"}, "queries": [
    {"query_id": "Q_2021_FIN_05", "question": "What was the Total Revenue Resource Limit for 2020/21?",
     "expected_pages": [28], "expected_answer": "£1,311,111 (£000)", "answer_type": "number",
     "difficulty": "LEX"},
    {"query_id": "Q_2021_STR_03", "question": "How large is the area NHS Grampian covers?",
     "expected_pages": [6], "expected_answer": "3,000 square miles", "answer_type": "number",
     "difficulty": "LEX"},
]}


@pytest.fixture
def gold_file(tmp_path: Path) -> Path:
    path = tmp_path / "cli.eval.json"
    path.write_text(json.dumps(GOLD), encoding="utf-8")
    return path


def _json_out(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_eval_json_reports_metrics_and_failure_counts(demo_env, gold_file, capsys):
    assert main(["eval", str(gold_file), "--mode", "bm25", "--k", "1,3", "--json"]) == 0
    out = _json_out(capsys)
    assert set(out["metrics"]) >= {"hit@1", "hit@3", "mrr", "ndcg@3", "recall@3"}
    assert sum(out["failures"].values()) == 2
    assert Path(out["path"]).is_file()


def test_eval_text_says_generation_codes_were_not_assessed(demo_env, gold_file, capsys):
    assert main(["eval", str(gold_file), "--mode", "bm25", "--k", "1,3"]) == 0
    text = capsys.readouterr().out
    assert "FP4-FP7 not assessed" in text
    assert "failures at k=1" in text


def test_validate_only_reports_page_beyond_document_end(demo_env, tmp_path, capsys):
    bad = {"_meta": {"doc_id": "Grampian-2020-2021"}, "queries": [
        {"query_id": "a", "question": "where?", "expected_pages": [999]},
        {"query_id": "a", "question": "again?", "expected_pages": [2]}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["eval", str(path), "--validate-only", "--json"]) == 1
    codes = sorted(f["code"] for f in _json_out(capsys)["findings"])
    assert codes == ["duplicate_id", "page_out_of_range"]


def test_validate_only_passes_the_shipped_gold_sets(demo_env, capsys):
    bench = Path(__file__).resolve().parents[1] / "data/benchmarks"
    paths = sorted(str(p) for p in (bench / "grampian/eval").glob("*.eval.json"))
    assert main(["eval", *paths, str(bench / "natech/guidance.gold.json"), "--validate-only", "--json"]) == 0
    out = _json_out(capsys)
    assert out["findings"] == []
    assert [g["queries"] for g in out["goldsets"]][:3] == [50, 50, 50]


def test_unreadable_gold_set_is_one_line_and_others_still_run(demo_env, gold_file, tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert main(["eval", str(broken), str(gold_file), "--mode", "bm25", "--k", "1", "--json"]) == 0
    out = _json_out(capsys)
    assert len(out["load_errors"]) == 1 and "not valid JSON" in out["load_errors"][0]


def test_bad_k_is_a_one_line_error_without_traceback(demo_env, gold_file, capsys):
    assert main(["eval", str(gold_file), "--k", "1,x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragloupe: ") and "Traceback" not in err


def test_compare_and_runs_commands(demo_env, gold_file, capsys):
    main(["eval", str(gold_file), "--mode", "bm25", "--k", "1,3", "--json"])
    run_a = _json_out(capsys)["run_id"]
    main(["eval", str(gold_file), "--mode", "dense", "--k", "1,3", "--json"])
    run_b = _json_out(capsys)["run_id"]
    assert main(["compare", run_a, run_b, "--json"]) == 0
    result = _json_out(capsys)
    assert result["n_paired"] == 2
    assert {"hit@1", "mrr"} <= set(result["metrics"])
    assert main(["runs", "--json"]) == 0
    assert {r["run_id"] for r in _json_out(capsys)} == {run_a, run_b}


def test_compare_unknown_run_is_a_clear_error(demo_env, capsys):
    assert main(["compare", "nope-a", "nope-b"]) == 2
    assert "no run matching 'nope-a'" in capsys.readouterr().err


def test_eval_prints_and_reports_the_gold_set_coverage_audit(demo_env, tmp_path, capsys):
    source = Path(__file__).parents[1] / "data/benchmarks/grampian/eval/Grampian-2020-2021.eval.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    data["queries"] = data["queries"][:24]  # all on pages 26-29 of 133: enough to be judged
    path = tmp_path / "early.eval.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["eval", str(path), "--mode", "bm25", "--k", "1"]) == 0
    text = capsys.readouterr().out
    assert "gold-set coverage" in text
    assert any(line.startswith("  warning: early: ") and "100% of the gold pages are in the 2nd-3rd tenths" in line
               for line in text.splitlines())
    assert main(["eval", str(path), "--mode", "bm25", "--k", "1", "--json"]) == 0
    out = _json_out(capsys)
    assert out["coverage"]["goldsets"][0]["dimensions"]["position"]["skewed"]
    assert json.loads(Path(out["path"]).read_text(encoding="utf-8"))["coverage"] == out["coverage"]


def _with_unindexed_questions(tmp_path: Path) -> Path:
    """GOLD and two questions about Grampian-2018-2019, a report the demo index does not hold."""
    absent = [{"query_id": f"Q_2019_{n}", "question": "What was the deficit in 2018/19?",
               "doc_id": "Grampian-2018-2019", "expected_pages": [3]} for n in (1, 2)]
    path = tmp_path / "partly.eval.json"
    path.write_text(json.dumps({**GOLD, "queries": GOLD["queries"] + absent}), encoding="utf-8")
    return path


def test_eval_says_above_the_figures_which_questions_it_did_not_score(demo_env, tmp_path, capsys):
    assert main(["eval", str(_with_unindexed_questions(tmp_path)), "--mode", "bm25", "--k", "1,3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    said = ("2 of 4 questions ask about a document not in this index (Grampian-2018-2019): not scored; "
            "the figures are over the other 2")
    assert lines.index(said) < next(i for i, line in enumerate(lines) if line.startswith("hit "))
    failures = next(line for line in lines if line.startswith("failures at k=1"))
    assert sum(int(part.split()[1]) for part in failures.removeprefix("failures at k=1: ").split(", ")) == 2
    assert not any("is not in the index" in line for line in lines)  # the sentence, not a line a question


def test_eval_json_carries_the_same_sentence_and_scored_figures(demo_env, tmp_path, capsys):
    assert main(["eval", str(_with_unindexed_questions(tmp_path)), "--mode", "bm25", "--k", "1", "--json"]) == 0
    out = _json_out(capsys)
    assert out["not_indexed"]["text"].startswith("2 of 4 questions ask about a document not in this index")
    assert out["not_indexed"]["n_not_scored"] == 2 and out["metrics"]["hit@1"]["n"] == 2
    assert sum(out["failures"].values()) == 2
    assert main(["runs"]) == 0
    assert "     2/4" in capsys.readouterr().out


def test_eval_of_questions_none_of_whose_documents_is_indexed_shows_no_figure(demo_env, tmp_path, capsys):
    path = tmp_path / "absent.eval.json"
    path.write_text(json.dumps({"queries": [{"query_id": "Q1", "question": "What was the deficit?",
                                             "doc_id": "Grampian-2018-2019", "expected_pages": [3]}]}),
                    encoding="utf-8")
    assert main(["eval", str(path), "--mode", "bm25"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == ("ragloupe: the one question cannot be scored: it asks about a document "
                                    "not in this index (Grampian-2018-2019); index it, then evaluate again")
