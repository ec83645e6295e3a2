"""The workbench in a real Chromium: the four flows the product exists for, and a bookmarked page.

Starts `streamlit run app/streamlit_app.py` on a free loopback port against a
private copy of the demo index (the re-index flow changes it), drives it with
Playwright using Debian's /usr/bin/chromium (never a downloaded browser), and
saves a screenshot of each flow under test-artifacts/.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DEMO_DOC_IDS
from local_servers import free_port, wait_until_ready

from ragloupe.config import PROJECT_ROOT
from ragloupe.ui.navigation import PAGES as NAVIGATION

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
ENTRY = PROJECT_ROOT / "app" / "streamlit_app.py"
QUESTION_DOC = "Grampian-2021-2022"
# Its rows hold section headings of 66 characters (eu-013, "6.2.3. Special needs teacher ...").
SECTION_QUESTION = "special needs teacher education for vocational institutions"
UPLOADED_RECORDS = (
    "id,title,text\n"
    "P-1,Pump seals,\"Mechanical seals on the transfer pumps are inspected every 500 running hours "
    "and replaced when leakage exceeds 10 ml per hour, according to the maintenance plan.\"\n"
    "P-2,Relief valves,\"Relief valves on the storage tanks are tested annually against EN 1473 "
    "and the test certificates are kept with the permit to work records for ten years.\"\n")


@contextmanager
def _streamlit_servers(demo_index, roots: list[Path],
                       extra_env: dict[str, str] | None = None) -> Iterator[list[tuple[str, dict[str, Path]]]]:
    """Fresh streamlit servers, one per root, each over a private copy of the demo index
    (or of any index whose Settings are passed as ``demo_index``), ``extra_env`` set too.

    They start at once and are waited for together; yields [(url, dirs)] in the roots' order.
    """
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: `make test` installs it "
                    "(apt-get install chromium, as root or with sudo)")
    servers, logs = [], []
    try:
        for root in roots:
            dirs = _private_dirs(demo_index, root)
            port = free_port()
            env = dict(os.environ, RAGLOUPE_INDEX_DIR=str(dirs["index"]),
                       RAGLOUPE_RAW_DIR=str(dirs["raw"]), RAGLOUPE_RUNS_DIR=str(dirs["runs"]),
                       RAGLOUPE_LOGS_DIR=str(dirs["logs"]), CHROMA_HOST="",
                       RAGLOUPE_LLM_BACKEND="none", RAGLOUPE_PROJECTION_METHOD="pca",
                       HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
            env.update(extra_env or {})  # an LLM or UMAP in place of the defaults above
            logs.append((root / "streamlit.log").open("w"))
            process = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ENTRY),
                 "--server.address", "127.0.0.1", "--server.port", str(port),
                 "--server.headless", "true", "--browser.gatherUsageStats", "false",
                 "--server.fileWatcherType", "none"],
                cwd=PROJECT_ROOT, env=env, stdout=logs[-1], stderr=subprocess.STDOUT)
            servers.append((process, f"http://127.0.0.1:{port}", dirs))
        for process, url, _ in servers:
            wait_until_ready(f"{url}/_stcore/health", process, timeout_s=120,
                             ready=lambda body, status: body.strip() == "ok")
        yield [(url, dirs) for _, url, dirs in servers]
    finally:
        for process, _, _ in servers:
            process.terminate()
        for process, _, _ in servers:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in logs:
            log.close()


def _private_dirs(demo_index, root: Path) -> dict[str, Path]:
    dirs = {name: root / name for name in ("index", "raw", "runs", "logs")}
    shutil.copytree(demo_index.path("index_dir"), dirs["index"],
                    ignore=shutil.ignore_patterns(".lock"))
    for name in ("raw", "runs", "logs"):
        dirs[name].mkdir()
    return dirs


@pytest.fixture(scope="module")
def app_server(demo_index, tmp_path_factory):
    """The server the flows run on (the re-index flow changes its index); yields (url, dirs)."""
    with _streamlit_servers(demo_index, [tmp_path_factory.mktemp("browser")]) as servers:
        yield servers[0]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def browser_page(browser):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.set_default_timeout(120_000)
    return page


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


def _shot(page, name: str, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def _pick(page, label: str, option: str) -> None:
    """Choose an option in a Streamlit multiselect."""
    box = page.get_by_label(label, exact=False).first
    box.click()
    box.fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


def test_workbench_flows_in_a_real_browser(app_server, browser_page, demo_index, workspace_of):
    url, dirs = app_server
    requests: list[str] = []
    browser_page.on("request", lambda request: requests.append(request.url))
    try:
        _walk_the_flows(browser_page, url, dirs, demo_index, workspace_of)
    except BaseException:
        _shot(browser_page, "failure")  # what the page showed when it went wrong
        raise
    # Nothing the pages load may leave the machine: every request goes to the app itself.
    outside = sorted({r for r in requests if not r.startswith((url, "data:", "blob:"))})
    assert outside == []


# Before a page's own scripts: note each spinner's text, and when the title and a chart first showed.
_RECORD_SPINNERS = """
window.seen = {spinners: [], title: null, chart: null};
new MutationObserver(() => {
    const now = performance.now();
    if (window.seen.title === null && document.querySelector('h1')) window.seen.title = now;
    if (window.seen.chart === null && document.querySelector('.js-plotly-plot')) window.seen.chart = now;
    for (const spinner of document.querySelectorAll('[data-testid="stSpinner"]'))
        window.seen.spinners.push({text: spinner.innerText, at: now});
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(scope="module")
def first_requests(demo_index, tmp_path_factory, browser):
    """Each page's URL opened as the first request of a just-started server of its own
    (Streamlit picks its multipage mode once per server); all load at once, in their own
    tabs. Yields {page name: (tab, address)}."""
    roots = [tmp_path_factory.mktemp(f"first_{page.name}") for page in NAVIGATION]
    with _streamlit_servers(demo_index, roots) as servers:
        opened = {}
        for page, (url, _) in zip(NAVIGATION, servers):
            tab = browser.new_page(viewport={"width": 1600, "height": 1000})
            tab.set_default_timeout(300_000)
            tab.add_init_script(_RECORD_SPINNERS)
            address = f"{url}/{page.name}"  # the page's own address, as a bookmark holds it
            tab.goto(address)
            opened[page.name] = (tab, address)
        yield opened
        for tab, _ in opened.values():
            tab.close()


@pytest.mark.parametrize("page", NAVIGATION, ids=[page.name for page in NAVIGATION])
def test_each_page_url_as_a_fresh_servers_first_request_opens_inside_the_navigation(
        page, first_requests):
    """A bookmark or a reload of a page URL on a just-started server gets the app's
    navigation (its section headings and page titles in the sidebar) and the page, not the
    page alone with Streamlit's automatic sidebar, which is what a pages/ folder next to
    the entry script gives."""
    tab, address = first_requests[page.name]
    tab.get_by_role("heading", name=page.title).first.wait_for()
    _settle(tab)
    assert not tab.get_by_text("Page not found").count(), f"{address} answered 'Page not found'"
    navigation = tab.locator('[data-testid="stSidebarNav"]').inner_text()
    for entry in NAVIGATION:
        assert entry.title in navigation, navigation
    for section in {entry.section for entry in NAVIGATION}:
        assert section in navigation, navigation
    assert tab.url.rstrip("/") == address
    assert not tab.locator('[data-testid="stException"]').count()


def test_a_cold_embeddings_page_shows_a_spinner_with_the_time_before_the_map(first_requests):
    """The map is fitted on a page's first visit (seconds; UMAP, up to a minute): until it shows, the
    page says what it is doing and for how long, in one spinner, instead of a blank space."""
    tab, _ = first_requests["embeddings"]
    tab.locator(".js-plotly-plot").first.wait_for()
    seen = tab.evaluate("window.seen")
    waited = (seen["chart"] - seen["title"]) / 1000
    says = re.compile(r"fitting the 2-D map \((PCA: a few seconds|UMAP: up to a minute on 2 cores the first time on"
                      r" this machine, up to half a minute after); then it is kept for this index\)"
                      r".*\(\d+(\.\d+)? seconds?\)", re.S)  # what it does, how long it takes, time gone by
    timed = [s["text"] for s in seen["spinners"] if s["at"] < seen["chart"] and says.search(s["text"])]
    # Streamlit shows a spinner after half a second: a map that came at once needs none.
    assert timed or waited < 1, (waited, seen["spinners"][:3])
    about_the_map = {re.sub(r"\(\d.*seconds?\)", "", s["text"]) for s in seen["spinners"] if "map" in s["text"]}
    assert len(about_the_map) == 1 or not timed, about_the_map  # said once, not by two spinners at once


def _grid_rows(page) -> list[dict[str, str]]:
    """The comparison table's rows as the grid's accessible cells give them (raw values)."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    headers = [h.strip() for h in grid.locator("th").all_inner_texts()]
    rows = []
    for row in grid.locator('tbody [role="row"]').all():
        cells = [c.strip() for c in row.locator("td").all_inner_texts()]
        rows.append(dict(zip(_unique(headers[-len(cells):]), cells)))
    return rows


def _unique(headers: list[str]) -> list[str]:
    """Headers repeat per mode ("dense #" in each group): number the repeats."""
    seen: dict[str, int] = {}
    out = []
    for header in headers:
        seen[header] = seen.get(header, 0) + 1
        out.append(header if seen[header] == 1 else f"{header} {seen[header]}")
    return out


# glide-data-grid (st.dataframe) paints on a canvas: what a user reads there is pixels, not DOM.
_LINE = 240  # the grid's separator lines (#e8e5e2) are darker than this, its backgrounds lighter
_INK = 190  # text is darker than this (grey ranks #9a9a9a and the "—" placeholder too); tints are lighter


def _drawn_grid(grid) -> dict:
    """What Chromium draws of a grid in view: its columns' left and right edges (from the separator
    lines of the header row), its rows (from the lines across the first column), and for each
    column and body row how far its text reaches from the column's left edge (None: no text drawn).
    Columns come left to right, the selection checkbox column first."""
    grid.page.mouse.move(1, 1)  # off the grid: its toolbar, shown on hover, covers its top right corner
    grid.page.wait_for_timeout(400)
    image = np.asarray(Image.open(io.BytesIO(grid.screenshot())).convert("L"), dtype=int)
    header = image[4:34]  # the header row: a separator runs down all of it, a letter never does
    edges = _runs([x for x in range(image.shape[1])
                   if np.mean((header[:, x] < _LINE) & (header[:, x] > _INK)) > 0.8])
    columns = [(left[1] + 1, right[0]) for left, right in zip(edges, edges[1:])]
    probe = columns[1][0] + 2  # left padding of the column after the checkboxes: never text
    bands = _runs([y for y, level in enumerate(image[:, probe]) if level < _LINE])
    rows = [(top[1] + 1, bottom[0]) for top, bottom in zip(bands, bands[1:])][1:]  # [0] is the header
    rows = [(top, bottom) for top, bottom in rows if bottom - top >= 30]  # whole rows (35 px) only
    text = []
    for left, right in columns:
        reach = []
        for top, bottom in rows:
            dark = np.nonzero((image[top + 2:bottom - 2, left + 1:right - 1] < _INK).any(axis=0))[0]
            reach.append((int(dark[0]) + 1, int(dark[-1]) + 1) if dark.size else None)
        text.append(reach)
    return {"columns": columns, "rows": rows, "text": text, "width": image.shape[1]}


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Adjacent positions as (first, last) runs: a line one or more pixels wide (or with a shadow)."""
    runs: list[tuple[int, int]] = []
    for position in positions:
        if runs and position == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], position)
        else:
            runs.append((position, position))
    return runs


def _grid_headers(grid) -> list[str]:
    """The headers of the columns the grid has drawn (its accessible table holds only those)."""
    return [h.strip() for h in grid.locator("th").all_inner_texts()]


def _scroll_grid(grid, to: str) -> None:
    grid.evaluate("(g, to) => { const s = g.querySelector('.dvn-scroller'); "
                  "s.scrollLeft = to === 'end' ? s.scrollWidth : 0; }", to)
    grid.page.wait_for_timeout(600)


def _overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def _progress_texts(page, done, timeout_s: float = 240) -> list[str]:
    """Every text the page's progress bar showed until ``done()`` holds."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not done():
        bars = page.locator('[data-testid="stProgress"]')
        if bars.count():
            try:
                text = bars.first.inner_text(timeout=1000).strip()
            except Exception:  # the bar went away between count() and inner_text()
                text = ""
            if text and (not seen or seen[-1] != text):
                seen.append(text)
        page.wait_for_timeout(150)
    return seen


def _chosen(page, label: str) -> str:
    """The option a Streamlit selectbox shows as chosen (its input holds the text)."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    box.scroll_into_view_if_needed()  # far down a long page the grid draws its value only once in view
    box.page.wait_for_timeout(300)  # `page` may be a locator (the sidebar): wait on its page
    inputs = box.locator("input")
    return (inputs.first.input_value() if inputs.count() else "") or box.inner_text()


def _big_records(n: int) -> bytes:
    """A records file long enough to be embedded in several slices (EMBED_SLICE texts each)."""
    lines = ["id,title,text"] + [f"N-{i},Inspection {i},\"Pump seal {i} on transfer line {i % 7} "
                                 f"was inspected after {100 + i} running hours.\"" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def _what_a_user_reads_at_1280(page) -> None:
    """Search & compare at 1280x800 (issue 29), read as drawn: the rewrite toggle's label whole, the
    grid's floating toolbar over no line of text, every column of figures in view showing its
    figures (an engine's rank column that looks empty says "not listed"), and each section heading
    whole once the grid is scrolled to it."""
    page.get_by_label("Question", exact=True).fill(SECTION_QUESTION)
    page.locator('[data-testid="stForm"]').get_by_role("button", name="Search").click()
    _settle(page)
    label = page.get_by_text("Rewrite the query (LLM)", exact=True).first
    assert label.locator("xpath=ancestor::*[@data-testid='stMarkdownContainer'][1]").evaluate(
        "e => e.scrollWidth <= e.clientWidth"), "the rewrite toggle's label is cut"
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    grid.hover()  # its toolbar shows
    toolbar = grid.locator('[data-testid="stElementToolbar"]').bounding_box()
    texts = page.evaluate("""() => [...document.querySelectorAll(
        '[data-testid="stMain"] :is([data-testid="stText"], [data-testid="stCaptionContainer"], [data-testid="stMarkdownContainer"])')]
        .map(e => { const r = e.getBoundingClientRect();
                    return {text: e.innerText, x: r.x, y: r.y, width: r.width, height: r.height}; })
        .filter(box => box.height > 0 && box.text.trim())""")
    assert [t["text"] for t in texts if _overlap(t, toolbar)] == []

    headers, drawn = _grid_headers(grid), _drawn_grid(grid)
    assert len(drawn["rows"]) >= 10 and len(drawn["columns"]) >= len(headers) + 1, (headers, drawn["columns"])
    for name, (left, right), reach in zip(headers, drawn["columns"][1:], drawn["text"][1:]):
        if name.endswith(("#", "score", "cosine")) and right - left >= 24:  # its header legible
            assert None not in reach, f"'{name}' is in view but rows {[i for i, r in enumerate(reach) if r is None]} show nothing"

    _scroll_grid(grid, "end")
    headers, drawn = _grid_headers(grid), _drawn_grid(grid)
    assert headers[-1] == "section", headers
    sections = [row.get("section", "") for row in _grid_rows(page)]
    assert max(map(len, sections)) >= 60, sections  # a heading longer than the old 400 px column
    left, right = drawn["columns"][-1]
    reached = [end for reach in drawn["text"][-1] if reach for _, end in [reach]]
    assert len(reached) == sum(1 for s in sections[:len(drawn["rows"])] if s)
    assert max(reached) <= right - left - 6, (max(reached), right - left)  # cut text runs to the edge
    _scroll_grid(grid, "start")


def _walk_the_flows(page, url: str, dirs: dict[str, Path], demo_index, workspace_of) -> None:
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.runs import evaluate
    from ragloupe.index.pipeline import EMBED_SLICE
    from ragloupe.index.store import open_store
    from ragloupe.retrieve.search import search
    from ragloupe.ui.tables import run_label

    gold = load_goldset(PROJECT_ROOT / "data/benchmarks/grampian/eval" / f"{QUESTION_DOC}.eval.json")
    question = gold.queries[0]

    # 1. Chunk Explorer with a document filter: the count shown is the store's. It is the
    # fresh server's first request, so it also pins that a bookmarked page URL opens inside
    # the app's navigation (page titles in the sidebar), not as a bare page script.
    store = open_store(demo_index)
    expected = len(store.ids({"doc_id": "guidance"}))
    _open(page, f"{url}/chunk_explorer", "Chunk Explorer")
    assert "Search & compare" in page.locator('[data-testid="stSidebarNav"]').inner_text()
    _pick(page, "Documents", "guidance")
    _settle(page)
    metric = page.locator('[data-testid="stMetric"]').filter(has_text="Matching chunks")
    assert metric.locator('[data-testid="stMetricValue"]').inner_text().strip() == f"{expected:,}"
    _shot(page, "chunk_explorer")

    # 2. Search and compare three modes in one table: each row's ranks are the pipeline's.
    # The app's root in a fresh session opens the first page at its own address, with no
    # "Page not found" on the way (the address a user copies must open the page again).
    _open(page, url, "Search & compare")
    assert page.url == f"{url}/search_compare" and not page.get_by_text("Page not found").count()
    page.get_by_label("Question", exact=True).fill(question.question)
    page.get_by_role("button", name="Search").click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    _settle(page)
    assert page.get_by_text(f"Gold question {question.query_id}").count() == 1
    modes = [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
    assert modes == ["dense", "bm25", "hybrid"]
    rankings = {mode: search(question.question, mode=mode, k=demo_index.candidate_window,
                             workspace=workspace_of(demo_index), explain=True) for mode in modes}
    rows = _grid_rows(page)
    assert len(rows) >= 10
    # With one document listed (the question names its year) the doc column is left out.
    listed_docs = {p.unit.split("#")[0] for r in rankings.values() for p in r.pages[:len(rows)]}
    sole_doc = next(iter(listed_docs)) if len(listed_docs) == 1 else None
    for row in rows:
        unit = f"{row.get('doc', sole_doc)}#p{row['page']}"
        assert (row["gold"] == "★") == (unit in question.expected_units)
        for mode in modes:
            shown = row[f"{mode} mode #"]  # every mode's column is in view, right after the page
            page_hit = next((p for p in rankings[mode].pages if p.unit == unit), None)
            held = page_hit and any(h.chunk.unit == unit for h in rankings[mode].hits)
            # Not listed: no number at all (the grid draws its "—" placeholder; its cell text is empty).
            assert shown == (str(page_hit.rank) if held else ""), (unit, mode)
    page.get_by_text(f"Gold question {question.query_id}").evaluate(
        "element => element.scrollIntoView({block: 'start'})")
    _shot(page, "search_compare", full_page=False)
    # The table's file, downloaded as a user would: the screen's headers, an empty cell for "—".
    with page.expect_download() as downloaded:
        page.get_by_role("button", name="Download this table (CSV)").click()
    exported = list(csv.DictReader(io.StringIO(Path(downloaded.value.path()).read_text(encoding="utf-8"))))
    ranks = [name for name in exported[0] if name.endswith("#") or name in ("gold", "page")]
    assert [{name: r[name] for name in ranks} for r in exported] == [
        {name: r[name] for name in ranks} for r in rows]
    assert not any(v.startswith(("1000000", "-1000000000")) for r in exported for v in r.values())
    # A hit's label carries each engine's rank; a row of the table opens its chunk.
    labels = page.locator('[data-testid="stExpander"] summary').filter(has_text="bm25")
    assert "dense" in labels.first.inner_text()
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)  # the first row's selection box
    page.get_by_text(f"{modes[0]} mode #1 · page score").first.wait_for()
    _settle(page)
    page.locator("mark").first.wait_for()
    # The opened row names each number: engine or mode, and which chunk of the page it is about.
    detail = page.get_by_text("Engines, best chunk of this page (the table's engine columns)").first
    assert "dense engine #" in detail.inner_text() and "(chunk " in detail.inner_text()
    page.get_by_text(f"{modes[0]} mode #1 · page score").first.evaluate(
        "element => element.scrollIntoView({block: 'center'})")
    _shot(page, "search_hit_detail", full_page=False)

    # 3. State across navigation: the question goes to Answer, and Search keeps its result.
    page.get_by_role("button", name="Send to Answer").click()
    page.get_by_role("heading", name="Answer", exact=True).wait_for()
    _settle(page)
    assert page.get_by_label("Question", exact=True).input_value() == question.question
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Search & compare").click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    _settle(page)
    assert page.get_by_label("Question", exact=True).input_value() == question.question
    assert len(_grid_rows(page)) == len(rows)
    page.set_viewport_size({"width": 1280, "height": 800})
    _what_a_user_reads_at_1280(page)
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.get_by_role("button", name="Show on the map").click()
    page.get_by_role("heading", name="Embeddings").wait_for()
    page.get_by_text("hits (hybrid) ringed").wait_for()
    page.get_by_text("The query ★ is placed where dense searches from: the question mapped by the shipped "
                     "query adapter").wait_for()
    _settle(page)
    # Coloured by document: the legend names each of the demo's documents, each in a colour of its own.
    traces = page.evaluate("""() => document.querySelector('.js-plotly-plot').data.map(
        t => ({name: t.name, colour: t.marker && t.marker.color, symbol: t.marker && t.marker.symbol}))""")
    documents = {t["name"]: t["colour"] for t in traces if t["name"] in DEMO_DOC_IDS}
    assert sorted(documents) == sorted(DEMO_DOC_IDS) and len(set(documents.values())) == len(DEMO_DOC_IDS) == 9
    _shot(page, "embeddings")

    # 4. Incremental re-index of a file embedded in several slices: the bar moves within it.
    _open(page, f"{url}/index_manage", "Index")
    page.get_by_text("Add files to the raw folder").click()
    page.locator('input[type="file"]').set_input_files(
        files=[{"name": "../inspections.csv", "mimeType": "text/csv",
                "buffer": _big_records(EMBED_SLICE * 2 + 40)}])
    page.get_by_role("button", name="Save to the raw folder").click()
    page.get_by_text("Saved inspections.csv").wait_for()
    _settle(page)
    assert (dirs["raw"] / "inspections.csv").exists()
    new_metric = page.locator('[data-testid="stMetric"]').filter(has_text="New").first
    assert new_metric.locator('[data-testid="stMetricValue"]').inner_text().strip() == "1"
    page.get_by_role("button", name="Run incremental re-index").click()
    last_run = page.get_by_role("heading", name="Last run")
    texts = _progress_texts(page, lambda: last_run.count() > 0)
    _settle(page)
    within = [t for t in texts if "% of this file embedded" in t]
    shares = {int(t.split("% of this file")[0].rsplit(" ", 1)[-1]) for t in within}
    assert any(0 < share < 100 for share in shares), texts
    added = page.locator('[data-testid="stMetric"]').filter(has_text="Chunks added").first
    assert int(added.locator('[data-testid="stMetricValue"]').inner_text().replace(",", "")) >= 2
    _shot(page, "index_reindex")

    # 5. Compare defaults to the newest runs, also for a run made after the page was opened.
    natech = PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json"
    runs_settings = demo_index.replace(runs_dir=dirs["runs"])
    workspace = workspace_of(runs_settings)
    first, second = (evaluate([natech], mode=mode, ks=[1, 3], workspace=workspace.with_settings(runs_settings))
                     for mode in ("bm25", "dense"))
    _open(page, f"{url}/evaluation", "Evaluation")
    assert _chosen(page, "Run B") == run_label(second)
    third = evaluate([natech], mode="hybrid", ks=[1, 3], workspace=workspace.with_settings(runs_settings))
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Run info").click()
    page.get_by_role("heading", name="Run info").wait_for()
    _settle(page)
    # At 1280 px the index's status shows every value whole: its table no wider than the page.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.wait_for_timeout(500)
    status = page.locator('[data-testid="stTable"]').filter(has_text="index_dir")
    assert status.evaluate("t => t.scrollWidth <= t.clientWidth && "
                           "t.querySelector('table').getBoundingClientRect().right <= t.getBoundingClientRect().right + 1")
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Evaluation").click()
    page.get_by_role("heading", name="Evaluation").wait_for()
    _settle(page)
    assert _chosen(page, "Run B") == run_label(third)
    assert _chosen(page, "Run A") == run_label(second) != run_label(first)
    assert not page.locator('[data-testid="stException"]').count()

    # 6. A run made on the page (the form's defaults: Grampian-2020-2021, dense and hybrid): the gold
    # sets' coverage caveat sits under the metrics table it qualifies, before the first chart.
    page.get_by_role("button", name="Run evaluation").click()
    page.get_by_role("heading", name="Results").wait_for()
    _settle(page)
    _caveat_under_the_metrics(page)

    # 7. Failure audit on the newest run (the hybrid one): a bar of the failure-code chart, clicked, lists
    # only that code's questions.
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Failure audit").click()
    page.get_by_role("heading", name="Failure audit").wait_for()
    _settle(page)
    _click_a_failure_bar(page, runs_settings)


def _caveat_under_the_metrics(page) -> None:
    """The coverage caveat (where the gold pages sit, said anywhere on the page) lies between the
    Results' metrics table and the first chart, where a reader of Hit@1 sees it; the gold-set
    coverage section further down may say it again."""
    boxes = page.evaluate("""() => {
        const box = e => { const r = e.getBoundingClientRect(); return {top: r.top + scrollY, bottom: r.bottom + scrollY}; };
        const results = [...document.querySelectorAll('h2')].find(h => h.innerText.trim() === 'Results');
        const after = e => results.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING;
        const table = [...document.querySelectorAll('[data-testid="stDataFrame"]')].find(after);
        const chart = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].find(after);
        const caveats = [...document.querySelectorAll('[data-testid="stAlert"], [data-testid="stText"]')]
            .filter(e => e.innerText.includes('of the gold pages are in the first')).map(box);
        return {table: box(table), chart: box(chart), caveats};
    }""")
    assert boxes["caveats"], "no coverage caveat on the page"
    assert any(boxes["table"]["bottom"] <= c["top"] and c["bottom"] <= boxes["chart"]["top"]
               for c in boxes["caveats"]), boxes


def _click_a_failure_bar(page, runs_settings) -> None:
    """Every question of the run listed, hits too, then the commonest failure's bar clicked in the
    chart: the table holds only that code's questions, as many as the run's report counts, and the
    page says it filtered them."""
    from ragloupe.evaluate.runs import list_runs, load_run

    newest = load_run(list_runs(runs_settings)[0]["run_id"], runs_settings)
    code_column = f"code at k={newest.data['failures']['k']}"
    counts = {code: n for code, n in newest.data["failures"]["counts"].items() if code != "HIT" and n}
    code = max(counts, key=counts.get)  # some questions listed, not all
    page.get_by_text("Only the questions that miss at k=").click()  # every question, hits too
    _settle(page)
    assert "HIT" in {row[code_column] for row in _grid_rows(page)}
    chart = page.locator(".js-plotly-plot").first
    bars = page.evaluate("() => document.querySelector('.js-plotly-plot').data[0].x")
    bar = chart.locator(".bars .point path").nth(bars.index(code)).bounding_box()
    # Where a user's pointer lands: plotly's drag layer over the bars takes the click, as in a browser.
    page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    page.get_by_text(f"Only the questions coded {code} (picked on the chart).").wait_for()
    _settle(page)
    grid = page.locator('[data-testid="stDataFrame"]').first
    assert grid.locator("table").get_attribute("aria-rowcount") == str(counts[code] + 1)  # and the header row
    assert {row[code_column] for row in _grid_rows(page)} == {code}
    assert not page.locator('[data-testid="stException"]').count()
