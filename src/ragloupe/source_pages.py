"""A cited page, opened from the file it was indexed from: the PDF's bytes, or the page as an image.

The app and the API serve these themselves (no outside viewer, nothing
fetched). Only files the index manifest names are served, and only when
their sha256 is still the one indexed: the page a citation opens is the
page the passage came from, never a file someone edited since or a path a
request made up. The file is looked for where it was indexed from, then
under the raw folder by its name (an index copied to another machine).
Pages are rendered with pypdfium2 (already the fallback extractor's).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import SourceUnavailable

RENDER_WIDTH_PX = 1100  # wide enough to read a table's figures, small enough to send quickly
MAX_RENDER_WIDTH_PX = 2400


def source_file(settings: Settings, doc_id: str, manifest=None) -> Path:
    """The file ``doc_id`` was indexed from, as indexed; SourceUnavailable saying why not."""
    from ragloupe.index.manifest import Manifest

    entry = (manifest or Manifest.load(settings)).documents.get(doc_id)
    if entry is None or entry.state != "complete":
        raise SourceUnavailable(f"no document {doc_id!r} in the index")
    recorded = Path(entry.path)
    candidates = [recorded, settings.path("raw_dir") / recorded.name]
    present = [path for path in candidates if path.is_file()]
    for path in present:
        if _sha256(path) == entry.sha256:
            return path
    if present:
        raise SourceUnavailable(f"{present[0].name} changed since it was indexed: re-index it to open its pages")
    raise SourceUnavailable(f"{recorded.name}, which {doc_id} was indexed from, is no longer at {recorded} "
                            f"or in the raw folder")


def render_page(path: Path, page: int, width_px: int = RENDER_WIDTH_PX) -> bytes:
    """Page ``page`` (1-based) of the PDF at ``path`` as PNG bytes, ``width_px`` wide."""
    document = _open_pdf(path)
    try:
        if not 1 <= page <= len(document):
            raise SourceUnavailable(f"{path.name} has no page {page} (it has {len(document)})")
        pdf_page = document[page - 1]
        width_pt = pdf_page.get_width() or 1.0
        scale = min(max(width_px, 100), MAX_RENDER_WIDTH_PX) / width_pt
        image = pdf_page.render(scale=scale).to_pil()
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
        return buffer.getvalue()
    finally:
        document.close()


def _open_pdf(path: Path):
    import pypdfium2 as pdfium

    if path.suffix.lower() != ".pdf":
        raise SourceUnavailable(f"{path.name} is not a PDF: its passages are shown as text")
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise SourceUnavailable(f"{path.name} cannot be opened as a PDF ({exc})") from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
