"""A linear map on the question's embedding, learned from gold questions and the pages that answer them.

MiniLM embeds a question and the passage that answers it as two sentences of one kind; they are
not ("How many dentist surgeries run independently?" against "91 independent dental practices
..."). The adapter is a matrix W in the embedding model's space: the dense engine searches with
W q / |W q| instead of the question's own vector q. The chunks and their sentences keep the
vectors the index holds, so nothing is re-embedded and the adapter can be switched off at once.

An adapter belongs to the model whose space it was trained in: for another model (a server's,
one of the user's) it is not applied, and `ragloupe status` says why. It carries over to a model
`ragloupe adapt` fine-tuned from its model and averaged back with it, half and half by default
(config.adapter_carries_over): measured, adapters learned in the bundled model's space rank as
well there as adapters learned in the averaged model's own. The
one shipped (query_adapter.npz beside this file) was trained by adapt/query_training.py on the
shipped gold sets (benchmarks/query_adapter.py --ship); Settings.query_adapter chooses it, none
("off") or a file of the user's; `ragloupe adapt --queries` (adapt/query_run.py) learns one for an
index from the user's gold sets, which the index then uses while the setting is left unset.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Iterable

import numpy as np

from ragloupe.config import CARRY_MAX_MERGE_WEIGHT, Settings, adapted_average, adapter_carries_over
from ragloupe.errors import SettingsInvalid

SCHEMA = "ragloupe.query_adapter/1"
SHIPPED = Path(__file__).with_name("query_adapter.npz")


@dataclass(frozen=True)
class QueryAdapter:
    """W (dim x dim) and what it was trained on (``record``: the model, the gold sets, the loss)."""

    matrix: np.ndarray
    model: str  # Settings.embedding_model when it was trained: the space it maps
    record: dict = field(default_factory=dict)
    source: str = ""  # "shipped" or the file it was read from

    def apply(self, vector: np.ndarray) -> np.ndarray:
        """W v / |W v|, float32."""
        mapped = self.matrix @ np.asarray(vector, dtype=np.float32)
        return (mapped / np.linalg.norm(mapped)).astype(np.float32)

    @cached_property
    def digest(self) -> str:
        """The matrix's own identity, whatever file or name it comes by (learned fusion records it)."""
        return "sha256:" + hashlib.sha256(np.ascontiguousarray(self.matrix).tobytes()).hexdigest()[:12]


def save(path: Path, matrix: np.ndarray, model: str, record: dict) -> None:
    """Write an adapter file (npz: the matrix as float16, half the size and well within what a
    cosine needs, and the record as JSON text), by rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"schema": SCHEMA, "model": model, **record}, sort_keys=True)
    scratch = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(scratch, matrix=np.asarray(matrix, dtype=np.float16), meta=np.array(meta))
    scratch.replace(path)


def read_file(path: Path, source: str = "") -> QueryAdapter:
    """The adapter in ``path``; SettingsInvalid in one line when it is not an adapter file. Read
    once per file content (its size and modification time): status lines and reports ask often."""
    try:
        stat = path.stat()
    except OSError:
        raise SettingsInvalid(f"RAGLOUPE_QUERY_ADAPTER={path}: no such file") from None
    return _read(str(path), stat.st_size, stat.st_mtime_ns, source)


@lru_cache(maxsize=8)
def _read(name: str, size: int, mtime_ns: int, source: str) -> QueryAdapter:
    path = Path(name)
    reason = None
    try:
        with np.load(path, allow_pickle=False) as data:
            matrix, meta = np.asarray(data["matrix"], dtype=np.float32), json.loads(str(data["meta"]))
    except FileNotFoundError:
        reason = "no such file"
    except (OSError, ValueError, KeyError):  # not an npz, no matrix or meta, meta not JSON
        reason = "not a query adapter file (an .npz holding a matrix and its record, docs/retrieval.md#the-query-adapter)"
    else:
        if meta.get("schema") != SCHEMA:
            reason = f"not a query adapter file (schema {meta.get('schema')!r}, expected {SCHEMA})"
        elif matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            reason = f"its matrix is {matrix.shape}, not square"
    if reason:
        raise SettingsInvalid(f"RAGLOUPE_QUERY_ADAPTER={path}: {reason}")
    record = {k: v for k, v in meta.items() if k not in ("schema", "model")}
    return QueryAdapter(matrix, str(meta.get("model", "")), record, source or str(path))


def question_digest(text: str) -> str:
    """What an adapter's record keeps of each question it learned from: enough to tell a gold
    question it read (whatever file it sits in) from one it did not, not the question itself."""
    return hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


def learned_from(adapter: QueryAdapter, questions: Iterable[str]) -> int:
    """How many of ``questions`` the adapter learned from (its record's question digests)."""
    seen = set(adapter.record.get("question_digests", ()))
    return sum(question_digest(q) in seen for q in questions)


def configured(settings: Settings) -> QueryAdapter | None:
    """The adapter Settings.query_adapter names (None: off), whatever model is in force."""
    choice = settings.query_adapter
    if choice == "off":
        return None
    if choice == "shipped":
        return read_file(SHIPPED, "shipped")
    if settings.sources.get("query_adapter") == "adopted":  # config._with_adopted_query_adapter
        return read_file(Path(choice), "index's own")
    return read_file(Path(choice).expanduser())


def in_force(settings: Settings, dim: int | None = None) -> tuple[QueryAdapter | None, str]:
    """The adapter the dense engine applies under ``settings`` (None when none is) and why, in a line.

    ``dim``: the embedder's dimension when known; an adapter of another size is not applied."""
    adapter = configured(settings)
    if adapter is None:
        return None, "the question's own embedding (RAGLOUPE_QUERY_ADAPTER=off)"
    if not adapter_carries_over(settings, adapter.model):
        return None, (f"the question's own embedding: the {adapter.source} query adapter maps "
                      f"{_model_name(adapter.model)}'s space, not {_model_name(settings.embedding_model)}'s"
                      + _not_carried(settings, adapter.model))
    if dim is not None and adapter.matrix.shape[0] != dim:
        return None, (f"the question's own embedding: the {adapter.source} query adapter is "
                      f"{adapter.matrix.shape[0]}-dimensional, the model {dim}")
    n = adapter.record.get("questions")
    said = (f"the question mapped by the {adapter.source} query adapter"
            + (f" (learned from {n:,} gold questions)" if isinstance(n, int) else ""))
    if adapter.model != settings.embedding_model:
        share = adapted_average(settings)[1]  # adapter_carries_over: an average of the adapter's model
        said += (f", carried over to {_model_name(settings.embedding_model)}, an average of "
                 f"{_model_name(adapter.model)} with {share:.0%} fine-tuned weights")
    return adapter, said


def _not_carried(settings: Settings, adapter_model: str) -> str:
    """Why an adapter does not carry over to an adapted model of its own model ("" for any other)."""
    average = adapted_average(settings)
    if average is None:
        return ""
    share, through = average[1], ""
    if average[0] != adapter_model:  # adapted from the default model, itself an average of the adapter's
        inner = adapted_average(settings.replace(embedding_model=average[0]))
        if inner is None or inner[0] != adapter_model:
            return ""
        share, through = 1 - (1 - average[1]) * (1 - inner[1]), f" through {_model_name(average[0])}"
    return (f" ({share:.0%} of it fine-tuned{through}; an adapter carries over to an average with "
            f"{CARRY_MAX_MERGE_WEIGHT:.0%} or less)")


def identity(settings: Settings) -> str:
    """What of the adapter the dense engine's scores depend on: "off" when it reads the question's
    own embedding, else the digest of the matrix it applies (retrieve/learned.assumed_settings)."""
    try:
        adapter, _ = in_force(settings)
    except SettingsInvalid:  # the dense engine says why when it runs; a search without it needs none
        return "unreadable"
    return "off" if adapter is None else adapter.digest


def described(identity_: str) -> str:
    """An identity() in words: the shipped adapter's digest is named as such."""
    if identity_.startswith("sha256:") and identity_ == read_file(SHIPPED, "shipped").digest:
        return f"shipped ({identity_})"
    return identity_


def _model_name(model: str) -> str:
    """"all-MiniLM-L6-v2" for the bundled model or a path to it, a folder's name for another."""
    return Path(model.removeprefix("bundled:")).name or model
