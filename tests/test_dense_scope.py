"""The dense engine reads Chroma for ids and distances only: chunks from the workspace's table, a
doc_ids filter as those documents' chunk ids. Same hits as the doc_id clause, on the demo index."""

from __future__ import annotations

from collections import Counter

from ragloupe.retrieve import engines
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

QUESTION = "How much did NHS Grampian spend on capital in 2021/22?"


def _opened(demo_index, embedder):
    workspace = Workspace.open(demo_index, embedder=embedder)
    return workspace, workspace.chunk_table(), workspace.query_vector(QUESTION)


def test_dense_hits_from_the_chunk_table_equal_the_doc_id_clause(demo_index, embedder):
    workspace, table, vector = _opened(demo_index, embedder)
    for filters in (None, {"doc_ids": ["Grampian-2021-2022"]},
                    {"doc_ids": ["Grampian-2020-2021", "guidance"], "pages": (1, 40)}):
        by_clause = engines.dense_search(workspace.store, vector, 100, filters)
        by_table = engines.dense_search(workspace.store, vector, 100, filters, table)
        assert by_table == by_clause and by_table


def test_a_filter_that_keeps_one_small_document_still_returns_k_hits(demo_index, embedder):
    workspace, table, vector = _opened(demo_index, embedder)
    smallest, size = min(Counter(c.doc_id for c in workspace.chunks()).items(), key=lambda kv: kv[1])
    hits = engines.dense_search(workspace.store, vector, 10, {"doc_ids": [smallest]}, table)
    assert len(hits) == min(10, size) and {h.chunk.doc_id for h in hits} == {smallest}
    ranking = search(QUESTION, "hybrid", 10, {"doc_ids": [smallest]}, workspace=workspace)
    assert len(ranking.hits) == min(10, size) and {h.chunk.doc_id for h in ranking.hits} == {smallest}


def test_a_filter_on_documents_the_index_lacks_finds_nothing(demo_index, embedder):
    workspace, table, vector = _opened(demo_index, embedder)
    assert engines.dense_search(workspace.store, vector, 10, {"doc_ids": ["no-such-report"]}, table) == []
    assert engines.dense_search(workspace.store, vector, 10, {"doc_ids": ["no-such-report"]}) == []


class _CountingStore:
    """The demo store, counting how often a search asks it what it holds."""

    def __init__(self, store):
        self._store, self.fingerprints = store, 0

    def fingerprint(self) -> str:
        self.fingerprints += 1
        return self._store.fingerprint()

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_a_search_asks_the_store_what_it_holds_once(demo_index, embedder):
    from ragloupe.index.store import open_store

    store = _CountingStore(open_store(demo_index))
    workspace = Workspace.open(demo_index, store=store, embedder=embedder)
    search(QUESTION, "hybrid", 10, None, workspace=workspace)
    store.fingerprints = 0
    search(QUESTION, "hybrid", 10, None, workspace=workspace)
    assert store.fingerprints == 1
