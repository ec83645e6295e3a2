"""What a first `make run` shows: the demo corpus holds real tables, and its pages of figures
(the annual reports' financial statements) are graded as figures, not as damaged text."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from app_pages import run_page
from conftest import DEMO_SOURCES, DEMO_TABLE_PDFS

from ragloupe.config import PROJECT_ROOT
from ragloupe.index.manifest import Manifest
from ragloupe.index.store import open_store
from ragloupe.table_chunks import parse_markdown_table


def test_the_makefile_and_the_tests_index_the_same_demo_corpus():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    numbers = re.search(r"^DEMO_TABLES := \$\(foreach n,([\d ]+),", makefile, re.MULTILINE).group(1).split()
    listed = re.search(r"^DEMO_SOURCES := (.+)$", makefile, re.MULTILINE).group(1).split()
    made = [p for p in listed if p != "$(DEMO_TABLES)"] + [
        f"data/benchmarks/icdar2013-eu/pdf/eu-{n}.pdf" for n in numbers]
    assert sorted(made) == sorted(str(Path(p).relative_to(PROJECT_ROOT)) for p in DEMO_SOURCES)


def test_the_demo_index_holds_table_chunks_from_each_table_pdf(demo_index):
    chunks = open_store(demo_index).all_chunks()

    tables = Counter(c.doc_id for c in chunks if c.kind == "table")
    assert set(tables) >= {p.stem for p in DEMO_TABLE_PDFS}
    for chunk in (c for c in chunks if c.kind == "table"):
        header, rows = parse_markdown_table(chunk.text)
        assert header and rows, chunk.text  # a table's cells, not a page's prose


def test_the_chunk_explorer_finds_the_demo_table_chunks(demo_env):
    tables = [c for c in open_store(demo_env).all_chunks() if c.kind == "table"]

    app = run_page("chunk_explorer")
    app.multiselect(key="explorer.kinds").set_value(["table"])
    app.run()

    assert tables
    assert next(m.value for m in app.metric if m.label == "Matching chunks") == f"{len(tables):,}"
    assert all(" · table · " in e.label for e in app.expander if e.label.startswith(("eu-", "Grampian")))


def test_the_statements_pages_are_pages_of_figures_not_degraded(demo_index):
    pages = [p for e in Manifest.load(demo_index).complete() if e.doc_id.startswith("Grampian") for p in e.pages]

    figures = [p for p in pages if p.quality == "figures"]
    assert figures and all(re.fullmatch(r"a page of figures \(\d+% digits\)", p.reason) for p in figures)
    assert not [p for p in pages if "non-alphabetic" in p.reason]
    chunks = open_store(demo_index).all_chunks({"doc_id": "Grampian-2022-2023"})
    assert {c.page for c in chunks if c.quality == "figures"} == {
        p.page for e in Manifest.load(demo_index).complete() if e.doc_id == "Grampian-2022-2023"
        for p in e.pages if p.quality == "figures"}  # indexed and searchable like clean pages
