"""An attached engine in Search & compare, in a real Chromium: beside ragloupe's modes, with its own
rank and score on every row it lists.

The app runs over the small engines index (tests/test_engines.py) with an HTTP retriever attached
(a real local http.server in this process); the page offers it as a mode, and the table's
engine columns and its mode column carry what the retriever answered.
"""

from __future__ import annotations

import csv
import io
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from test_browser import _open, _settle, _shot, _streamlit_servers, browser  # noqa: F401 (fixture)
from test_engines import _Retriever, index  # noqa: F401 (fixture)

from ragloupe import attached

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def retriever_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Retriever)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/search"
    server.shutdown()
    server.server_close()


def test_an_attached_engine_shows_in_search_and_compare_with_its_ranks_and_scores(
        index, retriever_url, browser, tmp_path_factory):  # noqa: F811 (fixtures)
    attached.attach(index, "svc", "http", url=retriever_url)  # copied with the index into the app's
    with _streamlit_servers(index, [tmp_path_factory.mktemp("engines-app")]) as servers:
        url, _ = servers[0]
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(120_000)
        try:
            _open(page, url, "Search & compare")
            page.get_by_label("Question", exact=True).fill("Which clinics delivered vaccination doses?")
            box = page.get_by_label("Modes (up to three)", exact=False).first
            box.click()
            for _ in range(3):  # the page's default modes (dense, bm25, hybrid) go; hybrid and svc come
                page.keyboard.press("Backspace")
            for mode in ("hybrid", "svc"):
                box.fill(mode)
                page.get_by_role("option", name=mode, exact=True).first.click()
            page.keyboard.press("Escape")
            page.get_by_role("button", name="Search").click()
            page.locator('[data-testid="stDataFrame"]').first.wait_for()
            _settle(page)
            assert [t.strip() for t in page.get_by_role("tab").all_inner_texts()] == ["hybrid", "svc"]
            # The page column is headed "record" when the table holds a record; the grid gives raw values.
            # The grid renders only the columns in view; the table's file holds every one of them.
            with page.expect_download() as downloaded:
                page.get_by_role("button", name="Download this table (CSV)").click()
            exported = Path(downloaded.value.path()).read_text(encoding="utf-8")
            rows = {(row["doc"], row.get("page") or row.get("record")): row
                    for row in csv.DictReader(io.StringIO(exported))}
            _shot(page, "search_compare_attached_engine", full_page=False)
        finally:
            page.close()
    # What the retriever answered: page 3 first (score 7.5), page 2 second (3.0).
    third, second = rows[("report", "3")], rows[("report", "2")]
    assert (third["svc engine #"], third["svc engine score"], third["svc mode #"]) == ("1", "7.5", "1")
    assert (second["svc engine #"], second["svc engine score"], second["svc mode #"]) == ("2", "3.0", "2")
    assert third["hybrid mode #"] == "1" and third["bm25 engine #"] == "1"  # ragloupe's own mode, in the same row
