"""The index stays consistent when an indexer is killed, and one indexer runs at a time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import NOTE_ROWS, write_records
from test_index_incremental import assert_consistent

from ragloupe.errors import IndexBusy
from ragloupe.index.lock import index_lock, lock_holder
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store

RAGLOUPE = Path(sys.executable).with_name("ragloupe")

# Runs the real pipeline in a child process, but its first upsert writes half
# of the chunks and then the process kills itself with SIGKILL: the worst
# moment, with a source half in Chroma and "pending" in the manifest.
DIE_MID_UPSERT = textwrap.dedent("""
    import os, signal, sys
    from ragloupe.config import bootstrap_environment, get_settings
    bootstrap_environment()
    from ragloupe.index import pipeline
    from ragloupe.index.store import Store

    real_upsert = Store.upsert

    def upsert_then_die(self, chunks, embeddings):
        half = max(1, len(chunks) // 2)
        real_upsert(self, chunks[:half], embeddings[:half])
        os.kill(os.getpid(), signal.SIGKILL)

    Store.upsert = upsert_then_die
    pipeline.run_index([sys.argv[1]], get_settings())
""")


def more_rows(tag: str, n: int = 3) -> list[tuple[str, str, str]]:
    return [(f"{tag}{i}", f"{tag} note {i}", f"Record {i} of batch {tag}: " + NOTE_ROWS[i % 3][2])
            for i in range(n)]


def test_indexer_killed_mid_write_is_repaired_by_the_next_run(small_corpus, settings):
    run_index([small_corpus], settings)
    write_records(small_corpus / "notes.csv", more_rows("changed"))
    write_records(small_corpus / "zzz-later.csv", more_rows("later"))

    child = subprocess.run([sys.executable, "-c", DIE_MID_UPSERT, str(small_corpus)],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    manifest = Manifest.load(settings)
    assert [e.doc_id for e in manifest.pending()] == ["notes"]  # the kill left its trace
    assert lock_holder(settings) is None  # the kernel dropped the dead indexer's lock

    summary = run_index([small_corpus], settings)
    assert any(line.startswith("notes:") for line in summary.repaired)
    assert sorted(summary.new) == ["notes", "zzz-later"] and summary.errors == []
    assert_consistent(settings)
    texts = " ".join(c.text for c in open_store(settings).all_chunks({"doc_id": "notes"}))
    assert "batch changed" in texts and "Flood defences" not in texts


def test_cli_indexer_killed_mid_run_ends_consistent_after_rerun(tmp_path, settings):
    corpus = tmp_path / "many"
    corpus.mkdir()
    for batch in "abcdef":
        write_records(corpus / f"{batch}.csv", more_rows(batch, n=4))
    child = subprocess.Popen([str(RAGLOUPE), "index", str(corpus)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    manifest_path = settings.path("index_dir") / "manifest.json"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and child.poll() is None:
            if manifest_path.exists():
                states = [d["state"] for d in json.loads(manifest_path.read_text())["documents"]]
                if states:  # the first source is being written or is done: mid-run
                    break
            time.sleep(0.005)
        assert child.poll() is None, "the indexer finished before it could be killed"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(30)
    done_before = len(Manifest.load(settings).complete())
    assert done_before < 6

    summary = run_index([corpus], settings)
    assert summary.errors == []
    assert len(Manifest.load(settings).complete()) == 6
    assert_consistent(settings)


def test_second_indexer_is_refused_while_the_first_runs(small_corpus, settings):
    first = subprocess.Popen([str(RAGLOUPE), "index", "--json", str(small_corpus)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 120
        while lock_holder(settings) != first.pid and time.monotonic() < deadline:
            assert first.poll() is None, "the first indexer ended before it took the lock"
            time.sleep(0.02)
        with pytest.raises(IndexBusy, match=rf"another indexer is running \(pid {first.pid}\)"):
            run_index([small_corpus], settings)
        output, _ = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0
    assert json.loads(output)["new"] == ["notes", "report"]  # the first run was not disturbed
    assert_consistent(settings)
    assert lock_holder(settings) is None


def test_a_page_asking_whether_an_indexer_runs_does_not_refuse_the_indexer(settings):
    """lock_holder() holds a shared lock for an instant; an indexer starting then must not be told
    "another indexer is running" (the Index page's adapt button hit this while the page rendered)."""
    import fcntl
    import threading

    settings.path("index_dir").mkdir(parents=True, exist_ok=True)
    path = settings.path("index_dir") / ".lock"
    probe = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # what lock_holder() does, held a little longer
    release = threading.Timer(0.2, lambda: fcntl.flock(probe, fcntl.LOCK_UN))
    release.start()
    try:
        with index_lock(settings):
            assert lock_holder(settings) == os.getpid()
    finally:
        release.join()
        os.close(probe)
