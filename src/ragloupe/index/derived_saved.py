"""What a search builds from the store's content besides the chunk BM25 (learned fusion's corpus views,
the documents' periods, the whole-unit indexes), saved beside the saved BM25 so a (re)started
server loads them instead of reading every chunk's text again.

Layout, under the index dir::

    derived/<kind>-<content>-<key>.pickle

``kind`` is views, periods or units; ``content`` is the store's content
fingerprint (Store.fingerprint) shortened, so the indexer can drop what earlier
content left; ``key`` hashes the fingerprint, the parameters the thing depends on
(k1, b and the BM25 back end; the fiscal year's first month; the unit view) and
the code that builds it (CODE: the modules that read the chunks' text into it),
so nothing built by other code, from other content or with other parameters is
used. Each file is written to a temporary name and renamed into place. A missing,
unreadable or mismatched file reads as None, and the caller builds the thing and
saves it for the next process: never an error.

The files are pickles: the objects are Python structures (frozensets of tokens,
small arrays, pseudo-chunks) that pickle reads back at C speed, which no
JSON form of them would. They live in the index dir beside Chroma's own files
and are as trusted as those: written only by ragloupe, read only from there.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable, Hashable, TypeVar

from ragloupe.config import Settings

FORMAT = 1
SUBDIR = "derived"
KINDS = ("views", "periods", "units")
KEEP_SAVED = 4  # per kind, beside the current one (a k1/b sweep saves one view per setting)
# The modules whose code decides what is saved: a change to any makes every saved copy stale.
CODE = ("retrieve/features.py", "retrieve/doc_periods.py", "retrieve/units.py", "retrieve/query_analysis.py",
        "index/lexical.py", "textrules.py", "numbers.py", "models.py")

Built = TypeVar("Built")


def _code_version() -> str:
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # the ragloupe package, wherever it is installed
    for name in CODE:
        path = package / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
    return digest.hexdigest()[:16]


CODE_VERSION = _code_version()


def _content(fingerprint: str) -> str:
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:12]


def saved_path(settings: Settings, kind: str, fingerprint: str, params: tuple) -> Path:
    """Where ``kind`` built from this content with these parameters is saved."""
    text = f"{FORMAT}|{kind}|{fingerprint}|{params!r}|{CODE_VERSION}"
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    return settings.path("index_dir") / SUBDIR / f"{kind}-{_content(fingerprint)}-{key}.pickle"


def load(settings: Settings, kind: str, fingerprint: str, params: tuple) -> Any | None:
    """The saved ``kind`` for this content and these parameters, or None."""
    path = saved_path(settings, kind, fingerprint, params)
    try:
        with open(path, "rb") as handle:
            saved = pickle.load(handle)
    except Exception:  # noqa: BLE001  missing, cut short, or from code that no longer exists: rebuild
        return None
    expected = {"format": FORMAT, "kind": kind, "fingerprint": fingerprint, "params": params,
                "code": CODE_VERSION}
    if not isinstance(saved, dict) or any(saved.get(name) != value for name, value in expected.items()):
        return None
    return saved.get("value")


def save(settings: Settings, kind: str, fingerprint: str, params: tuple, value: Any) -> Path:
    """Write ``value`` under its key (a temporary file, then renamed into place)."""
    path = saved_path(settings, kind, fingerprint, params)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": FORMAT, "kind": kind, "fingerprint": fingerprint, "params": params,
               "code": CODE_VERSION, "value": value}
    handle, temp = tempfile.mkstemp(prefix=f".{path.stem}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            pickle.dump(payload, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return path


def load_or_build(settings: Settings, kind: str, fingerprint: str, params: tuple[Hashable, ...],
                  build: Callable[[], Built], fits: Callable[[Built], bool] = lambda _: True) -> Built:
    """The saved ``kind`` when there is one that ``fits``, else ``build()``, saved for the next process."""
    found = load(settings, kind, fingerprint, params)
    if found is not None and fits(found):
        return found
    built = build()
    try:
        kept = save(settings, kind, fingerprint, params, built)
        keep_newest(settings, kind, KEEP_SAVED, kept)
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


def refresh(store, settings: Settings) -> None:
    """After indexing: make sure what a search builds from the store's content is saved (learned
    fusion's corpus views, the documents' periods, the whole-unit index of settings.unit_view),
    building what is missing through a workspace over the store; drop what earlier content left."""
    from ragloupe.workspace import Workspace

    if store.count() == 0:
        return
    fingerprint = store.fingerprint()
    k1, b, backend = float(settings.bm25_k1), float(settings.bm25_b), settings.bm25_backend
    unit_params = (settings.unit_view, k1, float(settings.unit_bm25_b), backend)
    wanted = [("views", (k1, b, backend)), ("periods", (int(settings.fiscal_year_start_month),))]
    if settings.unit_view != "none":
        wanted.append(("units", unit_params))
    if not all(saved_path(settings, kind, fingerprint, params).is_file() for kind, params in wanted):
        workspace = Workspace(settings, store=store)
        workspace.corpus_views(workspace.lexical())
        workspace.periods()
        if settings.unit_view != "none":
            workspace.unit_index(*unit_params)
    try:
        prune(settings, fingerprint)
    except OSError:
        pass
