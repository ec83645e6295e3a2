"""Rankings made outside ragloupe: run files, a live retriever, and the CI gates."""

import json
import sys
from pathlib import Path

from ragloupe.cli import main
from ragloupe.evaluate.goldset import DocumentInfo
from ragloupe.evaluate.outside import parse_run_file, rank_with, resolve

DOC = "Grampian-2020-2021"
DOCUMENTS = {DOC: DocumentInfo(DOC, n_pages=133),
             "guidance": DocumentInfo("guidance", n_pages=3, record_ids=frozenset({"4.6.1", "4.6.2"}))}
GOLD_PAGES = (28, 6, 40, 41, 50, 60, 70, 80)


def _gold(tmp_path: Path) -> Path:
    """Eight questions on pages of the demo report (an outside run needs no search)."""
    queries = [{"query_id": f"Q{i}", "question": f"question number {i} about page {page}?",
                "expected_pages": [page], "doc_id": DOC} for i, page in enumerate(GOLD_PAGES, start=1)]
    path = tmp_path / "outside.eval.json"
    path.write_text(json.dumps({"_meta": {}, "queries": queries}), encoding="utf-8")
    return path


def _trec(tmp_path: Path, name: str, gold_rank: int) -> Path:
    """A TREC run putting each gold page at ``gold_rank`` among pages 100-102."""
    lines = []
    for i, page in enumerate(GOLD_PAGES, start=1):
        ranked = [f"{DOC}#p{p}" for p in (100, 101, 102)]
        ranked.insert(gold_rank - 1, f"{DOC}#p{page}")
        lines += [f"Q{i} Q0 {unit} {rank} {10 - rank} {name}" for rank, unit in enumerate(ranked, start=1)]
    path = tmp_path / f"{name}.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str, suffix: str = ".trec") -> list[str]:
    path = tmp_path / f"run{suffix}"
    path.write_text(text, encoding="utf-8")
    from ragloupe.evaluate.goldset import GoldQuery

    queries = [GoldQuery("Q1", "q?", DOC, expected_pages=(28,)), GoldQuery("Q2", "r?", DOC, expected_pages=(6,))]
    _, problems = resolve(parse_run_file(path), queries, DOCUMENTS)
    return [str(p) for p in problems]


def test_trec_bad_lines_are_each_reported_with_their_line_number(tmp_path):
    problems = _problems(tmp_path, "\n".join([
        f"Q1 Q0 {DOC}#p28 1 9.5 sys",
        f"Q1 Q0 {DOC}#p999 2 8.0 sys",        # beyond the document
        "Q1 Q0 Nowhere#p3 3 7.0 sys",          # unknown document
        "Qx Q0 guidance#4.6.1 1 1.0 sys",      # no such gold question
        f"Q2 Q0 {DOC}#p6 first 2.0 sys",       # rank is not a number
        f"Q2 Q0 {DOC}#p6 1 2.0",               # a field short
        f"Q2 Q0 {DOC}#p6 1 nan sys",           # score is not a number
        f"Q2 Q0 {DOC}#p6 1 2.0 other",         # a second run in the same file
        "Q2 Q0 4.6.9 2 1.0 sys",               # a record id the index does not hold
    ]))
    lines = [p.split(":")[0] for p in problems]
    assert lines == [f"line {n}" for n in range(2, 10)]
    assert "has pages 1-133" in problems[0] and "'Nowhere'" in problems[1]
    assert "in no gold set" in problems[2] and "expected 6 fields" in problems[4]
    assert "tag 'other' differs" in problems[6] and "neither doc_id#pN nor a record id" in problems[7]


def test_jsonl_bad_lines_are_each_reported_with_their_line_number(tmp_path):
    problems = _problems(tmp_path, "\n".join([
        json.dumps({"query_id": "Q1", "ranked": [[DOC, 28], {"doc_id": DOC, "page": 3}, "4.6.1"]}),
        "{not json",
        json.dumps(["Q2"]),
        json.dumps({"query_id": "Q1", "ranked": []}),     # ranked twice
        json.dumps({"query_id": "Q2", "ranked": "p6"}),   # not a list
        json.dumps({"query_id": "Q2", "ranked": [7]}),    # not a unit
    ]), suffix=".jsonl")
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    assert "already ranked on line 1" in problems[2] and "not a unit" in problems[4]


def test_a_gold_question_without_a_ranking_refuses_the_run_unless_missing_counts_as_empty(tmp_path):
    from ragloupe.evaluate.goldset import GoldQuery

    path = tmp_path / "run.trec"
    path.write_text(f"Q1 Q0 {DOC}#p28 1 1 sys\n", encoding="utf-8")
    queries = [GoldQuery("Q1", "q?", DOC, expected_pages=(28,)), GoldQuery("Q2", "r?", DOC, expected_pages=(6,))]
    _, problems = resolve(parse_run_file(path), queries, DOCUMENTS)
    assert [p.where for p in problems] == ["Q2"]
    resolved, problems = resolve(parse_run_file(path), queries, DOCUMENTS, missing_as_empty=True)
    assert problems == [] and resolved["Q2"] == []


def test_retriever_that_raises_or_returns_unknown_units_is_reported_per_question():
    from ragloupe.evaluate.goldset import GoldQuery

    def retriever(question: str):
        if "boom" in question:
            raise ValueError("index offline")
        if "odd" in question:
            return [(DOC, 500), "guidance#9.9"]
        if "none" in question:
            return None
        return [(DOC, 28)]

    queries = [GoldQuery("Q1", "boom?", DOC, expected_pages=(28,)), GoldQuery("Q2", "odd?", DOC, expected_pages=(6,)),
               GoldQuery("Q3", "none?", DOC, expected_pages=(6,)), GoldQuery("Q4", "fine?", DOC, expected_pages=(28,))]
    outside = rank_with(retriever, queries, "mine:retriever")
    resolved, problems = resolve(outside, queries, DOCUMENTS)
    by_query = {}
    for problem in problems:
        by_query.setdefault(problem.where, []).append(problem.reason)
    assert by_query["Q1"] == ["the retriever raised ValueError: index offline"]
    assert len(by_query["Q2"]) == 2 and "has pages 1-133" in by_query["Q2"][0]
    assert "returned NoneType" in by_query["Q3"][0]
    assert "Q4" not in by_query and resolved["Q4"] == [(f"{DOC}#p28", None)]


def test_cli_bad_run_file_saves_no_run_and_lists_every_line(demo_env, tmp_path, capsys):
    run = tmp_path / "bad.trec"
    run.write_text(f"Q1 Q0 {DOC}#p28 1 1 sys\nQ2 Q0 {DOC}#p6 x 1 sys\n", encoding="utf-8")
    assert main(["eval", str(_gold(tmp_path)), "--run", str(run), "--against", "none"]) == 2
    out = capsys.readouterr().out
    assert "nothing was scored or saved" in out and "line 2: rank 'x'" in out and "Q3: the run has no ranking" in out
    assert not list(demo_env.path("runs_dir").glob("*.json"))


def test_cli_live_retriever_that_raises_saves_no_run(demo_env, tmp_path, capsys, monkeypatch):
    (tmp_path / "my_pipeline.py").write_text(
        "def retrieve(question):\n    raise RuntimeError('vector store down')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["eval", str(_gold(tmp_path)), "--retriever", "my_pipeline:retrieve", "--against", "none"]) == 2
    assert "Q1: the retriever raised RuntimeError: vector store down" in capsys.readouterr().out
    assert not list(demo_env.path("runs_dir").glob("*.json"))


def test_fail_under_exits_1_naming_the_figure_and_the_gap(demo_env, tmp_path, capsys):
    gold, run = _gold(tmp_path), _trec(tmp_path, "second", gold_rank=2)
    assert main(["eval", str(gold), "--run", str(run), "--against", "none", "--k", "1,3",
                 "--fail-under", "hit@3=0.90,mrr=0.40"]) == 0
    capsys.readouterr()
    assert main(["eval", str(gold), "--run", str(run), "--against", "none", "--k", "1,3",
                 "--fail-under", "hit@1=0.90,mrr=0.80"]) == 1
    (last,) = capsys.readouterr().err.strip().splitlines()  # one line, on stderr
    assert last.startswith("ragloupe: fail-under: outside-second-")
    assert "hit@1 0.000 is under its floor 0.900 by 0.900" in last
    assert "mrr 0.500 is under its floor 0.800 by 0.300" in last


def test_fail_under_on_a_cutoff_not_measured_is_refused_before_running(demo_env, tmp_path, capsys):
    assert main(["eval", str(_gold(tmp_path)), "--run", str(_trec(tmp_path, "x", 1)), "--k", "1",
                 "--fail-under", "hit@3=0.9"]) == 2
    assert "add 3 to --k" in capsys.readouterr().err


def test_compare_fail_if_worse_exits_1_only_when_the_paired_test_says_worse(demo_env, tmp_path, capsys):
    gold = _gold(tmp_path)
    ids = []
    for name, rank in (("first", 1), ("third", 3)):
        assert main(["eval", str(gold), "--run", str(_trec(tmp_path, name, rank)), "--against", "none",
                     "--json"]) == 0
        ids.append(json.loads(capsys.readouterr().out)["run_id"])
    assert main(["compare", ids[0], ids[1], "--fail-if-worse", "--json"]) == 1
    captured = capsys.readouterr()
    (last,) = captured.err.strip().splitlines()  # one line on stderr, --json or not
    assert json.loads(captured.out)["gate"]["fell"][0].startswith("hit@1 fell by 1.000")
    assert last.startswith(f"ragloupe: fail-if-worse: B ({ids[1]}) is worse than A ({ids[0]}): hit@1 fell by 1.000")
    assert "mrr fell by 0.667" in last
    assert main(["compare", ids[1], ids[0], "--fail-if-worse"]) == 0  # better is not worse
    capsys.readouterr()
    assert main(["compare", ids[0], ids[1], "--fail-if-worse", "--alpha", "0.001"]) == 0  # 8 pairs: p > 0.001


def test_outside_run_is_compared_with_a_ragloupe_mode(demo_env, tmp_path, capsys):
    gold = tmp_path / "two.eval.json"
    gold.write_text(json.dumps({"_meta": {"doc_id": DOC}, "queries": [
        {"query_id": "Q_2021_FIN_05", "question": "What was the Total Revenue Resource Limit for 2020/21?",
         "expected_pages": [28], "expected_answer": "£1,311,111 (£000)", "answer_type": "number"},
        {"query_id": "Q_2021_STR_03", "question": "How large is the area NHS Grampian covers?",
         "expected_pages": [6], "expected_answer": "3,000 square miles", "answer_type": "number"}]}))
    run = tmp_path / "sys.jsonl"
    run.write_text("\n".join(json.dumps({"query_id": q, "ranked": [[DOC, p]]})
                             for q, p in (("Q_2021_FIN_05", 28), ("Q_2021_STR_03", 7))), encoding="utf-8")
    assert main(["eval", str(gold), "--run", str(run), "--against", "bm25", "--k", "1,3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failures"] == {"FP1": 0, "FP2": 1, "FP3": 0, "HIT": 1}
    (comparison,) = out["comparisons"]
    assert comparison["run_b"] == out["run_id"] and comparison["run_a"].startswith("bm25-doc-")
    assert comparison["n_paired"] == 2 and "p_value" in comparison["metrics"]["mrr"]
    report = json.loads(Path(out["path"]).read_text())
    assert report["mode"] == "outside:sys" and report["source"]["kind"] == "jsonl"
    assert report["queries"][1]["failure"]["code"] == "FP2"



def test_empty_or_missing_run_file_is_one_line(demo_env, tmp_path, capsys):
    empty = tmp_path / "empty.trec"
    empty.write_text("# nothing yet\n\n", encoding="utf-8")
    assert main(["eval", str(_gold(tmp_path)), "--run", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == "ragloupe: empty.trec: the run file is empty"
