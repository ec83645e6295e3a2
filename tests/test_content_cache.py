"""Every chunk of the store is read once per store content and shared (the Workspace, ragloupe/workspace.py).

The chunk BM25, the unit index and the documents' periods are all built from
that one read; after a re-index each of them must be built from what the
store holds now, never from the chunks cached before.
"""

from __future__ import annotations

from retrieval_corpus import build_index
from ragloupe.index.store import open_store
from ragloupe.models import Chunk
from ragloupe.workspace import Workspace

ADDED = Chunk(chunk_id="accounts-p1-0", doc_id="accounts", page=1, position=0, quality="clean",
              text="Annual report and accounts for the year ended 31 March 2023. "
                   "Lightning struck a storage tank roof.", n_tokens=16)


def built_over_the_store(workspace: Workspace) -> dict[str, set[str]]:
    """What each cached reader holds now: chunk ids, BM25 chunk ids, unit ids, documents with a period."""
    s = workspace.settings
    return {"chunks": {c.chunk_id for c in workspace.chunks()},
            "bm25": {c.chunk_id for c in workspace.lexical().chunks},
            "units": set(workspace.unit_index(s.unit_view, s.bm25_k1, s.unit_bm25_b, s.bm25_backend).units),
            "periods": set(workspace.periods())}


def test_chunks_are_read_once_and_shared_while_the_store_is_unchanged(tmp_path, embedder):
    settings = build_index(tmp_path, embedder)
    workspace = Workspace.open(settings)
    chunks = workspace.chunks()

    assert workspace.chunks() is chunks
    assert len(chunks) == open_store(settings).count()
    bm25_chunks = workspace.lexical().chunks
    assert {id(c) for c in bm25_chunks} == {id(c) for c in chunks}


def test_a_reindex_is_read_afresh_by_every_reader(tmp_path, embedder):
    settings = build_index(tmp_path, embedder).replace(unit_view="all")
    reader = Workspace.open(settings, store=open_store(settings))  # long-lived, as the app's and the API's are
    before = built_over_the_store(reader)
    assert "accounts-p1-0" not in before["chunks"]

    indexer = open_store(settings)
    indexer.upsert([ADDED], embedder.encode([ADDED.text]))
    indexer.set_content_marker("test-added")
    added = built_over_the_store(reader)
    assert added == {"chunks": before["chunks"] | {"accounts-p1-0"},
                     "bm25": before["bm25"] | {"accounts-p1-0"},
                     "units": before["units"] | {"accounts#p1"},
                     "periods": before["periods"] | {"accounts"}}

    indexer.delete_ids(["accounts-p1-0"])  # the chunk count alone changes, not the marker
    assert built_over_the_store(reader) == before
