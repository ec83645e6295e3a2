"""Your own gold set in a real Chromium, on a small index: label -> evaluate -> outside run -> failure audit.

A user who indexed their own files marks rows of Search & compare as the right
answers, evaluates that gold set on the Evaluation page, uploads another
system's run file to see it paired with a ragloupe mode, and opens the
failure audit of the runs. The index is tests/conftest.py's small corpus
(three records and a four-page PDF), built in seconds.
"""

from __future__ import annotations

import json
import re

import pytest

from test_browser import _open, _settle, _shot, _streamlit_servers, browser  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser

LABELS = (("What starts within thirty seconds when the mains power is lost?", "notes#n2", "thirty seconds"),
          ("How do pipelines survive the ground shifting in an earthquake?", "notes#n3", "Flexible joints"))


@pytest.fixture
def small_app(small_corpus, tmp_path, settings):
    """A streamlit server over an index of the small corpus, with no shipped gold set in sight."""
    from ragloupe.index.pipeline import run_index

    index_settings = settings.replace(index_dir=tmp_path / "small-index")
    summary = run_index([small_corpus], index_settings)
    assert not summary.errors
    empty_benchmarks = tmp_path / "no-benchmarks"
    empty_benchmarks.mkdir()
    root = tmp_path / "server"
    root.mkdir()
    with _streamlit_servers(index_settings, [root],
                            {"RAGLOUPE_BENCHMARKS_DIR": str(empty_benchmarks)}) as servers:
        yield servers[0]


def _label(page, url: str, question: str, unit: str, answer: str) -> None:
    """Search, open the row of ``unit`` and mark it as the right answer in the gold set 'mine'."""
    _open(page, url, "Search & compare")
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_role("button", name="Search").click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    _settle(page)
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    headers = [h.strip() for h in grid.locator("th").all_inner_texts()]
    assert {"dense mode #", "bm25 mode #", "hybrid mode #"} <= set(headers), headers  # three modes fit in 1280 px
    _shot(page, f"goldsets_table_{unit.replace('#', '_')}", full_page=False)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)  # the first row's selection box
    page.get_by_text(f"Mark {unit} as the right answer").wait_for()
    _settle(page)
    form = page.locator('[data-testid="stForm"]').filter(has_text="Mark ")
    form.get_by_role("textbox", name="Gold set", exact=True).fill("mine")
    form.get_by_role("textbox", name="Answer text, as the page writes it").fill(answer)
    form.get_by_role("button", name="Add to the gold set").click()
    page.get_by_text("Added U_00").wait_for()
    _settle(page)
    _shot(page, f"goldsets_label_{unit.replace('#', '_')}", full_page=False)


def test_label_evaluate_upload_and_audit_your_own_gold_set(small_app, browser):  # noqa: F811
    url, dirs = small_app
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(120_000)
    try:
        _walk(page, url, dirs)
    except BaseException:
        _shot(page, "goldsets_failure")
        raise
    finally:
        page.close()


def _walk(page, url: str, dirs) -> None:
    for question, unit, answer in LABELS:
        _label(page, url, question, unit, answer)
    stored = json.loads((dirs["runs"] / "goldsets" / "mine.json").read_text())
    assert [(q["doc_id"], q["expected_records"], q["added_via"]) for q in stored["queries"]] == [
        ("notes", ["n2"], "search & compare"), ("notes", ["n3"], "search & compare")]
    assert [q["expected_answer"] for q in stored["queries"]] == ["thirty seconds", "Flexible joints"]

    # Evaluate it like a shipped gold set: the only gold set there is, in the default modes.
    _open(page, f"{url}/evaluation", "Evaluation")
    page.get_by_role("button", name="Run evaluation").click()
    page.get_by_role("heading", name="Results").wait_for()
    _settle(page)
    assert page.get_by_text("yours: mine").count() >= 1
    runs = sorted(p.name for p in dirs["runs"].glob("*.json"))
    assert [r.split("-")[0] for r in runs] == ["dense", "hybrid"]

    # Another system's run, uploaded and paired with ragloupe's dense mode.
    run_file = "\n".join(["U_001 Q0 notes#n2 1 3.0 theirs", "U_001 Q0 notes#n1 2 1.0 theirs",
                          "U_002 Q0 notes#n1 1 2.0 theirs", "U_002 Q0 notes#n3 2 1.0 theirs"])
    section = page.locator('[data-testid="stForm"]').filter(has_text="Run file")
    section.locator('input[type="file"]').set_input_files(
        files=[{"name": "theirs.trec", "mimeType": "text/plain", "buffer": run_file.encode()}])
    _settle(page)
    gold_box = section.get_by_label("Gold sets it answers", exact=False).first
    gold_box.click()
    gold_box.fill("yours: mine")
    page.get_by_role("option", name="yours: mine", exact=True).first.click()
    page.keyboard.press("Escape")
    section.get_by_role("button", name="Score the run").click()
    page.get_by_role("heading", name="outside:theirs against dense").wait_for()
    _settle(page)
    # The outside run's paired test against dense, once (the page also shows the last runs' own test).
    verdicts = page.get_by_text(re.compile(r"^(no measurable difference on Hit@1|.* beats .* on Hit@1)"))
    assert [v for v in verdicts.all_inner_texts() if "outside:theirs" in v and "vs dense" in v] == [
        "no measurable difference on Hit@1 (outside:theirs 0.500 vs dense 1.000, p = 1.000)"]
    assert any(p.name.startswith("outside-theirs-") for p in dirs["runs"].glob("*.json"))
    _shot(page, "goldsets_evaluation")

    # The failure audit of the newest run (the outside one) lists its two questions.
    _open(page, f"{url}/failure_audit", "Failure audit")
    page.get_by_text("Retrieval failures at k=1 (2 questions)").wait_for()
    assert not page.locator('[data-testid="stException"]').count()
    _shot(page, "goldsets_failure_audit")
