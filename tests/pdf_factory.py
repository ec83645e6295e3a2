"""Write small, real PDF files for the ingestion tests.

Each helper writes a file a PDF reader really has to parse: a text page is a
content stream drawing Helvetica text, a scan is a page that only paints an
image, an encrypted file is encrypted by pypdf's writer. The objects are
written by hand (``build_pdf``) so a test can also break one on purpose: a
page whose font is not a font, a file cut off in the middle.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Sequence

from pypdf import PdfReader, PdfWriter

A4 = (595, 842)


def _escape(text: str) -> bytes:
    """A PDF literal string body in WinAnsi (Latin-1) encoding."""
    raw = text.encode("latin-1")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def text_content(lines: Sequence[str], size: int = 11) -> bytes:
    """A content stream that draws ``lines`` top-down, one PDF text line each."""
    ops = [b"BT", f"/F1 {size} Tf".encode(), f"{size + 3} TL".encode(), b"50 800 Td"]
    for line in lines:
        ops.append(b"(" + _escape(line) + b") Tj T*")
    ops.append(b"ET")
    return b"\n".join(ops)


def build_pdf(pages: Sequence[dict], title: str | None = None) -> bytes:
    """Assemble a PDF from page specs; returns its bytes.

    A page spec holds ``content`` (bytes of the content stream), optionally
    ``image`` (True: the page has an 8x8 grey image XObject /Im1; "form": /Im1
    is a form XObject that draws that image), ``unicode_map`` (see
    ``write_remapped_pdf``), ``font``
    (bytes of the /F1 font object, to write a broken one) and ``compress``
    (the content is already FlateDecode-compressed).
    """
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in last, when the page tree exists
    tree = add(b"")
    helvetica = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                    b"/Encoding /WinAnsiEncoding >>")
    kids = []
    for spec in pages:
        font = add(spec["font"]) if "font" in spec else helvetica
        if "unicode_map" in spec:  # Helvetica whose ToUnicode CMap remaps some byte codes
            cmap = _to_unicode_cmap(spec["unicode_map"])
            to_unicode = add(f"<< /Length {len(cmap)} >>\nstream\n".encode() + cmap
                             + b"\nendstream")
            font = add(f"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                       f"/Encoding /WinAnsiEncoding /ToUnicode {to_unicode} 0 R >>".encode())
        resources = f"/Font << /F1 {font} 0 R >>".encode()
        if isinstance(spec.get("image"), tuple):  # (width, height, 8-bit grey pixels): a real scan
            width, height, grey = spec["image"]
            packed = zlib.compress(grey)
            image = add(f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} "
                        f"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode "
                        f"/Length {len(packed)} >>\nstream\n".encode() + packed + b"\nendstream")
            resources += f" /XObject << /Im1 {image} 0 R >>".encode()
        elif spec.get("image"):
            pixels = bytes(range(0, 256, 4))
            image = add(b"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 "
                        b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Length "
                        + str(len(pixels)).encode() + b" >>\nstream\n" + pixels + b"\nendstream")
            if spec["image"] == "form":  # the image wrapped in a form XObject /Im1
                draw = b"/Img Do"
                image = add(f"<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] "
                            f"/Resources << /XObject << /Img {image} 0 R >> >> "
                            f"/Length {len(draw)} >>\nstream\n".encode() + draw + b"\nendstream")
            resources += f" /XObject << /Im1 {image} 0 R >>".encode()
        data = spec.get("content", b"")
        if spec.get("compressed"):  # already FlateDecode-compressed by the caller
            header = f"<< /Length {len(data)} /Filter /FlateDecode >>".encode()
        elif spec.get("filter"):  # already encoded by the caller with this filter
            header = f"<< /Length {len(data)} /Filter {spec['filter']} >>".encode()
        else:
            header = f"<< /Length {len(data)} >>".encode()
        content = add(header + b"\nstream\n" + data + b"\nendstream")
        kids.append(add(f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 {A4[0]} {A4[1]}] "
                        f"/Resources << {resources.decode()} >> /Contents {content} 0 R >>"
                        .encode()))
    objects[tree - 1] = (f"<< /Type /Pages /Count {len(kids)} /Kids ["
                         + " ".join(f"{k} 0 R" for k in kids) + "] >>").encode()
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R >>".encode()
    info = add(b"<< /Title (" + _escape(title) + b") >>") if title else None

    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    trailer = f"<< /Size {len(objects) + 1} /Root {catalog} 0 R"
    trailer += f" /Info {info} 0 R >>" if info else " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _to_unicode_cmap(mapping: dict[str, str]) -> bytes:
    """A ToUnicode CMap sending each byte (a character of WinAnsi text) to
    another code point, and every other byte to itself."""
    pairs = {code: chr(code) for code in range(32, 127)}
    pairs.update({ord(byte): target for byte, target in mapping.items()})
    entries = "\n".join(f"<{code:02X}> <{ord(target):04X}>" for code, target in pairs.items())
    return ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            "1 begincodespacerange\n<00> <FF>\nendcodespacerange\n"
            f"{len(pairs)} beginbfchar\n{entries}\nendbfchar\n"
            "endcmap\nCMapName currentdict /CIDInit /ProcSet findresource pop end end"
            ).encode("ascii")


def write_remapped_pdf(path: Path, lines: Sequence[str], mapping: dict[str, str]) -> Path:
    """A one-page PDF whose font maps some characters to other code points on
    extraction, as symbol fonts and ligature glyphs do in real documents:
    {"~": "\uf0d8"} makes every "~" come out as a private-use glyph."""
    path.write_bytes(build_pdf([{"content": text_content(lines), "unicode_map": mapping}]))
    return path


def write_text_pdf(path: Path, pages: Sequence[Sequence[str]], title: str | None = None) -> Path:
    """A PDF with one page per entry of ``pages``, each a list of text lines."""
    path.write_bytes(build_pdf([{"content": text_content(lines)} for lines in pages], title))
    return path


def body_lines(page: int, words: int = 60) -> list[str]:
    """Distinct, ordinary prose for page ``page``, split over a few lines."""
    vocabulary = ("the board reviewed waiting times for planned care and agreed a plan to "
                  "reduce delays across hospital and community services in the region").split()
    text = [f"{vocabulary[(page * 7 + i) % len(vocabulary)]}" for i in range(words)]
    text[0] = f"Section {page} reports"
    return [" ".join(text[i:i + 12]) for i in range(0, words, 12)]


def write_report_pdf(path: Path, n_pages: int = 6) -> Path:
    """A report whose pages share a running header and a 'Page N' footer."""
    pages = [["ACME WATER ANNUAL REPORT 2023", *body_lines(n), f"Page {n}"]
             for n in range(1, n_pages + 1)]
    return write_text_pdf(path, pages, title="ACME report")


def write_scan_pdf(path: Path, n_pages: int = 2, in_form: bool = False) -> Path:
    """An image-only 'scan': every page paints an image and has no text layer.
    ``in_form``: the image sits inside a form XObject, as some scanners write it."""
    page = {"content": b"q 495 0 0 742 50 50 cm /Im1 Do Q", "image": "form" if in_form else True}
    path.write_bytes(build_pdf([page] * n_pages))
    return path


def write_broken_page_pdf(path: Path, broken_page: int = 2, n_pages: int = 3) -> Path:
    """A text PDF whose page ``broken_page`` has a malformed content stream: an
    inline image (BI ... ID) that never ends (no EI). pypdf raises on that page
    only; the other pages are fine."""
    pages = []
    for n in range(1, n_pages + 1):
        content = text_content(body_lines(n))
        if n == broken_page:
            content += b"\nBI /W 4 /H 4 /CS /G /BPC 8 ID \x00\x01"
        pages.append({"content": content})
    path.write_bytes(build_pdf(pages))
    return path


def write_encrypted_pdf(path: Path, user_password: str, algorithm: str = "AES-256") -> Path:
    """A text PDF encrypted by pypdf's writer (RC4-128, AES-128 or AES-256)."""
    source = build_pdf([{"content": text_content(body_lines(n))} for n in (1, 2)])
    writer = PdfWriter(clone_from=PdfReader(_bytes_io(source)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret",
                   algorithm=algorithm)
    with open(path, "wb") as handle:
        writer.write(handle)
    return path


def write_truncated_pdf(path: Path, keep: float = 0.5) -> Path:
    """A text PDF cut off after ``keep`` of its bytes (an interrupted download)."""
    data = build_pdf([{"content": text_content(body_lines(n))} for n in range(1, 5)])
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def write_zero_byte_pdf(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def write_renamed_non_pdf(path: Path) -> Path:
    """A PNG-like binary saved with a .pdf name."""
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    return path


def write_hungry_pdf(path: Path, megabytes: int = 70) -> Path:
    """One page whose content stream inflates from a few dozen KB on disk to
    ``megabytes`` MB of whitespace before its text: decoding it needs that
    much memory at once, and parsing it takes pypdf many seconds."""
    padding = zlib.compressobj(9)
    chunks = [padding.compress(b" " * (1 << 20)) for _ in range(megabytes)]
    chunks.append(padding.compress(b"BT /F1 10 Tf 50 800 Td (hidden text) Tj ET"))
    chunks.append(padding.flush())
    stream = b"".join(chunks)
    page = {"content": stream, "compressed": True}
    path.write_bytes(build_pdf([page]))
    return path


def _bytes_io(data: bytes):
    import io

    return io.BytesIO(data)


def write_shared_forms_pdf(path: Path, n_forms: int = 40, n_pages: int = 3,
                           image: bool = False, text: bool = True) -> Path:
    """A text PDF whose pages share one resource dictionary listing ``n_forms``
    form XObjects, each form's resources being that same dictionary, as some
    report generators write them. Walking the forms without remembering the
    visited ones costs n_forms ** depth; text extraction never opens them,
    since no content stream draws them. ``image``: the last form also holds
    an 8x8 image, so every page draws an image through the shared forms.
    ``text=False``: the pages draw no text (a scan whose image sits in the forms)."""
    from pypdf.generic import (ArrayObject, DecodedStreamObject, DictionaryObject,
                               NameObject, NumberObject)

    source = build_pdf([{"content": text_content(body_lines(n)) if text else b""}
                        for n in range(1, n_pages + 1)])
    writer = PdfWriter(clone_from=PdfReader(_bytes_io(source)))
    shared = DictionaryObject()
    shared_ref = writer._add_object(shared)
    xobjects = DictionaryObject()
    for number in range(n_forms):
        form = DecodedStreamObject()
        form.set_data(b"")
        form.update({NameObject("/Type"): NameObject("/XObject"),
                     NameObject("/Subtype"): NameObject("/Form"),
                     NameObject("/BBox"): ArrayObject([NumberObject(0)] * 2 + [NumberObject(1)] * 2),
                     NameObject("/Resources"): shared_ref})
        xobjects[NameObject(f"/Fm{number}")] = writer._add_object(form)
    if image:
        picture = DecodedStreamObject()
        picture.set_data(bytes(range(0, 256, 4)))
        picture.update({NameObject("/Type"): NameObject("/XObject"),
                        NameObject("/Subtype"): NameObject("/Image"),
                        NameObject("/Width"): NumberObject(8), NameObject("/Height"): NumberObject(8),
                        NameObject("/ColorSpace"): NameObject("/DeviceGray"),
                        NameObject("/BitsPerComponent"): NumberObject(8)})
        last = xobjects[NameObject(f"/Fm{n_forms - 1}")].get_object()
        last[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/XObject"): DictionaryObject({NameObject("/Img"): writer._add_object(picture)})})
    shared[NameObject("/XObject")] = xobjects
    for page in writer.pages:
        page[NameObject("/Resources")][NameObject("/XObject")] = xobjects
    with open(path, "wb") as handle:
        writer.write(handle)
    return path


def write_slow_pdf(path: Path, n_pages: int = 60, megabytes: int = 5) -> Path:
    """Many pages like ``write_hungry_pdf``'s, each ``megabytes`` MB of
    whitespace before its text: pypdf works on it for a long time (about a
    second per 10 MB on a laptop) while its memory stays small."""
    padding = zlib.compressobj(9)
    chunks = [padding.compress(b" " * (1 << 20)) for _ in range(megabytes)]
    chunks.append(padding.compress(b"BT /F1 10 Tf 50 800 Td (slow text) Tj ET"))
    chunks.append(padding.flush())
    page = {"content": b"".join(chunks), "compressed": True}
    path.write_bytes(build_pdf([page] * n_pages))
    return path
def write_abbreviated_filter_pdf(path: Path, filter_name: str = "/A85", n_pages: int = 2) -> Path:
    """A text PDF whose page 1 content stream is encoded with ASCII85 or ASCIIHex under the
    abbreviated filter name (/A85, /AHx) that the PDF spec defines for inline images and
    some generators also write on streams. pypdf 7 refuses the names (DeprecationError);
    pdfminer reads them."""
    import base64

    pages = []
    for n in range(1, n_pages + 1):
        content = text_content(body_lines(n))
        if n == 1:
            encoded = (base64.a85encode(content) + b"~>" if filter_name == "/A85"
                       else content.hex().encode() + b">")
            pages.append({"content": encoded, "filter": filter_name})
        else:
            pages.append({"content": content})
    path.write_bytes(build_pdf(pages))
    return path


def render_grey(pdf_bytes: bytes, dpi: int = 200, page: int = 0) -> tuple[int, int, bytes]:
    """Page ``page`` of a PDF rendered by PDFium: (width, height, 8-bit grey pixels)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf_bytes)
    try:
        image = document[page].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    return image.width, image.height, image.tobytes()


def write_text_scan_pdf(path: Path, pages: Sequence[Sequence[str]], dpi: int = 200,
                        size: int = 14) -> Path:
    """A 'scan' of text: each page is only an image of ``pages[i]``'s lines (rendered from
    a text PDF), with no text layer, as a scanner writes it."""
    specs = []
    for lines in pages:
        picture = render_grey(build_pdf([{"content": text_content(lines, size)}]), dpi)
        specs.append({"content": b"q 595 0 0 842 0 0 cm /Im1 Do Q", "image": picture})
    path.write_bytes(build_pdf(specs))
    return path


def _cell_ops(x: float, y: float, text: str, size: int) -> bytes:
    return b"BT /F1 %d Tf %.1f %.1f Td (" % (size, x, y) + _escape(text) + b") Tj ET"


# Helvetica advance widths (1/1000 em) of the characters figures and short headers use.
_HELVETICA = {**{d: 556 for d in "0123456789£$"}, ",": 278, ".": 278, "(": 333, ")": 333,
              "-": 333, "'": 191, " ": 278, "/": 278, "%": 889}


def text_width(text: str, size: int) -> float:
    """Width of ``text`` in Helvetica at ``size`` points (letters taken as 556)."""
    return sum(_HELVETICA.get(c, 556) for c in text) * size / 1000


def table_content(columns: Sequence[float], header_rows: Sequence[Sequence[str]],
                  rows: Sequence[Sequence[str]], top: float, ruled: bool = False,
                  above: Sequence[str] = (), below: Sequence[str] = (), size: int = 9,
                  row_height: float = 15, right_aligned: bool = False,
                  partly_ruled: bool = False) -> bytes:
    """A content stream: prose lines ``above``, a table, prose lines ``below``.

    ``columns`` are the cells' left x positions; a header cell "" right of a filled
    one is spanned by it (a merged header: no rule between them). ``ruled``: every
    cell is boxed with lines, as in a ruled table; otherwise only the words' alignment
    makes the columns, as in most financial statements. ``partly_ruled``: horizontal
    rules above the table, under its header and below it only. ``right_aligned``: cells
    after the first end at their column's right edge, as printed figures do.
    """
    ops, y = [], top
    for line in above:
        ops.append(_cell_ops(50, y, line, 10))
        y -= 14
    y -= 6
    right = columns[-1] + (columns[-1] - columns[-2] if len(columns) > 1 else 100)
    grid = list(header_rows) + list(rows)
    edges = [y + row_height - 4 - i * row_height for i in range(len(grid) + 1)]
    for i, cells in enumerate(grid):
        for j, (x, cell) in enumerate(zip(columns, cells)):
            if cell and right_aligned and j > 0:
                edge = columns[j + 1] if j + 1 < len(columns) else right
                ops.append(_cell_ops(edge - 6 - text_width(cell, size), y, cell, size))
            elif cell:
                ops.append(_cell_ops(x + 2, y, cell, size))
        if ruled:
            spanned = i < len(header_rows)
            for j, x in enumerate(list(columns) + [right]):
                inner = 0 < j < len(columns)
                if spanned and inner and not cells[j] and cells[j - 1 if j else 0]:
                    continue  # merged header cell: no rule inside it
                ops.append(b"%.1f %.1f m %.1f %.1f l S" % (x, edges[i], x, edges[i + 1]))
        y -= row_height
    if ruled or partly_ruled:
        drawn = edges if ruled else (edges[0], edges[len(header_rows)], edges[-1])
        for edge in drawn:
            ops.append(b"%.1f %.1f m %.1f %.1f l S" % (columns[0], edge, right, edge))
    y -= 10
    for line in below:
        ops.append(_cell_ops(50, y, line, 10))
        y -= 14
    return b"0.5 w\n" + b"\n".join(ops)


def write_table_pdf(path: Path, pages: Sequence[dict]) -> Path:
    """One page per dict of ``table_content`` keyword arguments."""
    path.write_bytes(build_pdf([{"content": table_content(**page)} for page in pages]))
    return path



STATEMENT_COLUMNS = (50, 250, 330, 410, 490)
STATEMENT_HEADER = (("", "Group", "", "Board", ""),
                    ("Statutory target", "2023", "2022", "2023", "2022"),
                    ("", "£'000", "£'000", "£'000", "£'000"))
# The one header row the three stacked ones should become.
STATEMENT_HEADER_JOINED = ("Statutory target", "Group 2023 £'000", "Group 2022 £'000",
                           "Board 2023 £'000", "Board 2022 £'000")
STATEMENT_ROWS = (("Core revenue resource limit", "1,559,285", "1,440,632", "1,278,771", "1,100,200"),
                  ("Saving/(excess)", "(1,234)", "769", "(12)", "-"),
                  ("Non-core revenue", "32,340", "30,000", "12,000", "11,500"),
                  ("Total", "1,590,391", "1,471,401", "1,290,759", "1,111,700"))
STATEMENT_ABOVE = ("The board met its three financial targets for the year, as the table below",
                   "shows in thousands of pounds. Table 4: Statutory financial targets")
STATEMENT_BELOW = ("Figures in brackets are overspends. The board expects to break even again",
                   "and will report on its savings plan in the next annual report.")


def statement_page(ruled: bool, rows=STATEMENT_ROWS, header=STATEMENT_HEADER,
                   above=STATEMENT_ABOVE, below=STATEMENT_BELOW, right_aligned: bool = False) -> dict:
    """``write_table_pdf`` arguments for a financial statement page: prose, a table with a
    merged three-row header, bracketed negatives and £'000 columns, then prose."""
    return dict(columns=STATEMENT_COLUMNS, header_rows=header, rows=rows, top=780,
                ruled=ruled, above=above, below=below, right_aligned=right_aligned)
