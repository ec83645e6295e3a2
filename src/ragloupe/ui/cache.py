"""Heavy objects, built once per process with st.cache_resource, and the small readers
the pages share.

Each function takes the Settings as an unhashed argument (leading underscore)
and a small string key that says which settings matter to it, so two indexes
side by side get two stores and a settings change gets fresh objects. The
pages search, evaluate and tune through get_workspace(): one Workspace per
index and model, so nothing the pipeline builds is kept outside it.
Anything derived from the indexed content (the projection) is also keyed on
Store.fingerprint(), which changes whenever the index does: a re-index
invalidates it without a restart.
"""

from __future__ import annotations

import json

import streamlit as st

from ragloupe.config import Settings, bootstrap_environment, get_settings

bootstrap_environment()


def current_settings() -> Settings:
    """The settings in force, read fresh on every run (cheap, and .env edits show up), for the
    collection chosen in the sidebar (ui/sidebar.py)."""
    from ragloupe.ui.sidebar import chosen_collection

    settings = get_settings()
    chosen = chosen_collection()
    return settings.replace(collection=chosen) if chosen and chosen != settings.collection else settings


def store_key(settings: Settings) -> str:
    """What identifies one index: where it lives and which collection."""
    return json.dumps([str(settings.path("index_dir")), settings.chroma_host,
                       settings.chroma_port, settings.collection])


def model_key(settings: Settings) -> str:
    return settings.embedding_model


@st.cache_resource(show_spinner="Opening the index…", max_entries=4)
def _store(key: str, _settings: Settings):
    from ragloupe.index.store import open_store

    return open_store(_settings)


def get_store(settings: Settings):
    """The Chroma-backed Store for these settings (one per index location).

    A rebuild or clear drops the collection this cached Store points at; the
    next call notices (the handle no longer answers) and opens a fresh one.
    """
    key = store_key(settings)
    store = _store(key, settings)
    try:
        store.count()
    except Exception:  # a dropped collection: reopen rather than show a stale handle
        _store.clear()
        store = _store(key, settings)
    return store


@st.cache_resource(show_spinner="Loading the embedding model (once after the app starts: about "
                               "10–20 s on 2 cores)…", max_entries=2)
def _embedder(key: str, _settings: Settings):
    from ragloupe.index.embedder import get_embedder

    return get_embedder(_settings)


def get_embedder(settings: Settings):
    """The sentence-transformers embedder for settings.embedding_model."""
    return _embedder(model_key(settings), settings)


@st.cache_resource(show_spinner=False, max_entries=4)
def _workspace(key: str, _settings: Settings, _store):
    from ragloupe.workspace import Workspace

    return Workspace.open(_settings, store=_store, load_embedder=lambda: get_embedder(_settings))


def get_workspace(settings: Settings):
    """The app's Workspace of one index and model (ragloupe.workspace), over get_store() and
    get_embedder() (the model loaded when a search first needs it): every page and rerun searches
    through it and shares its BM25, corpus views, periods and learned model. A store reopened by
    get_store() (its collection was dropped) gets a fresh workspace. It comes under ``settings``
    (Workspace.with_settings: the page's own choices, the caches shared)."""
    store = get_store(settings)
    key = json.dumps([store_key(settings), model_key(settings)])
    workspace = _workspace(key, settings, store)
    if workspace.store is not store:
        _workspace.clear()
        workspace = _workspace(key, settings, store)
    return workspace.with_settings(settings)


@st.cache_resource(show_spinner=False, max_entries=4)  # the page says it, with the time gone by
def _projection(key: str, fingerprint: str, method: str, max_points: int, seed: int,
                _settings: Settings):
    from ragloupe.diagnostics.projections import project_index

    return project_index(get_store(_settings), method=method, max_points=max_points, seed=seed)


def get_projection(settings: Settings, method: str):
    """The fitted 2-D projection of the index, cached per index fingerprint and method."""
    fingerprint = get_store(settings).fingerprint()
    return _projection(store_key(settings), fingerprint, method, settings.projection_max_points,
                       settings.projection_seed, settings)


@st.cache_resource(show_spinner=False, max_entries=2)
def _goldsets(root: str, stamp: tuple, _settings: Settings):
    from ragloupe.diagnostics.gold import find_goldsets, load_goldsets

    return load_goldsets(find_goldsets(_settings))


def cached_goldsets(settings: Settings) -> list:
    """Every gold set under the benchmarks directory (reloaded when a file changes)."""
    from ragloupe.diagnostics.gold import find_goldsets

    paths = find_goldsets(settings)
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in paths)
    goldsets, _problems = _goldsets(str(settings.path("benchmarks_dir")), stamp, settings)
    return goldsets


def index_documents(settings: Settings) -> list[str]:
    """The documents the index holds, from the manifest (no chunk scan)."""
    from ragloupe.index.manifest import Manifest

    return [entry.doc_id for entry in Manifest.load(settings).complete()]


@st.cache_data(show_spinner="Counting matching chunks…", max_entries=32)
def _selection(key: str, fingerprint: str, filters_json: str, text: str, _settings: Settings,
               kinds: tuple[str, ...] | None = None):
    from ragloupe.diagnostics.explorer import select_chunks

    return select_chunks(get_store(_settings), json.loads(filters_json), text, kinds)


def get_selection(settings: Settings, filters: dict, text: str, kinds: tuple[str, ...] | None = None):
    """The Chunk Explorer's matching ids and counts, cached per index fingerprint and filter."""
    fingerprint = get_store(settings).fingerprint()
    return _selection(store_key(settings), fingerprint, json.dumps(filters, sort_keys=True),
                      text, settings, kinds)


def load_manifest(settings: Settings):
    """The index manifest (small JSON, read fresh so a re-index shows at once)."""
    from ragloupe.index.manifest import Manifest

    return Manifest.load(settings)
