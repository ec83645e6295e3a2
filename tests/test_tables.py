"""Tables: found on real PDF pages the tests write, cut out of the prose, chunked as markdown.

The PDFs are written by tests/pdf_factory.py and read by the real extraction
child (pypdf, then pdfplumber on pages that look tabular); chunks are cut
with the bundled model's tokenizer.
"""

from __future__ import annotations

import pytest

import pdf_factory as pf
from ragloupe.chunking import chunk_document
from ragloupe.index.manifest import Manifest, entry_for
from ragloupe.ingest import load_source
from ragloupe.models import Chunk, Table
from ragloupe.table_chunks import markdown_table, parse_markdown_table, table_pieces
from ragloupe.workspace import Workspace


@pytest.fixture(scope="module")
def statement_docs(tmp_path_factory):
    """One two-page PDF per table kind (ruled, aligned only), read with default settings."""
    from ragloupe.config import Settings

    folder = tmp_path_factory.mktemp("tables")
    docs = {}
    for ruled in (True, False):
        long_rows = tuple((f"Hospital site {n}", f"{n * 1000:,}", f"({n * 10:,})", f"{n * 7:,}", "-")
                          for n in range(1, 41))
        path = pf.write_table_pdf(folder / f"statement-{ruled}.pdf", [
            pf.statement_page(ruled),
            pf.statement_page(ruled, rows=long_rows, above=("Table 5: Spending by site",), below=())])
        docs[ruled] = load_source(path, Settings.from_env())
    return docs


@pytest.mark.parametrize("ruled", [True, False], ids=["ruled", "aligned"])
def test_table_comes_out_with_one_header_row_merged_headers_filled_and_caption(statement_docs, ruled):
    page = statement_docs[ruled].pages[0]

    assert len(page.tables) == 1
    table = page.tables[0]
    assert table.header == pf.STATEMENT_HEADER_JOINED
    assert table.rows == pf.STATEMENT_ROWS
    assert table.caption == "Table 4: Statutory financial targets"


@pytest.mark.parametrize("ruled", [True, False], ids=["ruled", "aligned"])
def test_table_is_cut_out_of_the_page_prose(statement_docs, ruled):
    page = statement_docs[ruled].pages[0]

    assert "1,559,285" not in page.text and "Core revenue" not in page.text
    assert "The board met its three financial targets" in page.text
    assert "Figures in brackets are overspends" in page.text
    assert page.method == "pdfminer"


def test_no_cell_is_indexed_twice(statement_docs, embedder, settings):
    doc = statement_docs[False]

    chunks = chunk_document(doc, embedder.tokenizer, settings, embedder.max_seq_length)

    text_chunks = [c for c in chunks if c.kind == "text"]
    table_chunks = [c for c in chunks if c.kind == "table"]
    for figure in ("1,559,285", "(1,234)", "32,340", "40,000"):
        assert sum(figure in c.text for c in text_chunks) == 0
        assert sum(figure in c.text for c in table_chunks) == 1
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert all(c.table_index == 0 and c.row_start < c.row_end for c in table_chunks)


def test_table_chunk_text_round_trips_to_the_same_cells(statement_docs, embedder, settings):
    doc = statement_docs[True]

    chunks = chunk_document(doc, embedder.tokenizer, settings, embedder.max_seq_length)

    for page in doc.pages:
        table = page.tables[0]
        pieces = [c for c in chunks if c.kind == "table" and c.page == page.page]
        rows = []
        for chunk in pieces:
            header, body = parse_markdown_table(chunk.text)
            assert header == table.header
            assert body == table.rows[chunk.row_start:chunk.row_end]
            rows.extend(body)
        assert tuple(rows) == table.rows


def test_rows_strategy_packs_whole_rows_within_the_chunk_budget(statement_docs, embedder, settings):
    page = statement_docs[True].pages[1]

    rows = settings.replace(table_strategy="rows")
    chunks = chunk_document(statement_docs[True], embedder.tokenizer, rows, embedder.max_seq_length)

    pieces = [c for c in chunks if c.kind == "table" and c.page == page.page]
    assert len(pieces) > 1
    assert all(c.n_tokens <= settings.chunk_tokens for c in pieces)
    assert pieces[0].row_start == 0 and pieces[-1].row_end == len(page.tables[0].rows)
    assert all(a.row_end == b.row_start for a, b in zip(pieces, pieces[1:]))
    assert all(c.text.startswith("Table: Table 5: Spending by site") for c in pieces)


def _count(texts):
    return [len(t.split()) for t in texts]


def test_each_strategy_cuts_a_table_as_it_says():
    table = Table(0, ("Site", "Spend"), tuple((f"site {n}", str(n)) for n in range(10)), "Table 1")

    whole = table_pieces(table, "whole", "", 4, 256, _count)
    blocks = table_pieces(table, "row_blocks", "", 4, 256, _count)
    two_stage = table_pieces(table, "two_stage", "", 4, 256, _count)
    rows = table_pieces(table, "rows", "", 4, 30, _count)

    assert [(p.row_start, p.row_end) for p in whole] == [(0, 10)]
    assert [(p.row_start, p.row_end) for p in blocks] == [(0, 4), (4, 8), (8, 10)]
    assert two_stage[0].text.startswith("Table: Table 1") and "Rows (10): site 0; site 1" in two_stage[0].text
    assert [(p.row_start, p.row_end) for p in two_stage[1:]] == [(0, 4), (4, 8), (8, 10)]
    assert len(rows) > 1 and all(max(_count([p.text])) <= 30 for p in rows)
    assert all(parse_markdown_table(p.text)[0] == ("Site", "Spend") for p in blocks + rows)


def test_a_pipe_inside_a_cell_survives_the_markdown():
    table = Table(0, ("Name | code", "Value"), (("a|b", "1"), ("c", "2 | 3")))

    assert parse_markdown_table(markdown_table(table, table.rows)) == (table.header, table.rows)


def test_table_running_onto_the_next_page_keeps_its_header(tmp_path, settings):
    rows = tuple((f"Ward {n}", f"{n * 11:,}", f"({n:,})", f"{n * 3:,}", f"{n * 5:,}") for n in range(1, 9))
    path = pf.write_table_pdf(tmp_path / "two-pages.pdf", [
        pf.statement_page(True, rows=rows[:4], below=()),
        pf.statement_page(True, rows=rows[4:], header=(), above=("Statutory targets continued",))])

    doc = load_source(path, settings)

    first, second = doc.pages[0].tables[0], doc.pages[1].tables[0]
    assert second.continued and second.header == first.header == pf.STATEMENT_HEADER_JOINED
    assert first.rows + second.rows == rows


def test_strategy_off_leaves_the_page_text_as_it_was(tmp_path, settings):
    path = pf.write_table_pdf(tmp_path / "t.pdf", [pf.statement_page(True)])

    doc = load_source(path, settings.replace(table_strategy="off"))

    assert doc.pages[0].tables == () and doc.pages[0].method == "pypdf-plain"
    assert "1,559,285" in doc.pages[0].text


def test_changing_the_table_strategy_is_a_settings_change(tmp_path, settings):
    doc = load_source(pf.write_table_pdf(tmp_path / "t.pdf", [pf.statement_page(True)]), settings)
    manifest = Manifest.empty(settings)
    manifest.documents[doc.doc_id] = entry_for(doc, "complete")

    assert manifest.stale_reason(settings) is None
    reason = manifest.stale_reason(settings.replace(table_strategy="two_stage"))
    assert "table_strategy None -> 'two_stage'" in reason and "re-chunked and re-embedded" in reason
    assert manifest.documents["t"].pages[0].tables == 1


def test_chunk_from_an_index_built_before_tables_reads_as_text():
    chunk = Chunk.from_store("id1", "some text", {"doc_id": "d", "page": 3})

    assert (chunk.kind, chunk.table_index, chunk.row_start, chunk.row_end) == ("text", -1, -1, -1)


HOSTILE_LABEL = "<b>Core</b> **limit** [x](http://evil.example)"


@pytest.fixture
def table_index(settings):
    """A tiny index of one statement page whose first row label is markup."""
    from ragloupe.index.pipeline import run_index

    rows = ((HOSTILE_LABEL,) + pf.STATEMENT_ROWS[0][1:],) + pf.STATEMENT_ROWS[1:]
    path = pf.write_table_pdf(settings.path("raw_dir") / "statement.pdf",
                              [pf.statement_page(True, rows=rows)])
    summary = run_index([path], settings)
    assert not summary.errors, summary.errors
    return settings


def test_chunk_explorer_filters_by_kind_and_shows_table_cells_as_data(table_index):
    from streamlit.testing.v1 import AppTest

    from ragloupe.config import PROJECT_ROOT
    from ragloupe.index.store import open_store

    tables = [c for c in open_store(table_index).all_chunks() if c.kind == "table"]
    app = AppTest.from_file(str(PROJECT_ROOT / "pages/chunk_explorer.py"), default_timeout=300)
    app.run()
    app.multiselect(key="explorer.kinds").set_value(["table"])
    app.run()

    assert not app.exception, [e.value for e in app.exception]
    assert next(m.value for m in app.metric if m.label == "Matching chunks") == str(len(tables))
    frames = [d.value for d in app.dataframe if list(d.value.columns) == list(pf.STATEMENT_HEADER_JOINED)]
    assert frames and list(frames[0].iloc[0]) == [HOSTILE_LABEL, *pf.STATEMENT_ROWS[0][1:]]
    assert not any("evil.example" in m.value for m in app.markdown)
    subheaders = [s.value for s in app.subheader]
    assert subheaders.index("Tables (1 chunks)") == subheaders.index("Prose (1 chunks)") + 1


def test_chunk_explorer_shows_the_page_as_printed_beside_its_table_as_extracted(table_index):
    from streamlit.testing.v1 import AppTest

    from ragloupe.config import PROJECT_ROOT

    app = AppTest.from_file(str(PROJECT_ROOT / "pages/chunk_explorer.py"), default_timeout=300)
    app.run()

    assert not app.exception, [e.value for e in app.exception]
    subheaders = [s.value for s in app.subheader]
    assert "The page as printed" in subheaders and "Its tables as extracted (1)" in subheaders
    assert len(app.get("image")) == 1
    whole = [d.value for d in app.dataframe if list(d.value.columns) == list(pf.STATEMENT_HEADER_JOINED)]
    assert [list(row) for row in whole[0].values] == [[HOSTILE_LABEL, *pf.STATEMENT_ROWS[0][1:]],
                                                       *map(list, pf.STATEMENT_ROWS[1:])]
    assert any("Table 1: Table 4: Statutory financial targets" in t.value for t in app.text)


def test_prefer_tables_lifts_table_chunks_only_for_questions_that_ask_for_a_figure(table_index):
    from ragloupe.retrieve.prefer_tables import asks_for_figure
    from ragloupe.retrieve.search import search

    figure_question = "How much was the non-core revenue in 2023?"
    word_question = "What does the board expect about breaking even next year?"
    assert asks_for_figure(figure_question) and not asks_for_figure(word_question)

    def table_score(question, on):
        ranking = search(question, mode="dense", k=5, prefer_tables=on,
                         prefer_tables_boost=0.5, workspace=Workspace.open(table_index))
        return next(h.score for h in ranking.hits if h.chunk.kind == "table")

    assert table_score(figure_question, True) == pytest.approx(1.5 * table_score(figure_question, False))
    assert table_score(word_question, True) == pytest.approx(table_score(word_question, False))


def test_prefer_tables_boosts_only_tables_in_the_allowed_sections(table_index):
    import re

    from ragloupe.errors import SettingsInvalid
    from ragloupe.retrieve.search import search

    question = "How much was the non-core revenue in 2023?"

    def table_hit(**overrides):
        ranking = search(question, mode="dense", k=5, prefer_tables_boost=0.5, **overrides,
                         workspace=Workspace.open(table_index))
        return next(h for h in ranking.hits if h.chunk.kind == "table")

    plain = table_hit(prefer_tables=False)
    allowed = table_hit(prefer_tables=True, prefer_tables_sections=f"^{re.escape(plain.chunk.section)}$")
    elsewhere = table_hit(prefer_tables=True, prefer_tables_sections="^no such section$")
    assert allowed.score == pytest.approx(1.5 * plain.score)
    assert elsewhere.score == pytest.approx(plain.score)
    with pytest.raises(SettingsInvalid, match="regular expression"):
        search(question, prefer_tables_sections="(unclosed", workspace=Workspace.open(table_index))
