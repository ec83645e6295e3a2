"""Dense at sentence grain: each chunk's sentences embedded apart when it is indexed, and the dense
engine's score blending the chunk's own cosine with its best sentence's.

Real parts: the bundled model, embedded Chroma, the small corpus's PDF and records.
"""

from __future__ import annotations

import json

import numpy as np

from ragloupe.index import sentences
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store
from ragloupe.models import Chunk
from ragloupe.retrieve.engines import EngineHit, with_best_sentence
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace


def chunk(chunk_id: str, text: str = "text", doc_id: str = "d") -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=doc_id, page=1, position=0, text=text, n_tokens=1, quality="clean")


def test_a_text_is_cut_into_sentences_short_pieces_joined_long_ones_cut():
    text = ("Notes to the accounts.\nThe board approved the capital plan in June after a long review of "
            "every site. Spending rose by a tenth. " + " ".join(["word"] * 70))
    assert sentences.split_sentences(text) == [
        "Notes to the accounts. The board approved the capital plan in June after a long review of every site.",
        "Spending rose by a tenth. " + " ".join(["word"] * 55),
        " ".join(["word"] * 15),
    ]
    assert sentences.split_sentences("Two words.") == ["Two words."]


def test_the_dense_score_is_the_chunks_own_cosine_blended_with_its_best_sentence():
    a, b = chunk("a"), chunk("b")
    # Query along x; chunk a's sentences at cosines 0.2 and 0.9, chunk b's one sentence at 0.6.
    vectors = np.array([[0.2, np.sqrt(1 - 0.04)], [0.9, np.sqrt(1 - 0.81)], [0.6, 0.8]], dtype=np.float32)
    saved = sentences.DocSentences(("a", "b"), ("", ""), np.array([0, 2, 3]), vectors)
    hits = [EngineHit(b, 0.6, 0.4), EngineHit(a, 0.5, 0.5)]
    query = np.array([1.0, 0.0], dtype=np.float32)

    blended = with_best_sentence(hits, query, 0.5, lambda doc_id: saved)
    assert [(h.chunk.chunk_id, round(h.score, 4), h.distance) for h in blended] == [("a", 0.7, 0.5), ("b", 0.6, 0.4)]
    own = with_best_sentence(hits, query, 0.0, lambda doc_id: saved)
    assert [(h.chunk.chunk_id, round(h.score, 4)) for h in own] == [("b", 0.6), ("a", 0.5)]
    # A chunk the saved vectors do not hold keeps its own score.
    alone = with_best_sentence([EngineHit(chunk("c"), 0.55, 0.45)], query, 0.5, lambda doc_id: saved)
    assert [round(h.score, 4) for h in alone] == [0.55]


def test_indexing_writes_each_documents_sentences_and_search_blends_them(small_corpus, settings, embedder):
    run_index([small_corpus], settings)
    store = open_store(settings)
    by_doc = {}
    for c in store.all_chunks():
        by_doc.setdefault(c.doc_id, []).append(c)
    assert sorted(by_doc) == ["notes", "report"]
    for doc_id, chunks in by_doc.items():
        saved = sentences.load(settings, doc_id, chunks)
        assert saved is not None and len(saved.vectors) >= len(chunks)
        assert isinstance(saved.vectors, np.memmap)  # a search reads only its candidates' rows

    question = "How much did the water company spend on pipes?"
    workspace = Workspace.open(settings, embedder=embedder)
    ranking = search(question, "dense", 5, workspace=workspace)
    query = embedder.encode([question])[0]
    for hit in ranking.hits:
        own = float(embedder.encode([hit.chunk.search_text])[0] @ query)
        best = float(np.max(embedder.encode(sentences.sentence_texts(hit.chunk)) @ query))
        assert abs(hit.per_engine["dense"].score - (0.6 * own + 0.4 * best)) < 1e-4
        assert abs(hit.per_engine["dense"].distance - (1 - own)) < 1e-4
    plain = search(question, "dense", 5, workspace=workspace, dense_sentence_weight=0)
    for hit in plain.hits:
        assert abs(hit.per_engine["dense"].score - (1 - hit.per_engine["dense"].distance)) < 1e-6


def test_vectors_that_no_longer_match_the_chunks_are_encoded_again_and_a_removed_documents_go(
        small_corpus, settings, embedder):
    run_index([small_corpus], settings)
    report = [c for c in open_store(settings).all_chunks() if c.doc_id == "report"]
    path = sentences.doc_path(settings, "report")
    sentences.save(settings, "report", sentences.build(report[:1], embedder.encode))  # a stale file
    assert sentences.load(settings, "report", report) is None

    workspace = Workspace.open(settings, embedder=embedder)
    rebuilt = workspace.sentences_of("report")
    assert sorted(rebuilt.chunk_ids) == sorted(c.chunk_id for c in report)
    assert sentences.load(settings, "report", report) is not None  # saved for the next process

    (small_corpus / "report.pdf").unlink()
    run_index([small_corpus], settings)
    assert not path.exists() and not path.with_suffix(".json").exists()
    assert sentences.doc_path(settings, "notes").exists()


def test_no_sentence_is_embedded_when_the_weight_is_zero(small_corpus, settings):
    run_index([small_corpus], settings.replace(dense_sentence_weight=0))
    assert not (settings.path("index_dir") / sentences.SUBDIR).exists()


def test_status_says_how_many_documents_have_their_sentence_vectors(capsys, small_corpus, settings):
    from ragloupe.cli import main

    run_index([small_corpus], settings)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "sentences: dense blends each chunk's best sentence at 0.4; 2 of 2 documents have their " \
           "sentence vectors saved\n" in out
    sentences.doc_path(settings, "report").unlink()
    assert main(["status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_documents_with_sentences"] == 1
    assert {d["doc_id"]: d["sentence_vectors"] for d in data["documents"]} == {"notes": True, "report": False}
    assert main(["status"]) == 0
    assert "1 of 2 documents have their sentence vectors saved; the others' are encoded on their first " \
           "search" in capsys.readouterr().out
