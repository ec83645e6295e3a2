"""The chunk BM25 saved next to the Chroma data, so a (re)started server loads it instead of
tokenizing every chunk again.

Layout, under the index dir::

    lexical/<key>/meta.json     what it was built from, and the chunk ids in index order
    lexical/<key>/bm25s/        bm25s's own files (BM25.save: vocabulary, sparse score matrix)
    lexical/<key>/tokens.json   rank_bm25 only: every chunk's tokens (BM25Okapi is rebuilt from them)

``key`` hashes what the index was built from: the store's content fingerprint
(Store.fingerprint: collection, count, content marker), k1, b, the back end and
the tokenizer's version (the code of lexical.py and textrules.py), so a saved
index from other content, other settings or an older tokenizer is never used.
It is written atomically (a temporary directory renamed into place), at the end
of every ``ragloupe index`` run (pipeline.run_index) and by the first search
that had to build one. A missing, partial or mismatched saved index reads as
None and is rebuilt by the caller: never an error.

The chunks themselves are not saved here: they come from the chunk columns
(index.chunk_columns, saved beside this by index.derived_saved; a search reads
them through Workspace.chunk_columns), already in chunk id order, and their ids must equal the
saved ones. Over columns the index's filter arrays are taken from the columns and
no Chunk is made until a search returns it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ragloupe.config import Settings
from ragloupe.index import lexical
from ragloupe.index.chunk_columns import ChunkColumns, ids_of
from ragloupe.models import Chunk

FORMAT = 1
SUBDIR = "lexical"
# Saved copies kept beside the current one: a k1/b sweep saves one per setting, and without a
# bound each would stay on disk (the indexer's refresh keeps only the current one).
KEEP_SAVED = 4


def _tokenizer_version() -> str:
    from ragloupe import textrules

    digest = hashlib.sha256()
    for path in (Path(lexical.__file__), Path(textrules.__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


TOKENIZER_VERSION = _tokenizer_version()


def saved_key(fingerprint: str, k1: float, b: float, backend: str) -> str:
    """The name of the saved index built from this content with these BM25 settings."""
    text = f"{FORMAT}|{fingerprint}|{float(k1)!r}|{float(b)!r}|{backend}|{TOKENIZER_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def directory(settings: Settings, key: str) -> Path:
    return settings.path("index_dir") / SUBDIR / key


def save(index: lexical.LexicalIndex, settings: Settings, fingerprint: str) -> Path:
    """Write the index under its key (temp dir, then rename), replacing a copy found stale."""
    key = saved_key(fingerprint, index.k1, index.b, index.backend)
    target = directory(settings, key)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
    try:
        if index.backend == "bm25s" and index.model is not None:
            index.model.save(str(temp / "bm25s"), show_progress=False)
        elif index.model is not None:
            (temp / "tokens.json").write_text(json.dumps(index.tokens), encoding="utf-8")
        meta = {"format": FORMAT, "fingerprint": fingerprint, "k1": float(index.k1), "b": float(index.b),
                "backend": index.backend, "tokenizer": TOKENIZER_VERSION,
                "chunk_ids": [c.chunk_id for c in index.chunks]}
        (temp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        _swap_in(temp, target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return target


def _swap_in(temp: Path, target: Path) -> None:
    """Rename ``temp`` to ``target``; an older ``target`` is moved aside first and then removed.
    A concurrent writer of the same key may win the rename: then its copy (the same) stands."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old.{temp.name}")
        target.rename(old)
    try:
        temp.rename(target)
    except OSError:
        if not target.exists():
            raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def load(settings: Settings, fingerprint: str, chunks: Sequence[Chunk], k1: float, b: float,
         backend: str) -> lexical.LexicalIndex | None:
    """The saved index for this content and these settings, over ``chunks``; None when there is
    none, it is unreadable, or it was built over other chunks."""
    target = directory(settings, saved_key(fingerprint, k1, b, backend))
    try:
        meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
        expected = {"format": FORMAT, "fingerprint": fingerprint, "k1": float(k1), "b": float(b),
                    "backend": backend, "tokenizer": TOKENIZER_VERSION}
        if any(meta.get(name) != value for name, value in expected.items()):
            return None
        ordered = chunks if isinstance(chunks, ChunkColumns) else sorted(chunks, key=lambda c: c.chunk_id)
        if meta["chunk_ids"] != ids_of(ordered):
            return None
        return over(ordered, _load_model(target, backend, k1, b, len(ordered) > 0), k1, b, backend)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def over(ordered, model, k1: float, b: float, backend: str) -> lexical.LexicalIndex:
    """lexical.from_parts, or over chunk columns the same index with its filter columns read from
    the columns (from_parts would make every chunk to read its doc_id, page and quality)."""
    if not isinstance(ordered, ChunkColumns):
        return lexical.from_parts(ordered, model, k1, b, backend)
    return lexical.LexicalIndex(chunks=ordered, backend=backend, k1=k1, b=b, model=model,
                                doc_codes=lexical.Codes(*ordered.codes("doc_id")), pages=ordered.integers("page"),
                                quality_codes=lexical.Codes(*ordered.codes("quality")))


def _load_model(target: Path, backend: str, k1: float, b: float, any_chunks: bool):
    if not any_chunks:
        return None
    if backend == "bm25s":
        import bm25s

        # Mapped, not read in: the score matrix's pages are read from the page cache as queries touch them.
        return bm25s.BM25.load(str(target / "bm25s"), show_progress=False, mmap=True)
    tokens = json.loads((target / "tokens.json").read_text(encoding="utf-8"))
    return lexical.rank_bm25_model(tokens, k1, b)


def load_or_build(settings: Settings, fingerprint: str, chunks: Callable[[], Sequence[Chunk]],
                  k1: float, b: float, backend: str) -> lexical.LexicalIndex:
    """The saved index when it matches, else one built from ``chunks()`` and saved for next time."""
    found = chunks()
    index = load(settings, fingerprint, found, k1, b, backend)
    if index is not None:
        return index
    index = lexical.build_index(found, k1=k1, b=b, backend=backend)
    try:
        kept = save(index, settings, fingerprint)
        keep_newest(settings, KEEP_SAVED, kept.name)
    except OSError:  # a read-only index dir: this process still has its index
        pass
    return index


def keep_newest(settings: Settings, count: int, current: str) -> None:
    """Remove all but the ``count`` most recently written saved indexes (``current`` always stays)."""
    root = settings.path("index_dir") / SUBDIR
    saved = sorted((p for p in root.iterdir() if not p.name.startswith(".")),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    keep = {current, *(p.name for p in saved[:count])}
    for path in saved:
        if path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)


def prune(settings: Settings, keep: set[str]) -> None:
    """Remove saved indexes (and leftover temp dirs) whose key is not in ``keep``."""
    root = settings.path("index_dir") / SUBDIR
    if not root.is_dir():
        return
    for path in root.iterdir():
        if path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)


def refresh(store, settings: Settings, chunks: Callable[[], Sequence[Chunk]]) -> None:
    """After indexing: make sure the saved index for the store's content and the settings exists (built
    from ``chunks()``, the chunk columns the indexer saved, when it does not), and drop the ones of
    earlier content."""
    fingerprint = store.fingerprint()
    k1, b, backend = float(settings.bm25_k1), float(settings.bm25_b), settings.bm25_backend
    key = saved_key(fingerprint, k1, b, backend)
    if not (directory(settings, key) / "meta.json").is_file():
        load_or_build(settings, fingerprint, chunks, k1, b, backend)
    prune(settings, {key})
