"""HTML documents (.html, .htm) read with lxml into blocks: headings, paragraphs, tables.

lxml's HTML parser (libxml2) is the one chosen: it is maintained, fast, reads
the broken markup real pages have without complaint, and it comes with
python-docx anyway, so HTML costs no dependency of its own.

What a page's chrome holds is boilerplate: ``nav``, ``header``, ``footer``,
``aside`` and elements whose ARIA role says the same are left out (their
text is kept in ``SourceDoc.boilerplate``), as are scripts, styles, forms
and the like, which are never text. Boilerplate stripping never empties a
document: when nothing but chrome holds text, the chrome is the content.
The bytes are decoded here (BOM, UTF-8, the declared charset, else
Windows-1252), because libxml2 reads undeclared bytes as Latin-1.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import UnsupportedFile
from ragloupe.ingest.sections import Block, build_pages, has_content
from ragloupe.models import SourceDoc

METHOD = "html"
SUFFIXES = frozenset({".html", ".htm"})

_NEVER_TEXT = frozenset({"script", "style", "noscript", "template", "head", "form", "button",
                         "select", "iframe", "object", "svg", "canvas", "math"})
_CHROME = frozenset({"nav", "header", "footer", "aside"})
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset({"p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd",
                     "blockquote", "pre", "figure", "figcaption", "address", "details",
                     "summary", "body", "html", "hr", "tr", "center"})
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_MAX_SHOWN_CHROME = 12


def decode_html(data: bytes) -> str:
    """The document's text: BOM, else UTF-8, else its declared charset, else Windows-1252."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    declared = _CHARSET.search(data[:4096])
    if declared:
        try:
            return data.decode(declared.group(1).decode("ascii"), errors="replace")
        except LookupError:  # a charset Python does not know: fall through
            pass
    return data.decode("cp1252", errors="replace")


class _Walker:
    """Document order -> blocks. Inline text gathers into the paragraph being written;
    a block element, heading or table ends it."""

    def __init__(self, keep_chrome: bool):
        self.keep_chrome = keep_chrome
        self.blocks: list[Block] = []
        self.chrome: list[str] = []
        self.buffer: list[str] = []

    def flush(self) -> None:
        text = " ".join("".join(self.buffer).split())
        if text:
            self.blocks.append(Block("text", text))
        self.buffer = []

    def walk(self, element) -> None:
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        if not tag or tag in _NEVER_TEXT:
            pass  # comments, processing instructions, scripts: only their tail is text
        elif not self.keep_chrome and _is_chrome(element, tag):
            shown = " ".join(element.text_content().split())
            if shown:
                self.chrome.append(shown[:80])
        elif tag in _HEADINGS:
            self.flush()
            text = " ".join(element.text_content().split())
            if text:
                self.blocks.append(Block("heading", text, level=_HEADINGS[tag]))
        elif tag == "table":
            self.flush()
            table = _table_block(element)
            if table is not None:
                self.blocks.append(table)
        elif tag == "br":
            self.flush()
        else:
            block = tag in _BLOCKS
            if block:
                self.flush()
            self.buffer.append(element.text or "")
            for child in element:
                self.walk(child)
            if block:
                self.flush()
        self.buffer.append(element.tail or "")


def _is_chrome(element, tag: str) -> bool:
    return tag in _CHROME or (element.get("role") or "").strip().lower() in _CHROME_ROLES


def _table_block(table) -> Block | None:
    """A <table> as rows of cell texts (colspans repeated so columns line up); the rows
    of <thead>, or leading rows of <th> cells only, are its header rows."""
    rows, header_rows, in_header = [], 0, True
    for row in table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr"):
        cells = []
        for cell in row.xpath("./th|./td"):
            text = " ".join(cell.text_content().split())
            try:
                span = max(1, min(int(cell.get("colspan", "1")), 50))
            except ValueError:
                span = 1
            cells.extend([text] * span)
        if not any(cells):
            continue
        is_head = row.getparent().tag == "thead" or all(c.tag == "th" for c in row.xpath("./th|./td"))
        if in_header and is_head:
            header_rows += 1
        else:
            in_header = False
        rows.append(tuple(cells))
    if not rows:
        return None
    caption = table.find("caption")
    return Block("table", rows=tuple(rows), header_rows=header_rows,
                 caption=" ".join(caption.text_content().split()) if caption is not None else "")


def read_blocks(text: str) -> tuple[list[Block], tuple[str, ...], str | None]:
    """(blocks, boilerplate shown, title) of an HTML text; chrome is kept as content when
    nothing else holds text."""
    import lxml.html
    from lxml.etree import ParserError

    try:
        root = lxml.html.document_fromstring(_XML_DECLARATION.sub("", text, count=1))
    except (ParserError, ValueError) as exc:
        raise UnsupportedFile(f"not readable as HTML: {exc}") from None
    title = " ".join((root.findtext(".//title") or "").split()) or None
    body = root.find("body")
    start = body if body is not None else root
    walker = _Walker(keep_chrome=False)
    walker.walk(start)
    walker.flush()
    if not has_content(walker.blocks) and walker.chrome:
        walker = _Walker(keep_chrome=True)  # only chrome has text: then it is the content
        walker.walk(start)
        walker.flush()
    shown = tuple(dict.fromkeys(walker.chrome))[:_MAX_SHOWN_CHROME]
    return walker.blocks, shown, title


def load_html(path: Path, settings: Settings, sha256: str) -> SourceDoc:
    """One HTML file -> SourceDoc; a file that cannot be read comes back with ``error``."""
    base = dict(doc_id=Path(path).stem, path=str(path), kind="html", sha256=sha256)
    size = Path(path).stat().st_size
    if size > settings.markup_max_mb * 2**20:  # refused before it is read into memory
        return SourceDoc(**base, error=f"{size / 2**20:.1f} MB of HTML, over the "
                                       f"{settings.markup_max_mb} MB limit (RAGLOUPE_MARKUP_MAX_MB)")
    data = Path(path).read_bytes()
    if not data.strip():
        return SourceDoc(**base, error="empty file (no HTML in it)")
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return SourceDoc(**base, error="not an HTML file: it holds binary data "
                                       "(is it another file type renamed .html?)")
    try:
        blocks, chrome, title = read_blocks(decode_html(data))
    except UnsupportedFile as exc:
        return SourceDoc(**base, error=str(exc))
    if not has_content(blocks):
        return SourceDoc(**base, error="no text in the HTML document")
    return SourceDoc(**base, pages=build_pages(base["doc_id"], blocks, METHOD, settings),
                     boilerplate=chrome, title=title)
