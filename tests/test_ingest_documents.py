"""HTML and Word documents as sources (issue 23, item 8), and boilerplate that never empties a
document. Every file here is real: HTML written as text, .docx written by python-docx, PDFs
by pdf_factory."""

from __future__ import annotations

import json
from pathlib import Path

import docx
import pytest
from pdf_factory import write_report_pdf, write_text_pdf
from pypdf import PdfReader, PdfWriter

from ragloupe.cli import main
from ragloupe.index.store import open_store
from ragloupe.ingest import discover_sources, load_source
from ragloupe.ingest import docx_doc, html_doc, sources
from ragloupe.ingest.sections import PAGE_CHARS
from ragloupe.ingest.uploads import save_upload
from ragloupe.errors import UnsupportedFile

FLOOD_HTML = """<!doctype html><html><head><title>Flood plan</title><script>var tracking = 1;</script>
</head><body><nav>Home | About | Contact</nav><header>Council website</header>
<h1>Flood plan 2023</h1><p>The council spends money on flood defences every single year.</p>
<h2>Budget</h2><p>Capital spending on defences rose to <b>£4.2 million</b> in 2023.</p>
<table><caption>Spend by year</caption><thead><tr><th>Year</th><th>Spend (£m)</th></tr></thead>
<tbody><tr><td>2022</td><td>3.1</td></tr><tr><td>2023</td><td>4.2</td></tr></tbody></table>
<h2>Risks</h2><h3>River</h3><p>The river Dee floods most winters; the café owners are warned.</p>
<footer>© Council 2023</footer></body></html>"""


def write_html(path: Path, text: str = FLOOD_HTML, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def write_docx(path: Path) -> Path:
    document = docx.Document()
    document.core_properties.title = "Pump station survey"
    document.sections[0].header.paragraphs[0].text = "CONFIDENTIAL - Pump survey"
    document.add_heading("Pump station survey", 1)
    document.add_paragraph("The survey covers the three pump stations of the northern district.")
    document.add_heading("Findings", 2)
    document.add_paragraph("Station B needs a new impeller before the winter season starts.")
    table = document.add_table(rows=3, cols=2)
    for row, (name, flow) in zip(table.rows, [("Station", "Flow (l/s)"), ("A", "120"), ("B", "85")]):
        row.cells[0].text, row.cells[1].text = name, flow
    document.add_heading("Costs", 2)
    document.add_paragraph("The repairs are estimated at forty thousand pounds in total.")
    document.save(str(path))
    return path


def test_html_sections_come_from_its_headings_one_page_each(tmp_path, settings):
    doc = load_source(write_html(tmp_path / "flood.html"), settings)
    assert doc.error is None and doc.kind == "html" and doc.title == "Flood plan"
    assert [(p.page, p.section) for p in doc.pages] == [
        (1, "Flood plan 2023"), (2, "Flood plan 2023 › Budget"), (3, "Flood plan 2023 › Risks › River")]
    assert doc.pages[1].text == "Budget\nCapital spending on defences rose to £4.2 million in 2023."
    assert "café" in doc.pages[2].text and all(p.indexable for p in doc.pages)


def test_html_table_is_a_table_record_cut_out_of_the_text(tmp_path, settings):
    page = load_source(write_html(tmp_path / "flood.html"), settings).pages[1]
    (table,) = page.tables
    assert table.header == ("Year", "Spend (£m)") and table.rows == (("2022", "3.1"), ("2023", "4.2"))
    assert table.caption == "Spend by year" and "3.1" not in page.text


def test_html_table_header_rows_join_per_column_and_a_body_row_always_stays(tmp_path, settings):
    page = ("<h1>Spend</h1><p>Spending on flood defences by group and year, in pounds.</p>"
            "<table><thead><tr><th colspan='2'>Group</th></tr><tr><th>2022</th><th>2023</th></tr>"
            "</thead><tbody><tr><td>1,200</td><td>1,450</td></tr></tbody></table>"
            "<table><tr><th>Only</th><th>headers</th></tr><tr><th>in</th><th>here</th></tr></table>")
    first, second = load_source(write_html(tmp_path / "spend.html", page), settings).pages[0].tables
    assert first.header == ("Group 2022", "Group 2023") and first.rows == (("1,200", "1,450"),)
    assert second.header == ("Only", "headers") and second.rows == (("in", "here"),)


def test_html_navigation_header_footer_and_scripts_are_boilerplate(tmp_path, settings):
    doc = load_source(write_html(tmp_path / "flood.html"), settings)
    text = "\n".join(p.text for p in doc.pages)
    assert "Home | About" not in text and "tracking" not in text and "© Council" not in text
    assert doc.boilerplate == ("Home | About | Contact", "Council website", "© Council 2023")


def test_html_whose_only_text_is_in_its_chrome_keeps_it_as_content(tmp_path, settings):
    page = "<html><body><header>Site closed for maintenance until Monday morning</header></body></html>"
    doc = load_source(write_html(tmp_path / "closed.html", page), settings)
    assert doc.error is None and doc.boilerplate == ()
    assert doc.pages[0].text == "Site closed for maintenance until Monday morning"


def test_long_html_section_goes_on_over_pages_that_keep_its_heading(tmp_path, settings):
    paragraphs = "".join(f"<p>Paragraph {i} " + "about the pumping regime " * 12 + "</p>" for i in range(30))
    doc = load_source(write_html(tmp_path / "long.html", f"<h1>Operations</h1>{paragraphs}"), settings)
    assert len(doc.pages) > 2 and {p.section for p in doc.pages} == {"Operations"}
    assert all(len(p.text) <= PAGE_CHARS + 400 for p in doc.pages)
    assert sum(p.text.count("Paragraph ") for p in doc.pages) == 30  # no paragraph cut or lost


def test_html_in_windows_1252_is_decoded_by_its_declared_charset(tmp_path, settings):
    text = ('<html><head><meta charset="windows-1252"></head><body>'
            "<p>The café’s flood barrier cost £1,200 to install last spring.</p></body></html>")
    doc = load_source(write_html(tmp_path / "cafe.htm", text, encoding="cp1252"), settings)
    assert doc.pages[0].text == "The café’s flood barrier cost £1,200 to install last spring."


def test_docx_headings_tables_and_running_header(tmp_path, settings):
    doc = load_source(write_docx(tmp_path / "survey.docx"), settings)
    assert doc.error is None and doc.kind == "docx" and doc.title == "Pump station survey"
    assert [p.section for p in doc.pages] == [
        "Pump station survey", "Pump station survey › Findings", "Pump station survey › Costs"]
    (table,) = doc.pages[1].tables
    assert table.header == ("Station", "Flow (l/s)") and table.rows == (("A", "120"), ("B", "85"))
    assert doc.boilerplate == ("CONFIDENTIAL - Pump survey",)
    assert "CONFIDENTIAL" not in "".join(p.text for p in doc.pages)


@pytest.mark.parametrize("name, data, reason", [
    ("notes.docx", b"just some text, saved with the wrong name", "not a zip package"),
    ("old.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504, "old binary .doc"),
    ("empty.docx", b"", "empty file"),
    ("image.html", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + b"\0" * 64, "binary data"),
    ("blank.html", b"<html><body>  </body></html>", "no text in the HTML"),
])
def test_bad_document_is_refused_with_a_one_line_reason(tmp_path, settings, name, data, reason):
    path = tmp_path / name
    path.write_bytes(data)
    doc = load_source(path, settings)
    assert doc.blocked and not doc.pages
    assert reason in doc.error and "\n" not in doc.error


def test_html_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path, settings):
    path = write_html(tmp_path / "huge.html", "<p>" + "flood " * 400_000 + "</p>")
    doc = load_source(path, settings.replace(markup_max_mb=1))
    assert doc.blocked and "over the 1 MB limit (RAGLOUPE_MARKUP_MAX_MB)" in doc.error


def test_docx_whose_body_unpacks_over_the_limit_is_refused_before_it_is_parsed(tmp_path, settings):
    document = docx.Document()
    document.add_paragraph("pump " * 300_000)  # 1.5 MB of XML, a few KB zipped
    document.save(str(tmp_path / "big.docx"))
    doc = load_source(tmp_path / "big.docx", settings.replace(markup_max_mb=1))
    assert doc.blocked and "MB, over the 1 MB limit (RAGLOUPE_MARKUP_MAX_MB)" in doc.error


def test_docx_zip_without_a_body_is_refused(tmp_path, settings):
    import zipfile

    path = tmp_path / "hollow.docx"
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("[Content_Types].xml", "<Types/>")
    assert "has no word/document.xml" in load_source(path, settings).error


def test_discover_sources_finds_html_and_docx(tmp_path):
    for name in ("a.html", "b.htm", "c.docx", "d.doc", "e.pptx", "f.pdf"):
        (tmp_path / name).write_bytes(b"x")
    assert [p.name for p in discover_sources([tmp_path])] == ["a.html", "b.htm", "c.docx", "f.pdf"]
    assert html_doc.SUFFIXES == sources.HTML_SUFFIXES and docx_doc.SUFFIXES == sources.DOCX_SUFFIXES


def test_index_command_takes_html_and_docx_and_goes_on_past_a_bad_file(tmp_path, capsys, settings):
    folder = tmp_path / "docs"
    folder.mkdir()
    write_html(folder / "flood.html")
    write_docx(folder / "survey.docx")
    (folder / "broken.docx").write_bytes(b"not a word file")
    code = main(["index", "--json", str(folder)])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["new"] == ["flood", "survey"]
    assert [(e["doc_id"], "not a zip package" in e["error"]) for e in data["errors"]] == [("broken", True)]
    chunks = open_store(settings).all_chunks()
    tables = [c for c in chunks if c.kind == "table"]
    assert {(c.doc_id, c.section) for c in tables} == {
        ("flood", "Flood plan 2023 › Budget"), ("survey", "Pump station survey › Findings")}
    assert any(c.section == "Flood plan 2023 › Risks › River" and "river Dee" in c.text for c in chunks)


def test_upload_takes_a_docx_and_refuses_a_broken_one(tmp_path, settings):
    data = write_docx(tmp_path / "survey.docx").read_bytes()
    assert save_upload("Survey.DOCX", data, settings).name == "Survey.docx"
    with pytest.raises(UnsupportedFile, match="not a zip package"):
        save_upload("broken.docx", b"plain text", settings)


def write_rotated_pdf(path: Path, pages: list[list[str]]) -> Path:
    write_text_pdf(path, pages)
    writer = PdfWriter()
    for page in PdfReader(str(path)).pages:
        writer.add_page(page).rotate(90)
    with open(path, "wb") as handle:
        writer.write(handle)
    return path


def test_pdf_whose_every_page_is_the_same_line_keeps_its_pages(tmp_path, settings):
    doc = load_source(write_rotated_pdf(tmp_path / "habibi.pdf", [["habibi"]] * 4), settings)
    assert doc.error is None and doc.boilerplate == ()
    assert [(p.page, p.text, p.stripped) for p in doc.pages] == [(n, "habibi", ()) for n in range(1, 5)]
    assert all(p.indexable for p in doc.pages)
    assert "kept, since no page of the document has more" in doc.pages[0].reason


def test_running_lines_of_a_document_with_a_body_are_still_stripped(tmp_path, settings):
    doc = load_source(write_report_pdf(tmp_path / "report.pdf"), settings)
    assert doc.boilerplate and all(p.stripped for p in doc.pages)
