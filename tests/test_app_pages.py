"""Every workbench page, run in-process with Streamlit's AppTest on real indexes.

Each page test loads the page, drives its main interaction and checks that
the numbers it shows are the ones the pipeline returns for the same inputs.
The demo index (tests/conftest.py) is shared and read-only; tests that change
an index build a tiny one of their own.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app_pages import PAGES, TIMEOUT, assert_clean, run_page

from ragloupe.config import PROJECT_ROOT, Settings
from ragloupe.ingest.uploads import sanitise_filename, save_upload
from ragloupe.retrieve import query_adapter
from ragloupe.ui.navigation import PAGES as NAVIGATION
from ragloupe.ui.navigation import page_file
from ragloupe.ui.text import highlight_html, md_escape, query_terms
from ragloupe.workspace import Workspace

ENTRY = PROJECT_ROOT / "app" / "streamlit_app.py"
BENCHMARKS = PROJECT_ROOT / "data" / "benchmarks"
GRAMPIAN_GOLD = PROJECT_ROOT / "data/benchmarks/grampian/eval/Grampian-2021-2022.eval.json"

# A record whose text is markup of every kind a PDF or CSV could smuggle in.
HOSTILE_TEXT = ("Valve inspection notes <script>alert('owned')</script> "
                "<img src=x onerror=alert(1)> **bold claim** [click me](http://evil.example) "
                "and the relief valve spindle was replaced after the quarterly inspection round.")
RECORDS_CSV = (
    "id,title,text\n"
    f"R-1,Valve log,\"{HOSTILE_TEXT}\"\n"
    "R-2,Pump log,\"The transfer pump seals were inspected after 500 running hours and replaced "
    "because leakage exceeded 10 ml per hour during the monthly maintenance inspection.\"\n"
    "R-3,Tank log,\"The storage tank bund was cleaned and its drain was found closed and locked, "
    "as the site procedure for rainwater removal from secondary containment requires.\"\n"
    "R-4,Alarm log,\"The high level alarm on the day tank was proof tested with a calibrated "
    "level source and tripped at the documented set point within the allowed tolerance.\"\n"
    "R-5,Hose log,\"Loading hoses were pressure tested and three were withdrawn from service "
    "because their test certificates had expired before the delivery season started.\"\n")


# ---------------------------------------------------------------------------- helpers





def button(app: AppTest, label: str):
    return next(b for b in app.button if b.label == label)


def selectbox(app: AppTest, label: str):
    return next(box for box in app.selectbox if box.label == label)


def metric(app: AppTest, label: str) -> str:
    return next(m.value for m in app.metric if m.label == label)


def html_bodies(app: AppTest) -> list[str]:
    return [element.proto.body for element in app.get("html")]


@pytest.fixture
def app_env(demo_env, monkeypatch) -> Settings:
    """The demo index for code that reads settings itself; no LLM, the fast projection."""
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    monkeypatch.setenv("RAGLOUPE_PROJECTION_METHOD", "pca")
    return Settings.from_env()


@pytest.fixture
def records_index(settings) -> Settings:
    """A tiny index of RECORDS_CSV (hostile markup included), in this test's own dirs."""
    from ragloupe.index.pipeline import run_index

    raw = settings.path("raw_dir") / "valve_logs.csv"
    raw.write_text(RECORDS_CSV, encoding="utf-8")
    summary = run_index([raw], settings)
    assert not summary.errors, summary.errors
    return settings


# ---------------------------------------------------------------------------- boundaries

def test_pipeline_never_imports_streamlit():
    package = PROJECT_ROOT / "src" / "ragloupe"
    offenders = []
    for path in package.rglob("*.py"):
        if "ui" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names
                          if n.split(".")[0] == "streamlit" or n.startswith("ragloupe.ui")]
    assert offenders == []


def test_highlighting_escapes_markup_and_marks_terms():
    rendered = highlight_html(HOSTILE_TEXT, query_terms("relief valve script"))
    assert "<script" not in rendered and "<img" not in rendered
    # A term inside markup is marked inside the escaped text, never turned back into a tag.
    assert "&lt;<mark>script</mark>&gt;alert(&#x27;owned&#x27;)&lt;/<mark>script</mark>&gt;" in rendered
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered
    assert "<mark>valve</mark>" in rendered and "<mark>relief</mark>" in rendered
    # Markdown stays literal: st.html does no markdown, and nothing turned it into tags.
    assert "**bold claim** [click me](http://evil.example)" in rendered
    assert "<a " not in rendered and "<strong>" not in rendered


def test_filters_from_widgets_leave_untouched_widgets_out():
    from ragloupe.ui.inputs import search_filters

    assert search_filters([], 0, 0, ["clean", "figures", "degraded"]) == {}
    assert search_filters(["a"], 0, 12, ["degraded"]) == {
        "doc_ids": ["a"], "pages": (1, 12), "quality": ["degraded"]}
    assert search_filters([], 30, 10, ["figures", "degraded", "clean"]) == {"pages": (10, 30)}


def test_the_quality_filter_keeps_pages_of_figures_unless_they_are_left_out():
    from ragloupe.ui.inputs import ALL_QUALITIES, search_filters

    assert "figures" in ALL_QUALITIES  # a statement page is searchable like a clean one
    assert search_filters([], 0, 0, ["clean", "degraded"]) == {"quality": ["clean", "degraded"]}


def _two_mode_rankings():
    """Two modes over two pages: dense lists only page 3, bm25 only page 4 (whose dense rank is 2)."""
    from ragloupe.models import Chunk, EngineScore, Hit, PageHit, Ranking

    a, b = Chunk("a", "doc", 3, 0, "text a", 5, "clean"), Chunk("b", "doc", 4, 0, "text b", 5, "clean")
    dense = Ranking("q", "dense", (Hit(a, 1, 0.9, {"dense": EngineScore(1, 0.9),
                                                   "bm25": EngineScore(None, None)}),),
                    pages=(PageHit("doc#p3", "doc", 3, "", 1, 0.9, ("a",), 1),))
    bm25 = Ranking("q", "bm25", (Hit(b, 1, 7.0, {"dense": EngineScore(2, 0.5),
                                                 "bm25": EngineScore(1, 7.0)}, rrf_score=0.0325),),
                   pages=(PageHit("doc#p4", "doc", 4, "", 1, 7.0, ("b",), 1),))
    return {"dense": dense, "bm25": bm25}


def test_absent_rank_is_missing_in_the_comparison_and_shown_as_a_dash():
    from ragloupe.diagnostics.comparison import comparison_rows, comparison_table
    from ragloupe.ui.tables import comparison_frame, comparison_styler

    rows = comparison_rows(_two_mode_rankings(), level="page", k=5, gold_units={"doc#p4"})
    table = comparison_table(rows, ["dense", "bm25"], k=5)
    frame = comparison_frame(table)
    assert list(frame["page"]) == ["3", "4"]  # both rank 1; the first mode's goes first
    first, second = frame.iloc[0], frame.iloc[1]
    # Each engine once per row, and a final rank per mode, each named for what it is.
    assert first["dense engine #"] == 1 and pd.isna(first["bm25 engine #"]) and pd.isna(first["RRF score"])
    assert (second["dense engine #"], second["bm25 engine #"], second["RRF score"]) == (2, 1, 0.0325)
    assert (first["dense mode #"], second["bm25 mode #"]) == (1, 1)
    assert pd.isna(first["bm25 mode #"]) and pd.isna(second["dense mode #"])
    assert second["gold"] == "★" and first["gold"] == ""
    shown = comparison_styler(table).to_html()
    for column in ("bm25 engine #", "bm25 engine score", "learned score", "bm25 mode #"):  # row 0: not listed
        position = list(frame.columns).index(column)
        assert f'class="data row0 col{position}" >—</td>' in shown
    # The modes disagree on both rows (each lists one page only): green in a top k, amber out of it.
    assert (_styled_cells(shown, "#dcefd5"), _styled_cells(shown, "#fbe3c8")) == (2, 2)


def _styled_cells(html: str, css: str) -> int:
    """How many table cells a Styler's CSS gives ``css`` (it merges equal rules into one)."""
    return sum(len(re.findall(r"_row\d+_col\d+", selectors))
               for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", html) if css in body)


def test_comparison_table_has_each_mode_then_each_engine_once():
    from ragloupe.diagnostics.comparison import comparison_rows, comparison_table

    table = comparison_table(comparison_rows(_two_mode_rankings()), ["dense", "bm25"], k=5, show_doc=False)
    assert table.names == ["gold", "page", "dense mode #", "bm25 mode #", "dense engine #",
                           "dense engine cosine", "bm25 engine #", "bm25 engine score", "RRF score",
                           "learned score", "section"]


def test_comparison_csv_has_the_screens_headers_and_empty_cells_for_not_listed():
    import csv
    import io

    from ragloupe.diagnostics.comparison import comparison_csv, comparison_rows, comparison_table

    rows = comparison_rows(_two_mode_rankings(), level="page", k=5, gold_units={"doc#p4"})
    table = comparison_table(rows, ["dense", "bm25"], k=5)
    read = list(csv.DictReader(io.StringIO(comparison_csv(table))))
    assert list(read[0]) == table.names  # the file's columns are the screen's, in its order
    assert [r["page"] for r in read] == ["3", "4"]
    # Page 3: the dense engine and the dense mode ranked it 1st; bm25 (engine and mode) did not list it.
    assert (read[0]["dense engine #"], read[0]["dense mode #"]) == ("1", "1")
    assert (read[0]["bm25 engine #"], read[0]["bm25 engine score"], read[0]["bm25 mode #"]) == ("", "", "")
    # Page 4: the dense engine's rank (2) is not the dense mode's (not listed): two columns, two names.
    assert (read[1]["dense engine #"], read[1]["dense mode #"]) == ("2", "")
    assert float(read[1]["bm25 engine score"]) == 7.0 and read[1]["gold"] == "★"
    assert not any(v in ("1000000", "-1000000000.0", "-1e9") for r in read for v in r.values())


def test_comparison_names_an_attached_engine_read_from_the_hits():
    from ragloupe.diagnostics.comparison import comparison_rows, comparison_table
    from ragloupe.models import Chunk, EngineScore, Hit, PageHit, Ranking

    chunk = Chunk("a", "doc", 3, 0, "text a", 5, "clean")
    hit = Hit(chunk, 1, 0.8, {"dense": EngineScore(2, 0.7), "bm25": EngineScore(None, None),
                              "acme": EngineScore(1, 12.5)})
    ranking = Ranking("q", "hybrid", (hit,), pages=(PageHit("doc#p3", "doc", 3, "", 1, 0.8, ("a",), 1),))
    table = comparison_table(comparison_rows({"hybrid": ranking}), ["hybrid"], k=5)
    record = table.records[0]
    assert (record["acme engine #"], record["acme engine score"]) == (1, 12.5)
    assert (record["dense engine #"], record["bm25 engine #"]) == (2, None)


def test_opened_row_says_which_engine_mode_and_chunk_each_number_is():
    from ragloupe.diagnostics.comparison import comparison_rows, row_detail
    from ragloupe.models import Chunk, EngineScore, Hit, PageHit, Ranking

    # Page 71: bm25 ranks chunk 5 first; the dense mode's best chunk of the page is chunk 3 (bm25 #2).
    three, five = (Chunk(f"c{n}", "doc", 71, n, f"text {n}", 5, "clean") for n in (3, 5))
    views = {"c3": {"dense": EngineScore(1, 0.7127), "bm25": EngineScore(2, 20.468)},
             "c5": {"dense": EngineScore(9, 0.5), "bm25": EngineScore(1, 25.0)}}
    dense = Ranking("q", "dense", (Hit(three, 1, 0.7127, views["c3"]), Hit(five, 9, 0.5, views["c5"])),
                    pages=(PageHit("doc#p71", "doc", 71, "", 1, 0.7127, ("c3", "c5"), 1),))
    bm25 = Ranking("q", "bm25", (Hit(five, 1, 25.0, views["c5"]), Hit(three, 2, 20.468, views["c3"])),
                   pages=(PageHit("doc#p71", "doc", 71, "", 1, 25.0, ("c5", "c3"), 1),))
    (row,) = comparison_rows({"dense": dense, "bm25": bm25}, level="page", k=5)
    lines = row_detail(row, ["dense", "bm25"], level="page")
    assert lines[0] == ("Engines, best chunk of this page (the table's engine columns): "
                        "dense engine #1 · cosine 0.713 (chunk 3); bm25 engine #1 · score 25.000 (chunk 5)")
    assert lines[1] == ("dense mode #1 · page score 0.7127; its best chunk is chunk 3: dense engine #1 · "
                        "cosine 0.713; bm25 engine #2 · score 20.468 (the table's bm25 engine #1 is chunk 5)")
    assert lines[2] == ("bm25 mode #1 · page score 25.0000; its best chunk is chunk 5: dense engine #9 · "
                        "cosine 0.500 (the table's dense engine #1 is chunk 3); bm25 engine #1 · score 25.000")


@pytest.mark.parametrize("name", ["../../outside.csv", "..\\..\\outside.csv", "/etc/outside.csv",
                                  "sub/dir/outside.csv", ".outside.csv", "-outside.csv"])
def test_upload_names_cannot_escape_the_raw_folder(settings, tmp_path, name):
    before = {p for p in tmp_path.rglob("*")}
    saved = save_upload(name, b"id,text\n1,hello\n", settings)
    raw_dir = settings.path("raw_dir").resolve()
    assert saved.parent.resolve() == raw_dir and saved.name == "outside.csv"
    assert {p for p in tmp_path.rglob("*")} - before == {saved}


def test_upload_refuses_other_types_and_oversized_files(settings):
    from ragloupe.errors import RagloupeError

    with pytest.raises(RagloupeError, match="only .pdf, .html, .htm, .docx, .csv, .jsonl"):
        sanitise_filename("report.exe")
    with pytest.raises(RagloupeError, match="over the 1 MB limit"):
        save_upload("big.csv", b"x" * (1024 * 1024 + 1), settings.replace(max_upload_mb=1))
    assert list(settings.path("raw_dir").iterdir()) == []


def test_uploads_are_checked_when_saved_and_nothing_of_a_refused_one_is_kept(settings):
    from ragloupe.errors import RagloupeError

    with pytest.raises(RagloupeError, match="was not saved"):
        save_upload("notes.csv", b"name,remark\nvalve,replaced the spindle\n", settings)
    with pytest.raises(RagloupeError, match="no %PDF- header"):
        save_upload("report.pdf", b"<html>not a pdf</html>", settings)
    assert list(settings.path("raw_dir").iterdir()) == []
    saved = save_upload("good.csv", b"id,text\n1,the relief valve was replaced after the test\n",
                        settings)
    assert [p.name for p in settings.path("raw_dir").iterdir()] == [saved.name]


# ---------------------------------------------------------------------------- pages

def _search(app: AppTest, question: str, modes: list[str], k: int, level: str = "page") -> None:
    app.text_input(key="search.question").input(question)
    app.multiselect(key="search.modes").set_value(modes)
    app.number_input(key="search.k").set_value(k)
    app.radio(key="search.level").set_value(level)
    button(app, "Search").click()
    app.run()
    assert_clean(app)


def _missing(value) -> bool:
    """A rank or score the page shows as "—": missing in the table's data, never a stand-in number."""
    return value is None or pd.isna(value)


def _in_order(node):
    """The page's elements in the order they are drawn (blocks opened)."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _in_order(child)


def _mode_rank(row: dict, mode: str):
    """A mode's final rank in a row of the table: its column is "<mode> mode #" (with the fusion
    that ranked after it when that is not the one asked for)."""
    (name,) = [name for name in row if name == f"{mode} mode #" or name.startswith(f"{mode} mode # (")]
    return row[name]


def _engine_rank(hit, engine: str):
    view = hit.per_engine.get(engine)
    return None if view is None else view.rank


def test_search_page_comparison_matches_the_pipeline_per_page(app_env, workspace_of):
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.retrieve.search import search

    gold_query = load_goldset(GRAMPIAN_GOLD).queries[0]
    modes, k = ["dense", "bm25", "hybrid"], 5
    app = run_page("search_compare")
    _search(app, gold_query.question, modes, k)
    table = app.dataframe[0].value
    rankings = {mode: search(gold_query.question, mode=mode, k=app_env.candidate_window,
                             workspace=workspace_of(app_env), explain=True) for mode in modes}
    top_units = {p.unit for r in rankings.values() for p in r.pages if p.rank <= k}
    # The doc column is left out when every row is from one document (the question names
    # its year, so only that year's report is searched): then that document is the doc.
    listed_docs = {unit.split("#")[0] for unit in top_units}
    sole_doc = next(iter(listed_docs)) if len(listed_docs) == 1 else None
    assert ("doc" in table.columns) == (sole_doc is None)
    records = table.to_dict("records")
    shown_units = {f"{row.get('doc', sole_doc)}#p{row['page']}" for row in records}
    assert shown_units == top_units
    for row in records:
        unit = f"{row.get('doc', sole_doc)}#p{row['page']}"
        assert row["gold"] == ("★" if unit in gold_query.expected_units else "")
        for mode, ranking in rankings.items():
            page = next((p for p in ranking.pages if p.unit == unit), None)
            held = [h for h in ranking.hits if h.chunk.unit == unit]
            if page is None or not held:
                assert _missing(_mode_rank(row, mode))
                continue
            assert _mode_rank(row, mode) == page.rank
        # Each engine's rank is said once: its best rank of any chunk of the unit.
        for engine in ("dense", "bm25"):
            ranks = [_engine_rank(h, engine) for r in rankings.values() for h in r.hits if h.chunk.unit == unit]
            expected = min((r for r in ranks if r is not None), default=None)
            shown = row[f"{engine} engine #"]
            assert (_missing(shown) if expected is None else shown == expected), (unit, engine)
    # Rows come best first: each row's best rank in any mode never beats the row above.
    best = [min(int(v) for v in (_mode_rank(row, m) for m in modes) if not _missing(v))
            for row in table.to_dict("records")]
    assert best == sorted(best)
    assert any("Gold question" in info.value for info in app.info)
    labels = [e.label for tab in app.tabs for e in tab.expander]
    assert any("★ gold" in label for label in labels)
    assert all("dense" in label and "bm25" in label for label in labels)
    # What fused the hybrid (the default: min-max) is said; one-engine modes fuse nothing.
    fusions = [t.value for t in app.text if t.value.startswith("Fusion: ")]
    assert fusions == [f"Fusion: {rankings['hybrid'].fusion}"] == [f"Fusion: {app_env.fusion}"]


def test_search_page_says_the_rewrite_it_searched_the_terms_put_back_and_why_one_was_not_used(
        app_env, monkeypatch):
    """An LLM (a local server speaking Ollama) rewrites one question dropping its directive's
    number, and gives another back unchanged: the page says the rewrite searched with the
    number put back, and that the second was not used and why, each in one line."""
    from llm_server import FakeLlmServer, chat_reply

    dropping, unchanged = "Which duties does 2012/18/EU place on operators?", "Emergency plans for floods"
    rewrites = {dropping: "obligations of site operators under the Seveso directive", unchanged: unchanged}
    with FakeLlmServer(lambda path, body: chat_reply(path, rewrites[body["messages"][-1]["content"]])) as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
        app = run_page("search_compare")
        app.toggle(key="search.rewrite").set_value(True)
        said = {}
        for question in rewrites:
            _search(app, question, ["bm25"], 5)
            said[question] = [t.value for t in app.text if t.value.startswith("Rewrite ")]
    assert said[dropping] == ["Rewrite used: obligations of site operators under the Seveso directive 2012/18/EU "
                              "(2012/18/EU put back: the LLM's rewrite had dropped it)"]
    assert said[unchanged] == ["Rewrite not used: identical to the question"]


def test_search_page_warns_above_the_table_when_fusion_falls_back_and_names_each_document(
        app_env, tmp_path, monkeypatch):
    """A search over every document reaches the Natech records; a learned model trained on report
    pages alone does not rank records, so the hybrid is fused by min-max instead: said in a warning
    above the table and in its column's header. The doc column carries each report's whole name."""
    shipped = json.loads((PROJECT_ROOT / "src/ragloupe/retrieve/learned_model.json").read_text(encoding="utf-8"))
    shipped["fingerprint"]["units"] = "page"
    pages_only = tmp_path / "pages_only_model.json"
    pages_only.write_text(json.dumps(shipped), encoding="utf-8")
    monkeypatch.setenv("RAGLOUPE_LEARNED_MODEL", str(pages_only))
    app = run_page("search_compare")
    said = app.selectbox(key="search.fusion").help  # what the choice promises, before it is made
    assert "pages and records, for the shipped one" in said and "query adapter" in said
    app.selectbox(key="search.fusion").set_value("learned")
    _search(app, "emergency response plan for flooding", ["dense", "hybrid"], 10)
    used = next(t.value for t in app.text if t.value.startswith("Fusion: "))
    assert used.startswith("Fusion: minmax (")  # the pipeline fell back; the page must say so loudly
    (warning,) = [w.value for w in app.warning]
    assert md_escape("learned (model) fusion was asked for") in warning and md_escape("min-max") in warning
    order = [node.type for node in _in_order(app.main)]
    assert order.index("warning") < order.index(app.dataframe[0].type)  # above the table
    table = app.dataframe[0].value
    assert "hybrid mode # (minmax, not learned)" in table.columns
    assert {"Grampian-2020-2021", "guidance"} <= set(table["doc"])  # whole ids, never "Grampian-20"
    # The table's file is offered beside it (its content is read back in test_browser.py).
    assert [b.label for b in app.get("download_button")] == ["Download this table (CSV)"]


def test_search_page_comparison_matches_the_pipeline_per_chunk(app_env, workspace_of):
    from ragloupe.retrieve.search import search

    question, modes, k = "capital expenditure on buildings", ["dense", "hybrid+rerank"], 4
    app = run_page("search_compare")
    _search(app, question, modes, k, level="chunk")
    table = app.dataframe[0].value
    # The doc column is wide enough for its longest id at 8 px a character: no "Grampian-20" cut.
    widths = {name: config.get("width") for name, config in json.loads(app.dataframe[0].proto.columns).items()}
    longest = max(len(doc) for doc in table["doc"])
    assert longest >= len("Grampian-2021-2022") and widths["doc"] >= 8 * longest + 16, (widths["doc"], longest)
    # So is the section column, for its longest heading (it was a fixed 400 px, wider headings cut).
    heading = max(len(section) for section in table["section"])
    assert heading >= 40 and isinstance(widths["section"], int) and widths["section"] >= 8 * heading + 16, (
        widths["section"], heading)
    for mode in modes:
        ranking = search(question, mode=mode, k=app_env.candidate_window,
                         workspace=workspace_of(app_env),
                         explain=True)
        where = {(h.chunk.doc_id, str(h.chunk.page), h.chunk.position): h for h in ranking.hits}
        for row in table.to_dict("records"):
            hit = where.get((row["doc"], row["page"], int(row["chunk"])))
            if hit is None:
                assert _missing(_mode_rank(row, mode))
                continue
            assert _mode_rank(row, mode) == hit.rank
            assert row["dense engine cosine"] == pytest.approx(hit.per_engine["dense"].score)
        assert sum(1 for row in table.to_dict("records")
                   if not _missing(_mode_rank(row, mode)) and _mode_rank(row, mode) <= k) == k


def test_the_pages_sit_in_pages_and_no_pages_folder_beside_the_entry_script():
    """A pages/ folder beside the main script switches Streamlit to its old multipage mode:
    a bookmarked page URL then opens alone, without the app's navigation (test_browser.py
    opens every page URL as a fresh server's first request). The entry sits in app/."""
    assert not (ENTRY.parent / "pages").exists()
    assert sorted(p.stem for p in PAGES.glob("*.py")) == sorted(p.name for p in NAVIGATION)


def test_search_page_keeps_its_inputs_and_result_across_navigation(app_env):
    app = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    app.run()  # the app's default page is Search & compare
    # Under st.navigation AppTest neither commits form inputs nor delivers the submit, so
    # the inputs are set in session state and the search starts by the page's other way in
    # (the flag a picked gold question sets). The real clicks are in test_browser.py.
    app.session_state["search.question"] = "capital expenditure on buildings"
    app.session_state["search.modes"] = ["bm25"]
    app.session_state["_search_pending"] = True
    app.run()
    assert_clean(app)
    table = app.dataframe[0].value
    app.switch_page(page_file("run_info")).run()
    assert_clean(app)
    assert app.title[0].value == "Run info"
    app.switch_page(page_file("search_compare")).run()
    assert_clean(app)
    assert app.text_input(key="search.question").value == "capital expenditure on buildings"
    assert app.multiselect(key="search.modes").value == ["bm25"]
    assert app.dataframe[0].value.equals(table)


def test_search_page_offers_close_gold_questions_and_marks_a_picked_one(app_env):
    app = run_page("search_compare")
    _search(app, "What was the core revenue resource limit?", ["bm25"], 5)
    assert not app.info  # not a gold question: nothing starred
    offers = [b for b in app.button if b.label.startswith("Q_")]
    assert offers
    offers[0].click()
    app.run()
    assert_clean(app)
    query_id = offers[0].label.split(":")[0]
    assert any(md_escape(query_id) in info.value for info in app.info)
    from ragloupe.diagnostics.gold import find_goldsets, load_goldsets

    goldsets, _ = load_goldsets(find_goldsets(app_env))
    picked = next(q for g in goldsets for q in g.queries if q.query_id == query_id)
    assert app.multiselect(key="search.docs").value == [picked.doc_id]
    assert app.text_input(key="search.question").value == offers[0].label.split(": ", 1)[1]


def test_search_page_refuses_an_inverted_page_range(app_env):
    app = run_page("search_compare")
    app.number_input(key="search.page_from").set_value(30)
    app.number_input(key="search.page_to").set_value(10)
    _search(app, "capital expenditure", ["bm25"], 3)
    assert any("starts after it ends" in w.value for w in app.warning)
    assert not app.dataframe


def test_search_page_renders_document_markup_inert(records_index):
    app = run_page("search_compare")
    _search(app, "relief valve spindle", ["bm25"], 5)
    bodies = [b for b in html_bodies(app) if "spindle" in b]
    assert bodies, "the hostile chunk was not shown"
    for body in bodies:
        assert "<script" not in body and "<img" not in body
        assert "&lt;script&gt;" in body
    assert not any("click me" in m.value for m in app.markdown)


def test_search_page_encodes_missing_sentence_vectors_under_a_bar_that_says_so(settings, small_corpus):
    from ragloupe.index import sentences
    from ragloupe.index.pipeline import run_index
    from ragloupe.index.store import open_store

    assert not run_index([small_corpus], settings.replace(dense_sentence_weight=0)).errors
    app = run_page("search_compare")
    _search(app, "diesel generators after a power loss", ["bm25"], 3)  # explained: dense runs beside it
    assert_clean(app)
    chunks = open_store(settings).all_chunks()
    n_sentences = sum(len(sentences.distinct_texts([c for c in chunks if c.doc_id == doc])) for doc in ("notes", "report"))
    bars = [element.proto.text for element in app.get("progress")]
    assert bars == [md_escape(f"Encoded the sentence vectors of 2 documents ({n_sentences:,} sentences), saved for "
                              "the next searches.")]
    assert app.dataframe  # and the search went on
    _search(app, "diesel generators after a power loss", ["bm25"], 3)
    assert not app.get("progress")  # nothing left to encode: no bar


def test_search_page_refuses_an_index_another_model_embedded_and_says_how_to_go_on(settings, small_corpus):
    from ragloupe.index.pipeline import run_index

    assert not run_index([small_corpus], settings.replace(embedding_model="bundled:all-MiniLM-L6-v2")).errors
    app = run_page("search_compare")  # under the default model, which did not embed this index
    _search(app, "diesel generators after a power loss", ["dense", "bm25"], 3)
    assert [e.value for e in app.error] == [
        "this index was embedded by bundled:all-MiniLM-L6-v2 and the settings name "
        "bundled:all-MiniLM-L6-v2+questions: dense would compare the vectors of two models; rebuild it on "
        "the Index page to re-embed it, or set RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2"]
    assert not app.dataframe  # no ranking from the vectors of two models


def test_chunk_explorer_counts_match_the_store(app_env):
    from ragloupe.index.store import open_store

    store = open_store(app_env)
    app = run_page("chunk_explorer")
    assert metric(app, "Matching chunks") == f"{store.count():,}"
    app.multiselect(key="explorer.docs").set_value(["guidance"])
    app.run()
    assert_clean(app)
    in_doc = store.all_chunks({"doc_id": "guidance"})
    assert metric(app, "Matching chunks") == f"{len(in_doc):,}"
    assert metric(app, "Clean") == f"{sum(c.quality == 'clean' for c in in_doc):,}"
    assert metric(app, "Degraded") == f"{sum(c.quality == 'degraded' for c in in_doc):,}"
    assert metric(app, "Figures") == f"{sum(c.quality == 'figures' for c in in_doc):,}"
    shown = [e.label for e in app.expander]
    assert len(shown) == min(len(in_doc), app_env.explorer_page_size)
    assert all(label.startswith("guidance") for label in shown)


def test_chunk_explorer_lists_pages_left_out(app_env):
    from ragloupe.index.manifest import Manifest

    excluded = Manifest.load(app_env).excluded_pages()
    app = run_page("chunk_explorer")
    table = next(d.value for d in app.dataframe if "reason" in d.value.columns
                 and "page" in d.value.columns)
    assert len(table) == len(excluded)
    assert {(r.document, str(r.page)) for r in table.itertuples()} == {
        (doc_id, str(page.record_id or page.page)) for doc_id, page in excluded}


def test_chunk_explorer_shows_what_was_stripped_from_each_page(app_env):
    from ragloupe.index.manifest import Manifest

    doc_id = "Grampian-2021-2022"
    manifest = Manifest.load(app_env)
    app = run_page("chunk_explorer")
    app.multiselect(key="explorer.docs").set_value([doc_id])
    app.run()
    assert_clean(app)
    first_page = int(app.expander[0].label.split("p\\.")[1].split(" ")[0])
    stripped = next(p.stripped for p in manifest.pages(doc_id) if p.page == first_page)
    assert stripped, "the demo PDFs carry running headers on every page"
    shown = [t.value for t in app.expander[0].text if t.value.startswith("Stripped")]
    assert shown == ["Stripped from this page as running header/footer: " + " | ".join(stripped)]
    boilerplate = next(d.value for d in app.dataframe if list(d.value.columns) == ["document", "line"])
    assert list(boilerplate["line"]) == list(manifest.documents[doc_id].boilerplate)


def test_chunk_explorer_renders_document_markup_inert(records_index):
    app = run_page("chunk_explorer")
    bodies = [b for b in html_bodies(app) if "spindle" in b]
    assert bodies and all("<script" not in b and "&lt;script&gt;" in b for b in bodies)


def test_index_page_plans_then_runs_an_incremental_index(settings):
    from ragloupe.index.store import open_store

    (settings.path("raw_dir") / "valve_logs.csv").write_text(RECORDS_CSV, encoding="utf-8")
    app = run_page("index_manage")
    assert metric(app, "New") == "1" and metric(app, "Unchanged") == "0"
    button(app, "Run incremental re-index").click()
    app.run()
    assert_clean(app)
    chunks = open_store(settings).count()
    assert chunks >= 2
    assert metric(app, "Chunks added") == f"{chunks:,}"
    assert metric(app, "Chunks") == f"{chunks:,}"
    # The plan for the next run now sees the file as unchanged.
    assert [m.value for m in app.metric if m.label == "Unchanged"][0] == "1"


def test_index_page_run_encodes_the_sentence_vectors_unchanged_documents_lack_and_says_so(settings):
    from ragloupe.index.pipeline import run_index

    raw = settings.path("raw_dir") / "valve_logs.csv"
    raw.write_text(RECORDS_CSV, encoding="utf-8")
    assert not run_index([raw], settings.replace(dense_sentence_weight=0)).errors  # none saved
    app = run_page("index_manage")
    button(app, "Run incremental re-index").click()
    app.run()
    assert_clean(app)
    assert metric(app, "Unchanged") == "1"
    assert [i.value for i in app.info] == ["Encoded the sentence vectors of 1 unchanged document (indexed without "
                                           "them, or with another model)."]
    assert "Sentences: dense blends each chunk's best sentence at 0.4; 1 of 1 documents have their sentence " \
           "vectors saved" in [c.value for c in app.caption]
    # what dense searches with: the shipped adapter, with the count of questions its own record holds
    adapter_file = Path(query_adapter.__file__).with_name("query_adapter.npz")
    with np.load(adapter_file, allow_pickle=False) as data:
        learned_from = json.loads(str(data["meta"]))["questions"]
    assert (f"Question: dense searches with the question mapped by the shipped query adapter (learned from "
            f"{learned_from:,} gold questions), carried over to all-MiniLM-L6-v2+questions, an average of "
            "all-MiniLM-L6-v2 with 50% fine-tuned weights") in [c.value for c in app.caption]


def test_index_page_reports_a_bad_file_and_indexes_the_rest(settings):
    raw = settings.path("raw_dir")
    (raw / "valve_logs.csv").write_text(RECORDS_CSV, encoding="utf-8")
    (raw / "broken.pdf").write_bytes(b"this is not a pdf at all")
    app = run_page("index_manage")
    button(app, "Run incremental re-index").click()
    app.run()
    assert_clean(app)
    assert any("1 file(s) not indexed" in e.value for e in app.error)
    errors = next(d.value for d in app.dataframe if "reason" in d.value.columns
                  and "file" in d.value.columns)
    assert list(errors["document"]) == ["broken"]
    assert metric(app, "Documents") == "1"
    assert "Sentences: dense blends each chunk's best sentence at 0.4; 1 of 1 documents have their sentence " \
           "vectors saved" in [c.value for c in app.caption]


def test_index_page_encodes_the_missing_sentence_vectors_on_request_and_says_so(settings, small_corpus):
    from ragloupe.index import sentences
    from ragloupe.index.pipeline import run_index
    from ragloupe.index.store import open_store

    # Indexed as before sentence vectors existed: none saved, so a first search would stop to encode them.
    assert not run_index([small_corpus], settings.replace(dense_sentence_weight=0)).errors
    app = run_page("index_manage")
    assert "Sentences: dense blends each chunk's best sentence at 0.4; 0 of 2 documents have their sentence " \
           "vectors saved; the others' are encoded by the next index run, or before the first search that " \
           "reads them" in [c.value for c in app.caption]
    button(app, "Encode missing sentence vectors").click()
    app.run()
    assert_clean(app)
    assert "Sentences: dense blends each chunk's best sentence at 0.4; 2 of 2 documents have their sentence " \
           "vectors saved" in [c.value for c in app.caption]
    chunks = open_store(settings).all_chunks()
    n_sentences = sum(len(sentences.distinct_texts([c for c in chunks if c.doc_id == doc])) for doc in ("notes", "report"))
    assert [s.value for s in app.success] == [f"Encoded the sentence vectors of 2 documents ({n_sentences:,} "
                                              "sentences), saved for the next searches."]
    assert not [b for b in app.button if b.label == "Encode missing sentence vectors"]


def test_broken_index_shows_a_message_not_a_traceback(settings):
    manifest = settings.path("index_dir") / "manifest.json"
    manifest.write_text("{not json", encoding="utf-8")
    app = run_page("chunk_explorer")
    assert any("rebuild it on the Index page" in e.value for e in app.error)
    assert not any("--" in e.value for e in app.error)


def test_embeddings_page_places_the_query_and_its_hits(app_env):
    from ragloupe.index.store import open_store

    count = open_store(app_env).count()
    app = run_page("embeddings")
    assert any(f"PCA of {count:,} chunks (all)" in c.value for c in app.caption)
    app.text_input(key="embeddings.question").input("capital expenditure on buildings")
    app.number_input(key="embeddings.k").set_value(4)
    button(app, "Place").click()
    app.run()
    assert_clean(app)
    figure = json.loads(app.get("plotly_chart")[0].proto.spec)
    traces = {t.get("name"): t for t in figure["data"]}
    assert len(traces["query"]["x"]) == 1 and len(traces["hits"]["x"]) == 4
    points = sum(len(t["x"]) for name, t in traces.items() if name not in ("query", "hits", "gold"))
    assert points == count


def test_run_info_shows_where_each_setting_came_from(app_env, monkeypatch):
    from ragloupe.index.store import open_store

    monkeypatch.setenv("RAGLOUPE_TOP_K", "7")
    app = run_page("run_info")
    table = next(d.value for d in app.dataframe if "source" in d.value.columns)
    row = table[table["setting"] == "top_k"].iloc[0]
    assert (row["value"], row["source"]) == ("7", "environment")
    assert table[table["setting"] == "chunk_tokens"].iloc[0]["source"] == "default"
    assert metric(app, "Chunks in the index") == f"{open_store(app_env).count():,}"
    assert any("no LLM configured" in w.value for w in app.warning)
    # The index's status in a table that wraps: every value whole, the store's path too.
    status = app.table[0].value
    assert status.loc["store"].iloc[0].endswith(str(app_env.path("index_dir") / "chroma")), status.loc["store"]
    assert any(c.value.startswith("No LLM call logged yet, in ") for c in app.caption)


def test_run_info_counts_the_llm_calls_it_lists_in_words(app_env):
    from ragloupe.logs import log_llm_call

    log_llm_call({"backend": "ollama", "model": "fake-model", "call": "generate"}, app_env)
    app = run_page("run_info")
    assert any(c.value.startswith("The last LLM call, in ") for c in app.caption)  # not "Last 1 LLM calls"
    log_llm_call({"backend": "ollama", "model": "fake-model", "call": "generate"}, app_env)
    app = run_page("run_info")
    assert any(c.value.startswith("The last 2 LLM calls (newest first), in ") for c in app.caption)


def _smallest_goldset(settings: Settings) -> Path:
    from ragloupe.diagnostics.gold import find_goldsets
    from ragloupe.evaluate.goldset import load_goldset

    return min(find_goldsets(settings), key=lambda p: len(load_goldset(p).queries))


def test_evaluation_page_runs_and_compares_like_the_cli(app_env, workspace_of):
    from ragloupe.evaluate.compare import compare
    from ragloupe.evaluate.runs import evaluate, load_run

    goldset = _smallest_goldset(app_env)
    app = run_page("evaluation")
    app.multiselect(key="evaluation.goldsets").set_value([goldset.name])
    app.multiselect(key="evaluation.modes").set_value(["bm25", "dense"])
    app.text_input(key="evaluation.ks").input("1,3")
    button(app, "Run evaluation").click()
    app.run()
    assert_clean(app)
    results = app.dataframe[0].value
    for mode in ("bm25", "dense"):
        expected = evaluate([goldset], mode=mode, ks=[1, 3], scope="doc",
                            workspace=workspace_of(app_env),
                            write=False).aggregates
        shown = results[results["mode"] == mode].iloc[0]
        assert shown["hit@1"].startswith(f"{expected['hit@1']['mean']:.3f}")
        assert shown["mrr"].startswith(f"{expected['mrr']['mean']:.3f}")
    # Every figure and its interval is shown whole: each column as wide as its longest text at 8 px a character.
    widths = {name: config.get("width") for name, config in json.loads(app.dataframe[0].proto.columns).items()}
    for name in ("hit@1", "mrr", "recall@3"):
        longest = max(len(value) for value in results[name])
        assert longest >= len("0.000 [0.000, 0.000]") and widths[name] >= 8 * longest + 16, (name, widths)
    # The paired significance test of the two runs is on the run's own screen, before any Compare click.
    assert any(h.value.startswith("Is the difference real?") for h in app.subheader)
    # The dense run searched with the shipped query adapter: the page says how many of these questions
    # it learned from (its record keeps a SHA-256 prefix of each question, lower-cased, spaces collapsed).
    import hashlib

    with np.load(Path(query_adapter.__file__).with_name("query_adapter.npz"), allow_pickle=False) as data:
        digests = set(json.loads(str(data["meta"]))["question_digests"])
    questions = [q["question"] for q in json.loads(goldset.read_text(encoding="utf-8"))["queries"]]
    learned = sum(hashlib.sha256(" ".join(q.lower().split()).encode()).hexdigest()[:16] in digests
                  for q in questions)
    notes = [w.value for w in app.warning if "query adapter learned from" in w.value]
    assert notes == ([md_escape(f"{learned} of these {len(questions)} questions are among those the shipped query "
                                "adapter learned from: dense and the default score them in-sample, higher than a new "
                                "question would be (RAGLOUPE_QUERY_ADAPTER=off scores them without it).")]
                     if learned else [])
    # ... and how many the default embedding model was fine-tuned on (its record beside its delta).
    read = set(json.loads((Path(query_adapter.__file__).parents[1] / "index/minilm_questions_read.json")
                          .read_text(encoding="utf-8"))["question_digests"])
    tuned_on = sum(hashlib.sha256(" ".join(q.lower().split()).encode()).hexdigest()[:16] in read for q in questions)
    assert tuned_on  # the demo's gold sets are among those it was fine-tuned on
    assert [w.value for w in app.warning if "questions the embedding model" in w.value] == [md_escape(
        f"{tuned_on} of these {len(questions)} questions are among the gold questions the embedding model "
        "all-MiniLM-L6-v2+questions was fine-tuned on: dense and the default score them in-sample, higher than a "
        "new question would be (an index built with RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2 scores them "
        "without it).")]
    paired = next(d.value for d in app.dataframe if "p" in d.value.columns)
    assert all(re.fullmatch(r"p (< 0\.001|= [01]\.\d{3})", p) for p in paired["p"]), list(paired["p"])

    button(app, "Compare").click()
    app.run()
    assert_clean(app)
    run_a, run_b = (load_run(selectbox(app, label).value, app_env)
                    for label in ("Run A (baseline)", "Run B"))
    verdicts = compare(run_a, run_b).verdicts
    assert verdicts and all(any(v == t.value for t in app.text) for v in verdicts)


def test_failure_audit_page_shows_the_runs_codes(app_env, workspace_of):
    from ragloupe.evaluate.runs import evaluate

    report = evaluate([_smallest_goldset(app_env)], mode="bm25", ks=[1, 3], scope="doc",
                      workspace=workspace_of(app_env))
    app = run_page("failure_audit")
    misses = [q for q in report.data["queries"] if q["failure"]["code"] != "HIT"]
    figure = json.loads(app.get("plotly_chart")[0].proto.spec)
    bars = dict(zip(figure["data"][0]["x"], figure["data"][0]["y"]))
    assert bars == report.data["failures"]["counts"]
    # Each code's meaning is shown whole (a static table wraps it), never cut mid-word.
    codes = app.table[0].value
    assert dict(zip(codes.index, codes["meaning"])) == report.data["failures"]["taxonomy"]
    if not misses:
        assert any("Every question hit" in s.value for s in app.success)
        return
    failed = next(d.value for d in app.dataframe if "query_id" in d.value.columns)
    assert list(failed["query_id"]) == [q["query_id"] for q in misses]
    first = misses[0]
    assert any(t.value == f"Question: {first['question']}" for t in app.text)
    assert any(t.value == f"Evidence: {first['failure']['evidence']}" for t in app.text)


def test_failure_audit_opens_a_question_in_search_and_compare(app_env, workspace_of):
    from ragloupe.evaluate.runs import evaluate

    report = evaluate([_smallest_goldset(app_env)], mode="bm25", ks=[1, 3], scope="doc",
                      workspace=workspace_of(app_env))
    app = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    app.run()
    app.switch_page(page_file("failure_audit")).run()
    app.toggle(key="audit.only_misses").set_value(False).run()  # every question is listed
    button(app, "Open in Search & compare").click().run()
    assert_clean(app)
    assert app.title[0].value == "Search & compare"
    assert app.text_input(key="search.question").value == report.data["queries"][0]["question"]
    # The run's mode is among the three compared, not in their place.
    assert app.multiselect(key="search.modes").value == ["dense", "bm25", "hybrid"]


def test_every_page_switch_names_a_page_of_the_navigation():
    targets = {target for path in PAGES.glob("*.py")
               for target in re.findall(r'switch_page\(page_file\("([^"]+)"\)\)',
                                        path.read_text(encoding="utf-8"))}
    assert targets and targets <= {page.name for page in NAVIGATION}, targets
    assert "switch_page(\"" not in "".join(p.read_text(encoding="utf-8") for p in PAGES.glob("*.py"))


def test_failure_audit_page_without_runs_evaluates_the_gold_sets_on_request(app_env, tmp_path,
                                                                           monkeypatch):
    import shutil

    from ragloupe.evaluate.runs import list_runs

    natech = tmp_path / "benchmarks" / "natech"
    natech.mkdir(parents=True)
    shutil.copy(BENCHMARKS / "natech" / "guidance.gold.json", natech)
    monkeypatch.setenv("RAGLOUPE_BENCHMARKS_DIR", str(tmp_path / "benchmarks"))
    settings = Settings.from_env()
    assert list_runs(settings) == []
    app = run_page("failure_audit")
    assert any("No evaluation run yet" in i.value for i in app.info)
    button(app, "Evaluate the gold sets now").click()
    app.run()
    assert_clean(app)
    runs = list_runs(settings)
    assert len(runs) == 1 and runs[0]["mode"] == settings.mode
    figure = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert sum(figure["data"][0]["y"]) == 19  # every question of the natech gold set has a code


def test_evaluation_compare_defaults_to_the_newest_runs_named_in_words(app_env, workspace_of):
    from ragloupe.evaluate.runs import evaluate
    from ragloupe.ui.tables import run_label

    goldset = _smallest_goldset(app_env)
    older = [evaluate([goldset], mode=mode, ks=[1, 3], scope="doc", workspace=workspace_of(app_env))
             for mode in ("bm25", "dense")]
    app = run_page("evaluation")
    assert selectbox(app, "Run B").value == older[-1].run_id
    assert selectbox(app, "Run A (baseline)").value == older[-2].run_id
    # A run made after the page was opened (another tab, the CLI): the same session's
    # Compare now defaults to it and the one before it, not to the choices it showed.
    newest = evaluate([goldset], mode="hybrid", ks=[1, 3], scope="doc",
                      workspace=workspace_of(app_env))
    app.run()
    assert_clean(app)
    assert selectbox(app, "Run B").value == newest.run_id
    assert selectbox(app, "Run A (baseline)").value == older[-1].run_id
    label = run_label(newest)
    assert label.startswith("hybrid · doc scope · ") and "k 1,3" in label
    assert newest.run_id not in label


def test_evaluation_page_says_what_a_k_sweep_takes(app_env):
    app = run_page("evaluation")
    app.multiselect(key="evaluation.goldsets").set_value([_smallest_goldset(app_env).name])
    app.text_input(key="evaluation.ks").input("1,three")
    button(app, "Run evaluation").click()
    app.run()
    assert_clean(app)
    assert any("whole numbers" in w.value and "--" not in w.value for w in app.warning)


def test_failure_audit_gives_the_gold_units_ranks_however_deep(app_env, workspace_of):
    from ragloupe.evaluate.runs import evaluate

    report = evaluate([GRAMPIAN_GOLD], mode="bm25", ks=[1, 3], scope="doc",
                      workspace=workspace_of(app_env))
    deepest = max((q for q in report.data["queries"] if q["first_relevant_rank"]),
                  key=lambda q: q["first_relevant_rank"])
    listed = {entry["unit"] for entry in deepest["ranked"]}
    assert deepest["first_relevant_rank"] > len(deepest["ranked"]), "no deep miss to look at"
    assert not set(deepest["expected_units"]) & listed
    app = run_page("failure_audit")
    app.number_input(key=f"audit.k-{report.run_id}").set_value(deepest["first_relevant_rank"] - 1)
    app.run()
    assert_clean(app)
    look = selectbox(app, "Look at one")
    look.set_value((deepest["goldset"], deepest["query_id"]))
    app.run()
    assert_clean(app)
    gold = next(d.value for d in app.dataframe if "gold unit" in d.value.columns)
    assert f"#{deepest['first_relevant_rank']}" in list(gold["final rank"])
    shown = gold[gold["final rank"] == f"#{deepest['first_relevant_rank']}"].iloc[0]
    entry = next(e for e in deepest["gold"] if e["rank"] == deepest["first_relevant_rank"])
    assert shown["bm25 rank"] == (f"#{entry['engines']['bm25']}" if entry["engines"].get("bm25")
                                  else "—")
    assert not any("not among the units" in c.value for c in app.caption)


def _scripted_llm(answer_text: str):
    """A handler for the fake Ollama server: an answer, then claim extraction and checking."""
    from llm_server import chat_reply, prompt_of

    claims = {"claims": [{"claim": "The board reported a total of £1,559,285.",
                          "span": "The board reported a total of £1,559,285"}]}
    results = {"results": [{"id": 1, "verdict": "unverified", "source": None, "quote": ""}]}

    def handler(path: str, body: dict):
        prompt = prompt_of(body)
        if "atomic factual claim" in prompt:
            return chat_reply(path, json.dumps(claims))
        if "check claims against numbered" in prompt:
            return chat_reply(path, json.dumps(results))
        return chat_reply(path, answer_text)
    return handler


def test_answer_page_shows_the_answer_its_screen_evidence_and_claims(demo_env, monkeypatch):
    import html

    from llm_server import FakeLlmServer

    from ragloupe.generate.answer import answer
    from ragloupe.generate.claims import check_claims
    from ragloupe.generate.evidence import citation_evidence
    from ragloupe.generate.groundedness import screen_answer
    from ragloupe.generate.llm import get_client
    from ragloupe.retrieve.search import search

    reply = "The board reported a total of £1,559,285 [1]. It cites ISO 31000 [2]."
    with FakeLlmServer(_scripted_llm(reply)) as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
        settings = Settings.from_env()
        question = "What was the total capital expenditure?"
        app = run_page("answer")
        app.text_input(key="answer.question").input(question)
        app.selectbox(key="answer.mode").set_value("hybrid")
        app.number_input(key="answer.k").set_value(4)
        button(app, "Answer").click()
        app.run()
        assert_clean(app)
        button(app, "Check each claim with the LLM").click()
        app.run()
        assert_clean(app)
        expected_answer = answer(question, search(question, mode="hybrid", k=4, workspace=Workspace.open(settings)),
                                 settings)
        expected_claims = check_claims(expected_answer, get_client(settings))
    expected = screen_answer(expected_answer)
    bodies = html_bodies(app)
    assert any("£1,559,285" in body for body in bodies)
    assert any(m.value.startswith(":gray[Screen verdict]") and f"-badge[{expected.verdict}]" in m.value
               for m in app.markdown)
    assert metric(app, "Checkable sentences") == f"{expected.checkable_share:.0%}"
    tokens = next(d.value for d in app.dataframe if "found in passages" in d.value.columns)
    assert list(tokens["verdict"]) == [t.verdict for t in expected.tokens]
    # The first citation opens its passage with the evidence span marked.
    first = citation_evidence(expected_answer, expected)[0]
    if first.span is not None:
        passage_text = expected_answer.passages[first.passage - 1].chunk.text
        marked = f"<mark>{html.escape(passage_text[first.span.start:first.span.end])}</mark>"
        assert any(marked in body for body in bodies)
    assert metric(app, "Answer score (0–10)") == f"{expected_claims.score:.2f}"
    claims = next(d.value for d in app.dataframe if "claim" in d.value.columns)
    assert list(claims["verdict"]) == [c.verdict for c in expected_claims.checks]


# ---------------------------------------------------------------------------- progress

def _steps():
    from ragloupe.index.pipeline import Progress

    return [Progress("ingest", 0, 2, "/raw/a.pdf"), Progress("embed", 0, 2, "/raw/a.pdf", part=0.0),
            Progress("embed", 0, 2, "/raw/a.pdf", part=0.6), Progress("write", 0, 2, "/raw/a.pdf"),
            Progress("ingest", 1, 2, "/raw/b.csv"), Progress("embed", 1, 2, "/raw/b.csv", part=0.5),
            Progress("write", 1, 2, "/raw/b.csv"), Progress("done", 2, 2)]


def test_index_job_progress_moves_within_a_file_and_never_back():
    from ragloupe.ui.background import IndexJob

    job, fractions, texts = IndexJob(None), [], []
    for step in _steps():
        job.update(step)
        fractions.append(job.fraction)
        texts.append(job.describe())
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    # Two files: 5% for planning, then each file 47.5% (reading 30% of it, embedding 60%, writing 10%).
    assert fractions[1] == pytest.approx(0.05 + 0.95 * 0.3 / 2)  # the first file read, its embedding starts
    assert fractions[2] == pytest.approx(0.05 + 0.95 * (0.3 + 0.6 * 0.6) / 2)  # 60% of it embedded
    assert "60% of this file embedded" in texts[2] and "a.pdf" in texts[2]


def test_index_job_progress_moves_while_the_files_are_planned_and_the_first_is_read():
    from ragloupe.index.pipeline import Progress
    from ragloupe.ui.background import IndexJob

    job, fractions = IndexJob(None), []
    for step in [Progress("hash", 0, 4, "/raw/a.pdf"), Progress("hash", 3, 4, "/raw/d.pdf"),
                 Progress("ingest", 0, 1, "/raw/a.pdf"), Progress("embed", 0, 1, "/raw/a.pdf", part=0.0)]:
        job.update(step)
        fractions.append(job.fraction)
    assert 0 < fractions[0] < fractions[1] == pytest.approx(0.05)  # hashing moves the bar from the start
    assert fractions[3] == pytest.approx(0.05 + 0.95 * 0.3)  # reading the file counts before its embedding
    assert fractions == sorted(fractions)


def test_index_job_shares_the_bar_with_the_unchanged_documents_whose_sentence_vectors_follow():
    from ragloupe.index.pipeline import Progress
    from ragloupe.ui.background import IndexJob

    # One file to read, then two unchanged documents' sentence vectors: three equal shares after planning.
    job, fractions, texts = IndexJob(None), [], []
    for step in [Progress("ingest", 0, 1, "/raw/a.pdf", later=2), Progress("write", 0, 1, "/raw/a.pdf", later=2),
                 Progress("sentences", 0, 2, "notes", part=0.0), Progress("sentences", 0, 2, "notes", part=0.5),
                 Progress("sentences", 1, 2, "report", part=0.0), Progress("done", 1, 1)]:
        job.update(step)
        fractions.append(job.fraction)
        texts.append(job.describe())
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions.count(1.0) == 1
    assert fractions[1] == pytest.approx(0.05 + 0.95 * 0.9 / 3)  # the file written: not the whole bar
    assert fractions[3] == pytest.approx(0.05 + 0.95 * 1.5 / 3)
    assert texts[2].startswith("encoding sentence vectors of document 1 of 2 · notes · ")
    assert texts[3].startswith("encoding sentence vectors of document 1 of 2 · notes · 50% of its sentences encoded · ")
    assert texts[4].startswith("encoding sentence vectors of document 2 of 2 · report · ")


def test_terminal_progress_bar_counts_the_files_then_the_documents_whose_sentence_vectors_follow(capsys):
    from ragloupe.cli.progress import ProgressBar
    from ragloupe.index.pipeline import Progress

    shown = []
    with ProgressBar() as bar:
        for step in [Progress("ingest", 0, 1, "/raw/a.pdf", later=2), Progress("write", 0, 1, "/raw/a.pdf", later=2),
                     Progress("sentences", 0, 2, "notes", part=0.5), Progress("sentences", 1, 2, "report"),
                     Progress("done", 1, 1)]:
            bar.update(step)
            shown.append((bar.bar.n, bar.bar.total))
    assert shown == [(0, 3), (0, 3), (1.5, 3), (2, 3), (3, 3)]
    lines = [line.strip() for line in capsys.readouterr().err.replace("\r", "\n").split("\n") if line.strip()]
    assert any(line.startswith("encoding sentence vectors of report (2 of 2)") for line in lines)
    assert sum(line.startswith("done") for line in lines) == 1


def test_terminal_progress_bar_never_goes_back_and_prints_its_last_line_once(capsys):
    from ragloupe.cli.progress import ProgressBar

    shown = []
    with ProgressBar() as bar:
        for step in _steps():
            bar.update(step)
            shown.append(bar.bar.n)
    assert shown == sorted(shown) and shown[-1] == 2
    lines = [line.strip() for line in capsys.readouterr().err.replace("\r", "\n").split("\n")
             if line.strip()]
    assert sum(line.startswith("done") for line in lines) == 1



def test_evaluation_says_its_coverage_caveat_right_under_the_figures_it_qualifies(app_env):
    # The shipped 50 questions of a report: every gold page in the first three tenths of it.
    app = run_page("evaluation")
    app.multiselect(key="evaluation.goldsets").set_value(["Grampian-2020-2021.eval.json"])
    app.multiselect(key="evaluation.modes").set_value(["bm25"])
    button(app, "Run evaluation").click()
    app.run()
    assert_clean(app)
    shown = [node for node in app.main if type(node).__name__ in
             ("Header", "Subheader", "Dataframe", "Warning", "Caption", "UnknownElement")]  # charts: unknown
    results = next(i for i, node in enumerate(shown) if node.value == "Results")
    metrics, caveat = shown[results + 1], shown[results + 2]
    assert type(metrics).__name__ == "Dataframe" and "hit@1" in metrics.value.columns
    assert type(caveat).__name__ == "Warning"
    assert caveat.value.startswith("These figures hold for the parts of the documents the gold sets cover")
    assert "first three tenths" in caveat.value
    # a BM25 run is not searched with the query adapter: no in-sample note, though it learned from them
    assert not [w for w in app.warning if "query adapter learned from" in w.value or "questions the embedding model" in w.value]
    # Each caveat a line of its own, as the coverage audit words it (run together, they read as one).
    from ragloupe.diagnostics.gold import find_goldsets, load_goldsets
    from ragloupe.evaluate.coverage_sources import coverage_report
    from ragloupe.index.store import open_store

    goldsets, _ = load_goldsets(p for p in find_goldsets(app_env) if p.name == "Grampian-2020-2021.eval.json")
    expected = coverage_report(goldsets, app_env, open_store(app_env), app_env.mode)["warnings"]
    assert len(expected) >= 2
    assert [line for line in caveat.value.splitlines() if line.startswith("- ")] == [f"- {md_escape(w)}" for w in expected]
    first_chart = next(i for i, node in enumerate(shown) if type(node).__name__ == "UnknownElement")
    assert results + 2 < first_chart


def _partly_indexed_goldset(settings: Settings) -> str:
    """One of the user's gold sets: two questions on a demo report, two on Grampian-2018-2019, which
    the demo index does not hold. Returns its name on the Evaluation page's picker."""
    from ragloupe.evaluate.usersets import goldsets_dir

    held = json.loads(GRAMPIAN_GOLD.read_text(encoding="utf-8"))["queries"][:2]
    absent = [{"query_id": f"Q_2019_{n}", "question": "What was the deficit in 2018/19?",
               "doc_id": "Grampian-2018-2019", "expected_pages": [3]} for n in (1, 2)]
    own = goldsets_dir(settings)
    own.mkdir(parents=True, exist_ok=True)
    (own / "partly.json").write_text(json.dumps({"queries": held + absent}), encoding="utf-8")
    return "yours: partly"


NOT_SCORED = ("2 of 4 questions ask about a document not in this index (Grampian-2018-2019): not scored; "
              "the figures are over the other 2")


def test_evaluation_page_says_above_the_figures_which_questions_it_did_not_score(app_env):
    from ragloupe.evaluate.runs import list_runs, load_run

    app = run_page("evaluation")
    app.multiselect(key="evaluation.goldsets").set_value([_partly_indexed_goldset(app_env)])
    app.multiselect(key="evaluation.modes").set_value(["bm25"])
    app.text_input(key="evaluation.ks").input("1")
    button(app, "Run evaluation").click()
    app.run()
    assert_clean(app)
    assert app.warning[0].value == md_escape(NOT_SCORED)
    order = [node.type for node in _in_order(app.main)]
    assert order.index("warning") < order.index(app.dataframe[0].type)  # above the figures
    shown = app.dataframe[0].value.iloc[0]
    (row,) = list_runs(app_env)
    run = load_run(row["run_id"], app_env)
    assert shown["n"] == 2 == run.aggregates["hit@1"]["n"]  # the screen's figures are the report's
    assert shown["hit@1"].startswith(f"{run.aggregates['hit@1']['mean']:.3f}")
    assert run.data["not_indexed"]["text"] == NOT_SCORED
    # Past runs names the run as what it scored.
    past = next(d.value for d in app.dataframe if "run" in d.value.columns)
    assert past["run"].iloc[0].split(" · ")[4] == "2 of 4 questions scored"


def test_evaluation_page_shows_only_the_reason_when_no_question_can_be_scored(app_env):
    from ragloupe.evaluate.usersets import goldsets_dir

    own = goldsets_dir(app_env)
    own.mkdir(parents=True, exist_ok=True)
    (own / "absent.json").write_text(json.dumps({"queries": [
        {"query_id": f"Q{n}", "question": "What was the deficit in 2018/19?", "doc_id": "Grampian-2018-2019",
         "expected_pages": [3]} for n in (1, 2)]}), encoding="utf-8")
    app = run_page("evaluation")
    app.multiselect(key="evaluation.goldsets").set_value(["yours: absent"])
    app.multiselect(key="evaluation.modes").set_value(["bm25"])
    button(app, "Run evaluation").click()
    app.run()
    assert_clean(app)
    assert [e.value for e in app.error] == [
        "none of the 2 questions can be scored: they ask about a document not in this index "
        "(Grampian-2018-2019); index it, then evaluate again"]
    assert not [h for h in app.header if h.value == "Results"]  # no figure at all
    assert not app.get("progress")  # and no bar left saying "Evaluating…" over nothing
    assert any(h.value == "Past runs" for h in app.header)  # the rest of the page is still there


def test_failure_audit_says_why_questions_of_the_gold_set_have_no_code(app_env, workspace_of):
    from ragloupe.diagnostics.gold import goldset_choices
    from ragloupe.evaluate.runs import evaluate

    name = _partly_indexed_goldset(app_env)
    report = evaluate([goldset_choices(app_env)[name]], mode="bm25", ks=[1], workspace=workspace_of(app_env))
    app = run_page("failure_audit")
    assert app.warning[0].value == md_escape(NOT_SCORED)
    figure = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert sum(figure["data"][0]["y"]) == 2 == report.data["n_queries"]  # no FP1 for the two left out
