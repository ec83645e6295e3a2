"""An attached Chroma collection that ragloupe did not make: ``ragloupe attach NAME --chroma-path DIR
--collection COL`` (or ``--chroma-host HOST --chroma-port PORT``).

Only ever read. An embedded Chroma writes to its own files when a client opens
them (it compacts its log and rewrites its sqlite file), so the directory is never
opened in place: it is copied to ``<index_dir>/attached/<name>/<fingerprint>`` (the
fingerprint of its files' names, sizes and times; a changed collection is copied
again) and the copy is opened. A server is asked only get and query calls. The
collection is opened with get_collection, never created.

Its metadata layout is recognised: LangChain's (``source`` a file path, ``page``
0-based) and LlamaIndex's (``file_name``, ``page_label`` 1-based); ``doc_field``,
``page_field`` and ``page_base`` say otherwise. A hit's document is the file name
without its folder and extension (ragloupe's doc id), its page ``page - page_base + 1``.
The question is embedded by the workspace's model (the bundled one unless the
index uses another) or the model named at attach; a model whose dimension is not
the collection's is refused at attach in one line. Scores follow the collection's
space: cosine and ip as 1 - distance, l2 (Chroma's default, LangChain's too) as
the negated squared distance.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragloupe.attached.base import AttachedEngine
from ragloupe.attached.outside_hits import UnitPlace, outside_chunk, within
from ragloupe.config import Settings, bootstrap_environment
from ragloupe.errors import AttachRefused, EngineUnavailable
from ragloupe.models import Chunk
from ragloupe.retrieve.engines import EngineHit, Question, Scope

LAYOUTS = {"langchain": ("source", "page", 0), "llamaindex": ("file_name", "page_label", 1)}
SCORE_MEANINGS = {
    "cosine": "cosine similarity to the question (1 - the collection's cosine distance)",
    "ip": "inner product with the question (1 - the collection's ip distance)",
    "l2": "negated squared L2 distance to the question (higher is nearer)",
}
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
READ_BATCH = 1000


def doc_id_of(value: Any) -> str:
    """'data/raw/Grampian-2020-2021.pdf' -> 'Grampian-2020-2021' (ragloupe's doc id: the file stem)."""
    name = re.split(r"[\\/]", str(value).strip())[-1]
    return _EXTENSION.sub("", name) or name


def page_of(value: Any, base: int) -> int:
    """A page field's value as ragloupe's 1-based page (0 when it is not a whole number)."""
    try:
        return int(str(value).strip()) - int(base) + 1
    except (TypeError, ValueError):
        return 0


def detect_layout(metadatas: list[dict]) -> tuple[str, str, int] | None:
    """(doc field, page field, page base) of a known layout that every sampled metadata fits."""
    for name, (doc, page, base) in LAYOUTS.items():
        if metadatas and all(doc in m and page in m for m in metadatas):
            return doc, page, base
    return None


@dataclass(frozen=True)
class ChromaRow:
    """One chunk of the attached collection, as ragloupe reads it."""

    chroma_id: str
    place: UnitPlace


class ChromaEngine(AttachedEngine):
    """Dense search over an attached Chroma collection, its hits named by ragloupe's doc ids and pages."""

    def __init__(self, attachment, settings: Settings):
        super().__init__(attachment, settings)
        self.score_meaning = SCORE_MEANINGS.get(attachment.options.get("space", "l2"), SCORE_MEANINGS["l2"])
        self._collection = None
        self._rows: list[ChromaRow] | None = None
        self._embedder = None

    # --- reading the collection --------------------------------------------------

    def collection(self):
        with self._lock:
            if self._collection is None:
                self._collection = open_collection(self.attachment.options, self.settings, self.name)
            return self._collection

    def rows(self) -> list[ChromaRow]:
        """Every chunk's id and place (metadata only, read once): how filters become allowed ids."""
        if self._rows is None:
            rows = []
            for ids, metadatas, _ in read_all(self.collection(), include=("metadatas",)):
                for chroma_id, meta in zip(ids, metadatas):
                    rows.append(ChromaRow(chroma_id, self._place(meta or {})))
            self._rows = rows
        return self._rows

    def chunks(self) -> list[Chunk]:
        """Every chunk of the collection with its text, in document and page order (the Chunk Explorer's)."""
        chunks = []
        for ids, metadatas, documents in read_all(self.collection(), include=("metadatas", "documents")):
            for chroma_id, meta, text in zip(ids, metadatas, documents):
                chunks.append(self._chunk(chroma_id, meta or {}, text))
        return sorted(chunks, key=lambda c: (c.doc_id, c.page, c.chunk_id))

    def _place(self, meta: dict) -> UnitPlace:
        o = self.attachment.options
        return UnitPlace(doc_id_of(meta.get(o["doc_field"], "")), page_of(meta.get(o["page_field"]), o["page_base"]))

    def _chunk(self, chroma_id: str, meta: dict, text: str | None) -> Chunk:
        place = self._place(meta)
        return outside_chunk(self.name, f"{self.name}:{chroma_id}", place, text_of(text, meta))

    # --- the engine ---------------------------------------------------------------

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        allowed = None
        if scope.filters.get("doc_ids") or scope.filters.get("pages"):
            allowed = [row.chroma_id for row in self.rows() if within(row.place, scope.filters)]
            if not allowed:
                return []
        vector = self.question_vector(question.text, scope.workspace)
        try:
            found = self.collection().query(query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()],
                                            n_results=int(k), ids=allowed,
                                            include=["documents", "metadatas", "distances"])
        except Exception as exc:  # Chroma's own errors, in one line
            raise EngineUnavailable(f"engine {self.name}: the collection did not answer "
                                    f"({type(exc).__name__}: {exc})") from None
        space = self.attachment.options.get("space", "l2")
        hits = []
        for chroma_id, meta, text, distance in zip(found["ids"][0], found["metadatas"][0], found["documents"][0],
                                                   found["distances"][0]):
            score = -float(distance) if space == "l2" else 1.0 - float(distance)
            hits.append(EngineHit(self._chunk(chroma_id, meta or {}, text), score, float(distance)))
        return hits

    def question_vector(self, text: str, workspace) -> np.ndarray:
        """The question embedded by the model named at attach, or the workspace's."""
        model = self.attachment.options.get("model") or ""
        if not model or model == workspace.settings.embedding_model:
            return workspace.query_vector(text)
        if self._embedder is None:
            from ragloupe.index.embedder import get_embedder  # loaded only for a collection of another model

            self._embedder = get_embedder(self.settings.replace(embedding_model=model))
        return self._embedder.encode([text])[0]


def text_of(text: str | None, meta: dict) -> str:
    """A chunk's text: the document Chroma holds, or LlamaIndex's node JSON's text when it holds none."""
    if text:
        return text
    node = meta.get("_node_content")
    if isinstance(node, str):
        try:
            return str(json.loads(node).get("text") or "")
        except (ValueError, AttributeError):
            return ""
    return ""


def read_all(collection, include: tuple[str, ...]):
    """The collection in batches: (ids, metadatas, documents) per batch (documents None when not asked)."""
    offset = 0
    while True:
        got = collection.get(include=list(include), limit=READ_BATCH, offset=offset)
        ids = got["ids"]
        if not ids:
            return
        yield ids, got.get("metadatas") or [{}] * len(ids), got.get("documents") or [None] * len(ids)
        offset += len(ids)


# --- opening, read-only ----------------------------------------------------------------

def open_collection(options: dict, settings: Settings, name: str):
    """The attached collection, opened without creating anything (a private copy of a directory)."""
    bootstrap_environment()
    import chromadb  # the client is heavy; only a face that searches an attached collection opens one
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    try:
        if options.get("path"):
            copy = private_copy(Path(options["path"]), settings.path("index_dir") / "attached" / name)
            client = chromadb.PersistentClient(path=str(copy), settings=chroma_settings)
        else:
            client = chromadb.HttpClient(host=options["host"], port=int(options["port"]), settings=chroma_settings)
        return client.get_collection(options["collection"])
    except (AttachRefused, EngineUnavailable):
        raise
    except Exception as exc:
        where = options.get("path") or f"{options.get('host')}:{options.get('port')}"
        raise EngineUnavailable(f"engine {name}: cannot open collection {options.get('collection')!r} at "
                                f"{where} ({type(exc).__name__}: {exc})") from None


def fingerprint(directory: Path) -> str:
    """Changes when any file of the directory does (names, sizes, modification times)."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(directory)):
        dirs.sort()
        for file in sorted(files):
            path = Path(root) / file
            info = path.stat()
            digest.update(f"{path.relative_to(directory)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def private_copy(source: Path, home: Path) -> Path:
    """``source`` copied under ``home`` (once per fingerprint; older copies removed): what Chroma opens."""
    if not (source / "chroma.sqlite3").is_file():
        raise EngineUnavailable(f"{source} holds no Chroma database (no chroma.sqlite3)")
    target = home / fingerprint(source)
    if target.is_dir():
        return target
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=home, prefix=".copying-"))
    shutil.copytree(source, staging, dirs_exist_ok=True)
    try:
        staging.rename(target)
    except OSError:  # another process copied it first
        shutil.rmtree(staging, ignore_errors=True)
    for old in home.iterdir():
        if old != target and old.is_dir() and not old.name.startswith(".copying-"):
            shutil.rmtree(old, ignore_errors=True)
    return target


def attach_options(*, name: str, settings: Settings, collection: str, path: str = "", host: str = "",
                   port: int = 8000, doc_field: str = "", page_field: str = "", page_base: int | None = None,
                   model: str = "", embedder=None) -> dict:
    """Open the collection now and settle its layout, space and model; AttachRefused in one line."""
    if not collection:
        raise AttachRefused("--collection names the Chroma collection to attach")
    if bool(path) == bool(host):
        raise AttachRefused("give the collection's directory (--chroma-path) or its server (--chroma-host)")
    options: dict[str, Any] = {"collection": collection, "model": model}
    if path:
        directory = Path(path).expanduser().resolve()
        if not directory.is_dir():
            raise AttachRefused(f"--chroma-path {directory}: no such directory")
        options["path"] = str(directory)
    else:
        options.update(host=host, port=int(port))
    try:
        opened = open_collection(options, settings, name)
    except EngineUnavailable as exc:
        raise AttachRefused(str(exc).removeprefix(f"engine {name}: ")) from None
    sample = opened.get(limit=20, include=["metadatas", "embeddings"])
    if not sample["ids"]:
        raise AttachRefused(f"collection {collection!r} is empty: nothing to search")
    metadatas = [m or {} for m in sample["metadatas"]]
    layout = detect_layout(metadatas)
    if doc_field or page_field:
        if not (doc_field and page_field):
            raise AttachRefused("--doc-field and --page-field go together")
        layout = (doc_field, page_field, 1 if page_base is None else page_base)
    elif layout is None:
        keys = sorted({key for m in metadatas for key in m})
        raise AttachRefused(f"collection {collection!r} is in no layout ragloupe knows (LangChain: source, page; "
                            f"LlamaIndex: file_name, page_label); its metadata keys are {', '.join(keys) or 'none'}: "
                            "say --doc-field and --page-field (and --page-base)")
    elif page_base is not None:
        layout = (layout[0], layout[1], page_base)
    options.update(doc_field=layout[0], page_field=layout[1], page_base=int(layout[2]))
    options["space"] = (opened.metadata or {}).get("hnsw:space") or _configured_space(opened) or "l2"
    dimension = len(sample["embeddings"][0])
    model_dimension = int(embedder.dimension)
    if dimension != model_dimension:
        raise AttachRefused(f"collection {collection!r} holds {dimension}-dimensional vectors and the model "
                            f"{getattr(embedder, 'model_name', model or 'in force')} makes {model_dimension}: "
                            "name the model that made them with --model")
    options["dimension"] = dimension
    return options


def _configured_space(collection) -> str:
    """The space Chroma 1.x keeps in the collection's configuration (not its metadata)."""
    try:
        config = collection.configuration_json or {}
        return str(((config.get("hnsw") or {}).get("space")) or "")
    except AttributeError:
        return ""
