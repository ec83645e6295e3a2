"""Collections: several named indexes side by side, each with its own documents, runs and gold sets.

The default collection ("ragloupe") lives at the configured paths
(RAGLOUPE_RAW_DIR, RAGLOUPE_INDEX_DIR, ...). Every other collection is a
folder of its own, collections_dir/<name>/ with raw/, index/ (its manifest
and embedded Chroma), runs/ and gold/, and a Chroma collection of its name;
Settings.path() resolves those folders from Settings.collection, so every
stage reads and writes the collection in force without knowing there are
others. Nothing is shared between two collections but the models and logs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ragloupe.config import COLLECTION_DIRS, COLLECTION_NAME, DEFAULT_COLLECTION, Settings
from ragloupe.errors import CollectionExists


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    current: bool
    index_dir: str
    documents: int
    chunks: int
    runs: int
    goldsets: int

    def as_dict(self) -> dict:
        return asdict(self)


def collection_names(settings: Settings) -> list[str]:
    """The default collection first, then every collection folder under collections_dir, by name."""
    root = settings.path("collections_dir")
    named = sorted(p.name for p in root.iterdir() if p.is_dir() and COLLECTION_NAME.fullmatch(p.name)
                   and p.name != DEFAULT_COLLECTION) if root.is_dir() else []
    names = [DEFAULT_COLLECTION, *named]
    if settings.collection not in names:  # set, but nothing written to it yet
        names.append(settings.collection)
    return names


def describe(settings: Settings, name: str) -> CollectionInfo:
    """What one collection holds, from its manifest and folders (no index is opened)."""
    from ragloupe.diagnostics.gold import find_goldsets
    from ragloupe.index.manifest import Manifest

    scoped = settings.replace(collection=name)
    complete = Manifest.load(scoped).complete()
    runs_dir = scoped.path("runs_dir")
    reports = list(runs_dir.glob("*.json")) if runs_dir.is_dir() else []  # evaluation and tuning runs
    return CollectionInfo(name=name, current=name == settings.collection,
                          index_dir=str(scoped.path("index_dir")), documents=len(complete),
                          chunks=sum(e.n_chunks for e in complete), runs=len(reports),
                          goldsets=len(find_goldsets(scoped)))


def list_collections(settings: Settings) -> list[CollectionInfo]:
    return [describe(settings, name) for name in collection_names(settings)]


def create_collection(settings: Settings, name: str) -> Path:
    """Make the folders of a new collection; CollectionExists when it is there already."""
    scoped = settings.replace(collection=name)  # a bad name is SettingsInvalid here
    if name == DEFAULT_COLLECTION or scoped.path("index_dir").parent.exists():
        raise CollectionExists(f"collection {name!r} exists already")
    for setting in COLLECTION_DIRS:
        scoped.path(setting).mkdir(parents=True, exist_ok=True)
    return scoped.path("index_dir").parent

