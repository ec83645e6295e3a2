"""What a search builds from the store's content besides the chunk BM25 (every chunk as columns,
learned fusion's corpus views, the documents' periods, the whole-unit indexes), saved beside the
saved BM25 so a (re)started server loads them instead of reading every chunk back from the store
and its text again.

Layout, under the index dir::

    derived/<kind>-<content>-<key>.pickle

``kind`` is chunks, views, periods or units; ``content`` is the store's content
fingerprint (Store.fingerprint) shortened, so the indexer can drop what earlier
content left; ``key`` hashes the fingerprint, the parameters the thing depends on
(k1, b and the BM25 back end; the fiscal year's first month; the unit view) and
``version``: the format number its builder declares (ChunkColumns' FORMAT; for the
things retrieval builds, the caller's, bumped by hand when their output changes)
and, for every kind but the chunks, the tokenizer's version (lexical_saved), so
nothing built by other code, from other content or with other parameters is used.
index/ knows nothing of what retrieval builds: the caller hands in the builder and
its format number. Each file is written to a temporary name and renamed into place. A missing,
unreadable or mismatched file reads as None, and the caller builds the thing and
saves it for the next process: never an error.

Each is two files: ``.pickle``, a header (what it was built from) followed by the
object pickled with protocol 5, and ``.buffers``, the object's numpy arrays written
out of band, one after another. Loading maps ``.buffers`` into memory and hands
pickle those spans, so the arrays (a corpus's token ids, its texts, BM25 matrices)
are read from the page cache when touched instead of copied in at load, and pages
the process never reads cost it no memory. A random token at the head of
``.buffers``, also in the header, pairs the two files: a ``.buffers`` from another
write reads as a mismatch (None). What is left in the pickle are Python structures
(dicts of ids, frozensets of tokens) that pickle reads back at C speed, which no
JSON form of them would. They live in the index dir beside Chroma's own files and
are as trusted as those: written only by ragloupe, read only from there.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import pickle
import secrets
import tempfile
from pathlib import Path
from typing import Any, Callable, Hashable, TypeVar

from ragloupe.config import Settings
from ragloupe.index.chunk_columns import FORMAT as CHUNKS_FORMAT
from ragloupe.index.chunk_columns import ChunkColumns
from ragloupe.index.lexical_saved import TOKENIZER_VERSION

FORMAT = 3  # of the files themselves (header and buffers); each kind's builder versions its own content
SUBDIR = "derived"
KINDS = ("chunks", "views", "periods", "units")
# Copies kept per kind, the current one among them: a k1/b sweep saves one view per setting; the
# chunks depend on the content and their code alone (two: e.g. two checkouts reading one index).
KEEP_SAVED = {"chunks": 2}
KEEP_DEFAULT = 4
ALIGN = 64  # each array starts at a multiple of this in .buffers


def _version(kind: str, version: Hashable) -> str:
    """The builder's format number, and the tokenizer's version for what is built from tokens."""
    return repr(version) if kind == "chunks" else f"{version!r}|{TOKENIZER_VERSION}"


def _content(fingerprint: str) -> str:
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:12]


def saved_path(settings: Settings, kind: str, fingerprint: str, params: tuple, *, version: Hashable) -> Path:
    """Where ``kind`` built from this content with these parameters, in its builder's format ``version``, is saved."""
    text = f"{FORMAT}|{kind}|{fingerprint}|{params!r}|{_version(kind, version)}"
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    return settings.path("index_dir") / SUBDIR / f"{kind}-{_content(fingerprint)}-{key}.pickle"


def buffers_path(path: Path) -> Path:
    """The arrays file beside a saved ``.pickle``."""
    return path.with_suffix(".buffers")


def load(settings: Settings, kind: str, fingerprint: str, params: tuple, *, version: Hashable) -> Any | None:
    """The saved ``kind`` for this content, these parameters and this format ``version``, or None."""
    path = saved_path(settings, kind, fingerprint, params, version=version)
    expected = {"format": FORMAT, "kind": kind, "fingerprint": fingerprint, "params": params,
                "version": _version(kind, version)}
    try:
        with open(path, "rb") as handle:
            header = pickle.load(handle)
            if not isinstance(header, dict) or any(header.get(n) != v for n, v in expected.items()):
                return None
            spans = _mapped_spans(buffers_path(path), header["token"], header["spans"])
            if spans is None:
                return None
            return pickle.load(handle, buffers=spans)
    except Exception:  # noqa: BLE001  missing, cut short, or from code that no longer exists: rebuild
        return None


def _mapped_spans(path: Path, token: bytes, spans: list[tuple[int, int]]) -> list[memoryview] | None:
    """The arrays of one saved object, as read-only views of the mapped ``.buffers`` file."""
    with open(path, "rb") as handle:
        if handle.read(len(token)) != token:
            return None
        size = os.fstat(handle.fileno()).st_size
        if any(start + length > size for start, length in spans):
            return None
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    whole = memoryview(mapped)
    return [whole[start:start + length] for start, length in spans]


def save(settings: Settings, kind: str, fingerprint: str, params: tuple, value: Any, *, version: Hashable) -> Path:
    """Write ``value`` under its key (temporary files, then renamed into place: the arrays first)."""
    path = saved_path(settings, kind, fingerprint, params, version=version)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: list[pickle.PickleBuffer] = []
    body = pickle.dumps(value, protocol=5, buffer_callback=arrays.append)
    token = secrets.token_bytes(16)
    spans = _write_atomically(buffers_path(path), lambda out: _write_buffers(out, token, arrays))
    header = {"format": FORMAT, "kind": kind, "fingerprint": fingerprint, "params": params,
              "version": _version(kind, version), "token": token, "spans": spans}
    _write_atomically(path, lambda out: (pickle.dump(header, out, protocol=5), out.write(body)))
    return path


def _write_buffers(out, token: bytes, arrays: list[pickle.PickleBuffer]) -> list[tuple[int, int]]:
    out.write(token)
    spans, at = [], len(token)
    for array in arrays:
        raw = array.raw()
        pad = -at % ALIGN
        out.write(b"\0" * pad)
        at += pad
        out.write(raw)
        spans.append((at, raw.nbytes))
        at += raw.nbytes
    return spans


def _write_atomically(path: Path, write: Callable[[Any], Built]) -> Built:
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            written = write(out)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return written


def load_or_build(settings: Settings, kind: str, fingerprint: str, params: tuple[Hashable, ...],
                  build: Callable[[], Built], *, version: Hashable,
                  fits: Callable[[Built], bool] = lambda _: True) -> Built:
    """The saved ``kind`` when there is one that ``fits``, else ``build()``, saved for the next process.

    ``version`` is the format number the builder declares (see the module docstring)."""
    found = load(settings, kind, fingerprint, params, version=version)
    if found is not None and fits(found):
        return found
    built = build()
    try:
        kept = save(settings, kind, fingerprint, params, built, version=version)
        keep_newest(settings, kind, KEEP_SAVED.get(kind, KEEP_DEFAULT), kept)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):  # this process still has it
        pass
    return built


def _saved(settings: Settings, kind: str | None = None) -> list[Path]:
    root = settings.path("index_dir") / SUBDIR
    if not root.is_dir():
        return []
    kinds = (kind,) if kind else KINDS
    return [p for p in root.iterdir() if p.suffix == ".pickle" and p.name.split("-", 1)[0] in kinds]


def keep_newest(settings: Settings, kind: str, count: int, current: Path) -> None:
    """Remove all but the ``count`` most recently written copies of ``kind`` (``current`` always stays)."""
    saved = sorted(_saved(settings, kind), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in saved[count:]:
        if path != current:
            path.unlink(missing_ok=True)
            buffers_path(path).unlink(missing_ok=True)


def prune(settings: Settings, fingerprint: str) -> None:
    """Remove what earlier content left (and leftover temporary files): after indexing."""
    root = settings.path("index_dir") / SUBDIR
    if not root.is_dir():
        return
    content = _content(fingerprint)
    for path in root.iterdir():
        parts = path.name.split("-")
        if path.name.startswith(".") or len(parts) < 3 or parts[1] != content:
            path.unlink(missing_ok=True)


def save_chunks(store, settings: Settings) -> Any:
    """The store's chunks as columns (index.chunk_columns), loaded when saved for its content, else read
    from the store once and saved: what the indexer hands to the BM25 and to whatever else it saves."""
    return load_or_build(settings, "chunks", store.fingerprint(), (), lambda: ChunkColumns.of(store.all_chunks()),
                         version=CHUNKS_FORMAT)
