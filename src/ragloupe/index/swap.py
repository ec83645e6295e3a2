"""Re-embedding the whole index with another model without ever leaving it half re-embedded.

Every chunk is copied, with the new model's vectors, into a scratch collection of the same
Chroma client (``reembed``). ``swap_in`` then renames the index's collection aside and the
scratch one into its place, and records in the manifest (and in the adopted-model file that
Settings reads, config.adopted_model_file) which model embedded it: a search sees the old
collection with the old model or the new one with the new model. The collection put aside is
kept, so the same call swaps it back when the new model loses (adapt/), and dropped once the
outcome is settled (``drop_displaced``).

A journal (<index_dir>/models/swap.json) is written before the first rename and removed after
the last write; ``finish_interrupted`` (run under the index lock by `ragloupe index` and
`ragloupe adapt`) completes a swap whose collection rename went through and undoes one that
did not, so a process killed mid-swap leaves no index without a collection or with a model
that did not embed it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable

from ragloupe.config import Settings, adopted_model_file
from ragloupe.index.manifest import Manifest
from ragloupe.index.store import CONTENT_KEY, Store
from ragloupe.models import Chunk

SCRATCH_SUFFIX = "-reembed"
DISPLACED_SUFFIX = "-displaced"
REEMBED_SLICE = 256  # chunks encoded and written per step (a progress bar moves per slice)

ReembedProgress = Callable[[int, int], None]  # (chunks done, chunks in all)


def journal_path(settings: Settings) -> Path:
    return adopted_model_file(settings).parent / "swap.json"


def reembed(store: Store, embedder, settings: Settings, progress: ReembedProgress | None = None) -> str:
    """Copy every chunk of the store into a new scratch collection, embedded by ``embedder``;
    returns the scratch collection's name. The index's own collection is only read."""
    scratch = settings.collection + SCRATCH_SUFFIX
    store.drop_collection(scratch)
    target = store.collection_named(scratch)
    records = sorted(store.scan(["documents", "metadatas"]), key=lambda r: r[0])
    total = len(records)
    for start in range(0, total, REEMBED_SLICE):
        part = records[start:start + REEMBED_SLICE]
        texts = [Chunk.from_store(i, doc, meta).search_text for i, doc, meta in part]
        vectors = embedder.encode(texts)
        for at in range(0, len(part), store.batch_size):
            rows = part[at:at + store.batch_size]
            target.upsert(ids=[r[0] for r in rows], documents=[r[1] or "" for r in rows],
                          metadatas=[r[2] for r in rows], embeddings=vectors[at:at + len(rows)])
        if progress:
            progress(min(start + len(part), total), total)
    return scratch


def swap_in(store: Store, incoming: str, index_settings: Settings, encoded_with: list[str],
            adopted: dict | None) -> str:
    """Make the collection ``incoming`` the index's collection, embedded under
    ``index_settings`` (whose embedding_model encoded it) by the backends ``encoded_with``;
    ``adopted`` is what the adopted-model file must then say (None: no file, the configured
    model). Returns the name of the collection put aside (kept until drop_displaced)."""
    settings = store.settings
    manifest = Manifest.load(settings)
    manifest.settings_fingerprint = index_settings.index_fingerprint()
    manifest.shaping_settings = index_settings.shaping_settings()
    manifest.encoded_with = sorted(set(encoded_with))
    displaced = settings.collection + DISPLACED_SUFFIX
    if incoming == displaced:  # swapping back: the current collection goes to the scratch name
        displaced = settings.collection + SCRATCH_SUFFIX
    store.drop_collection(displaced)
    arriving = store.collection_named(incoming, create=False)
    if arriving is None:
        raise ValueError(f"no collection {incoming!r} to swap in")
    # The arriving collection carries the content marker the manifest will have, so the index's
    # fingerprint is final the moment the rename lands.
    meta = {k: v for k, v in (arriving.metadata or {}).items() if not k.startswith("hnsw:")}
    arriving.modify(metadata={**meta, CONTENT_KEY: manifest.content_hash()})
    journal = {"collection": settings.collection, "incoming": incoming, "incoming_id": str(arriving.id),
               "displaced": displaced, "adopted": adopted,
               "manifest": {"settings_fingerprint": manifest.settings_fingerprint,
                            "shaping_settings": manifest.shaping_settings,
                            "encoded_with": manifest.encoded_with}}
    _write_json(journal_path(settings), journal)
    store.rename_collection(settings.collection, displaced)
    _rename_into_place(store, incoming, settings.collection)
    _finish(store, journal)
    return displaced


def drop_displaced(store: Store, displaced: str) -> None:
    """Forget the collection a swap put aside (the outcome is settled)."""
    store.drop_collection(displaced)


def finish_interrupted(store: Store) -> str | None:
    """Complete or undo a swap a killed process left half done (call under the index lock);
    returns what was done, or None when there was nothing to do."""
    path = journal_path(store.settings)
    try:
        journal = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError:  # a torn journal: written before any rename, so nothing was swapped
        path.unlink(missing_ok=True)
        return "an unfinished re-embedding was discarded"
    names = store.collection_names()
    current = store.collection_named(journal["collection"], create=False)
    if current is not None and str(current.id) == journal["incoming_id"]:
        _finish(store, journal)
        return "an interrupted model swap was completed"
    if journal["displaced"] in names:
        if current is not None:  # made empty by a reader in between: the displaced one is the index
            store.client.delete_collection(journal["collection"])
        store.rename_collection(journal["displaced"], journal["collection"])
    path.unlink(missing_ok=True)
    return "an interrupted model swap was undone"


def _rename_into_place(store: Store, incoming: str, name: str) -> None:
    """Rename ``incoming`` to ``name``. A reader opening the store between the two renames makes
    an empty collection of that name (get_or_create): such an empty one is dropped first."""
    for _ in range(3):
        try:
            store.rename_collection(incoming, name)
            return
        except Exception:  # chromadb's own error for a taken name
            stray = store.collection_named(name, create=False)
            if stray is None or stray.count() > 0:
                raise
            store.client.delete_collection(name)
    store.rename_collection(incoming, name)


def _finish(store: Store, journal: dict) -> None:
    """The manifest and the adopted-model file say what the swapped-in collection holds."""
    settings = store.settings
    manifest = Manifest.load(settings)
    for name, value in journal["manifest"].items():
        setattr(manifest, name, value)
    manifest.save()
    adopted = adopted_model_file(settings)
    if journal["adopted"] is None:
        adopted.unlink(missing_ok=True)
    else:
        _write_json(adopted, journal["adopted"])
    store.collection = store.collection_named(settings.collection)
    journal_path(settings).unlink(missing_ok=True)


def _write_json(path: Path, data: dict) -> None:
    """Write atomically (a temporary file in the same directory, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
