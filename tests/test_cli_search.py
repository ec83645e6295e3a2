"""`ragloupe search`: the table, --compare side by side, --json, and one-line errors."""

from __future__ import annotations

import json

import pytest

from retrieval_corpus import RETRIEVAL_SETTINGS, build_index
from ragloupe.cli import main


@pytest.fixture(scope="module")
def small_index(tmp_path_factory, embedder):
    return build_index(tmp_path_factory.mktemp("cli"), embedder)


@pytest.fixture
def cli_env(small_index, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_INDEX_DIR", str(small_index.path("index_dir")))
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    for name, value in RETRIEVAL_SETTINGS.items():  # what the assertions below reason about
        monkeypatch.setenv(f"RAGLOUPE_{name.upper()}", str(value))
    return small_index


def test_table_shows_every_engine_rank_and_score_with_absent_as_dash(cli_env, capsys):
    assert main(["search", "revenue resource limit underspend", "--mode", "hybrid", "--k", "6"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    for column in ("rank", "doc", "page", "section", "dense rank/sim", "bm25 rank/score",
                   "fused", "rerank", "first words"):
        assert column in header
    first = out.splitlines()[2]
    assert first.split()[:3] == ["1", "report", "2"]
    assert "1/" in first  # rank 1 in an engine, with its score
    assert "—" in out  # some chunk BM25 did not list
    assert "The Board met its revenue resource limit" in out


def test_doc_flag_scopes_the_search(cli_env, capsys):
    assert main(["search", "hazardous accidents", "--doc", "guidance", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hits"] and {h["chunk"]["doc_id"] for h in data["hits"]} == {"guidance"}
    assert data["filters"] == {"doc_ids": ["guidance"]}


def test_json_keeps_absent_engine_ranks_as_null(cli_env, capsys):
    assert main(["search", "revenue resource limit underspend", "--k", "12", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["per_engine"]["bm25"]["rank"] == 1
    assert any(h["per_engine"]["bm25"]["rank"] is None for h in hits)
    assert all(h["per_engine"]["dense"]["distance"] is not None for h in hits)


def test_compare_prints_each_mode_side_by_side(cli_env, capsys):
    assert main(["search", "ISO 31000 risk management", "--compare", "dense,bm25,hybrid", "--k", "3"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("doc"))
    assert header.split()[3:6] == ["dense", "bm25", "hybrid"]
    row = next(line for line in out.splitlines() if line.startswith("guidance  3.2"))
    for mode in ("dense", "bm25", "hybrid"):  # the ISO 31000 record is first in every mode
        column = header.index(f" {mode}") + 1
        assert row[column:].split()[0] == "1"
    for mode in ("mode dense", "mode bm25", "mode hybrid"):
        assert mode in out


def test_compare_json_has_one_ranking_per_mode(cli_env, capsys):
    assert main(["search", "Seveso directive", "--compare", "bm25,hybrid", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["modes"]) == ["bm25", "hybrid"]
    assert data["modes"]["bm25"]["hits"][0]["chunk"]["chunk_id"] == "guidance-1"


def test_set_overrides_a_setting_for_one_search(cli_env, capsys):
    assert main(["search", "Seveso directive", "--set", "fusion=minmax", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fusion"] == "minmax"


def test_bad_mode_is_one_line_on_stderr_and_exit_2(cli_env, capsys):
    assert main(["search", "anything", "--mode", "semantic"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert "unknown search mode 'semantic'" in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_bad_page_range_and_unknown_setting_are_refused(cli_env, capsys):
    assert main(["search", "anything", "--pages", "9-2"]) == 2
    assert "starts after it ends" in capsys.readouterr().err
    assert main(["search", "anything", "--set", "no_such_knob=1"]) == 2
    assert "no_such_knob" in capsys.readouterr().err


def test_chunk_text_is_printed_as_one_plain_line(tmp_path, embedder, monkeypatch, capsys):
    from ragloupe.models import Chunk

    nasty = Chunk(chunk_id="x-1", doc_id="x", page=1, position=0, quality="clean", n_tokens=5,
                  text="**bold**\n\x1b[31mred\x1b[0m\ttank\rfarm")
    settings = build_index(tmp_path, embedder, [nasty])
    monkeypatch.setenv("RAGLOUPE_INDEX_DIR", str(settings.path("index_dir")))
    assert main(["search", "tank farm", "--mode", "dense"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out
    row = out.splitlines()[2]
    assert row.endswith("**bold** [31mred [0m tank farm")


def test_compare_on_the_shipped_corpus_shows_both_engines_on_every_hit(demo_env, capsys):
    from ragloupe.config import PROJECT_ROOT

    gold = json.loads((PROJECT_ROOT / "data/benchmarks/grampian/eval/Grampian-2020-2021.eval.json")
                      .read_text(encoding="utf-8"))["queries"][0]
    assert main(["search", gold["question"], "--doc", gold["doc_id"],
                 "--compare", "dense,bm25,hybrid", "--json"]) == 0
    modes = json.loads(capsys.readouterr().out)["modes"]
    assert list(modes) == ["dense", "bm25", "hybrid"]
    for ranking in modes.values():
        assert len(ranking["hits"]) == 10
        for hit in ranking["hits"]:
            assert set(hit["per_engine"]) == {"dense", "bm25"}
            assert hit["chunk"]["doc_id"] == gold["doc_id"]
    gold_units = {f"{gold['doc_id']}#p{page}" for page in gold["expected_pages"]}
    assert gold_units & {p["unit"] for p in modes["hybrid"]["pages"][:10]}
