"""Smaller faults of issue 12 (item 9): a partial --rebuild, the repair line
after an interrupted deletion, a library warning on screen, and gold-set
page values that are not pages."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pdf_factory as pf
import pytest
from conftest import NOTE_ROWS, write_records
from test_index_incremental import assert_consistent

from ragloupe.evaluate.goldset import load_goldset
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import run_index

RAGLOUPE = Path(sys.executable).with_name("ragloupe")

# The real pipeline in a child process whose first deletion removes half of
# a document's chunks and then kills the process with SIGKILL.
DIE_MID_DELETE = textwrap.dedent("""
    import os, signal, sys
    from ragloupe.config import bootstrap_environment, get_settings
    bootstrap_environment()
    from ragloupe.index import pipeline
    from ragloupe.index.store import Store

    real_delete = Store.delete_ids

    def delete_then_die(self, ids):
        ids = list(ids)
        real_delete(self, ids[: max(1, len(ids) // 2)])
        os.kill(os.getpid(), signal.SIGKILL)

    Store.delete_ids = delete_then_die
    pipeline.run_index([sys.argv[1]], get_settings())
""")


def two_folders(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    write_records(first / "alpha.csv", NOTE_ROWS[:2])
    write_records(second / "beta.csv", NOTE_ROWS[2:])
    return first, second


def test_rebuild_of_one_folder_keeps_the_other_folders_documents(tmp_path, settings):
    first, second = two_folders(tmp_path)
    run_index([first, second], settings)

    summary = run_index([first], settings, rebuild=True)

    assert summary.rebuilt and sorted(summary.new) == ["alpha", "beta"]
    assert sorted(e.doc_id for e in Manifest.load(settings).complete()) == ["alpha", "beta"]
    assert_consistent(settings)


def test_repair_after_an_interrupted_deletion_says_removed(tmp_path, settings):
    first, second = two_folders(tmp_path)
    run_index([first], settings)
    (first / "alpha.csv").unlink()

    child = subprocess.run([sys.executable, "-c", DIE_MID_DELETE, str(first)],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert [e.doc_id for e in Manifest.load(settings).pending()] == ["alpha"]

    summary = run_index([first], settings)

    assert summary.repaired == ["alpha: interrupted deletion, removed"]
    assert "alpha" not in Manifest.load(settings).documents
    assert_consistent(settings)


def test_no_library_warning_reaches_the_screen_while_indexing(tmp_path, settings):
    first, _ = two_folders(tmp_path)
    pf.write_text_pdf(first / "blank.pdf", [[]])  # no text: nothing to embed, the model still asked

    done = subprocess.run([str(RAGLOUPE), "index", "--json", str(first)],
                          capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["new"] == ["alpha", "blank"]
    assert "Warning" not in done.stderr


@pytest.mark.parametrize("value", [0, "two", -3, 2.5, [4, "0"]])
def test_gold_page_that_is_not_a_positive_whole_number_is_named(tmp_path, value):
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"_meta": {"doc_id": "d"}, "queries": [
        {"query_id": "q1", "question": "where?", "expected_pages": value},
        {"query_id": "q2", "question": "and here?", "expected_pages": [2]}]}))

    gold = load_goldset(path)

    assert [q.query_id for q in gold.queries] == ["q2"]
    [finding] = gold.findings
    assert finding.code == "bad_page" and finding.query_id == "q1"
    assert finding.message.endswith("page must be a positive whole number")
