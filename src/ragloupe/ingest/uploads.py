"""Uploads and source files: save uploads into raw_dir, list and delete them.

Shared by the Index page and the HTTP API, so it lives in the pipeline, not in
ui/. Every write lands inside raw_dir: an uploaded name is reduced to a plain
file name (no directories, no "..", no leading dot), and the final path is
checked to lie under raw_dir before anything is written. Nothing here touches
the index: re-indexing and clearing it are the index side's (index/pipeline.py).
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError, UnsupportedFile, UploadTooLarge

UPLOAD_SUFFIXES = (".pdf", ".html", ".htm", ".docx", ".csv", ".jsonl")
MAX_NAME_CHARS = 120


def sanitise_filename(name: str) -> str:
    """A safe file name for an upload: 'a/../b c?.PDF' -> 'b_c_.pdf'.

    Directory parts (either slash) are dropped, characters outside letters,
    digits, '.', '_' and '-' become '_', leading dots and dashes go, so the
    result can be neither hidden, nor an option, nor a path.
    """
    base = re.split(r"[\\/]", unicodedata.normalize("NFKC", name))[-1]
    stem, dot, suffix = base.rpartition(".")
    if not dot:
        stem, suffix = base, ""
    suffix = "." + suffix.lower() if suffix else ""
    if suffix not in UPLOAD_SUFFIXES:
        raise UnsupportedFile(f"{name!r}: only {', '.join(UPLOAD_SUFFIXES)} files can be uploaded")
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip(".-_")
    stem = re.sub(r"\.{2,}", ".", stem)[:MAX_NAME_CHARS - len(suffix)]
    if not stem:
        raise UnsupportedFile(f"{name!r}: the file name has no usable characters; rename it")
    return stem + suffix


def inside(path: Path, root: Path) -> bool:
    path, root = path.resolve(), root.resolve()
    return path != root and root in path.parents


def save_upload(name: str, data: bytes, settings: Settings) -> Path:
    """Write one uploaded file into raw_dir (atomically) and return its path.

    A file of the same name is replaced: re-uploading a new version is how a
    source becomes "modified" in the next plan.
    """
    limit = settings.max_upload_mb * 1024 * 1024
    if len(data) > limit:
        raise UploadTooLarge(f"{name!r} is {len(data) / 2**20:.1f} MB, over the "
                            f"{settings.max_upload_mb} MB limit (RAGLOUPE_MAX_UPLOAD_MB)")
    if not data:
        raise UnsupportedFile(f"{name!r} is empty")
    raw_dir = settings.path("raw_dir")
    raw_dir.mkdir(parents=True, exist_ok=True)
    target = raw_dir / sanitise_filename(name)
    if not inside(target, raw_dir):
        raise UnsupportedFile(f"{name!r} would be written outside the raw folder; rename it")
    check_upload(target.name, data, settings)
    fd, tmp = tempfile.mkstemp(prefix=".upload-", dir=raw_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def check_upload(name: str, data: bytes, settings: Settings) -> None:
    """Refuse a file the indexer would refuse, before it is saved: one line saying why.

    A PDF must carry the %PDF- header; an HTML or Word document must read and
    hold text; a records file must read, with an id and a text column and no
    blocking finding. The PDF's pages are read at
    index time (in a child process with limits), not here.
    """
    from ragloupe.ingest import load_source
    from ragloupe.ingest.pdf import precheck

    with tempfile.TemporaryDirectory(prefix="ragloupe-upload-") as folder:
        probe = Path(folder) / name
        probe.write_bytes(data)
        if probe.suffix == ".pdf":
            try:
                precheck(probe)
            except RagloupeError as exc:
                raise UnsupportedFile(f"{name}: {exc}") from None
            return
        doc = load_source(probe, settings)
        if doc.blocked:
            blocking = [f.message for f in doc.findings if f.severity == "blocking"]
            reason = doc.error or "; ".join(blocking[:2]) + (" …" if len(blocking) > 2 else "")
            raise UnsupportedFile(f"{name} was not saved: {reason}")


def raw_sources(settings: Settings) -> list[Path]:
    """The source files in raw_dir (the only ones the app may delete)."""
    from ragloupe.ingest import discover_sources

    raw_dir = settings.path("raw_dir")
    return discover_sources([raw_dir]) if raw_dir.exists() else []


def delete_source(path: str | Path, settings: Settings) -> None:
    """Delete one source file from raw_dir; anything outside raw_dir is refused."""
    path = Path(path)
    if not inside(path, settings.path("raw_dir")):
        raise RagloupeError(f"{path} is not in the raw folder {settings.path('raw_dir')}; "
                            "the app only deletes files it manages")
    path.unlink(missing_ok=True)

