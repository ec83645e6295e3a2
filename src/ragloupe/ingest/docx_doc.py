"""Word documents (.docx) read with python-docx into blocks: headings, paragraphs, tables.

python-docx is the one chosen: the long-maintained reader of the Office Open
XML word format, pure Python over lxml, nothing else pulled in. It walks the
body in order (paragraphs and tables interleaved, ``iter_inner_content``),
gives each paragraph its style, so headings come from the styles Word writes
("Heading 1".."Heading 9", "Title"), and each table its cells (a merged cell
repeated over the columns it spans). Running headers and footers live in
their own parts of the file, outside the body: they are boilerplate by
construction and kept in ``SourceDoc.boilerplate``. It does not read
.pptx (python-pptx is another library), so slides are not ingested.

Before python-docx opens the file, the package is checked: a .docx is a zip;
an old binary .doc and a password-protected document are OLE files, and a
body whose unpacked XML passes ``markup_max_mb`` is refused (a zip bomb costs
a one-line refusal, not the batch).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.ingest.sections import Block, build_pages, has_content
from ragloupe.models import SourceDoc

METHOD = "docx"
SUFFIXES = frozenset({".docx"})

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BODY = "word/document.xml"
_MAX_SHOWN = 12


def package_problem(path: Path, max_mb: int) -> str:
    """Why the file is no .docx python-docx should open ("" when it looks like one)."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    if not head:
        return "empty file (0 bytes)"
    if head.startswith(_OLE_MAGIC):
        return ("an old binary .doc or a password-protected document, not a .docx: "
                "save it from Word as .docx without a password")
    if not zipfile.is_zipfile(path):
        return "not a Word .docx file: it is not a zip package (is it another file type renamed .docx?)"
    try:
        with zipfile.ZipFile(path) as package:
            body = package.getinfo(_BODY)
    except KeyError:
        return f"not a Word .docx file: the package has no {_BODY}"
    except (zipfile.BadZipFile, OSError) as exc:
        return f"damaged .docx package: {exc}"
    if body.file_size > max_mb * 2**20:
        return (f"its text unpacks to {body.file_size / 2**20:.1f} MB, over the {max_mb} MB limit "
                "(RAGLOUPE_MARKUP_MAX_MB)")
    return ""


def _heading_level(paragraph) -> int:
    """1-9 for a heading paragraph (by its style), 0 for body text."""
    try:
        name = (paragraph.style.name or "") if paragraph.style is not None else ""
    except (KeyError, AttributeError):  # a style id the styles part does not define
        return 0
    if name.strip().lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name.strip())
    return int(match.group(1)) if match else 0


def _table_block(table) -> Block | None:
    """A table as rows of cell texts, the first row its header (Word marks header rows
    only for repeating them on each printed page, which python-docx does not expose)."""
    rows = [tuple(" ".join(cell.text.split()) for cell in row.cells) for row in table.rows]
    rows = [row for row in rows if any(row)]
    return Block("table", rows=tuple(rows)) if rows else None


def read_blocks(document) -> list[Block]:
    """The body of a python-docx Document in reading order, as blocks."""
    from docx.table import Table as DocxTable

    blocks = []
    for item in document.iter_inner_content():
        if isinstance(item, DocxTable):
            table = _table_block(item)
            if table is not None:
                blocks.append(table)
            continue
        text = " ".join(item.text.split())
        if not text:
            continue
        level = _heading_level(item)
        blocks.append(Block("heading", text, level=level) if level else Block("text", text))
    return blocks


def _running_lines(document) -> tuple[str, ...]:
    """The texts of the document's headers and footers (what Word repeats on every page)."""
    seen = []
    for section in document.sections:
        for part in (section.header, section.footer):
            if part.is_linked_to_previous:
                continue
            seen.extend(" ".join(p.text.split()) for p in part.paragraphs)
    return tuple(line for line in dict.fromkeys(seen) if line)[:_MAX_SHOWN]


def load_docx(path: Path, settings: Settings, sha256: str) -> SourceDoc:
    """One .docx -> SourceDoc; a file that cannot be read comes back with ``error``."""
    import docx
    from docx.opc.exceptions import OpcError

    base = dict(doc_id=Path(path).stem, path=str(path), kind="docx", sha256=sha256)
    problem = package_problem(Path(path), settings.markup_max_mb)
    if problem:
        return SourceDoc(**base, error=problem)
    try:
        document = docx.Document(str(path))
        blocks = read_blocks(document)
        boilerplate = _running_lines(document)
        title = " ".join((document.core_properties.title or "").split()) or None
    except (OpcError, KeyError, zipfile.BadZipFile, ValueError) as exc:
        return SourceDoc(**base, error=f"damaged .docx: {type(exc).__name__} while reading its parts")
    except SyntaxError:  # lxml's XMLSyntaxError: a part that is not well-formed XML
        return SourceDoc(**base, error="damaged .docx: a part of it is not well-formed XML")
    if not has_content(blocks):
        return SourceDoc(**base, error="no text in the Word document")
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading"), None)
    return SourceDoc(**base, pages=build_pages(base["doc_id"], blocks, METHOD, settings),
                     boilerplate=boilerplate, title=title)
