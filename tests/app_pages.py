"""Running one app page in Streamlit's AppTest, for the page tests."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from ragloupe.config import PROJECT_ROOT

PAGES = PROJECT_ROOT / "pages"
TIMEOUT = 300  # seconds one script run may take: a page's first run loads the model and BM25


def run_page(name: str) -> AppTest:
    """pages/<name>.py, run once, with no exception shown on the page."""
    app = AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=TIMEOUT)
    app.run()
    assert_clean(app)
    return app


def assert_clean(app: AppTest) -> None:
    """No exception escaped to the page (a traceback would be shown to the user)."""
    assert not app.exception, [e.value for e in app.exception]


def finish(job, app: AppTest, seconds: float = 120) -> None:
    """Wait for a page's background job (ui/adapt_view.AdaptJob) to end, then run the page again,
    as its progress fragment would, and check nothing escaped to it."""
    deadline = time.monotonic() + seconds
    while not job.finished and time.monotonic() < deadline:
        time.sleep(0.5)
    app.run()
    assert_clean(app)
