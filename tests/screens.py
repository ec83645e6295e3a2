"""Each page of the workbench at 1280x800 on the demo index: the screenshots docs/app.md shows.

    .venv/bin/python tests/screens.py [--out docs/screens]

The demo index is built as the suite builds it (conftest.py: the Makefile's demo sources, the
shipped chunk vectors), and the app is started on a copy of it as tests/test_browser.py starts
it, with UMAP for the map and the suite's scripted Ollama server (tests/llm_server.py) as its LLM:
it answers every question with a made-up figure, so the Answer page shows what it does with one.
Debian's chromium (through Playwright) then walks each page as a user would, and the view a
reader looks at is saved, one PNG per page. Takes a few minutes (UMAP fits the map once).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import build_demo_index  # noqa: E402  (tests/ is not a package)
from llm_server import FakeLlmServer, chat_reply  # noqa: E402
from test_browser import CHROMIUM, CHROMIUM_ARGS, _open, _pick, _settle, _streamlit_servers  # noqa: E402

from ragloupe.config import PROJECT_ROOT, Settings  # noqa: E402

SCREENS = PROJECT_ROOT / "docs" / "screens"
SEARCHED = "remuneration of the chief executive"
ASKED = "How much were the non-executive board members paid?"
MADE_UP = "The Board paid its non-executive members £1,000,000 in remuneration [1]."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=SCREENS, help=f"where the PNGs go (default: {SCREENS})")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        demo = Settings.from_env(index_dir=root / "demo" / "index", runs_dir=root / "demo" / "runs",
                                 raw_dir=root / "demo" / "raw", logs_dir=root / "demo" / "logs", chroma_host="")
        build_demo_index(demo)
        with FakeLlmServer(lambda path, body: chat_reply(path, MADE_UP)) as llm, \
                _streamlit_servers(demo, [root / "app"], {
                    "RAGLOUPE_LLM_BACKEND": "ollama", "OLLAMA_BASE_URL": llm.url,
                    "RAGLOUPE_OLLAMA_MODEL": "fake-model", "RAGLOUPE_PROJECTION_METHOD": "umap"}) as servers:
            url, _ = servers[0]
            from playwright.sync_api import sync_playwright

            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.set_default_timeout(600_000)
                    walk(page, url, args.out)
                finally:
                    browser.close()
    for name in sorted(args.out.glob("*.png")):
        print(name.relative_to(PROJECT_ROOT) if name.is_relative_to(PROJECT_ROOT) else name)
    return 0


def walk(page, url: str, out: Path) -> None:
    """Each page as a user reaches it, its screenshot taken where a reader looks."""
    def shot(name: str, top) -> None:
        top.first.evaluate("element => element.scrollIntoView({block: 'start'})")
        page.mouse.move(1275, 400)  # in the right margin: no toolbar over a table, no sidebar button
        page.wait_for_timeout(800)
        page.screenshot(path=str(out / f"{name}.png"))

    def visit(title: str) -> None:
        page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True).click()
        page.get_by_role("heading", name=title, exact=True).first.wait_for()
        _settle(page)

    _open(page, f"{url}/search_compare", "Search & compare")
    page.get_by_label("Question", exact=True).fill(SEARCHED)
    page.locator('[data-testid="stForm"]').get_by_role("button", name="Search").click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    _settle(page)
    shot("search-compare", page.locator('[data-testid="stForm"]'))  # the question, then the table
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)  # the first row's selection box
    opened = page.get_by_text("dense mode #1 · page score").first
    opened.wait_for()
    _settle(page)
    shot("search-hit-detail", opened)

    page.get_by_role("button", name="Show on the map").click()
    page.get_by_role("heading", name="Embeddings").wait_for()
    page.locator(".js-plotly-plot").first.wait_for()
    _settle(page)
    shot("embeddings", page.locator('[data-testid="stForm"]').get_by_role("button", name="Place"))

    visit("Answer")
    page.get_by_label("Question", exact=True).fill(ASKED)
    page.locator('[data-testid="stForm"]').get_by_role("button", name="Answer", exact=True).click()
    page.get_by_role("heading", name="Citations").wait_for()
    _settle(page)
    shot("answer", page.locator('[data-testid="stForm"]'))

    visit("Chunk Explorer")
    _pick(page, "Documents", "eu-004")
    kinds = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Kind").locator("input")
    kinds.click()
    for _ in range(2):  # both kinds off ("every kind"), then table alone
        kinds.press("Backspace")
    kinds.fill("table")
    page.get_by_role("option", name="table", exact=True).first.click()
    page.keyboard.press("Escape")
    _settle(page)
    page.locator('[data-testid="stExpander"] summary').first.click()
    _settle(page)
    shot("chunk-explorer", page.locator('[data-testid="stExpander"]'))

    visit("Evaluation")
    page.get_by_role("button", name="Run evaluation").click()
    page.get_by_role("heading", name="Results").wait_for()
    _settle(page)
    shot("evaluation", page.get_by_role("heading", name="Results"))

    visit("Failure audit")
    shot("failure-audit", page.get_by_role("heading", name="Failure audit"))

    visit("Index")
    shot("index", page.get_by_role("heading", name="Index", exact=True))

    visit("Run info")
    shot("run-info", page.get_by_role("heading", name="Run info"))


if __name__ == "__main__":
    sys.exit(main())
