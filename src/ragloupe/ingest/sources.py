"""Which files are sources, and which loader reads each one.

A source is a PDF, an HTML page, a Word .docx document or a records file
(CSV / JSON Lines). Its ``doc_id`` is the
file stem and its identity for the manifest is the sha256 of its bytes.
``load_source`` is the one entry point the index uses: it never raises for
bad input, it returns a SourceDoc whose ``error`` says in one line what is
wrong.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.logs import log_exception
from ragloupe.models import SourceDoc

PDF_SUFFIXES = frozenset({".pdf"})
RECORD_SUFFIXES = frozenset({".csv", ".jsonl"})
HTML_SUFFIXES = frozenset({".html", ".htm"})  # html_doc.SUFFIXES (a test checks)
DOCX_SUFFIXES = frozenset({".docx"})  # docx_doc.SUFFIXES
SOURCE_SUFFIXES = PDF_SUFFIXES | RECORD_SUFFIXES | HTML_SUFFIXES | DOCX_SUFFIXES
EXPECTED = ".pdf, .html, .htm, .docx, .csv or .jsonl"


def is_source(path: Path) -> bool:
    """True for a file whose suffix ragloupe can read (case-insensitive)."""
    return path.suffix.lower() in SOURCE_SUFFIXES


def discover_sources(paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: given files as they are, directories walked recursively.

    Hidden files and directories (".git", ".~lock") are skipped when walking;
    a file named explicitly is kept if its suffix is supported. The result is
    sorted and has no duplicates, so the same tree always ingests in the same
    order.
    """
    found: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            for candidate in path.rglob("*"):
                relative = candidate.relative_to(path).parts
                if any(part.startswith(".") for part in relative):
                    continue
                if candidate.is_file() and is_source(candidate):
                    found.add(candidate.resolve())
        elif path.is_file() and is_source(path):
            found.add(path.resolve())
    return sorted(found)


def doc_id_for(path: Path) -> str:
    """The document id: the file stem ("Grampian-2020-2021", "guidance")."""
    return Path(path).stem


def file_sha256(path: Path, block_size: int = 1 << 20) -> str:
    """sha256 of the file's bytes, read in blocks so large PDFs cost no memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(block_size):
            digest.update(block)
    return digest.hexdigest()


def kind_for(path: Path) -> str:
    """pdf | html | docx | records, from the file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in DOCX_SUFFIXES:
        return "docx"
    return "pdf" if suffix in PDF_SUFFIXES else "records"


def load_source(path: Path, settings: Settings) -> SourceDoc:
    """Read one source file into a SourceDoc; never raises for bad input.

    A file that cannot be read at all (missing, unreadable, unsupported)
    comes back with ``error`` set and no pages, like any other refused file.
    """
    from ragloupe.ingest.docx_doc import load_docx
    from ragloupe.ingest.html_doc import load_html
    from ragloupe.ingest.pdf import load_pdf
    from ragloupe.ingest.validate import validate_records

    path = Path(path)
    kind = kind_for(path)
    try:
        sha256 = file_sha256(path)
    except OSError as exc:
        return SourceDoc(doc_id=doc_id_for(path), path=str(path), kind=kind, sha256="",
                         error=f"cannot read file: {exc.strerror or exc}")
    if not is_source(path):
        return SourceDoc(doc_id=doc_id_for(path), path=str(path), kind=kind, sha256=sha256,
                         error=f"unsupported file type {path.suffix or '(none)'}: "
                               f"expected {EXPECTED}")
    loaders = {"pdf": load_pdf, "html": load_html, "docx": load_docx}
    try:
        if kind in loaders:
            return keep_short_document(loaders[kind](path, settings, sha256=sha256), settings)
        return validate_records(path, settings, sha256=sha256)
    except RagloupeError as exc:
        return SourceDoc(doc_id=doc_id_for(path), path=str(path), kind=kind, sha256=sha256,
                         error=str(exc))
    except Exception as exc:  # a bug met on some input: log it, refuse the file, go on
        where = log_exception(exc)
        return SourceDoc(doc_id=doc_id_for(path), path=str(path), kind=kind, sha256=sha256,
                         error=f"internal error while reading ({type(exc).__name__}); "
                               f"details in {where}")


def keep_short_document(doc: SourceDoc, settings: Settings) -> SourceDoc:
    """A document whose every page is too short to index keeps its short pages.

    The quality floor (``quality_min_chars``) is there to drop a page holding
    only a page number among pages of text; it must not make a whole document
    vanish. When no page is indexable, each page that has some text is
    indexed as degraded, its reason saying why it was kept.
    """
    if doc.error is not None or any(page.indexable for page in doc.pages):
        return doc
    kept = []
    for page in doc.pages:
        if page.quality == "empty" and (page.text.strip() or page.tables):
            page = replace(page, quality="degraded",
                           reason=f"{page.reason}; kept, since no page of the document has more")
        kept.append(page)
    return replace(doc, pages=tuple(kept))
