"""The workbench in a real Chromium: one server, the four flows the product exists for.

Starts `streamlit run streamlit_app.py` on a free loopback port against a
private copy of the demo index (the re-index flow changes it), drives it with
Playwright using Debian's /usr/bin/chromium (never a downloaded browser), and
saves a screenshot of each flow under test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from local_servers import free_port, wait_until_ready

from ragloupe.config import PROJECT_ROOT

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
QUESTION_DOC = "Grampian-2021-2022"
UPLOADED_RECORDS = (
    "id,title,text\n"
    "P-1,Pump seals,\"Mechanical seals on the transfer pumps are inspected every 500 running hours "
    "and replaced when leakage exceeds 10 ml per hour, according to the maintenance plan.\"\n"
    "P-2,Relief valves,\"Relief valves on the storage tanks are tested annually against EN 1473 "
    "and the test certificates are kept with the permit to work records for ten years.\"\n")


@pytest.fixture(scope="module")
def app_server(demo_index, tmp_path_factory):
    """A streamlit server over a private copy of the demo index; yields (url, dirs)."""
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: .ci/run installs it (apt-get install chromium)")
    root = tmp_path_factory.mktemp("browser")
    dirs = {name: root / name for name in ("index", "raw", "runs", "logs")}
    shutil.copytree(demo_index.path("index_dir"), dirs["index"],
                    ignore=shutil.ignore_patterns(".lock"))
    for name in ("raw", "runs", "logs"):
        dirs[name].mkdir()
    port = free_port()
    env = dict(os.environ, RAGLOUPE_INDEX_DIR=str(dirs["index"]), RAGLOUPE_RAW_DIR=str(dirs["raw"]),
               RAGLOUPE_RUNS_DIR=str(dirs["runs"]), RAGLOUPE_LOGS_DIR=str(dirs["logs"]),
               CHROMA_HOST="", RAGLOUPE_LLM_BACKEND="none", RAGLOUPE_PROJECTION_METHOD="pca",
               HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    log = (root / "streamlit.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "streamlit_app.py"),
         "--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{url}/_stcore/health", process, timeout_s=90,
                         ready=lambda body, status: body.strip() == "ok")
        yield url, dirs
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(120_000)
        try:
            yield page
        finally:
            browser.close()


def _open(page, url: str, title: str) -> None:
    page.goto(url)
    page.get_by_role("heading", name=title).first.wait_for()
    _settle(page)


def _settle(page, timeout_s: float = 300) -> None:
    """Wait until Streamlit has finished the script run a click or a page load started.

    The app root carries the script state (data-test-script-state); it must
    read "not running" on two polls in a row, so a rerun that starts right
    after a run ends is waited for too.
    """
    page.wait_for_timeout(400)
    deadline = time.monotonic() + timeout_s
    idle_polls = 0
    while time.monotonic() < deadline:
        state = page.locator('[data-testid="stApp"]').first.get_attribute("data-test-script-state")
        idle_polls = idle_polls + 1 if state in ("notRunning", "initial") else 0
        if idle_polls >= 2:
            return
        page.wait_for_timeout(300)
    raise AssertionError(f"the app was still running after {timeout_s:.0f} s")


def _shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _pick(page, label: str, option: str) -> None:
    """Choose an option in a Streamlit multiselect."""
    box = page.get_by_label(label, exact=False).first
    box.click()
    box.fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


def test_workbench_flows_in_a_real_browser(app_server, browser_page, demo_index):
    url, dirs = app_server
    try:
        _walk_the_flows(browser_page, url, dirs, demo_index)
    except BaseException:
        _shot(browser_page, "failure")  # what the page showed when it went wrong
        raise


def _walk_the_flows(page, url: str, dirs: dict[str, Path], demo_index) -> None:
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.index.store import open_store

    gold = load_goldset(PROJECT_ROOT / "data/benchmarks/grampian/eval" / f"{QUESTION_DOC}.eval.json")
    question = gold.queries[0]

    # 1. Chunk Explorer with a document filter: the count shown is the store's. It is the
    # fresh server's first request, so it also pins that a bookmarked page URL opens inside
    # the app's navigation (page titles in the sidebar), not as a bare pages/ script.
    store = open_store(demo_index)
    expected = len(store.ids({"doc_id": "guidance"}))
    _open(page, f"{url}/chunk_explorer", "Chunk Explorer")
    assert "Search & compare" in page.locator('[data-testid="stSidebarNav"]').inner_text()
    _pick(page, "Documents", "guidance")
    _settle(page)
    metric = page.locator('[data-testid="stMetric"]').filter(has_text="Matching chunks")
    assert metric.locator('[data-testid="stMetricValue"]').inner_text().strip() == f"{expected:,}"
    page.locator('[data-testid="stExpander"] summary').first.click()
    _settle(page)
    _shot(page, "chunk_explorer")

    # 2. Search and compare three modes in one table, with the gold page marked.
    _open(page, url, "Search & compare")  # the default page lives at /
    page.get_by_label("Question", exact=True).fill(question.question)
    page.get_by_role("button", name="Search").click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    _settle(page)
    assert page.get_by_text("Gold question").count() >= 1
    tabs = page.get_by_role("tab").all_inner_texts()
    assert [t.strip() for t in tabs] == ["dense", "bm25", "hybrid"]
    _shot(page, "search_compare")
    # A hit opened on its full text, query terms marked; each engine's rank in its label.
    hit = page.locator('[data-testid="stExpander"] summary').filter(has_text="bm25").first
    assert "dense" in hit.inner_text()
    hit.click()
    page.locator("mark").first.wait_for()
    _shot(page, "search_hit_detail")

    # 3. Incremental re-index: upload a records file, see it planned as new, run, see the summary.
    _open(page, f"{url}/index_manage", "Index")
    page.get_by_text("Add files to the raw folder").click()
    page.locator('input[type="file"]').set_input_files(
        files=[{"name": "../pump_notes.csv", "mimeType": "text/csv",
                "buffer": UPLOADED_RECORDS.encode()}])
    page.get_by_role("button", name="Save to the raw folder").click()
    page.get_by_text("Saved pump_notes.csv").wait_for()
    _settle(page)
    assert (dirs["raw"] / "pump_notes.csv").exists()
    new_metric = page.locator('[data-testid="stMetric"]').filter(has_text="New").first
    assert new_metric.locator('[data-testid="stMetricValue"]').inner_text().strip() == "1"
    page.get_by_role("button", name="Run incremental re-index").click()
    page.get_by_role("heading", name="Last run").wait_for()
    _settle(page)
    last_run = page.locator('[data-testid="stMetric"]').filter(has_text="Chunks added").first
    assert int(last_run.locator('[data-testid="stMetricValue"]').inner_text().replace(",", "")) >= 2
    _shot(page, "index_reindex")

    # 4. Embeddings: the map is drawn and says how many chunks it shows.
    _open(page, f"{url}/embeddings", "Embeddings")
    page.locator(".js-plotly-plot").first.wait_for()
    assert page.get_by_text("PCA of").count() >= 1
    page.get_by_label("Place a query on the map (optional)").fill(question.question)
    page.get_by_role("button", name="Place").click()
    page.get_by_text("hits (hybrid) ringed").wait_for()
    _settle(page)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    _shot(page, "embeddings")
    assert not page.locator('[data-testid="stException"]').count()
