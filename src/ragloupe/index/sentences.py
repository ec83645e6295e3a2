"""Each chunk's sentences embedded apart, so dense retrieval can score a chunk by its best sentence.

A 256-token chunk embedded whole is one average of everything it says; a question usually asks
after one sentence of it, and the bundled MiniLM was trained on sentence pairs. The dense engine
blends a chunk's own similarity with its best sentence's (Settings.dense_sentence_weight;
benchmarks/sentence_dense.py measured it). The vectors are written per document when the document
is indexed, with the model that embeds its chunks, so an incremental run encodes only what changed:

    <index dir>/sentences/<model key>/<document key>.npy    the vectors, float32, one row a sentence
    <index dir>/sentences/<model key>/<document key>.json   chunk ids, digests, where each chunk starts

The model key hashes the embedding model's name (an adapted model has its own); the document key
its doc_id. The .json holds the document's chunk ids, a digest of each chunk's search text and
where each chunk's sentences start; the .npy is memory-mapped when read, so a search touches only
its candidates' rows and a large index is not read into memory. Each is written to a temporary
name and renamed into place, the vectors first; a pair that is missing, does not agree (a crash
between the two renames) or no longer matches the document's chunks (another chunking, a crash
between the chunks' write and its own) reads as None, and the caller encodes the document again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.models import Chunk

FORMAT = 1
SUBDIR = "sentences"
# A sentence ends at . ! ? ; or : before a capital, a digit, a bracket or a bullet, or at a line break.
SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+(?=[A-Z0-9(•\-])|\n+")
MIN_WORDS = 8  # shorter pieces (a heading, a figure's label) are joined to the next
MAX_WORDS = 60  # longer ones (a table row run together) are cut


def split_sentences(text: str) -> list[str]:
    """The text's sentences: pieces under MIN_WORDS words joined to the next, longer ones cut at MAX_WORDS."""
    pieces, pending = [], ""
    for piece in SENTENCE_END.split(text):
        piece = " ".join(piece.split())
        if not piece:
            continue
        pending = f"{pending} {piece}".strip()
        if len(pending.split()) >= MIN_WORDS:
            pieces.append(pending)
            pending = ""
    if pending:
        if pieces:
            pieces[-1] = f"{pieces[-1]} {pending}"
        else:
            pieces.append(pending)
    out = []
    for piece in pieces:
        words = piece.split()
        out.extend(" ".join(words[i:i + MAX_WORDS]) for i in range(0, len(words), MAX_WORDS))
    return out


def sentence_texts(chunk: Chunk) -> list[str]:
    """What is embedded for each sentence of the chunk: its context line (as the chunk's), then the sentence."""
    sentences = split_sentences(chunk.text) or [" ".join(chunk.text.split()) or chunk.text]
    return [f"{chunk.context}\n{s}" if chunk.context else s for s in sentences]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class DocSentences:
    """One document's sentence vectors: chunk i's sentences are rows starts[i]:starts[i + 1]."""

    chunk_ids: tuple[str, ...]
    digests: tuple[str, ...]  # of each chunk's search text, to tell a stale file
    starts: np.ndarray
    vectors: np.ndarray  # float32, unit rows; memory-mapped when loaded
    row_of: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "row_of", {cid: i for i, cid in enumerate(self.chunk_ids)})

    def best(self, chunk_id: str, query: np.ndarray) -> float | None:
        """The chunk's best sentence similarity to the (unit) query vector; None for a chunk not here."""
        row = self.row_of.get(chunk_id)
        if row is None:
            return None
        span = self.vectors[self.starts[row]:self.starts[row + 1]]
        return float(np.max(span @ query)) if len(span) else None

    def matches(self, chunks: Sequence[Chunk]) -> bool:
        """Whether these vectors were made from exactly these chunks' texts."""
        mine = dict(zip(self.chunk_ids, self.digests))
        return len(mine) == len(chunks) and all(mine.get(c.chunk_id) == _digest(c.search_text) for c in chunks)


def distinct_texts(chunks: Sequence[Chunk]) -> list[str]:
    """Every distinct sentence text of the chunks, in order: what build() encodes."""
    return list(dict.fromkeys(t for chunk in chunks for t in sentence_texts(chunk)))


def build(chunks: Sequence[Chunk], encode) -> DocSentences:
    """Embed every sentence of the chunks with ``encode`` (texts -> unit vectors, e.g. Embedder.encode)."""
    texts, starts = [], [0]
    for chunk in chunks:
        texts.extend(sentence_texts(chunk))
        starts.append(len(texts))
    # Overlapping chunks share sentences: each distinct text is encoded once.
    distinct = distinct_texts(chunks)
    if distinct:
        encoded = np.asarray(encode(distinct), dtype=np.float32)
        row = {text: i for i, text in enumerate(distinct)}
        vectors = encoded[[row[t] for t in texts]]
    else:
        vectors = np.zeros((0, 0), dtype=np.float32)
    return DocSentences(tuple(c.chunk_id for c in chunks), tuple(_digest(c.search_text) for c in chunks),
                        np.asarray(starts, dtype=np.int64), vectors)


def model_dir(settings: Settings) -> Path:
    key = hashlib.sha256(f"{FORMAT}\0{settings.embedding_model}".encode("utf-8")).hexdigest()[:12]
    return settings.path("index_dir") / SUBDIR / key


def doc_file_name(doc_id: str) -> str:
    return f"{hashlib.sha256(doc_id.encode('utf-8')).hexdigest()[:20]}.npy"


def doc_path(settings: Settings, doc_id: str) -> Path:
    """The document's vectors; its chunk ids and digests are beside them, with the suffix .json."""
    return model_dir(settings) / doc_file_name(doc_id)


def _replace(path: Path, write) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def save(settings: Settings, doc_id: str, sentences: DocSentences) -> Path:
    """Write one document's vectors, then its chunk ids (each a temporary file renamed into place)."""
    path = doc_path(settings, doc_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace(path, lambda out: np.save(out, np.ascontiguousarray(sentences.vectors, dtype=np.float32)))
    header = {"format": FORMAT, "chunk_ids": list(sentences.chunk_ids), "digests": list(sentences.digests),
              "starts": [int(x) for x in sentences.starts], "rows": int(len(sentences.vectors))}
    _replace(path.with_suffix(".json"), lambda out: out.write(json.dumps(header).encode("utf-8")))
    return path


def load(settings: Settings, doc_id: str, chunks: Sequence[Chunk]) -> DocSentences | None:
    """The document's saved vectors (memory-mapped) when they were made from exactly ``chunks``; else None."""
    path = doc_path(settings, doc_id)
    try:
        header = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        vectors = np.load(path, mmap_mode="r")
        found = DocSentences(tuple(header["chunk_ids"]), tuple(header["digests"]),
                             np.asarray(header["starts"], dtype=np.int64), vectors)
    except (OSError, KeyError, ValueError, TypeError):
        return None
    agree = header.get("format") == FORMAT and len(vectors) == header.get("rows") == int(found.starts[-1])
    return found if agree and found.matches(chunks) else None


def saved_for(settings: Settings, doc_id: str, chunk_ids: Sequence[str]) -> bool:
    """Whether the document's vectors for the settings' model are saved for exactly these chunk ids.

    Read from the .json alone (a small file a document), so a status line or a check before a
    search can ask it of every document of a large index; load() is what also checks each
    chunk's text, when a search reads the vectors.
    """
    path = doc_path(settings, doc_id)
    try:
        header = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        saved = header["chunk_ids"] if header.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return (isinstance(saved, list) and len(saved) == len(chunk_ids) and set(saved) == set(chunk_ids)
            and path.is_file())


def remove(index_dir: Path, doc_id: str) -> None:
    """Drop a removed document's vectors, for every model."""
    root = Path(index_dir) / SUBDIR
    name = doc_file_name(doc_id)
    for folder in root.iterdir() if root.is_dir() else ():
        (folder / name).unlink(missing_ok=True)
        (folder / name).with_suffix(".json").unlink(missing_ok=True)


def clear(index_dir: Path) -> None:
    """Drop every saved sentence vector (a rebuild)."""
    shutil.rmtree(Path(index_dir) / SUBDIR, ignore_errors=True)
