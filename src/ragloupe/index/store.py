"""The vector store: one Chroma collection of chunks, embedded or behind a Chroma server.

Embedded ``PersistentClient`` under ``<index_dir>/chroma`` by default; an
``HttpClient`` to ``chroma run`` when CHROMA_HOST is set. Telemetry is off.
The collection uses cosine space and no embedding function: embeddings are
always computed by ragloupe's own embedder and passed in, so Chroma never
loads a model of its own.

Chroma caps how many records one call may carry (``get_max_batch_size``),
so every bulk call here is cut into batches.

A Chroma server is given at most ``chroma_timeout_s`` per request: connecting
(which already makes several requests) runs under that limit, and the HTTP
session gets it as its timeout. Every call to the server goes through
``_ServerCalls``, which turns a timeout into StoreTimeout and a refused or
dropped connection into StoreUnreachable, both naming the server and what
to do, instead of a library exception the CLI would report as a bug.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import uuid
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ragloupe.config import Settings, bootstrap_environment
from ragloupe.errors import ACTION, Action, StoreTimeout, StoreUnavailable, StoreUnreachable
from ragloupe.models import Chunk

# Collection metadata key where the indexer records what the collection holds.
CONTENT_KEY = "ragloupe_content"
# Bumped when what fingerprint() is made of changes (2: the count left it), so no copy saved
# under the old one's value can ever be taken for the new one's.
FINGERPRINT_FORMAT = 2


class Store:
    """The chunk collection. Build with ``open_store(settings)``."""

    def __init__(self, client, collection, settings: Settings):
        self.client = client
        self.collection = collection
        self.settings = settings
        try:
            self.batch_size = max(1, min(int(client.get_max_batch_size()), 4096))
        except StoreUnavailable:
            raise
        except Exception:  # older servers do not report it; Chroma's floor is far above this
            self.batch_size = 1000

    # ---- reading -------------------------------------------------------
    def count(self) -> int:
        return int(self.collection.count())

    def all_chunks(self, where: dict | None = None) -> list[Chunk]:
        """Every chunk (matching ``where``), sorted by (doc_id, page, position) so the
        order is the same on every call whatever order Chroma keeps."""
        chunks = [Chunk.from_store(i, doc, meta) for i, doc, meta in self._scan(where, ["documents", "metadatas"])]
        return sorted(chunks, key=_reading_order)

    def ids(self, where: dict | None = None) -> list[str]:
        return sorted(chunk_id for chunk_id, _, _ in self._scan(where, []))

    def get_chunks(self, ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked; unknown ids are left out."""
        found: dict[str, Chunk] = {}
        for batch in _batches(list(ids), self.batch_size):
            got = self.collection.get(ids=batch, include=["documents", "metadatas"])
            for chunk_id, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
                found[chunk_id] = Chunk.from_store(chunk_id, doc, meta)
        return [found[i] for i in ids if i in found]

    def get_embeddings(self, ids: Sequence[str]) -> np.ndarray:
        """Embeddings of these ids, one row per id in the order asked (float32).

        Raises KeyError naming the first id the store does not hold.
        """
        found: dict[str, np.ndarray] = {}
        for batch in _batches(list(ids), self.batch_size):
            got = self.collection.get(ids=batch, include=["embeddings"])
            for chunk_id, vector in zip(got["ids"], got["embeddings"]):
                found[chunk_id] = np.asarray(vector, dtype=np.float32)
        missing = [i for i in ids if i not in found]
        if missing:
            raise KeyError(f"chunk {missing[0]!r} is not in the index")
        if not ids:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[i] for i in ids])

    def query(self, embedding: np.ndarray, n: int, where: dict | None = None) -> list[tuple[Chunk, float]]:
        """The ``n`` nearest chunks to ``embedding`` as (chunk, cosine distance), nearest first."""
        if n <= 0:
            return []
        # No count() first (see nearest()): an empty collection simply finds nothing.
        got = self.collection.query(
            query_embeddings=[np.asarray(embedding, dtype=np.float32).tolist()],
            n_results=int(n), where=where or None,
            include=["documents", "metadatas", "distances"])
        return [(Chunk.from_store(i, doc, meta), float(dist)) for i, doc, meta, dist in zip(
            got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0])]

    def nearest(self, embedding: np.ndarray, n: int, where: dict | None = None,
                ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The ``n`` nearest chunk ids to ``embedding`` as (chunk id, cosine distance), nearest first.

        Ids and distances only: reading the texts and metadata of the hits is most of what
        query() costs, and a caller holding every chunk in memory needs neither. ``ids``
        restricts the search to those chunks the way a ``where`` clause would (Chroma gives
        both the same allowed set, so the same hits), without Chroma evaluating a clause
        over its metadata table; an empty ``ids`` finds nothing.
        """
        if n <= 0 or (ids is not None and not ids):
            return []
        # No count() first: Chroma returns fewer than n_results when fewer match, and
        # counting the collection costs a scan that grows with it.
        got = self.collection.query(
            query_embeddings=[np.asarray(embedding, dtype=np.float32).tolist()], n_results=int(n),
            where=where or None, ids=list(ids) if ids is not None else None, include=["distances"])
        return [(i, float(dist)) for i, dist in zip(got["ids"][0], got["distances"][0])]

    def fingerprint(self) -> str:
        """Changes whenever the indexed content changes.

        Built from the collection's id (a rebuild makes a new collection) and its content
        marker: every write through a Store first replaces the marker with a fresh one
        (``_mark_writing``), so any change by this or another process, finished or not,
        moves it, and the indexer then records what the collection holds (a hash of the
        complete documents' sha256 and the settings fingerprint), so the same content has
        the same fingerprint in every process. Not the count: counting scans the collection
        (36 ms at 100k chunks), and a search asks for the fingerprint every time.
        """
        # Fetch the collection afresh: a long-lived Store (the app caches one) must see a
        # re-index or a rebuild done by another Store, or its caches would go stale.
        self.collection = _get_collection(self.client, self.settings.collection)
        meta = self.collection.metadata or {}
        key = f"{FINGERPRINT_FORMAT}|{self.collection.id}|{meta.get(CONTENT_KEY, '')}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    # ---- writing (the indexer's) ----------------------------------------
    def upsert(self, chunks: Sequence[Chunk], embeddings: np.ndarray) -> None:
        if len(chunks) != len(embeddings):
            raise ValueError(f"{len(chunks)} chunks but {len(embeddings)} embeddings")
        if len(chunks):
            self._mark_writing()
        for start in range(0, len(chunks), self.batch_size):
            part = chunks[start:start + self.batch_size]
            self.collection.upsert(
                ids=[c.chunk_id for c in part], documents=[c.text for c in part],
                metadatas=[c.metadata() for c in part],
                embeddings=np.asarray(embeddings[start:start + len(part)], dtype=np.float32))

    def delete_ids(self, ids: Iterable[str]) -> int:
        ids = list(ids)
        if ids:
            self._mark_writing()
        for batch in _batches(ids, self.batch_size):
            self.collection.delete(ids=batch)
        return len(ids)

    def delete_where(self, where: dict) -> int:
        """Delete every chunk matching ``where``; returns how many there were."""
        return self.delete_ids(self.ids(where))

    def set_content_marker(self, marker: str) -> None:
        """Record what the collection now holds, so fingerprint() moves with it."""
        meta = {k: v for k, v in (self.collection.metadata or {}).items() if not k.startswith("hnsw:")}
        meta[CONTENT_KEY] = marker
        self.collection.modify(metadata=meta)

    def _mark_writing(self) -> None:
        """A marker no content had before, set ahead of a write (a few ms; the write's own cost is
        far larger): until the indexer records what the collection then holds, or if it never
        does (interrupted), nothing saved or cached for the content before is taken for it."""
        self.set_content_marker(f"writing-{uuid.uuid4().hex}")

    def reset(self) -> None:
        """Drop the collection and start an empty one (for --rebuild)."""
        try:
            self.client.delete_collection(self.settings.collection)
        except StoreUnavailable:
            raise
        except Exception:  # not there: nothing to drop
            pass
        self.collection = _get_collection(self.client, self.settings.collection)

    # ---- other collections of the same client (index/swap.py) --------------
    def collection_named(self, name: str, create: bool = True):
        """Another collection of this client (a scratch copy being filled), made when missing and
        ``create``; None when missing and not ``create``."""
        if not create and name not in self.collection_names():
            return None
        return _get_collection(self.client, name)

    def collection_names(self) -> list[str]:
        return sorted(c if isinstance(c, str) else c.name for c in self.client.list_collections())

    def rename_collection(self, name: str, new_name: str) -> None:
        """Give the collection ``name`` the name ``new_name`` (which must be free)."""
        _get_collection(self.client, name).modify(name=new_name)
        if name == self.settings.collection or new_name == self.settings.collection:
            self.collection = _get_collection(self.client, self.settings.collection)

    def drop_collection(self, name: str) -> None:
        """Delete the collection ``name`` (not the store's own: reset() is for that)."""
        if name == self.settings.collection:
            raise ValueError("drop_collection does not drop the store's own collection")
        if name in self.collection_names():
            self.client.delete_collection(name)

    def scan(self, include: list[str]) -> Iterator[tuple[str, str | None, dict]]:
        """Every record of the collection as (id, document, metadata), a batch at a time."""
        return self._scan(None, include)

    # ---- helpers ---------------------------------------------------------
    def _scan(self, where: dict | None, include: list[str]) -> Iterator[tuple[str, str | None, dict]]:
        """Page through the collection with limit/offset so no call exceeds the batch cap."""
        offset = 0
        while True:
            got = self.collection.get(where=where or None, include=include,
                                      limit=self.batch_size, offset=offset)
            ids = got["ids"]
            docs = got.get("documents") or [None] * len(ids)
            metas = got.get("metadatas") or [{}] * len(ids)
            yield from zip(ids, docs, metas)
            if len(ids) < self.batch_size:
                return
            offset += len(ids)


def open_store(settings: Settings) -> Store:
    """The configured store: HttpClient when settings.chroma_host is set, else embedded."""
    bootstrap_environment()
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    if settings.chroma_host:
        client = _ServerCalls(_connect_server(settings), settings)
        return Store(client, _get_collection(client, settings.collection), settings)
    try:
        path = settings.path("index_dir") / "chroma"
        path.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(path=str(path),
                                           settings=ChromaSettings(anonymized_telemetry=False))
        collection = _get_collection(client, settings.collection)
    except Exception as exc:
        raise StoreUnavailable(f"cannot open the index at {settings.path('index_dir')}: "
                               f"{type(exc).__name__}: {exc}") from exc
    return Store(client, collection, settings)


def _connect_server(settings: Settings):
    """A chromadb HttpClient whose every request is bounded by ``chroma_timeout_s``.

    HttpClient() itself talks to the server (identity, tenant, database) over a
    session without a timeout, so it runs in a thread that is abandoned when
    the server does not answer in time; the session then gets the timeout.
    """
    import chromadb
    import httpx
    from chromadb.config import Settings as ChromaSettings

    outcome: dict[str, Any] = {}

    def connect() -> None:
        try:
            outcome["client"] = chromadb.HttpClient(
                host=settings.chroma_host, port=int(settings.chroma_port),
                settings=ChromaSettings(anonymized_telemetry=False))
        except Exception as exc:  # classified below, in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=connect, name="chroma-connect", daemon=True)
    thread.start()
    thread.join(settings.chroma_timeout_s)
    if thread.is_alive():
        raise StoreTimeout(_timeout_message(settings))
    if "error" in outcome:
        exc = outcome["error"]
        raise (_server_failure(exc, settings) or StoreUnavailable(
            f"cannot open the Chroma server at {_address(settings)}: "
            f"{type(exc).__name__}: {exc}")) from exc
    client = outcome["client"]
    # chromadb (1.x) builds its httpx session with timeout=None and offers no setting for it.
    client._server._session.timeout = httpx.Timeout(settings.chroma_timeout_s)
    return client


class _ServerCalls:
    """A chromadb client or collection (of a server) whose method calls raise
    StoreTimeout / StoreUnreachable when the server does not answer or is gone.
    Attributes that are not methods (a collection's id, metadata) pass through."""

    def __init__(self, target, settings: Settings):
        self._target = target
        self._settings = settings

    def __getattr__(self, name: str):
        value = getattr(self._target, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def call(*args, **kwargs):
            try:
                return value(*args, **kwargs)
            except Exception as exc:
                failure = _server_failure(exc, self._settings)
                if failure is None:
                    raise
                raise failure from exc

        return call


def _address(settings: Settings) -> str:
    return f"{settings.chroma_host}:{settings.chroma_port}"


def _timeout_message(settings: Settings) -> str:
    return (f"Chroma server at {_address(settings)} did not answer in "
            f"{settings.chroma_timeout_s:g} s: is it paused or overloaded? "
            "(RAGLOUPE_CHROMA_TIMEOUT_S sets how long to wait)")


def _server_failure(exc: BaseException, settings: Settings) -> StoreUnavailable | None:
    """The named error for a network failure talking to the server, or None for anything else."""
    import httpx

    chain = [exc]
    while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
        if len(chain) > 5:
            break
    if any(isinstance(e, httpx.TimeoutException) for e in chain):
        return StoreTimeout(_timeout_message(settings))
    lost = [e for e in chain if isinstance(e, (httpx.NetworkError, httpx.RemoteProtocolError))]
    # chromadb turns a refused first connection into this ValueError.
    if lost or (isinstance(exc, ValueError) and "Could not connect to a Chroma server" in str(exc)):
        detail = " ".join(str(lost[0] if lost else exc).split())[:80]
        return StoreUnreachable(
            f"Chroma server at {_address(settings)} cannot be reached ({detail}): start it "
            f"(`chroma run --host {settings.chroma_host} --port {settings.chroma_port} --path DIR`) "
            f"or fix CHROMA_HOST / CHROMA_PORT, then try again ({ACTION})",
            action=Action.INDEX_REPAIRS)
    return None


def _get_collection(client, name: str):
    collection = client.get_or_create_collection(
        name=name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    if isinstance(client, _ServerCalls):
        return _ServerCalls(collection, client._settings)
    return collection


def _batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _reading_order(chunk: Chunk) -> tuple:
    return (chunk.doc_id, chunk.page, chunk.record_id, chunk.position, chunk.chunk_id)
