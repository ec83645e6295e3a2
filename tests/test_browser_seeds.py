"""The seeds' flows in a real Chromium (issue 23): a conversation on the Answer page, a cited page
opening as the PDF shows it, and switching between two collections in the sidebar.

Two tiny collections (the small corpus, and one records file), not the demo index, so the
server starts and indexes in seconds; the LLM is a local server speaking Ollama's protocol.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import write_records
from llm_server import FakeLlmServer, chat_reply, prompt_of
from local_servers import free_port, wait_until_ready
from ragloupe.config import PROJECT_ROOT, Settings
from ragloupe.generate.conversation import STANDALONE_SYSTEM
from test_browser import CHROMIUM, CHROMIUM_ARGS, ENTRY, _chosen, _settle, _shot

pytestmark = pytest.mark.browser

FIRST = "Which plan did the board agree for planned care?"
FOLLOW_UP = "And across which services?"
STANDALONE = "Across which services did the board agree to reduce delays in planned care?"
ANSWERS = {FIRST: "The board agreed a plan to reduce delays for planned care [1].",
           STANDALONE: "Across hospital and community services in the region [1]."}
BETA_ROWS = [("b1", "Cooling", "The cooling water pumps are tested monthly and their seals are replaced "
                               "every two years by the maintenance contractor on site.")]


def _llm(path: str, request: dict):
    if request["messages"][0]["content"] == STANDALONE_SYSTEM:
        return chat_reply(path, STANDALONE)
    prompt = prompt_of(request)
    return chat_reply(path, next((text for question, text in ANSWERS.items() if question in prompt),
                                 "No idea [1]."))


@pytest.fixture(scope="module")
def seeds_app(tmp_path_factory, embedder):
    """Collections 'alpha' (report.pdf + notes.csv) and 'beta' (one records file), and the app."""
    from pdf_factory import write_report_pdf

    from ragloupe.index.pipeline import run_index

    root = tmp_path_factory.mktemp("seeds_app")
    base = Settings.from_env(collections_dir=root / "collections", logs_dir=root / "logs", chroma_host="")
    alpha, beta = base.replace(collection="alpha"), base.replace(collection="beta")
    source = root / "alpha-sources"
    source.mkdir()
    write_report_pdf(source / "report.pdf", n_pages=4)
    assert not run_index([source / "report.pdf"], alpha).errors
    assert not run_index([write_records(root / "cooling.csv", BETA_ROWS)], beta).errors
    with FakeLlmServer(_llm) as llm:
        env = dict(os.environ, RAGLOUPE_COLLECTIONS_DIR=str(root / "collections"), RAGLOUPE_COLLECTION="alpha",
                   RAGLOUPE_LOGS_DIR=str(root / "logs"), CHROMA_HOST="", RAGLOUPE_LLM_BACKEND="ollama",
                   OLLAMA_BASE_URL=llm.url, RAGLOUPE_OLLAMA_MODEL="fake-model", HF_HUB_OFFLINE="1",
                   ANONYMIZED_TELEMETRY="False")
        port = free_port()
        with (root / "streamlit.log").open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ENTRY), "--server.address", "127.0.0.1",
                 "--server.port", str(port), "--server.headless", "true",
                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                url = f"http://127.0.0.1:{port}"
                wait_until_ready(f"{url}/_stcore/health", process, timeout_s=120,
                                 ready=lambda body, status: body.strip() == "ok")
                yield url, alpha, beta, llm
            finally:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def test_conversation_cited_page_and_collections_in_a_real_browser(seeds_app):
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: `make test` installs it "
                    "(apt-get install chromium, as root or with sudo)")
    url, alpha, beta, llm = seeds_app
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(120_000)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        try:
            _walk(page, url, alpha, beta, llm)
        except BaseException:
            _shot(page, "seeds_failure")
            raise
        finally:
            browser.close()
    assert sorted({r for r in requests if not r.startswith((url, "data:", "blob:"))}) == []


def _ask(page, question: str) -> None:
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_role("button", name="Answer", exact=True).click()
    page.get_by_role("heading", name="Citations").wait_for()
    _settle(page)


def _walk(page, url: str, alpha, beta, llm) -> None:
    from ragloupe.index.store import open_store

    page.goto(f"{url}/answer")
    page.get_by_role("heading", name="Answer", exact=True).first.wait_for()
    _settle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert _chosen(sidebar, "Collection") == "alpha"

    # 1. A conversation: the follow-up is searched as a standalone question, the first turn stays shown.
    _ask(page, FIRST)
    assert page.get_by_text(ANSWERS[FIRST]).count() >= 1
    _ask(page, FOLLOW_UP)
    history = page.locator('[data-testid="stExpander"]').filter(has_text="Conversation so far").first
    assert f"Q1: {FIRST}" in history.inner_text() and f"A1: {ANSWERS[FIRST]}" in history.inner_text()
    assert page.get_by_text(f"Searched as: {STANDALONE}").count() == 1
    rewrites = [r for _, r in llm.requests if r["messages"][0]["content"] == STANDALONE_SYSTEM]
    assert len(rewrites) == 1 and FIRST in prompt_of(rewrites[0])

    # 2. The citation opens its page: an image the app rendered from report.pdf, served by the app.
    caption = page.get_by_text("report.pdf, page", exact=False).first
    caption.wait_for()
    image = page.locator('[data-testid="stImage"] img').first
    image.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 500", arg=image.element_handle())
    assert image.get_attribute("src").startswith(("/media/", f"{url}/media/"))
    _shot(page, "answer_conversation_cited_page")

    # 3. Switching the collection in the sidebar: the Chunk Explorer counts the other index.
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Chunk Explorer").click()
    page.get_by_role("heading", name="Chunk Explorer").wait_for()
    _settle(page)
    assert _matching(page) == open_store(alpha).count()
    box = sidebar.locator('[data-testid="stSelectbox"]').first
    box.click()
    page.get_by_role("option", name="beta", exact=True).click()
    _settle(page)
    assert _matching(page) == open_store(beta).count() == len(BETA_ROWS)
    _shot(page, "collections_switched")


def _matching(page) -> int:
    metric = page.locator('[data-testid="stMetric"]').filter(has_text="Matching chunks").first
    return int(metric.locator('[data-testid="stMetricValue"]').inner_text().replace(",", ""))
