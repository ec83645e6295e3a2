"""Incremental indexing: new, modified, unchanged, deleted, settings changes, bad files.

Real parts throughout: the bundled model, embedded Chroma, real PDFs written by
tests/pdf_factory.py, and (in the demo test) the shipped corpus.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import DEMO_DOC_IDS, DEMO_SOURCES, NOTE_ROWS, write_records
from pdf_factory import write_renamed_non_pdf, write_zero_byte_pdf
from pypdf import PdfReader

from ragloupe.config import Settings
from ragloupe.errors import StaleIndex
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import plan, run_index, status
from ragloupe.index.store import open_store


def assert_consistent(settings: Settings) -> None:
    """The store holds exactly the chunks the manifest's complete documents claim."""
    manifest = Manifest.load(settings)
    store = open_store(settings)
    assert manifest.pending() == []
    assert set(store.ids()) == manifest.complete_chunk_ids()
    for entry in manifest.complete():
        held = store.ids({"doc_id": entry.doc_id})
        assert sorted(held) == sorted(entry.chunk_ids)


def test_new_sources_are_indexed_with_their_pages_and_chunks(small_corpus, settings):
    summary = run_index([small_corpus], settings)
    assert summary.new == ["notes", "report"] and summary.errors == []
    manifest = Manifest.load(settings)
    assert [p.record_id for p in manifest.pages("notes")] == ["n1", "n2", "n3"]
    assert [p.page for p in manifest.pages("report")] == [1, 2, 3, 4]
    # The running header of the PDF was stripped, and the manifest says so.
    assert any("ACME WATER" in line for line in manifest.documents["report"].boilerplate)
    assert summary.chunks == summary.chunks_added == open_store(settings).count() > 0
    assert_consistent(settings)


def test_unchanged_sources_are_not_read_or_embedded_again(small_corpus, settings, embedder, monkeypatch):
    run_index([small_corpus], settings)
    before = open_store(settings).fingerprint()

    def no_embedding(texts, batch_size=None):
        raise AssertionError("an unchanged source was embedded again")

    monkeypatch.setattr(embedder, "encode", no_embedding)
    monkeypatch.setattr("ragloupe.index.pipeline.load_source",
                        lambda *a: pytest.fail("an unchanged source was read again"))
    summary = run_index([small_corpus], settings)
    assert summary.unchanged == ["notes", "report"]
    assert (summary.new, summary.modified, summary.deleted) == ([], [], [])
    assert summary.chunks_added == summary.chunks_removed == 0
    assert open_store(settings).fingerprint() == before


def test_modified_source_replaces_its_chunks(small_corpus, settings):
    run_index([small_corpus], settings)
    old_ids = set(Manifest.load(settings).documents["notes"].chunk_ids)
    report_ids = set(Manifest.load(settings).documents["report"].chunk_ids)
    rows = list(NOTE_ROWS[:2]) + [("n4", "Lightning", "Lightning strikes on storage tanks ignite "
                                   "flammable vapour at the rim seal; bonding shunts and earthing "
                                   "straps carry the current safely to ground.")]
    write_records(small_corpus / "notes.csv", rows)

    summary = run_index([small_corpus], settings)
    assert summary.modified == ["notes"] and summary.unchanged == ["report"]
    store = open_store(settings)
    texts = " ".join(c.text for c in store.all_chunks({"doc_id": "notes"}))
    assert "Lightning strikes" in texts and "Earthquake" not in texts
    assert not old_ids & set(store.ids())  # a new file hash means all-new chunk ids
    assert report_ids <= set(store.ids())
    assert summary.chunks_removed == len(old_ids)
    assert_consistent(settings)


def test_deleted_source_is_removed_from_the_index(small_corpus, settings):
    run_index([small_corpus], settings)
    (small_corpus / "report.pdf").unlink()
    summary = run_index([small_corpus], settings)
    assert summary.deleted == ["report"]
    assert "report" not in Manifest.load(settings).documents
    assert open_store(settings).ids({"doc_id": "report"}) == []
    assert_consistent(settings)


def test_plan_sorts_sources_into_new_modified_unchanged_deleted(small_corpus, settings):
    run_index([small_corpus], settings)
    write_records(small_corpus / "notes.csv", NOTE_ROWS[:2])
    (small_corpus / "report.pdf").unlink()
    write_records(small_corpus / "extra.csv", NOTE_ROWS[2:])
    the_plan = plan([small_corpus], settings)
    assert [Path(p).name for p in the_plan.new] == ["extra.csv"]
    assert [Path(p).name for p in the_plan.modified] == ["notes.csv"]
    assert the_plan.unchanged == [] and the_plan.deleted == ["report"]


def test_sources_outside_the_given_roots_are_left_alone(small_corpus, tmp_path, settings):
    other = tmp_path / "other"
    other.mkdir()
    write_records(other / "more.csv", NOTE_ROWS[:1])
    run_index([small_corpus, other], settings)
    summary = run_index([other], settings)
    assert summary.deleted == [] and summary.unchanged == ["more"]
    assert set(Manifest.load(settings).documents) == {"more", "notes", "report"}


def test_run_without_paths_uses_the_recorded_roots_and_raw_dir(small_corpus, settings):
    run_index([small_corpus], settings)
    write_records(settings.path("raw_dir") / "dropped.csv", NOTE_ROWS[1:2])
    summary = run_index(None, settings)
    assert summary.new == ["dropped"]
    assert summary.unchanged == ["notes", "report"]


def test_settings_change_is_refused_until_rebuild(small_corpus, settings):
    run_index([small_corpus], settings)
    before = Manifest.load(settings).complete_chunk_ids()
    changed = settings.replace(chunk_tokens=128, chunk_overlap=16)
    with pytest.raises(StaleIndex, match=r"chunk_tokens 256 -> 128.*--rebuild"):
        run_index([small_corpus], changed)
    assert Manifest.load(settings).complete_chunk_ids() == before  # untouched
    assert status(changed).stale

    summary = run_index(None, changed, rebuild=True)
    assert summary.rebuilt and summary.new == ["notes", "report"]
    manifest = Manifest.load(changed)
    assert manifest.settings_fingerprint == changed.index_fingerprint()
    assert max(c.n_tokens for c in open_store(changed).all_chunks()) <= 128
    assert status(changed).stale is None
    assert_consistent(changed)


def test_bad_files_are_reported_one_line_each_and_the_rest_is_indexed(small_corpus, settings):
    write_zero_byte_pdf(small_corpus / "empty.pdf")
    write_renamed_non_pdf(small_corpus / "picture.pdf")
    write_records(small_corpus / "dupes.csv", [NOTE_ROWS[0], NOTE_ROWS[0]])
    summary = run_index([small_corpus], settings)

    reasons = {e.doc_id: e.error for e in summary.errors}
    assert set(reasons) == {"empty", "picture", "dupes"}
    assert all(reason and "\n" not in reason for reason in reasons.values())
    dupes = next(e for e in summary.errors if e.doc_id == "dupes")
    assert [f["code"] for f in dupes.findings if f["severity"] == "blocking"] == ["duplicate_id"]
    assert summary.new == ["notes", "report"]
    store = open_store(settings)
    assert {c.doc_id for c in store.all_chunks()} == {"notes", "report"}
    manifest = Manifest.load(settings)
    assert {e.doc_id for e in manifest.refused()} == {"empty", "picture", "dupes"}
    assert_consistent(settings)


def test_a_file_that_turns_bad_loses_its_old_chunks(small_corpus, settings):
    run_index([small_corpus], settings)
    write_renamed_non_pdf(small_corpus / "report.pdf")
    summary = run_index([small_corpus], settings)
    assert [e.doc_id for e in summary.errors] == ["report"]
    assert open_store(settings).ids({"doc_id": "report"}) == []
    assert_consistent(settings)


def test_two_files_with_one_doc_id_are_not_mixed(small_corpus, settings):
    write_records(small_corpus / "report.csv", NOTE_ROWS[:1])
    summary = run_index([small_corpus], settings)
    clash = [e for e in summary.errors if e.doc_id == "report"]
    assert len(clash) == 1 and "already used" in clash[0].error
    assert Manifest.load(settings).documents["report"].kind in {"pdf", "records"}
    assert_consistent(settings)


def test_store_fingerprint_moves_with_the_content_even_for_a_long_lived_store(small_corpus, settings):
    run_index([small_corpus], settings)
    long_lived = open_store(settings)  # like the app's cached store
    first = long_lived.fingerprint()
    write_records(small_corpus / "notes.csv", NOTE_ROWS[::-1])  # same rows and chunk count, new bytes
    run_index([small_corpus], settings)
    assert long_lived.count() == open_store(settings).count()
    assert long_lived.fingerprint() != first
    assert long_lived.fingerprint() == open_store(settings).fingerprint()


def test_any_write_through_a_store_moves_the_fingerprint_until_the_indexer_records_the_content(
        small_corpus, settings):
    run_index([small_corpus], settings)
    store = open_store(settings)
    indexed = store.fingerprint()
    chunk = store.all_chunks()[0]
    vector = store.get_embeddings([chunk.chunk_id])
    store.delete_ids([chunk.chunk_id])  # another process, or a run interrupted here
    deleted = open_store(settings).fingerprint()
    store.upsert([chunk], vector)  # the same chunk back: same count, but nothing recorded it
    rewritten = open_store(settings).fingerprint()
    assert len({indexed, deleted, rewritten}) == 3
    run_index([small_corpus], settings)  # nothing to do, and it records what the collection holds
    assert open_store(settings).fingerprint() == indexed


def test_manifest_is_valid_json_with_no_temporary_files_left(small_corpus, settings):
    run_index([small_corpus], settings)
    index_dir = settings.path("index_dir")
    data = json.loads((index_dir / "manifest.json").read_text())
    assert data["settings_fingerprint"] == settings.index_fingerprint()
    assert not list(index_dir.glob(".manifest-*"))


def test_demo_corpus_index_is_complete_and_consistent(demo_index):
    manifest = Manifest.load(demo_index)
    assert sorted(manifest.documents) == list(DEMO_DOC_IDS)
    pages_in_files = {path.stem: len(PdfReader(path).pages) for root in DEMO_SOURCES
                      for path in ([root] if root.is_file() else root.glob("*.pdf")) if path.suffix == ".pdf"}
    with open(DEMO_SOURCES[1], newline="", encoding="utf-8") as records:
        pages_in_files["guidance"] = sum(1 for _ in csv.DictReader(records))  # one page per record
    assert {d: len(manifest.pages(d)) for d in manifest.documents} == pages_in_files
    # SOURCE.md: page 1 of the 2020/21 report is the cover and has no text.
    cover = manifest.pages("Grampian-2020-2021")[0]
    assert not cover.indexed and cover.reason
    assert_consistent(demo_index)
    # Every gold page of the shipped evaluation sets can be retrieved at all.
    indexed = {(d, p.page) for d in manifest.documents for p in manifest.pages(d) if p.indexed}
    eval_dir = Path(__file__).resolve().parents[1] / "data/benchmarks/grampian/eval"
    for path in eval_dir.glob("*.eval.json"):
        for query in json.loads(path.read_text())["queries"]:
            for page in query["expected_pages"]:
                assert (query["doc_id"], page) in indexed, (query["query_id"], page)


def test_a_removed_source_folder_deletes_its_documents_on_a_run_without_paths(small_corpus, tmp_path, settings):
    other = tmp_path / "other"
    other.mkdir()
    write_records(other / "more.csv", NOTE_ROWS[:1])
    run_index([small_corpus, other], settings)
    (other / "more.csv").unlink()
    other.rmdir()
    summary = run_index(None, settings)
    assert summary.deleted == ["more"] and summary.errors == []
    assert str(other) not in Manifest.load(settings).roots
    assert run_index(None, settings).errors == []
