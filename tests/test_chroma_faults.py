"""A Chroma server that stops answering or dies never hangs a command or looks
like a bug (issue 12, items 5 and 6). One real `chroma run` server for the
module: paused with SIGSTOP, killed mid-index, started again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from local_servers import free_port, run_bounded, wait_until_ready
from test_index_incremental import assert_consistent

from ragloupe.cli import main
from ragloupe.config import Settings
from ragloupe.errors import StoreTimeout, StoreUnreachable
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store

CHROMA = Path(sys.executable).with_name("chroma")
TIMEOUT_S = 2


class ChromaServer:
    """`chroma run` on a free loopback port, over one data directory, restartable."""

    def __init__(self, data: Path, log: Path):
        self.data, self.log, self.port = data, log, free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(CHROMA), "run", "--path", str(self.data), "--host", "127.0.0.1",
                 "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT)
        wait_until_ready(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", self.process, timeout_s=60)

    def signal(self, number: int) -> None:
        os.kill(self.process.pid, number)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(20)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("chroma-faults")
    chroma = ChromaServer(root / "data", root / "chroma.log")
    chroma.start()
    try:
        yield chroma
    finally:
        chroma.stop()


@pytest.fixture
def server_env(server, settings, monkeypatch, request) -> Settings:
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", str(server.port))
    monkeypatch.setenv("RAGLOUPE_CHROMA_TIMEOUT_S", str(TIMEOUT_S))
    monkeypatch.setenv("RAGLOUPE_COLLECTION", request.node.name[:40].replace("[", "-").strip("]"))
    return Settings.from_env()



@pytest.mark.chroma_server
def test_paused_server_is_named_with_the_timeout_not_waited_on(server, server_env, small_corpus, capsys):
    assert run_index([small_corpus], server_env).errors == []
    store = open_store(server_env)
    server.signal(signal.SIGSTOP)
    try:
        opened, open_s = run_bounded(lambda: open_store(server_env), limit_s=20)
        counted, count_s = run_bounded(store.count, limit_s=20)
        status_code, _ = run_bounded(lambda: main(["status"]), limit_s=20)
    finally:
        server.signal(signal.SIGCONT)

    message = f"Chroma server at 127.0.0.1:{server.port} did not answer in {TIMEOUT_S} s"
    assert isinstance(opened.get("error"), StoreTimeout) and message in str(opened["error"])
    assert isinstance(counted.get("error"), StoreTimeout) and message in str(counted["error"])
    assert open_s < TIMEOUT_S + 3 and count_s < TIMEOUT_S + 3
    err = capsys.readouterr().err
    assert status_code.get("result") == 2 and message in err and "internal error" not in err
    assert store.count() > 0  # answered again once resumed


@pytest.mark.chroma_server
def test_server_killed_mid_index_is_named_and_a_rerun_repairs(server, server_env, small_corpus, capsys):
    def kill_at_first_write(progress):
        if progress.stage == "write" and server.process.poll() is None:
            server.kill()

    try:
        with pytest.raises(StoreUnreachable) as died:
            run_index([small_corpus], server_env, progress=kill_at_first_write)
        code = main(["index", str(small_corpus)])
        err = capsys.readouterr().err
    finally:
        if server.process.poll() is not None:
            server.start()

    where = f"Chroma server at 127.0.0.1:{server.port} cannot be reached"
    assert where in str(died.value) and "chroma run" in str(died.value)
    assert code == 2 and where in err and "internal error" not in err
    assert [e.doc_id for e in Manifest.load(server_env).pending()]  # the kill left a pending document
    summary = run_index([small_corpus], server_env)
    assert summary.errors == [] and summary.repaired
    assert sorted(e.doc_id for e in Manifest.load(server_env).complete()) == ["notes", "report"]
    assert_consistent(server_env)
