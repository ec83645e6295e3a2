"""The chunk BM25 saved at index time and loaded by a fresh process (index.lexical_saved)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragloupe.config import PROJECT_ROOT
from ragloupe.index import lexical, lexical_saved
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store
from ragloupe.models import Chunk
from ragloupe.workspace import Workspace

QUESTIONS = ("capital expenditure", "number of staff in the year", "ISO 31000 risk assessment",
             "COVID-19 vaccination costs 2020/21")


def _ranking(index: lexical.LexicalIndex, question: str) -> list[tuple[str, float]]:
    return [(chunk.chunk_id, round(score, 9)) for chunk, score in lexical.search(index, question, 20)]


def _saved_dirs(settings) -> list[Path]:
    root = settings.path("index_dir") / lexical_saved.SUBDIR
    return sorted(p for p in root.iterdir()) if root.is_dir() else []


@pytest.fixture(scope="module")
def indexed_copy(demo_index, tmp_path_factory):
    """A copy of the demo index with no saved BM25, then brought up to date by `ragloupe index`'s run."""
    root = tmp_path_factory.mktemp("saved-bm25")
    shutil.copytree(demo_index.path("index_dir"), root / "index")
    settings = demo_index.replace(index_dir=root / "index")
    shutil.rmtree(settings.path("index_dir") / lexical_saved.SUBDIR, ignore_errors=True)
    summary = run_index(None, settings)  # nothing to embed: only the saved BM25 is missing
    assert not summary.errors and summary.chunks > 1000
    return settings


def test_index_run_saves_bm25_that_a_fresh_load_ranks_as_a_build(indexed_copy, monkeypatch):
    store = open_store(indexed_copy)
    fingerprint = store.fingerprint()
    key = lexical_saved.saved_key(fingerprint, indexed_copy.bm25_k1, indexed_copy.bm25_b,
                                  indexed_copy.bm25_backend)
    assert [p.name for p in _saved_dirs(indexed_copy)] == [key]
    chunks = store.all_chunks()
    built = lexical.build_index(chunks, k1=indexed_copy.bm25_k1, b=indexed_copy.bm25_b,
                                backend=indexed_copy.bm25_backend)
    # The search path must load it, not tokenize the corpus again.
    monkeypatch.setattr(lexical, "build_index", lambda *a, **k: pytest.fail("built instead of loaded"))
    loaded = Workspace.open(indexed_copy, store=store).lexical()
    assert [c.chunk_id for c in loaded.chunks] == [c.chunk_id for c in built.chunks]
    for question in QUESTIONS:
        assert _ranking(loaded, question) == _ranking(built, question)
        assert _ranking(loaded, question)
    assert loaded.mask({"doc_ids": [chunks[0].doc_id]}).tolist() == built.mask({"doc_ids": [chunks[0].doc_id]}).tolist()


def test_saved_bm25_over_other_chunks_is_rebuilt_and_saved_again(indexed_copy):
    store = open_store(indexed_copy)
    fingerprint, chunks = store.fingerprint(), store.all_chunks()
    k1, b, backend = indexed_copy.bm25_k1, indexed_copy.bm25_b, indexed_copy.bm25_backend
    meta_path = lexical_saved.directory(indexed_copy, lexical_saved.saved_key(fingerprint, k1, b, backend)) / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["chunk_ids"] = meta["chunk_ids"][1:]  # as if saved before a chunk was added
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    assert lexical_saved.load(indexed_copy, fingerprint, chunks, k1, b, backend) is None
    rebuilt = lexical_saved.load_or_build(indexed_copy, fingerprint, lambda: chunks, k1, b, backend)
    assert len(rebuilt) == len(chunks)
    again = lexical_saved.load(indexed_copy, fingerprint, chunks, k1, b, backend)
    assert again is not None and _ranking(again, QUESTIONS[0]) == _ranking(rebuilt, QUESTIONS[0])
    # Other content (a new fingerprint) or other BM25 settings never reach the saved copy.
    assert lexical_saved.load(indexed_copy, "0" * 16, chunks, k1, b, backend) is None
    assert lexical_saved.load(indexed_copy, fingerprint, chunks, k1 + 0.1, b, backend) is None


def _page_chunks() -> list[Chunk]:
    path = PROJECT_ROOT / "data/benchmarks/grampian/pages/Grampian-2020-2021.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:40]
    return [Chunk(chunk_id=f"c{i:03d}", doc_id=row["doc_id"], page=row["page"], position=0, text=row["text"],
                  n_tokens=len(row["text"].split()), quality="clean") for i, row in enumerate(rows)]


def test_rank_bm25_backend_round_trips_and_damaged_files_read_as_missing(settings):
    chunks = _page_chunks()
    built = lexical.build_index(chunks, k1=1.2, b=0.7, backend="rank_bm25")
    target = lexical_saved.save(built, settings, "f" * 16)
    loaded = lexical_saved.load(settings, "f" * 16, list(reversed(chunks)), 1.2, 0.7, "rank_bm25")
    assert loaded is not None
    assert _ranking(loaded, "capital expenditure") == _ranking(built, "capital expenditure") != []
    (target / "tokens.json").write_text("{not json", encoding="utf-8")
    assert lexical_saved.load(settings, "f" * 16, chunks, 1.2, 0.7, "rank_bm25") is None
    lexical_saved.prune(settings, set())
    assert _saved_dirs(settings) == []


def test_a_sweep_of_settings_keeps_only_the_newest_saved_copies(settings):
    chunks = _page_chunks()[:10]
    written = []
    for step in range(lexical_saved.KEEP_SAVED + 2):
        k1 = 1.0 + step / 10
        lexical_saved.load_or_build(settings, "e" * 16, lambda: chunks, k1, 0.75, "rank_bm25")
        written.append(lexical_saved.saved_key("e" * 16, k1, 0.75, "rank_bm25"))
    assert len(_saved_dirs(settings)) == lexical_saved.KEEP_SAVED
    assert written[-1] in {p.name for p in _saved_dirs(settings)}
    assert lexical_saved.load(settings, "e" * 16, chunks, 1.0, 0.75, "rank_bm25") is None
