"""Table layouts real documents use: partly ruled, deep headers, wrapped labels, tables of
words; and prose that must give no table. PDFs drawn by tests/pdf_factory.py, read by the
real extraction child."""

from __future__ import annotations

import pytest

import pdf_factory as pf
from ragloupe.config import PROJECT_ROOT, Settings
from ragloupe.ingest import load_source

COLUMNS = (50, 230, 310, 390, 470)
ROWS = (("Acute services", "12,410", "11,982", "428", "3.6"),
        ("Mental health", "4,015", "3,870", "145", "3.7"),
        ("Primary care", "8,772", "8,540", "232", "2.7"),
        ("Community hospitals", "2,106", "2,230", "(124)", "-5.6"))
HEADER = ("Service", "2023", "2022", "Change", "Change %")
# eu-001 of the ICDAR 2013 EU part: its header cells' shading is drawn 4-6 pt inside their borders.
SHADED_CELLS_PDF = PROJECT_ROOT / "data" / "benchmarks" / "icdar2013-eu" / "pdf" / "eu-001.pdf"
PROSE = ("The board reviewed the year's spending against its plan, service by service, and",
         "found that most services spent close to what was planned for them.")


@pytest.fixture(scope="module")
def read(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layouts")
    settings = Settings.from_env()

    def read(name: str, **page):
        page = {"columns": COLUMNS, "top": 760, "above": PROSE, "below": PROSE, **page}
        doc = load_source(pf.write_table_pdf(folder / f"{name}.pdf", [page]), settings)
        assert doc.error is None
        return doc.pages[0]
    return read


@pytest.mark.parametrize("right_aligned", [False, True], ids=["left", "right-aligned"])
def test_partly_ruled_table_keeps_its_label_column_and_one_row_per_row(read, right_aligned):
    page = read(f"partly-{right_aligned}", header_rows=(HEADER,), rows=ROWS, partly_ruled=True,
                right_aligned=right_aligned)

    (table,) = page.tables
    assert table.header == HEADER
    assert table.rows == ROWS
    assert "Acute services" not in page.text and "The board reviewed" in page.text


def test_header_four_rows_deep_is_one_header_over_the_body(read):
    header = (("", "Group", "", "Board", ""), ("", "Actual", "", "Actual", ""),
              ("Service", "2023", "2022", "2023", "2022"), ("", "£'000", "£'000", "£'000", "£'000"))
    rows = tuple(row[:4] + ("1,000",) for row in ROWS)

    (table,) = read("deep", header_rows=header, rows=rows).tables

    assert table.header == ("Service", "Group Actual 2023 £'000", "Group Actual 2022 £'000",
                            "Board Actual 2023 £'000", "Board Actual 2022 £'000")
    assert table.rows == rows
    assert len(table.header_rows) == 4


def test_wrapped_row_label_stays_one_row(read):
    rows = (ROWS[0], ("Services for older people", "7,300", "7,012", "288", "4.1"),
            ("and their carers", "", "", "", ""), ROWS[2])

    (table,) = read("wrapped", header_rows=(HEADER,), rows=rows, partly_ruled=True).tables

    assert table.rows == (ROWS[0], ("Services for older people and their carers", "7,300", "7,012",
                                    "288", "4.1"), ROWS[2])


def test_table_of_words_is_found(read):
    header = ("Hazard", "Where", "Control", "Owner")
    rows = (("Flooding", "Basement plant room", "Pumps and alarms", "Estates"),
            ("Fire", "Kitchens", "Suppression system", "Facilities"),
            ("Power loss", "Theatres", "Standby generator", "Estates"),
            ("Water quality", "Wards", "Flushing regime", "Infection control"))

    (table,) = read("words", columns=(50, 160, 300, 440), header_rows=(header,), rows=rows,
                    partly_ruled=True).tables

    assert table.header == header
    assert table.rows == rows


def test_prose_between_rules_gives_no_table(read):
    lines = ("The board met eleven times in 2023 and 2022, and its committees met as",
             "planned. It approved 4 business cases worth 12.5 million and 3 of 7 estates",
             "projects, and it asked for a review of the 2024 and 2025 capital plan, which",
             "the finance committee will bring back in the spring with options for savings.")

    page = read("prose", columns=(50,), header_rows=(), rows=tuple((line,) for line in lines),
                partly_ruled=True, above=(), below=())

    assert page.tables == ()
    assert "finance committee will bring back" in page.text


def test_prose_full_of_figures_gives_no_table(read):
    lines = tuple(f"In {2010 + i} the board spent {i + 3},{i}00 on {i + 2} wards and {i + 9} beds, "
                  f"{i + 1}.5% more than planned" for i in range(8))

    page = read("figures", columns=(50,), header_rows=(), rows=tuple((line,) for line in lines),
                above=(), below=())

    assert page.tables == ()
    assert "the board spent 3,000" in page.text


def test_page_past_its_table_time_keeps_its_text_and_says_why(tmp_path, monkeypatch):
    import time

    from ragloupe.ingest import tables
    from ragloupe.ingest.pdf import ExtractOptions, build_pages, extract_raw

    # The CPU timer is checked at the kernel's tick: a page read in less than a tick of CPU (on a busy
    # machine, now and then) finished before the stop could land. Detection here is made slower than
    # any tick, in pure Python where the stop lands; a stop that never comes fails after 2 s a page.
    real = tables.extract_tables

    def slow(page):
        found = real(page)
        ends = time.process_time() + 2.0
        while time.process_time() < ends:
            pass
        return found

    monkeypatch.setattr(tables, "extract_tables", slow)
    table_page = {"columns": COLUMNS, "top": 760, "above": PROSE, "below": (), "header_rows": (HEADER,),
                  "rows": ROWS, "partly_ruled": True}
    path = pf.write_table_pdf(tmp_path / "slow-tables.pdf", [table_page, table_page])
    options = ExtractOptions(tables=True, table_time_factor=1e-9)

    raw = extract_raw(path, options)
    pages, _ = build_pages("slow-tables", raw, Settings.from_env())

    for page in pages:
        assert page.tables == ()
        assert "The board reviewed" in page.text and "Acute services" in page.text
        assert page.indexable
        assert "tables not read: table detection ran past its" in page.reason


def test_a_stop_that_lands_where_python_swallows_it_is_followed_by_another(monkeypatch):
    """The CPU-time stop can land in a weak reference's callback, whose exception Python prints
    and drops; detection must still end, not run to its own end (seen once in the suite)."""
    import time

    from ragloupe.ingest import tables

    swallowed = []

    def detection_that_swallows_the_first_stop(page):
        deadline = time.process_time() + 3.0
        while True:
            try:  # the whole loop inside: a stop may land on any of its lines
                if time.process_time() >= deadline:
                    return tables.PageTables([], "read to the end")
                sum(i * i for i in range(2_000))
            except tables.TableTimeout:
                if swallowed:
                    raise
                swallowed.append(time.process_time())  # as "Exception ignored in: ..." does

    monkeypatch.setattr(tables, "extract_tables", detection_that_swallows_the_first_stop)
    started = time.process_time()
    with pytest.raises(tables.TableTimeout):
        tables.extract_within(page=None, seconds=0.05)
    assert len(swallowed) == 1 and time.process_time() - started < 1.0


def test_a_ruled_table_with_its_cells_shaded_inside_their_borders_keeps_each_figure_under_its_header():
    """A cell's shading drawn a few points inside its border draws rules beside the border's; read
    as columns, they put the header in one column and the figures under it in another. eu-001's
    'Greenhouse gases' table has four columns in its ground truth (gt/eu-001-str.xml)."""
    doc = load_source(SHADED_CELLS_PDF, Settings.from_env())
    (table,) = [t for page in doc.pages for t in page.tables if t.caption == "Greenhouse gases"]
    assert table.header_rows == (("", "THRESHOLD FOR RELEASES", None, None),
                                 ("", "to air kg/year", "to water kg/year", "to land kg/year"))
    assert table.rows == (("Carbon dioxide (CO2)", "100 million", "-", "-"),
                          ("Hydro-fluorocarbons (HFCs)", "100", "-", "-"),
                          ("Methane (CH4)", "100 000", "-", "-"),
                          ("Nitrous oxide (N2O)", "10 000", "-", "-"),
                          ("Perfluorocarbons (PFCs)", "100", "-", "-"),
                          ("Sulphur hexafluoride (SF6)", "50", "-", "-"))
