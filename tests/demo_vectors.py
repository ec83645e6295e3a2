"""The demo index's chunk and sentence vectors, shipped with the tests so a fresh clone need not encode them.

Encoding the demo corpus's ~1,400 chunks is the largest single cost of `make test` on a
fresh clone (about 90 s of both cores), and every CI run is a fresh clone. So
``tests/data/demo_vectors.npz`` holds, for each chunk text of the demo index, the vector
the bundled model gave it (its ONNX float32 export, on this kind of machine), keyed by the
SHA-256 of the text, together with a digest of the model's files.

conftest.py builds the session's demo index through ``ShippedVectors``, which wraps the
real embedder: a text found in the file takes its vector, any other text is encoded by the
model there and then (a chunking change costs only the chunks it changed), and a model
whose files differ from the digest uses none of them. Everything else about the index
build (extraction, chunking, Chroma, the saved BM25) runs as it does for a user, and every
other test that indexes encodes with the model.

Refresh the file after a change to ingestion or chunking (the suite says how many chunks
it had to encode):  .venv/bin/python tests/demo_vectors.py
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

SHIPPED = Path(__file__).resolve().parent / "data" / "demo_vectors.npz"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_digest(model_name: str) -> str:
    """SHA-256 over the names and bytes of the model's files: other weights, other vectors."""
    from ragloupe.index.embedder import resolve_model_path

    root = Path(resolve_model_path(model_name))
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class ShippedVectors:
    """The real embedder, answering from the shipped vectors where the text is there."""

    def __init__(self, embedder: Any, path: Path = SHIPPED):
        self._embedder = embedder
        self.vectors: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts not in the file, encoded by the model
        self.looked_up = 0
        if path.exists():
            shipped = np.load(path)
            if str(shipped["model_digest"]) == model_digest(embedder.model_name):
                self.vectors = dict(zip(shipped["keys"].tolist(), shipped["vectors"]))
                if "sentence_keys" in shipped:
                    self.vectors.update(zip(shipped["sentence_keys"].tolist(),
                                            shipped["sentence_vectors"].astype(np.float32)))

    def __getattr__(self, name: str) -> Any:  # tokenizer, backend, max_seq_length, ...
        return getattr(self._embedder, name)

    def encode(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        missing = [i for i, key in enumerate(keys) if key not in self.vectors]
        self.looked_up += len(texts)
        self.encoded += len(missing)
        if missing:
            fresh = self._embedder.encode([texts[i] for i in missing], **kwargs)
            for i, vector in zip(missing, fresh):
                self.vectors[keys[i]] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return self._embedder.encode([], **kwargs)
        return np.stack([self.vectors[key] for key in keys]).astype(np.float32)


def write(index_settings: Any, path: Path = SHIPPED) -> int:
    """Write the vectors of every chunk in the index of ``index_settings``, and of every chunk's sentences
    (index/sentences.py) in half precision (half the file; a cosine moves by under 1e-3); returns how many."""
    from ragloupe.index import sentences
    from ragloupe.index.store import open_store

    store = open_store(index_settings)
    chunks = list(store.all_chunks())
    vectors = store.get_embeddings([c.chunk_id for c in chunks])
    keys = [text_key(c.search_text) for c in chunks]
    unique = dict(zip(keys, np.asarray(vectors, dtype=np.float32)))
    by_doc: dict[str, list] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    by_sentence = {}
    for doc_id, doc_chunks in by_doc.items():
        saved = sentences.load(index_settings, doc_id, doc_chunks)
        if saved is None:
            continue
        by_id = {c.chunk_id: c for c in doc_chunks}
        texts = [t for cid in saved.chunk_ids for t in sentences.sentence_texts(by_id[cid])]
        by_sentence.update((text_key(t), v) for t, v in zip(texts, saved.vectors) if text_key(t) not in unique)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, keys=np.array(sorted(unique)), vectors=np.stack([unique[k] for k in sorted(unique)]),
                        sentence_keys=np.array(sorted(by_sentence)),
                        sentence_vectors=np.stack([by_sentence[k] for k in sorted(by_sentence)]).astype(np.float16),
                        model_digest=np.array(model_digest(index_settings.embedding_model)))
    return len(unique) + len(by_sentence)


def main() -> int:
    """Build the demo index with the model alone, in a temporary directory, and write its vectors."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import DEMO_SOURCES  # noqa: E402  (tests/ is not a package)

    from ragloupe.config import Settings
    from ragloupe.index.pipeline import run_index

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = Settings.from_env(index_dir=root / "index", runs_dir=root / "runs", raw_dir=root / "raw",
                                     logs_dir=root / "logs", chroma_host="")
        summary = run_index(list(DEMO_SOURCES), settings)
        if summary.errors:
            print(f"the demo corpus did not index cleanly: {summary.errors}", file=sys.stderr)
            return 1
        count = write(settings)
    print(f"wrote {count} chunk and sentence vectors to {SHIPPED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
