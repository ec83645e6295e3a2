"""The server's warm-up encodes the sentence vectors an index lacks, so no user's first search stops for them."""

from __future__ import annotations

from api_server import ApiServer
from ragloupe.index import sentences
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store
from ragloupe.workspace import Workspace


def test_the_warm_up_encodes_and_saves_the_sentence_vectors_the_index_lacks(small_corpus, settings, embedder,
                                                                           monkeypatch):
    from ragloupe.retrieve import engines
    # Indexed as before sentence vectors existed (or at weight 0): no document has them.
    assert not run_index([small_corpus], settings.replace(dense_sentence_weight=0)).errors
    assert sorted(Workspace.open(settings, embedder=embedder).missing_sentences()) == ["notes", "report"]
    chunks = open_store(settings).all_chunks()

    # The warm-up's own search rescores one candidate, so it reaches one document (as on any index
    # larger than its candidate pool), not every one.
    monkeypatch.setattr(engines, "SENTENCE_POOL", 1)
    with ApiServer(settings.replace(candidate_window=1, top_k=1)) as server:
        server.app_resources.warm_up()
        for doc_id in ("notes", "report"):  # saved as the indexer saves them: the next process reads them
            assert sentences.load(settings, doc_id, [c for c in chunks if c.doc_id == doc_id]) is not None
        health = server.client.get("/api/v1/health").json()
        found = server.client.post("/api/v1/search", json={"question": "How much did the water company spend "
                                                           "on pipes?", "mode": "dense", "k": 3})

    assert health["model"]["warm_up"] == "done"
    assert found.status_code == 200 and found.json()["ranking"]["hits"]
    assert Workspace.open(settings, embedder=embedder).missing_sentences() == []
