"""The workspace: what one face (a CLI command, the API server, the app) opens once and searches through.

A ``Workspace`` owns the store, the embedder, and everything built in memory
from the store's content: every chunk read once, the chunk BM25, the
whole-unit indexes, the documents' periods, learned fusion's corpus views,
the learned model read from its file, and the vectors of recent questions.
Each is kept in a ``ContentCache`` keyed by ``content_key`` (where the store
is and its content fingerprint), so a re-index gives new keys and nothing
stale is served. The chunks (index.chunk_columns: columns, each Chunk made when
asked for), the BM25, the views, the periods and the unit indexes are loaded from
the copies the indexer saved beside the store (index.lexical_saved,
index.derived_saved) when they match its content, else read or built and saved:
a restart reads no chunk from the store. Nothing lives in module globals: two
workspaces share nothing, and a test that builds its own gets fresh state.

Faces open one at their edge with ``Workspace.open(settings)`` (``cli``: per
command; ``api/resources.py``: per server; ``ui/cache.py``: per index and model,
with st.cache_resource; a benchmark or a test: per index it measures) and hand
it to the pipeline: search(), fetch(), evaluate(), tune() and adapt() take it as
a required argument and read their settings from it, with per-call overrides
(``with_overrides``) or a sweep's whole settings of the same index and model
(``with_settings``, checked: SettingsConflict otherwise) sharing its caches. The
pipeline never opens a store, loads a model or builds a workspace of its own
(``sibling`` is how tune reaches its scratch index). The store and the embedder
are opened on first use, so a command that only reads chunks never loads the model.
After indexing, ``save_search_copies`` (handed to index.pipeline.run_index by the
indexing faces) saves what a search builds, so index/ never imports retrieval.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ragloupe import attached
from ragloupe.attached import attachments
from ragloupe.config import Settings
from ragloupe.content_cache import ContentCache
from ragloupe.errors import ACTION, Action, StaleIndex
from ragloupe.index import chunk_columns, derived_saved, lexical_saved, pipeline, sentences
from ragloupe.index.chunk_columns import ChunkColumns, ids_of
from ragloupe.index.embedder import get_embedder
from ragloupe.index.manifest import MANIFEST_NAME, Manifest
from ragloupe.index.store import open_store
from ragloupe.retrieve import doc_periods, features, learned, query_adapter, registry, units
from ragloupe.retrieve.engines import ChunkTable

QUERY_VECTORS = 1024  # an evaluation sweep asks the same 150 questions under many settings
SENTENCE_DOCS = 256  # documents whose sentence vectors are held in memory at once


class Workspace:
    """The open store and model of one face, and the caches built over the store's content."""

    def __init__(self, settings: Settings, *, store: Any = None, embedder: Any = None,
                 load_embedder: Callable[[], Any] | None = None):
        """``load_embedder``: how to load the embedder on first use (default: get_embedder(settings))."""
        self.settings = settings
        self._store, self._embedder, self._load_embedder = store, embedder, load_embedder
        self._open_lock = threading.Lock()
        self._one_content = threading.local()  # the content key pinned by one_content(), per thread
        self._model_lock = threading.Lock()  # the model loads without holding up the store
        self._chunks: ContentCache = ContentCache()
        self._tables: ContentCache = ContentCache()
        self._lexical: ContentCache = ContentCache()
        self._units: ContentCache = ContentCache()
        self._periods: ContentCache = ContentCache()
        self._sentences: ContentCache = ContentCache(SENTENCE_DOCS)
        # Per content and model: the documents known to have their sentence vectors (missing_sentences).
        self._sentences_ready: ContentCache = ContentCache()
        self._views: ContentCache = ContentCache()
        self._learned: ContentCache = ContentCache(size=1)
        self._adapters: dict[tuple[str, str, int], tuple] = {}  # (choice, model, dim) -> in_force()
        self._embedded_by_checked: tuple | None = None  # the manifest and model check_embedded_by() passed
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._vectors_lock = threading.Lock()
        self._engines_lock = threading.Lock()
        self._plugins: tuple[list, list[str]] | None = None
        self._registry: tuple[tuple, registry.EngineRegistry] | None = None

    @classmethod
    def open(cls, settings: Settings, *, store: Any = None, embedder: Any = None,
             load_embedder: Callable[[], Any] | None = None) -> "Workspace":
        """The workspace a face holds for its lifetime: the one place the store, the model and the saved
        copies are opened (the store and the model on first use). ``store``/``embedder``: ones the face
        already has (a benchmark's precomputed vectors); ``load_embedder``: how to load the model."""
        return cls(settings, store=store, embedder=embedder, load_embedder=load_embedder)

    def with_settings(self, settings: Settings) -> "Workspace":
        """This workspace under other settings for one call (a sweep's configuration, a page's
        overrides), sharing its store, model and caches (each keyed by the parameters it was built
        with). SettingsConflict when ``settings`` name another store or model: that is another
        workspace, which only a face opens."""
        if settings is self.settings or settings == self.settings:
            return self
        if _store_and_model(settings) != _store_and_model(self.settings):
            raise SettingsConflict(
                f"these settings name another index or model ({_store_and_model(settings)}) than the "
                f"workspace opened on {_store_and_model(self.settings)}: open a workspace for them")
        other = copy.copy(self)
        other.settings = settings
        return other

    def with_overrides(self, **overrides: Any) -> "Workspace":
        """with_settings(the workspace's settings with ``overrides``), checked once (Settings.replace)."""
        return self.with_settings(self.settings.replace(**overrides)) if overrides else self

    def sibling(self, settings: Settings, *, store: Any = None, embedder: Any = None) -> "Workspace":
        """A workspace over another index or model (tune's scratch index of a chunking variant, adapt's
        re-embedded collection): nothing is shared but the ``store`` handed in and the embedder
        (``embedder``, default this one's)."""
        return Workspace(settings, store=store, embedder=embedder if embedder is not None else self.embedder)

    # --- what it opens ---------------------------------------------------------

    @property
    def store(self):
        """The Store of these settings, opened on first use."""
        with self._open_lock:
            if self._store is None:
                self._store = open_store(self.settings)
            return self._store

    @property
    def embedder(self):
        """The embedding model of these settings, loaded on first use."""
        with self._model_lock:
            if self._embedder is None:
                self._embedder = self._load_embedder() if self._load_embedder else get_embedder(self.settings)
            return self._embedder

    @property
    def has_embedder(self) -> bool:
        return self._embedder is not None

    def engines(self) -> registry.EngineRegistry:
        """The engines this face can search (retrieve/registry.py): the built-ins, the plugins (read once)
        and the engines attached beside the index (read again when their file changes; an attached
        engine opens what it reads on its first search)."""
        stamp = attachments.stamp(self.settings)
        with self._engines_lock:
            if self._registry is not None and self._registry[0] == stamp:
                return self._registry[1]
            if self._plugins is None:
                problems: list[str] = []
                self._plugins = (registry.plugin_entries(problems), problems)
            outside, outside_problems = attached.attached_entries(self.settings)
            built = registry.build([*self._plugins[0], *outside], [*self._plugins[1], *outside_problems])
            self._registry = (stamp, built)
            return built

    # --- what it builds from the store's content --------------------------------

    def content_key(self) -> tuple:
        """Where the store is and what it holds now: the key of everything built from its content."""
        pinned = getattr(self._one_content, "key", None)
        if pinned is not None:
            return pinned
        s = self.settings
        return (s.chroma_host, s.chroma_port, str(s.path("index_dir")), s.collection, self.store.fingerprint())

    @contextmanager
    def one_content(self, key: tuple | None = None) -> Iterator[tuple]:
        """Within the block (one search, in this thread), content_key() is ``key`` (default: asked
        of the store once, here).

        Store.fingerprint counts the collection, a scan that grows with it (10 ms at 100k
        chunks), and every cache lookup of a search asked for it again.
        """
        if getattr(self._one_content, "key", None) is not None:  # an outer block pinned it
            yield self._one_content.key
            return
        self._one_content.key = key or self.content_key()
        try:
            yield self._one_content.key
        finally:
            self._one_content.key = None

    def chunk_columns(self, key: tuple | None = None):
        """Every chunk the store holds as index.chunk_columns.ChunkColumns (chunk id order), once per
        content: loaded from the copy the indexer saved when it matches the content, else read from
        the store and saved for the next process."""

        key = key or self.content_key()
        return self._chunks.get(key, lambda: derived_saved.load_or_build(
            self.settings, "chunks", key[-1], (), lambda: ChunkColumns.of(self.store.all_chunks()),
            version=chunk_columns.FORMAT))

    def chunks(self, key: tuple | None = None):
        """Every chunk the store holds, in reading order, a sequence read once per content (shared:
        not to be changed); each Chunk is made when first asked for."""
        return self.chunk_columns(key).reading_order()

    def chunk_table(self, key: tuple | None = None):
        """Every chunk by id and each document's chunk ids (engines.ChunkTable), once per content:
        look-ups over the chunk columns, which build no chunk until it is asked for."""

        key = key or self.content_key()

        def table():
            columns = self.chunk_columns(key)
            return ChunkTable(columns.by_id(), columns.by_doc())

        return self._tables.get(key, table)

    def lexical(self, k1: float | None = None, b: float | None = None, backend: str | None = None):
        """The chunk BM25 over every chunk the store holds, built once per content and BM25 parameters.

        The one place the lexical index is produced (defaults: the workspace's settings).
        Loaded from the copy the indexer saved (index.lexical_saved) when it matches the
        content, else built from every chunk and saved for the next process.
        """

        s = self.settings
        k1, b = float(s.bm25_k1 if k1 is None else k1), float(s.bm25_b if b is None else b)
        backend = backend or s.bm25_backend
        key = self.content_key()
        return self._lexical.get(key + (k1, b, backend), lambda: lexical_saved.load_or_build(
            s, key[-1], lambda: self.chunk_columns(key), k1, b, backend))

    def unit_index(self, view: str, k1: float, b: float, backend: str):
        """The whole-unit index of the store's records (and pages, under view "all"), once per content.

        Loaded from the copy saved at index time or by an earlier process (index.derived_saved),
        else built from the chunks and their stored embeddings and saved."""

        key = self.content_key()
        params = (view, float(k1), float(b), backend)

        def build():
            chunks = self.chunks(key)
            if view == "records":
                chunks = [c for c in chunks if c.record_id]
            embeddings = self.store.get_embeddings([c.chunk_id for c in chunks]) if chunks else np.zeros((0, 0))
            return units.build_unit_index(chunks, embeddings, k1=float(k1), b=float(b), backend=backend)

        return self._units.get(key + params, lambda: derived_saved.load_or_build(
            self.settings, "units", key[-1], params, build, version=units.UNIT_INDEX_FORMAT))

    def sentences_of(self, doc_id: str) -> sentences.DocSentences:
        """One document's sentence vectors (index/sentences.py), once per content and model: the file the
        indexer wrote when it matches the document's chunks, else encoded here and saved (an index built
        before sentence vectors existed, or under RAGLOUPE_DENSE_SENTENCE_WEIGHT=0). StaleIndex when
        another model embedded the index (check_embedded_by): its sentences are not encoded with this one."""
        key = self.content_key()

        def load():  # the check once per document read, not on every search that finds it held here
            self.check_embedded_by()
            table = self.chunk_table(key)
            chunks = [table.by_id[i] for i in table.by_doc.get(doc_id, ())]
            found = sentences.load(self.settings, doc_id, chunks)
            if found is None:
                found = sentences.build(chunks, self.embedder.encode)
                try:
                    sentences.save(self.settings, doc_id, found)
                except OSError:  # a read-only index dir: this process still has them
                    pass
            return found

        return self._sentences.get(key + (self.settings.embedding_model, doc_id), load)

    def missing_sentences(self, doc_ids: Iterable[str] | None = None) -> list[str]:
        """The documents of ``doc_ids`` (default: every one the store holds) whose sentence vectors
        for the model in force a dense search would first have to encode: none saved for their
        chunks (sentences.saved_for), none held here. [] when the settings' weight is 0.

        A document found ready is remembered for this content and model, so asking before every
        search reads each document's small .json once. StaleIndex when another model embedded the
        index (check_embedded_by)."""
        if self.settings.dense_sentence_weight <= 0:
            return []
        self.check_embedded_by()
        key = self.content_key()
        by_doc = self.chunk_table(key).by_doc
        model = self.settings.embedding_model
        ready: set = self._sentences_ready.get(key + (model,), set)
        wanted = by_doc if doc_ids is None else [d for d in dict.fromkeys(doc_ids) if d in by_doc]
        missing = []
        for doc_id in wanted:
            if doc_id in ready:
                continue
            if key + (model, doc_id) in self._sentences or sentences.saved_for(self.settings, doc_id, by_doc[doc_id]):
                ready.add(doc_id)
            else:
                missing.append(doc_id)
        return missing

    def encode_missing_sentences(self, doc_ids: Iterable[str] | None = None,
                                 progress: pipeline.ProgressCallback | None = None) -> pipeline.SentencesEncoded:
        """Encode and save the sentence vectors missing_sentences(``doc_ids``) names, with the
        indexer's progress (index.pipeline.encode_sentences): what a face calls before searching,
        so a first search does not stall on them unseen. Nothing when none are missing. In a
        read-only index dir they are held here instead, as sentences_of holds what it encodes."""
        missing = self.missing_sentences(doc_ids)
        if not missing:
            return pipeline.SentencesEncoded()
        key = self.content_key()
        table = self.chunk_table(key)
        model = self.settings.embedding_model
        chunks_of = {doc_id: [table.by_id[i] for i in table.by_doc[doc_id]] for doc_id in missing}

        def hold(doc_id: str, found: sentences.DocSentences) -> None:
            self._sentences.get(key + (model, doc_id), lambda: found)

        encoded = pipeline.encode_sentences(chunks_of, self.embedder, self.settings, progress, unsaved=hold)
        self._sentences_ready.get(key + (model,), set).update(missing)
        return encoded

    def periods(self, fy_start_month: int | None = None) -> dict:
        """doc_id -> DocumentPeriod for every document in the store, once per content and month
        (loaded from the saved copy when there is one, as unit_index)."""

        month = int(self.settings.fiscal_year_start_month if fy_start_month is None else fy_start_month)
        key = self.content_key()
        return self._periods.get(key + (month,), lambda: derived_saved.load_or_build(
            self.settings, "periods", key[-1], (month,), lambda: doc_periods.periods_of(self.chunks(key), month),
            version=doc_periods.PERIODS_FORMAT))

    def corpus_views(self, index):
        """Learned fusion's page-, section- and chunk-level views of a chunk BM25 from lexical().

        Loaded from the copy saved for this content and BM25 parameters (as unit_index) when it
        was built over the same chunks as ``index``; else built and saved."""

        def load_or_build():
            params = (float(index.k1), float(index.b), index.backend)
            return derived_saved.load_or_build(
                self.settings, "views", self.content_key()[-1], params, lambda: features.build_views(index),
                version=features.VIEWS_FORMAT, fits=lambda views: views.chunk_ids() == ids_of(index.chunks))

        source, views = self._views.get((id(index), index.k1, index.b, index.backend, len(index)),
                                        lambda: (index, load_or_build()))
        # The index itself is kept with its views, so its id cannot be another's while held.
        return views if source is index else features.build_views(index)

    def open_dense_index(self) -> None:
        """Have Chroma load its vector index now: it reads it on the first query (at 300k chunks
        1.6 s of CPU), so a face starting up asks one nearest neighbour of a stored vector, in a
        thread beside its other loads (Chroma's query releases the GIL), and the first user's
        search finds it open. Nothing when the store is empty."""
        ids = self.chunk_columns().chunk_ids[:1]
        if ids:
            self.store.nearest(self.store.get_embeddings(ids)[0], 1)

    def learned_model(self, path: Path):
        """The learned model in ``path``, read once per change of the file (not checked against settings)."""

        return learned.read_file(path, self._learned)

    def query_vector(self, text: str) -> np.ndarray:
        """The embedding of a question, from the workspace's recent ones when it is there."""
        embedder = self.embedder
        key = (str(getattr(embedder, "model_name", id(embedder))), text)
        with self._vectors_lock:
            if key in self._vectors:
                self._vectors.move_to_end(key)
                return self._vectors[key]
        vector = embedder.encode([text])[0]
        with self._vectors_lock:
            self._vectors[key] = vector
            while len(self._vectors) > QUERY_VECTORS:
                self._vectors.popitem(last=False)
        return vector

    def dense_query_vector(self, text: str, choice: str | None = None) -> np.ndarray:
        """What the dense engine searches with: the question's embedding, mapped by the query adapter
        ``choice`` names (default Settings.query_adapter) when it applies to the model in force.
        StaleIndex when the index's chunks were embedded by another model (check_embedded_by)."""
        self.check_embedded_by()
        vector = self.query_vector(text)
        adapter, _ = self.query_adapter(choice, len(vector))
        return vector if adapter is None else adapter.apply(vector)

    def check_embedded_by(self) -> None:
        """StaleIndex when the manifest says another model embedded the index than the one in force:
        a question's vector from one model against chunk vectors of another ranks by noise, so dense
        refuses rather than answer (search(mode="bm25") without explain still runs). Read once per change
        of the manifest."""
        path = self.settings.path("index_dir") / MANIFEST_NAME
        try:
            key = (str(path), path.stat().st_mtime_ns, self.settings.model_identity())
        except OSError:
            return  # no manifest: an index another tool made, or none yet
        if self._embedded_by_checked != key:
            manifest = Manifest.load(self.settings)
            recorded = manifest.shaping_settings.get("embedding_model")
            current = key[2]
            if manifest.documents and isinstance(recorded, str) and recorded != current:
                back = "" if recorded.startswith("adapted:") else f", or set RAGLOUPE_EMBEDDING_MODEL={recorded}"
                raise StaleIndex(f"this index was embedded by {recorded} and the settings name {current}: dense "
                                 f"would compare the vectors of two models; {ACTION} to re-embed it{back}",
                                 action=Action.REBUILD_INDEX)
            self._embedded_by_checked = key

    def query_adapter(self, choice: str | None = None, dim: int | None = None):
        """(the QueryAdapter applied or None, why in a line) for ``choice`` under this workspace's
        model, read once per choice (retrieve/query_adapter.in_force)."""
        choice = self.settings.query_adapter if choice is None else choice
        key = (choice, self.settings.embedding_model, dim or 0)
        if key not in self._adapters:  # every search asks: settings are checked on the first only
            settings = (self.settings if choice == self.settings.query_adapter
                        else self.settings.replace(query_adapter=choice))
            self._adapters[key] = query_adapter.in_force(settings, dim)
        return self._adapters[key]

    def clear(self) -> None:
        """Forget everything built from the store's content (a benchmark releasing a large index)."""
        for cache in (self._chunks, self._tables, self._lexical, self._units, self._periods, self._views,
                      self._learned, self._sentences, self._sentences_ready):
            cache.clear()
        with self._vectors_lock:
            self._vectors.clear()

    def with_embedder(self, embedder: Any) -> "Workspace":
        """This workspace with another embedder (a benchmark's precomputed vectors): the caches are shared."""
        if embedder is None or embedder is self._embedder:
            return self
        other = copy.copy(self)
        other._embedder = embedder
        return other


def save_search_copies(store: Any, settings: Settings) -> None:
    """After indexing, what a face hands run_index (index.pipeline.save_for_searches): build and save what
    a search builds from the store's content beyond the chunk columns and BM25 the indexer saves itself
    (learned fusion's corpus views, the documents' periods, the whole-unit index of settings.unit_view),
    so the first search after a restart loads them; nothing when they are all saved already."""
    fingerprint = store.fingerprint()
    k1, b, backend = float(settings.bm25_k1), float(settings.bm25_b), settings.bm25_backend
    unit_params = (settings.unit_view, k1, float(settings.unit_bm25_b), backend)
    wanted = [("views", (k1, b, backend), features.VIEWS_FORMAT),
              ("periods", (int(settings.fiscal_year_start_month),), doc_periods.PERIODS_FORMAT)]
    if settings.unit_view != "none":
        wanted.append(("units", unit_params, units.UNIT_INDEX_FORMAT))
    if all(derived_saved.saved_path(settings, kind, fingerprint, params, version=version).is_file()
           for kind, params, version in wanted):
        return
    workspace = Workspace(settings, store=store)
    workspace.corpus_views(workspace.lexical())
    workspace.periods()
    if settings.unit_view != "none":
        workspace.unit_index(*unit_params)


class SettingsConflict(ValueError):
    """Settings handed to a workspace that name another store or model than it opened."""


def _store_and_model(settings: Settings) -> tuple:
    """Where the store is and which model encodes questions: what a workspace is opened on."""
    return (settings.chroma_host, settings.chroma_port, str(settings.path("index_dir")), settings.collection,
            settings.embedding_model)
