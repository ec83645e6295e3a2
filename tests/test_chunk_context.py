"""Settings.chunk_context: the engines read "<title> › <section>" before a chunk; people read the chunk."""

from __future__ import annotations

import pytest
from conftest import NOTE_ROWS, write_records
from test_chunking import pdf_doc, prose

from ragloupe.chunking import chunk_document, context_line
from ragloupe.config import Settings
from ragloupe.errors import StaleIndex
from ragloupe.index import lexical
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store


@pytest.fixture
def with_context(settings: Settings) -> Settings:
    return settings.replace(chunk_context=True)


def test_context_line_joins_title_and_section_and_skips_what_is_missing():
    assert context_line("Grampian-2020-2021", "PERFORMANCE REPORT") == "Grampian-2020-2021 › PERFORMANCE REPORT"
    assert context_line("Grampian-2020-2021", "") == "Grampian-2020-2021"
    assert context_line("guidance", "Guidance") == "guidance"


def test_chunk_ids_and_texts_do_not_change_with_context(embedder, settings, with_context):
    page = "1. PURPOSE\n" + prose(3, 400)
    doc = pdf_doc(page, prose(4, 200))
    plain = chunk_document(doc, embedder.tokenizer, settings, embedder.max_seq_length)
    contextual = chunk_document(doc, embedder.tokenizer, with_context, embedder.max_seq_length)
    assert [(c.chunk_id, c.text) for c in contextual] == [(c.chunk_id, c.text) for c in plain]
    assert {c.context for c in plain} == {""}
    assert contextual[0].context == "report › 1. PURPOSE"
    assert contextual[0].search_text == "report › 1. PURPOSE\n" + contextual[0].text


def test_context_reaches_the_embedder_and_bm25_but_not_the_stored_text(tmp_path, with_context,
                                                                        embedder, monkeypatch):
    records = write_records(tmp_path / "notes.csv", NOTE_ROWS)
    embedded: list[str] = []
    encode = embedder.encode

    def recording_encode(texts, *args, **kwargs):
        embedded.extend(texts)
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(embedder, "encode", recording_encode)
    run_index([records], with_context)
    stored = {c.record_id: c for c in open_store(with_context).all_chunks()}
    power = stored["n2"]
    assert power.text == NOTE_ROWS[1][2]  # what the UI shows: the record's own text
    assert power.context == "notes › Power supply"
    assert "notes › Power supply\n" + NOTE_ROWS[1][2] in embedded
    # "supply" is only in the record's title: BM25 finds it through the context line.
    index = lexical.build_index(stored.values())
    assert [c.record_id for c, _ in lexical.search(index, "supply", 3)] == ["n2"]


def test_switching_chunk_context_makes_the_index_stale(tmp_path, settings, with_context):
    assert Settings().index_fingerprint() == Settings(chunk_context=False).index_fingerprint()
    assert with_context.index_fingerprint() != settings.index_fingerprint()
    records = write_records(tmp_path / "notes.csv", NOTE_ROWS)
    run_index([records], settings)
    with pytest.raises(StaleIndex):
        run_index([records], with_context)
