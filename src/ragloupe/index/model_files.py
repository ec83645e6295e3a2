"""What a sentence-transformers model directory says about itself, read from its files alone.

The ONNX backend needs four facts about the model besides the exported
transformer: its tokenizer, how many tokens it reads (max_seq_length), how token
states become one vector (the Pooling module), and the vector's size. The
sentence-transformers model carries them in files beside its weights
(modules.json, sentence_bert_config.json, 1_Pooling/config.json,
tokenizer.json), so an encoder whose export is already cached starts without
importing torch, transformers or sentence-transformers (7-10 s of a server's
start): ``read`` gives those facts, and ``QueryTokenizer`` encodes with the
``tokenizers`` library over tokenizer.json, the same Rust tokenizer the
model's fast tokenizer wraps (the same ids: tests/test_onnx_light.py).

A directory that says anything this reading does not understand (a module other
than Transformer, Pooling and Normalize; pooling other than mean or CLS;
lower-casing added by sentence-transformers; tokenizer options that change ids)
reads as None, and the caller loads the model itself as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

_MODULES = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize")
_POOLING_FLAGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
_OTHER_POOLING_FLAGS = ("pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
# tokenizer_config.json keys that would make the fast tokenizer's ids differ from tokenizer.json's.
_TOKENIZER_CHANGES = {"padding_side": "right", "truncation_side": "right"}


@dataclass(frozen=True)
class ModelFiles:
    """The facts the ONNX encoder needs, as the model directory's files give them."""

    path: Path
    max_seq_length: int
    pooling: str  # "mean" | "cls"
    dimension: int
    pad_token: str


def read(model_path: str | Path) -> ModelFiles | None:
    """The model directory's facts, or None when its files do not give them all plainly."""
    root = Path(model_path)
    try:
        modules = _json(root / "modules.json")
        config = _json(root / "sentence_bert_config.json")
        tokenizer_config = _json(root / "tokenizer_config.json")
        if not (root / "tokenizer.json").is_file() or not _plain_modules(modules):
            return None
        pooling_dir = next(m.get("path", "") for m in modules if m["type"].endswith(".Pooling"))
        pooling, dimension = _pooling(_json(root / pooling_dir / "config.json"))
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return None
    length = config.get("max_seq_length")
    if set(config) - {"max_seq_length", "do_lower_case"} or config.get("do_lower_case"):
        return None
    if not isinstance(length, int) or isinstance(length, bool) or length < 1 or pooling is None:
        return None
    if any(tokenizer_config.get(name, value) != value for name, value in _TOKENIZER_CHANGES.items()):
        return None
    pad = tokenizer_config.get("pad_token", "[PAD]")
    pad = pad.get("content") if isinstance(pad, dict) else pad
    if not isinstance(pad, str):
        return None
    return ModelFiles(path=root, max_seq_length=length, pooling=pooling, dimension=dimension, pad_token=pad)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _plain_modules(modules: list[dict]) -> bool:
    """Transformer (the directory itself), Pooling, and at most Normalize, in that order."""
    types = [m["type"] for m in modules]
    if types not in (list(_MODULES[:2]), list(_MODULES)):
        return False
    return modules[0].get("path", "") == ""


def _pooling(config: dict) -> tuple[str | None, int]:
    """('mean' | 'cls' | None, the vector size) from the Pooling module's config."""
    dimension = int(config["word_embedding_dimension"])
    if config.get("include_prompt", True) is not True:
        return None, dimension
    named = config.get("pooling_mode")
    if isinstance(named, str):  # newer sentence-transformers write the mode by name
        mode = {"mean_tokens": "mean", "cls_token": "cls"}.get(named, named)
        return (mode if mode in ("mean", "cls") else None), dimension
    chosen = [mode for flag, mode in _POOLING_FLAGS.items() if config.get(flag)]
    if len(chosen) != 1 or any(config.get(flag) for flag in _OTHER_POOLING_FLAGS):
        return None, dimension
    return chosen[0], dimension


class QueryTokenizer:
    """tokenizer.json through the ``tokenizers`` library: padded to the longest text of a
    batch, cut at max_seq_length (special tokens included), as the fast tokenizer does with
    padding=True, truncation=True, max_length=max_seq_length."""

    def __init__(self, files: ModelFiles):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(files.path / "tokenizer.json"))
        pad_id = tokenizer.token_to_id(files.pad_token)
        if pad_id is None:
            raise ValueError(f"the pad token {files.pad_token!r} is not in the vocabulary")
        tokenizer.enable_truncation(max_length=files.max_seq_length)
        tokenizer.enable_padding(pad_id=pad_id, pad_token=files.pad_token)
        self._tokenizer = tokenizer

    def __call__(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """input_ids, attention_mask and token_type_ids (int64, one row per text)."""
        encoded = self._tokenizer.encode_batch(list(texts))
        return {"input_ids": np.asarray([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.asarray([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.asarray([e.type_ids for e in encoded], dtype=np.int64)}
