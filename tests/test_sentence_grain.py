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
    # the question's own embedding (the query adapter's map is tests/test_query_adapter.py's)
    ranking = search(question, "dense", 5, workspace=workspace, query_adapter="off")
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
    assert "1 of 2 documents have their sentence vectors saved; the others' are encoded by the next index " \
           "run, or before the first search that reads them" in capsys.readouterr().out


# ---- encoding the missing ones ahead of a search, with progress ----------------------------------

ONE_NOTES_QUESTION = {"_meta": {"doc_id": "notes"}, "queries": [
    {"query_id": "q1", "question": "What keeps the cooling running when the mains power fails?",
     "expected_records": ["n2"]}]}


def indexed_without_sentences(corpus, settings):
    """The corpus indexed as an index built before sentence vectors existed (or at weight 0): no file."""
    assert not run_index([corpus], settings.replace(dense_sentence_weight=0)).errors
    assert not (settings.path("index_dir") / sentences.SUBDIR).exists()
    return {doc_id: [c for c in open_store(settings).all_chunks() if c.doc_id == doc_id]
            for doc_id in ("extra", "notes", "report") if (corpus / f"{doc_id}.csv").exists()
            or (corpus / f"{doc_id}.pdf").exists()}


def test_the_missing_sentence_vectors_are_encoded_ahead_once_with_progress_that_ends_at_the_total(
        small_corpus, settings, embedder):
    from conftest import write_records
    from ragloupe.index.pipeline import SentencesEncoded

    write_records(small_corpus / "extra.csv", [("e1", "Fire water", "The fire water ring main is tested every "
                                                "quarter and its two pumps start on a pressure drop.")])
    chunks = indexed_without_sentences(small_corpus, settings)
    workspace = Workspace.open(settings, embedder=embedder)
    assert sorted(workspace.missing_sentences()) == ["extra", "notes", "report"]
    off = workspace.with_overrides(dense_sentence_weight=0)
    assert off.missing_sentences() == [] and off.encode_missing_sentences() == SentencesEncoded()

    # A search scoped to one document needs that one's alone.
    first = workspace.encode_missing_sentences(["notes"])
    assert (first.documents, first.sentences, first.saved) == (1, len(sentences.distinct_texts(chunks["notes"])), True)
    assert sentences.load(settings, "notes", chunks["notes"]) is not None
    assert sorted(workspace.missing_sentences()) == ["extra", "report"]

    steps = []
    rest = workspace.encode_missing_sentences(progress=steps.append)
    assert rest.documents == 2
    assert rest.sentences == len(sentences.distinct_texts(chunks["extra"])) + len(sentences.distinct_texts(chunks["report"]))
    reached = [step.done + step.part for step in steps]
    assert reached == sorted(reached) and reached[-1] == 2 and steps[-1].stage == "done"
    assert {step.path for step in steps if step.stage == "sentences"} == {"extra", "report"}
    for doc_id, its_chunks in chunks.items():  # what a search loads: made from exactly these chunks
        assert sentences.load(settings, doc_id, its_chunks) is not None

    assert workspace.encode_missing_sentences() == SentencesEncoded()
    assert Workspace.open(settings, embedder=embedder).missing_sentences() == []  # the next process too


def test_an_index_folder_that_cannot_hold_them_still_searches_with_the_vectors_held_in_memory(
        small_corpus, settings, embedder):
    from ragloupe.index.pipeline import encoded_sentences_line

    indexed_without_sentences(small_corpus, settings)
    (settings.path("index_dir") / sentences.SUBDIR).write_text("not a folder")  # nothing can be saved under it
    workspace = Workspace.open(settings, embedder=embedder)
    encoded = workspace.encode_missing_sentences()
    assert encoded.documents == 2 and not encoded.saved
    assert encoded_sentences_line(encoded).endswith("held by this process only (the index folder is read-only)")
    assert workspace.missing_sentences() == []
    question = "How much did the water company spend on pipes?"
    blended = search(question, "dense", 3, workspace=workspace)
    own = search(question, "dense", 3, workspace=workspace, dense_sentence_weight=0)
    assert blended.hits and [h.per_engine["dense"].score for h in blended.hits] != \
        [h.per_engine["dense"].score for h in own.hits]


def test_the_cli_says_on_stderr_when_it_encodes_them_and_its_json_stays_clean(capsys, small_corpus, settings,
                                                                             tmp_path):
    from ragloupe.cli import main

    indexed_without_sentences(small_corpus, settings)
    gold = tmp_path / "notes.gold.json"
    gold.write_text(json.dumps(ONE_NOTES_QUESTION), encoding="utf-8")

    assert main(["eval", str(gold), "--mode", "hybrid", "--json"]) == 0  # the gold question's document only
    out, err = capsys.readouterr()
    assert json.loads(out)["metrics"]
    assert "ragloupe: encoding the sentence vectors of 1 document (first search since it was indexed " \
           "without them, or with another model; saved for the next searches) ..." in err
    assert main(["search", "diesel generators after a power loss", "--json"]) == 0  # the whole index
    out, err = capsys.readouterr()
    assert json.loads(out)["hits"]
    assert "encoding the sentence vectors of 1 document " in err and "report" in err
    assert main(["search", "diesel generators after a power loss", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["hits"] and "sentence vectors" not in err


# ---- an index run completes what an older index lacks ---------------------------------------------

def test_an_index_run_encodes_the_sentence_vectors_its_unchanged_documents_lack_once(small_corpus, settings):
    from conftest import NOTE_ROWS, write_records
    from ragloupe.index.pipeline import status

    chunks = indexed_without_sentences(small_corpus, settings)
    write_records(small_corpus / "notes.csv", NOTE_ROWS[:2])  # notes is re-read; report is not
    steps = []
    summary = run_index([small_corpus], settings, progress=steps.append)
    assert (summary.modified, summary.unchanged, summary.sentences_filled) == (["notes"], ["report"], ["report"])
    assert summary.sentences_unsaved == [] and summary.timings["fill_sentences"] > 0
    assert sentences.load(settings, "report", chunks["report"]) is not None
    assert status(settings).n_documents_with_sentences == 2

    # The file's steps say one document's sentences follow; those count from 0 of 1; one "done", last.
    files = [s for s in steps if s.stage in ("ingest", "embed", "write")]
    assert files and {(s.total, s.later) for s in files} == {(1, 1)}
    after = steps[steps.index(files[-1]) + 1:]
    assert [s.stage for s in after][-1] == "done" and [s.stage for s in steps].count("done") == 1
    assert {(s.path, s.total) for s in after[:-1]} == {("report", 1)} and after[0].stage == "sentences"

    steps.clear()
    again = run_index([small_corpus], settings, progress=steps.append)
    assert again.sentences_filled == [] and "fill_sentences" not in again.timings
    assert "sentences" not in {s.stage for s in steps}


def test_the_cli_index_says_it_encoded_the_unchanged_documents_sentence_vectors(capsys, small_corpus, settings):
    from ragloupe.cli import main

    indexed_without_sentences(small_corpus, settings)
    assert main(["index", str(small_corpus)]) == 0
    out, err = capsys.readouterr()
    assert "sentences  encoded the sentence vectors of 2 unchanged documents (indexed without them, or with " \
           "another model)\n" in out
    lines = [line.strip() for line in err.replace("\r", "\n").split("\n") if line.strip()]
    assert any(line.startswith("encoding sentence vectors of notes (1 of 2)") for line in lines)
    assert any(line.startswith("encoding sentence vectors of report (2 of 2)") for line in lines)
    assert sum(line.startswith("done") for line in lines) == 1 and lines[-1].startswith("done")
    assert "2 of 2 documents have their sentence vectors saved" in _status_text(capsys)

    assert main(["index", "--json", str(small_corpus)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["sentences_filled"] == [] and "sentence vectors" not in err


def test_an_index_folder_that_cannot_hold_sentence_vectors_does_not_fail_the_run(capsys, tmp_path, settings):
    from conftest import NOTE_ROWS, write_records
    from ragloupe.cli import main

    corpus = tmp_path / "records"
    corpus.mkdir()
    write_records(corpus / "notes.csv", NOTE_ROWS)
    indexed_without_sentences(corpus, settings)
    (settings.path("index_dir") / sentences.SUBDIR).write_text("not a folder")  # nothing can be saved under it
    assert main(["index", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "sentences  1 unchanged document lacks its sentence vectors and the index folder cannot hold them: " \
           "searches encode them in memory\n" in out


def _status_text(capsys) -> str:
    from ragloupe.cli import main

    assert main(["status"]) == 0
    return capsys.readouterr().out
