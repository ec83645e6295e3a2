"""Index and query through a real Chroma server (`chroma run`) over HttpClient."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from local_servers import free_port, wait_until_ready
from test_index_incremental import assert_consistent

from ragloupe.config import Settings
from ragloupe.index.pipeline import run_index, status
from ragloupe.index.store import open_store

CHROMA = Path(sys.executable).with_name("chroma")




@pytest.fixture
def chroma_server(tmp_path: Path):
    port = free_port()
    log = open(tmp_path / "chroma.log", "wb")
    server = subprocess.Popen([str(CHROMA), "run", "--path", str(tmp_path / "server-data"),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(f"http://127.0.0.1:{port}/api/v2/heartbeat", server, timeout_s=60)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.mark.chroma_server
def test_index_and_query_through_a_chroma_server(chroma_server, small_corpus, monkeypatch, embedder):
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(chroma_server))
    settings = Settings.from_env()
    assert settings.chroma_host == "127.0.0.1"

    summary = run_index([small_corpus], settings)
    assert summary.new == ["notes", "report"] and summary.errors == []
    store = open_store(settings)
    import chromadb

    direct = chromadb.HttpClient(host="127.0.0.1", port=chroma_server)
    assert direct.get_collection(settings.collection).count() == store.count() > 0
    assert not (settings.path("index_dir") / "chroma").exists()  # nothing went to the embedded store
    assert_consistent(settings)

    query = embedder.encode(["what happens when the mains power fails?"])[0]
    (best, distance), *_ = store.query(query, 3)
    assert best.record_id == "n2" and 0 <= distance < 1
    assert status(settings).store == f"chroma server 127.0.0.1:{chroma_server}"
    assert run_index([small_corpus], settings).unchanged == ["notes", "report"]
