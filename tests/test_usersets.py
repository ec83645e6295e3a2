"""The user's own gold sets: `ragloupe goldset add|list|rm|validate` and the file they write."""

import json

from ragloupe.cli import main
from ragloupe.evaluate.goldset import load_goldset
from ragloupe.evaluate.usersets import goldset_path, goldsets_dir

DOC = "Grampian-2020-2021"
QUESTION = "What was the Total Revenue Resource Limit for 2020/21?"


def _add(*extra: str) -> int:
    return main(["goldset", "add", "mine", "--doc", DOC, *extra])


def test_added_items_load_as_a_shipped_format_gold_set_with_who_what_when(demo_env, capsys):
    assert _add("--question", QUESTION, "--page", "28", "--answer", "1,311,111", "--by", "alice") == 0
    assert main(["goldset", "add", "mine", "--doc", "guidance", "--record", "4.6.1",
                 "--question", "Which records cover flood defences?"]) == 0
    path = goldset_path(demo_env, "mine")
    assert path.parent == goldsets_dir(demo_env) == demo_env.path("runs_dir") / "goldsets"
    goldset = load_goldset(path)
    assert [q.expected_units for q in goldset.queries] == [(f"{DOC}#p28",), ("guidance#4.6.1",)]
    first = json.loads(path.read_text())["queries"][0]
    assert (first["added_by"], first["added_via"], first["answer_type"]) == ("alice", "cli", "number")
    assert first["added_at"].startswith("20")


def test_an_item_the_index_cannot_hold_is_refused_and_nothing_is_written(demo_env, capsys):
    assert _add("--question", QUESTION, "--page", "28") == 0
    before = goldset_path(demo_env, "mine").read_bytes()
    assert _add("--question", "Where?", "--page", "999") == 2
    assert capsys.readouterr().err.strip().endswith(f"{DOC} has pages 1-133, not page 999")
    assert main(["goldset", "add", "mine", "--doc", "nowhere", "--page", "1", "--question", "q?"]) == 2
    assert _add("--question", QUESTION.upper(), "--page", "29") == 2  # the same question again
    assert "already asks this question (U_001)" in capsys.readouterr().err
    assert goldset_path(demo_env, "mine").read_bytes() == before


def test_validate_warns_when_the_answer_is_not_on_its_page_and_fails_on_errors(demo_env, tmp_path, capsys):
    assert _add("--question", QUESTION, "--page", "28", "--answer", "a figure nobody printed") == 0
    assert "warning: the answer 'a figure nobody printed' is not found" in capsys.readouterr().out
    assert main(["goldset", "validate", "mine", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in result["findings"]] == ["answer_not_on_unit"]
    broken = tmp_path / "other.json"
    broken.write_text(json.dumps({"queries": [{"query_id": "a", "question": "q?", "doc_id": DOC,
                                               "expected_pages": [500]}]}))
    assert main(["goldset", "validate", str(broken)]) == 1
    assert "page 500 is beyond the end" in capsys.readouterr().out


def test_list_and_rm_items_then_the_whole_set(demo_env, capsys):
    assert _add("--question", QUESTION, "--page", "28") == 0
    assert _add("--question", "How large is the area NHS Grampian covers?", "--page", "6") == 0
    capsys.readouterr()
    assert main(["goldset", "list", "--json"]) == 0
    assert [(r["name"], r["items"]) for r in json.loads(capsys.readouterr().out)] == [("mine", 2)]
    assert main(["goldset", "rm", "mine", "U_001"]) == 0
    assert [q.query_id for q in load_goldset(goldset_path(demo_env, "mine")).queries] == ["U_002"]
    assert main(["goldset", "rm", "mine", "U_404"]) == 2
    assert _add("--question", "A third question?", "--page", "7") == 0
    assert [q.query_id for q in load_goldset(goldset_path(demo_env, "mine")).queries] == ["U_002", "U_003"]
    assert main(["goldset", "rm", "mine", "--whole"]) == 0
    assert not goldset_path(demo_env, "mine").exists()


def test_eval_takes_a_user_gold_set_by_name(demo_env, capsys):
    assert _add("--question", QUESTION, "--page", "28", "--answer", "1,311,111") == 0
    capsys.readouterr()
    assert main(["eval", "mine", "--mode", "bm25", "--k", "1,3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["hit@3"]["n"] == 1


def test_a_bad_gold_set_name_is_refused(demo_env, capsys):
    assert main(["goldset", "add", "../escape", "--doc", DOC, "--page", "1", "--question", "q?"]) == 2
    assert "gold set name '../escape'" in capsys.readouterr().err
