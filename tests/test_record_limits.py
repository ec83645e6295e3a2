"""Size limits on records (issue 12, item 7): an oversized record or records
file is refused with its size and the limit, before anything is embedded."""

from __future__ import annotations

import json

from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import run_index
from ragloupe.ingest import load_source

WORDS = "the pumps and the anchoring of every tank are inspected after each flood "


def write_huge_record(path, megabytes: int = 50):
    """A JSONL file: one ordinary record, then one record of ``megabytes`` MB of prose."""
    text = WORDS * (megabytes * 2**20 // len(WORDS))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "a", "title": "Small", "text": WORDS * 3}) + "\n")
        handle.write(json.dumps({"id": "b", "title": "Huge", "text": text}) + "\n")
    return path


def test_a_50_mb_record_is_refused_with_its_size_and_the_limit(tmp_path, settings):
    doc = load_source(write_huge_record(tmp_path / "huge.jsonl"), settings)

    assert doc.blocked and doc.pages == ()
    assert "row 2 (id b): text is 51,200 KB, over the 2,048 KB limit for one record" in doc.error


def test_oversized_record_is_refused_before_any_embedding_and_the_rest_goes_in(
        tmp_path, small_corpus, settings):
    write_huge_record(small_corpus / "huge.jsonl", megabytes=3)
    embedded = []

    def watch(progress):
        if progress.stage == "embed":
            embedded.append(progress.path)
            assert not progress.path.endswith("huge.jsonl"), "the huge record reached the embedder"

    summary = run_index([small_corpus], settings, progress=watch)

    assert [e.doc_id for e in summary.errors] == ["huge"]
    assert "3,072 KB, over the 2,048 KB limit" in summary.errors[0].error
    assert summary.new == ["notes", "report"]
    assert Manifest.load(settings).documents["huge"].state == "refused"


def test_records_file_over_the_file_limit_is_refused_unread(tmp_path, settings):
    path = tmp_path / "big.csv"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("id,title,text\n")
        for i in range(9000):
            handle.write(f"r{i},Record {i},{WORDS * 3}\n")

    doc = load_source(path, settings.replace(records_file_max_mb=1))

    assert doc.blocked and doc.pages == ()
    assert doc.error == ("file is 2.0 MB, over the 1 MB limit for a records file "
                         "(RAGLOUPE_RECORDS_FILE_MAX_MB)")
