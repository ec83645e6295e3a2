"""`ragloupe doctor [--strict]` (issue 23, item 7): one line per check, exit 1 under --strict
when any check fails. Real parts: the installed packages, the bundled model, an embedded
Chroma, the disk; servers are a real loopback server, or a closed loopback port."""

from __future__ import annotations

import json
import re
from importlib import metadata

import pytest
from embedding_server import embed_reply
from llm_server import FakeLlmServer
from local_servers import free_port

from ragloupe.cli import main
from ragloupe.config import Settings
from ragloupe.diagnostics import doctor


def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def test_packages_check_names_a_wrong_pin_and_a_missing_package(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"# pins\nnumpy==0.0.1\nno-such-package-here==1.0\n"
                            f"scipy=={metadata.version('scipy')}\n")
    check = doctor.check_packages(requirements)
    assert check.status == "fail"
    assert "missing: no-such-package-here" in check.detail
    assert f"numpy {metadata.version('numpy')} (pinned 0.0.1)" in check.detail and "scipy" not in check.detail


def test_packages_check_passes_when_every_pin_is_installed_a_local_label_too(tmp_path):
    from packaging.version import Version

    torch_public = Version(metadata.version("torch")).public  # 2.13.0 for 2.13.0+cpu
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"numpy=={metadata.version('numpy')}  # why\ntorch=={torch_public}\n")
    assert doctor.check_packages(requirements) == doctor.Check(
        "packages", "ok", "all 2 pins of requirements.txt installed")


def test_store_model_and_disk_checks_pass_on_a_working_machine(settings):
    assert doctor.check_store(settings).status == "ok"
    model = doctor.check_model(settings)
    assert model.status == "ok"
    assert model.detail == "bundled:all-MiniLM-L6-v2+questions loads offline on cpu (384 dimensions)"
    assert doctor.check_disk(settings).status == "ok"


def test_disk_check_fails_when_a_rebuild_would_not_fit(settings):
    check = doctor.check_disk(settings, min_free_mb=10**9)
    assert check.status == "fail" and "a rebuild needs" in check.detail


def test_ocr_off_skips_the_tesseract_check():
    assert doctor.check_ocr(Settings.from_env(ocr=False)).status == "skip"


def test_default_ollama_that_is_not_running_only_warns():
    check = doctor.check_llm(Settings(ollama_base_url=closed_url()))  # every value a default
    assert check.status == "warn" and "connection refused" in check.detail


@pytest.mark.parametrize("strict, exit_code", [(True, 1), (False, 0)])
def test_a_configured_llm_on_a_closed_port_fails(monkeypatch, capsys, strict, exit_code):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", closed_url())
    code = main(["doctor", "--json"] + (["--strict"] if strict else []))
    data = json.loads(capsys.readouterr().out)
    llm = next(c for c in data["checks"] if c["name"] == "llm")
    assert code == exit_code and llm["status"] == "fail" and "connection refused" in llm["detail"]
    assert "llm" in data["failed"]
    assert [c["name"] for c in data["checks"]] == [name for name, _ in doctor.CHECKS]


def test_text_output_is_one_line_per_check(monkeypatch, capsys):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    main(["doctor"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(doctor.CHECKS) + 1
    assert re.match(rf"^\d+ of {len(doctor.CHECKS)} checks failed", lines[-1])
    assert lines[5].split()[:2] == ["skip", "llm"]


def test_embedding_server_check_asks_the_configured_server():
    with FakeLlmServer(embed_reply) as server:
        check = doctor.check_embedding_server(Settings.from_env(
            embedding_backend="openai", embedding_model="fake-embed", embedding_base_url=server.url))
    assert check.status == "ok" and "embeds with fake-embed (64 dimensions)" in check.detail
    down = doctor.check_embedding_server(Settings.from_env(
        embedding_backend="ollama", embedding_model="fake-embed", embedding_base_url=closed_url()))
    assert down.status == "fail" and "cannot reach" in down.detail
