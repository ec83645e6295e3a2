"""Uploads and indexing jobs over HTTP, on a fresh small index: a real uvicorn server on loopback
with upload switched on, and `ragloupe serve` itself started as a process."""

from __future__ import annotations

import base64
import ipaddress
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from api_server import ApiServer
from conftest import NOTE_ROWS, write_records
from local_servers import free_port, wait_until_ready
import evidencerag_models as er
from pdf_factory import (STATEMENT_HEADER_JOINED, STATEMENT_ROWS, statement_page, write_report_pdf,
                         write_table_pdf)
from ragloupe.config import Settings
from ragloupe.index.lock import index_lock

JOB_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    root = tmp_path_factory.mktemp("api-index")
    settings = Settings.from_env(index_dir=root / "index", raw_dir=root / "raw", runs_dir=root / "runs",
                                 logs_dir=root / "logs", chroma_host="", api_upload=True, max_upload_mb=1,
                                 llm_backend="none")
    with ApiServer(settings) as server:
        server.root = root
        yield server


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode()


def upload(api, name: str, data: bytes):
    return api.client.post("/api/v1/docs/upload", json={"filename": name, "content_base64": encoded(data)})


def wait_for(api, job_id: str) -> dict:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job = api.client.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in {"done", "failed"}:
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish in {JOB_TIMEOUT_S} s")


def raw_files(api) -> set[str]:
    return {p.name for p in api.settings.path("raw_dir").glob("*")} if api.settings.path("raw_dir").exists() else set()


def test_upload_saves_into_raw_and_indexes_in_the_background(api, tmp_path):
    pdf = write_report_pdf(tmp_path / "report.pdf", n_pages=3).read_bytes()
    response = upload(api, "report.pdf", pdf)
    assert response.status_code == 202 and response.json()["saved_as"] == "report.pdf"
    job = wait_for(api, response.json()["job_id"])
    assert job["state"] == "done" and job["summary"]["new"] == ["report"], job
    assert "report" in api.client.get("/api/v1/docs").json()["docs"]
    assert api.client.get("/api/v1/docs/report/stats").json()["page_count"] == 3


def test_an_uploaded_statement_has_its_table_chunks_listed(api, tmp_path):
    pdf = write_table_pdf(tmp_path / "statement.pdf", [statement_page(ruled=True)]).read_bytes()
    job = wait_for(api, upload(api, "statement.pdf", pdf).json()["job_id"])
    assert job["state"] == "done", job
    tables = api.client.get("/api/v1/docs/statement/tables").json()
    assert tables["total"] >= 1 and all(t["kind"] == "table" and t["page"] == 1 for t in tables["tables"])
    assert any("Core revenue resource limit" in t["text"] and "|" in t["text"] for t in tables["tables"])
    assert tables["tables"][0]["row_start"] >= 0 and tables["tables"][0]["row_end"] > tables["tables"][0]["row_start"]
    assert api.client.get("/api/v1/docs/statement/stats").json()["table_count"] == 1
    listed = er.Tables.model_validate(tables)  # EvidenceRAG's shape: one item per table
    assert listed.has_tables and listed.total == len(listed.items) == 1
    table = listed.items[0]
    assert table.page == 1 and table.rows >= 2 and table.cols >= 2
    assert table.table_markdown.count("\n") == table.rows + 1  # header, separator, every body row
    assert "Core revenue resource limit" in table.table_markdown
    item = tables["items"][0]  # the table as extracted, as the Chunk Explorer shows it
    assert (item["header"], item["cells"]) == (list(STATEMENT_HEADER_JOINED), [list(r) for r in STATEMENT_ROWS])
    assert item["caption"] == "Table 4: Statutory financial targets"
    found = api.client.post("/api/v1/docs/statement/search",
                            json={"question": "core revenue resource limit", "k": 5, "filter_is_table": True}).json()
    assert found["results"] and all(r["is_table"] and r["table_chunk_kind"] == "row_block" for r in found["results"])
    first = next(c for c in tables["tables"] if c["chunk_id"] == found["results"][0]["chunk_id"])
    assert (found["results"][0]["row_start_idx"], found["results"][0]["row_end_idx"]) == (
        first["row_start"], first["row_end"] - 1)  # EvidenceRAG's last row is inclusive


@pytest.mark.parametrize("name, saved", [("../../outside.csv", "outside.csv"), ("..\\..\\evil.csv", "evil.csv"),
                                         ("/etc/cron.d/notes.csv", "notes.csv")])
def test_traversal_names_cannot_leave_the_raw_folder(api, tmp_path, name, saved):
    data = write_records(tmp_path / "x.csv", NOTE_ROWS).read_bytes()
    response = upload(api, name, data)
    assert response.status_code == 202 and response.json()["saved_as"] == saved
    wait_for(api, response.json()["job_id"])
    assert (api.settings.path("raw_dir") / saved).read_bytes() == data
    assert not (api.root / saved).exists() and not (api.root.parent / saved).exists()


@pytest.mark.parametrize("name, data, reason", [
    ("fake.pdf", b"MZ\x90\x00 this is an executable", "not a PDF"),
    ("bad.csv", b"title,body\nA,some text\n", "no id column"),
    ("notes.docx", b"PK\x03\x04", "not a Word .docx file"),
    ("slides.pptx", b"PK\x03\x04", "only .pdf, .html, .htm, .docx, .csv, .jsonl"),
    ("empty.pdf", b"", "at least 1 character"),
])
def test_bad_content_is_refused_before_saving(api, name, data, reason):
    before = raw_files(api)
    response = upload(api, name, data)
    assert response.status_code in {415, 422} and reason in response.json()["error"], response.json()
    assert raw_files(api) == before


def test_bad_base64_is_refused(api):
    response = api.client.post("/api/v1/docs/upload", json={"filename": "a.pdf", "content_base64": "%%%not-base64"})
    assert response.status_code == 415 and "base64" in response.json()["error"]


def test_oversized_uploads_are_413(api):
    over_limit = b"%PDF-1.4\n" + b"0" * (1024 * 1024 + 1)  # just over 1 MB: passes the body limit, not the file limit
    response = upload(api, "big.pdf", over_limit)
    assert response.status_code == 413 and "1 MB limit" in response.json()["error"]
    far_over = upload(api, "bigger.pdf", b"%PDF-1.4\n" + b"0" * (2 * 1024 * 1024))
    assert far_over.status_code == 413
    assert not {"big.pdf", "bigger.pdf"} & raw_files(api)


def test_a_second_indexing_job_while_one_runs_is_409(api, tmp_path):
    pdf = write_report_pdf(tmp_path / "long.pdf", n_pages=12).read_bytes()
    first = upload(api, "long.pdf", pdf)
    assert first.status_code == 202
    second = api.client.post("/api/v1/index")
    refused_upload = upload(api, "other.csv", write_records(tmp_path / "o.csv", NOTE_ROWS).read_bytes())
    assert second.status_code == 409 and first.json()["job_id"] in second.json()["error"]
    assert refused_upload.status_code == 409 and "other.csv" not in raw_files(api)
    assert wait_for(api, first.json()["job_id"])["state"] == "done"


def test_an_indexer_elsewhere_makes_a_job_409_with_its_pid(api):
    with index_lock(api.settings):
        response = api.client.post("/api/v1/index")
    assert response.status_code == 409 and f"pid {os.getpid()}" in response.json()["error"]
    job = api.client.post("/api/v1/index")
    assert job.status_code == 202 and wait_for(api, job.json()["job_id"])["state"] == "done"


RAGLOUPE = [sys.executable, "-c", "import sys; from ragloupe.cli import main; sys.exit(main())"]


def _serve(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([*RAGLOUPE, "serve", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_serve_refuses_a_public_address_without_a_key(isolated_dirs):
    env = {**os.environ, "RAGLOUPE_API_KEY": ""}
    done = subprocess.run([*RAGLOUPE, "serve", "--host", "0.0.0.0"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "without an API key" in done.stderr and "Traceback" not in done.stderr


def test_serve_refuses_a_worker_count_that_is_not_a_whole_number(isolated_dirs):
    done = subprocess.run([*RAGLOUPE, "serve", "--workers", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--workers takes a whole number from 1 to 64" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_listens_on_loopback_and_answers_health(isolated_dirs):
    # Two worker processes on the one port: the way to use both cores (docs/api.md).
    port = free_port()
    process = _serve(["--port", str(port), "--workers", "2"], {**os.environ, "RAGLOUPE_LLM_BACKEND": "none"})
    try:
        wait_until_ready(f"http://127.0.0.1:{port}/health", process, timeout_s=60)
        sockets = psutil.Process(process.pid).net_connections(kind="inet")
        listening = [s.laddr for s in sockets if s.status == psutil.CONN_LISTEN]
        assert listening and {address.port for address in listening} == {port}
        assert all(ipaddress.ip_address(address.ip).is_loopback for address in listening), listening
    finally:
        process.terminate()
        process.wait(timeout=30)
