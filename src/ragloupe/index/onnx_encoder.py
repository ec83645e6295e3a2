"""Faster CPU encoding: the embedding model exported once to ONNX, run with onnxruntime.

Settings.embedding_backend picks how chunks and questions are encoded:

- ``torch``: sentence-transformers as it is;
- ``onnx`` (the default): the model's transformer exported to ONNX
  (float32), the same maths on onnxruntime's CPU kernels;
- ``onnx-int8``: that export with its weights quantised to int8
  (onnxruntime's dynamic quantisation): smaller and faster, slightly
  different vectors.

The export is done once from the model already on disk (nothing is
downloaded) and cached under ``<models_dir>/onnx/<model>-<key>/``, the key
changing with the model's path and files and the versions of the
libraries that write and read the export (torch, transformers, onnx,
onnxruntime). It is written to a staging file and renamed
into place, so an export killed half-way never leaves a file that looks complete;
a second process that wants it meanwhile waits on a lock file in its folder and
opens the first one's export instead of exporting again. Tokenisation, pooling (mean or CLS,
as the model's own Pooling module says) and L2 normalisation are done here
the way sentence-transformers does them.

Two ways in: ``open_saved`` when the export is already cached and the model
directory's files say plainly how it tokenises and pools (model_files.py):
nothing of torch, transformers or sentence-transformers is imported; ``load``
over the loaded sentence-transformers model otherwise, exporting on first use.
Both give the same vectors (tests/test_onnx_light.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import os
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ragloupe.errors import OnnxUnavailable
from ragloupe.index import model_files

BACKENDS = ("torch", "onnx", "onnx-int8")
_FORMAT = "1"  # bump when the export changes, so old caches are not reused
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass
class OnnxEncoder:
    """An onnxruntime session over the exported transformer, with the model's tokenizer and pooling."""

    session: Any  # onnxruntime.InferenceSession
    features: Callable[[list[str]], Any]  # texts -> input_ids, attention_mask (, token_type_ids)
    max_seq_length: int
    pooling: str  # "mean" | "cls"
    path: Path
    dimension: int = 0  # the vector's size (0: not read from the model's files)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text."""
        wanted = {i.name for i in self.session.get_inputs()}
        rows = []
        # Sorting by length keeps padding small in each batch; the order is restored below.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            batch = [texts[i] for i in order[start:start + batch_size]]
            encoded = self.features(batch)
            feed = {name: np.asarray(encoded[name], dtype=np.int64) for name in _INPUTS
                    if name in wanted and name in encoded}
            if "token_type_ids" in wanted and "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            hidden = self.session.run(["last_hidden_state"], feed)[0]
            rows.append(pool(hidden, feed["attention_mask"], self.pooling))
        pooled = np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)
        out = np.empty_like(pooled)
        out[np.asarray(order, dtype=np.int64)] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def pool(hidden: np.ndarray, attention_mask: np.ndarray, mode: str) -> np.ndarray:
    """Token states (batch, seq, dim) -> one vector per text: masked mean, or the first token."""
    if mode == "cls":
        return hidden[:, 0, :]
    mask = attention_mask[:, :, None].astype(hidden.dtype)
    return (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)


def pooling_mode(model: Any) -> str:
    """'mean' or 'cls' from the sentence-transformers model's Pooling module."""
    for module in model:
        if type(module).__name__ == "Pooling":
            mode = getattr(module, "pooling_mode", None)
            if not isinstance(mode, str):  # sentence-transformers before 5 kept flags, not a name
                mode = module.get_pooling_mode_str()
            mode = {"mean_tokens": "mean", "cls_token": "cls"}.get(mode, mode)
            if mode in ("mean", "cls"):
                return mode
            raise OnnxUnavailable(f"the ONNX backend supports mean or CLS pooling, not {mode!r}; "
                                  "set RAGLOUPE_EMBEDDING_BACKEND=torch")
    raise OnnxUnavailable("the embedding model has no Pooling module; set RAGLOUPE_EMBEDDING_BACKEND=torch")


def library_versions() -> str:
    """The versions an export depends on, 'torch=2.13.0|...' (a library not installed: '-')."""
    from importlib import metadata

    versions = []
    for name in ("torch", "transformers", "onnx", "onnxruntime"):
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=-")
    return "|".join(versions)


def cache_dir(models_dir: Path, model_path: str) -> Path:
    """Where the export of the model at ``model_path`` lives; moves when the model's files or
    the libraries' versions change."""
    source = Path(model_path)
    digest = hashlib.sha256(f"{_FORMAT}|{source.resolve()}|{library_versions()}".encode())
    for item in sorted(p for p in source.rglob("*") if p.is_file()):
        stat = item.stat()
        digest.update(f"|{item.relative_to(source)}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", source.name).strip("-") or "model"
    return models_dir / "onnx" / f"{slug}-{digest.hexdigest()[:12]}"


def load(model: Any, model_path: str, backend: str, models_dir: Path, threads: int = 0) -> OnnxEncoder:
    """The ONNX encoder for a loaded sentence-transformers model, exporting it on first use.

    ``threads``: onnxruntime's intra-op threads (0: its default, one per core)."""
    target = _checked_target(model_path, backend, models_dir)
    float_path, int8_path = target / "model.onnx", target / "model-int8.onnx"
    try:
        with _exporting(target):  # a second process waits for the first's export instead of repeating it
            if not float_path.is_file():
                _export(model, float_path)
            path = float_path
            if backend == "onnx-int8":
                if not int8_path.is_file():
                    _quantise(float_path, int8_path)
                path = int8_path
        session = open_session(path, threads)
    except Exception as exc:  # the exporter and onnxruntime raise their own types; all mean "cannot"
        raise OnnxUnavailable(f"the {backend} embedding backend could not be prepared "
                              f"({type(exc).__name__}: {_first_line(exc)}); delete {target} to export "
                              "again, or set RAGLOUPE_EMBEDDING_BACKEND=torch") from exc
    tokenizer, length = model.tokenizer, int(model.max_seq_length)

    def features(texts: list[str]):
        return tokenizer(texts, padding=True, truncation=True, max_length=length, return_tensors="np")

    return OnnxEncoder(session=session, features=features, max_seq_length=length, pooling=pooling_mode(model),
                       path=path)


@contextmanager
def _exporting(target: Path) -> Iterator[None]:
    """Held while one process exports into ``target`` (an flock on its export.lock, released when
    the process ends however it ends); the files still go into place by rename."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "export.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_saved(model_path: str, backend: str, models_dir: Path, threads: int = 0) -> OnnxEncoder | None:
    """The encoder over an export already cached, from the model directory's files alone (no torch,
    transformers or sentence-transformers); None when there is no export yet, the files do not say
    plainly how the model tokenises and pools, or the session cannot be opened (``load`` then)."""
    target = _checked_target(model_path, backend, models_dir)
    path = target / ("model-int8.onnx" if backend == "onnx-int8" else "model.onnx")
    files = model_files.read(model_path)
    if files is None or not path.is_file():
        return None
    try:
        session = open_session(path, threads)
        features = model_files.QueryTokenizer(files)
    except Exception:  # noqa: BLE001  onnxruntime's and tokenizers' own errors: load() says why
        return None
    return OnnxEncoder(session=session, features=features, max_seq_length=files.max_seq_length,
                       pooling=files.pooling, path=path, dimension=files.dimension)


def _checked_target(model_path: str, backend: str, models_dir: Path) -> Path:
    """Where the export of ``model_path`` lives, after checking the backend and the path."""
    if backend not in BACKENDS[1:]:
        raise OnnxUnavailable(f"RAGLOUPE_EMBEDDING_BACKEND={backend!r} is not one of {', '.join(BACKENDS)}")
    if not Path(model_path).is_dir():
        raise OnnxUnavailable(f"the ONNX backend needs the model as a local directory, got {model_path!r}; "
                              "give RAGLOUPE_EMBEDDING_MODEL a path, or set RAGLOUPE_EMBEDDING_BACKEND=torch")
    return cache_dir(models_dir, model_path)


def open_session(path: Path, threads: int = 0):
    """An onnxruntime CPU session over the export at ``path`` (``threads``: intra-op, 0 its default)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise here
    # Idle threads sleep instead of spinning: beside another busy process (a second server
    # worker, the app) spinning burnt CPU for nothing (120 pages: 16.8 against 18.2 CPU s).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads > 0:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _first_line(exc: Exception, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or "no message"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _staging(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f"{path.stem}.partial-{os.getpid()}{path.suffix}")


def _export(model: Any, path: Path) -> None:
    """The transformer (token states out) to ONNX, with dynamic batch and sequence axes."""
    import torch

    transformer = model[0].auto_model.eval()

    class TokenStates(torch.nn.Module):
        """Keyword arguments in, last_hidden_state out: the transformer's forward takes more."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state

    sample = model.tokenizer(["an example sentence", "a second, longer example sentence"],
                             padding=True, return_tensors="pt")
    # Models without segment ids (MPNet, RoBERTa) take two inputs, BERT-likes three.
    takes_types = "token_type_ids" in inspect.signature(transformer.forward).parameters
    names = list(_INPUTS if takes_types else _INPUTS[:2])
    args = [sample["input_ids"], sample["attention_mask"]]
    if takes_types:
        args.append(sample.get("token_type_ids", torch.zeros_like(sample["input_ids"])))
    staging = _staging(path)
    axes = {name: {0: "batch", 1: "sequence"} for name in (*names, "last_hidden_state")}
    # The TorchScript exporter warns about every construct it lowers; none of it concerns a user.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(TokenStates(transformer), tuple(args), str(staging), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
    os.replace(staging, path)


def _quantise(source: Path, path: Path) -> None:
    """int8 weights, activations quantised on the fly (onnxruntime's dynamic quantisation).

    Per-channel scales: with one scale per tensor MiniLM's vectors drift to a
    cosine of ~0.96 from torch's; per channel they stay above 0.99.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    staging = _staging(path)
    quantize_dynamic(str(source), str(staging), weight_type=QuantType.QInt8, per_channel=True)
    os.replace(staging, path)
