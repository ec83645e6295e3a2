"""Synthetic corpora of any size made from a real index's chunks and vectors (benchmarks/scale.py).

Embedding 300k chunks with the model would take hours on two cores, so a
synthetic document is a real document of the source index (the demo corpus:
three Grampian annual reports and the Natech guidance) copied and perturbed:

- text: the same pages and chunks in the same order, with about one word in
  ten replaced by a word drawn from the source corpus at its own frequency,
  every figure re-drawn with the same digits shape, and every year shifted by
  the copy's offset (so "2020/21" becomes "2013/14" throughout a copy, and the
  documents' periods spread over 1999-2026 as a real archive's would);
- vectors: the source chunk's real vector plus Gaussian noise of norm
  ``NOISE_NORM``, re-normalised (cosine to the source ~0.97), so HNSW sees the
  real clustering of the corpus instead of uniform random points.

Chunks keep the source's page, position, section, kind and quality; ids and
doc ids carry the copy number (``Grampian-2020-2021~0042``). They are written
with their vectors through the index's own Store.upsert, so the collection is
what the indexer would have written.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import replace
from typing import Iterator

import numpy as np

from ragloupe.models import Chunk

NOISE_NORM = 0.25
WORD_SWAP_RATE = 0.10
YEAR_SHIFTS = range(-21, 6)  # 2020/21 copies land between 1999/00 and 2026/27
YEAR = re.compile(r"\b((?:19|20)\d{2})(?:([/-])(\d{2}))?\b")
NUMBER = re.compile(r"\b\d[\d,.]*\b")


class Source:
    """A real index's chunks grouped by document, their vectors, and its word frequencies."""

    def __init__(self, chunks: list[Chunk], vectors: np.ndarray):
        self.documents: dict[str, list[int]] = defaultdict(list)
        for row, chunk in enumerate(chunks):
            self.documents[chunk.doc_id].append(row)
        self.chunks = chunks
        self.vectors = np.asarray(vectors, dtype=np.float32)
        words = [w for c in chunks for w in c.text.split() if not any(ch.isdigit() for ch in w)]
        self.vocabulary = np.array(words, dtype=object)  # drawing from it draws at corpus frequency


def shift_years(text: str, shift: int) -> str:
    """Every year (and fiscal year "2020/21", "2020-21") moved by ``shift`` years."""

    def moved(match: re.Match) -> str:
        year = int(match.group(1)) + shift
        if match.group(2) is None:
            return str(year)
        return f"{year}{match.group(2)}{(year + 1) % 100:02d}"

    return YEAR.sub(moved, text)


def redraw_numbers(text: str, rng: np.random.Generator) -> str:
    """Every figure that is not a year re-drawn digit by digit, its separators kept."""

    def redrawn(match: re.Match) -> str:
        value = match.group(0)
        if YEAR.fullmatch(value):
            return value
        digits = [str(rng.integers(1 if i == 0 else 0, 10)) if ch.isdigit() else ch
                  for i, ch in enumerate(value)]
        return "".join(digits)

    return NUMBER.sub(redrawn, text)


def perturb_text(text: str, shift: int, source: Source, rng: np.random.Generator) -> str:
    words = redraw_numbers(shift_years(text, shift), rng).split()
    swaps = np.flatnonzero(rng.random(len(words)) < WORD_SWAP_RATE)
    if len(swaps):
        drawn = source.vocabulary[rng.integers(0, len(source.vocabulary), len(swaps))]
        for index, word in zip(swaps, drawn):
            words[index] = word
    return " ".join(words)


def noisy(vectors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    noise = rng.standard_normal(vectors.shape).astype(np.float32)
    noise *= NOISE_NORM / np.linalg.norm(noise, axis=1, keepdims=True)
    moved = vectors + noise
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def copy_document(doc_id: str, copy: int, source: Source, rng: np.random.Generator,
                  limit: int) -> tuple[list[Chunk], np.ndarray]:
    """Copy ``copy`` of one source document (at most ``limit`` chunks, whole pages first)."""
    rows = source.documents[doc_id][:limit]
    shift = int(rng.choice(YEAR_SHIFTS))
    new_doc = f"{shift_years(doc_id, shift)}~{copy:04d}"
    sha = hashlib.sha256(new_doc.encode()).hexdigest()
    chunks = []
    for row in rows:
        chunk = source.chunks[row]
        chunks.append(replace(
            chunk, chunk_id=f"{chunk.chunk_id}~{copy:04d}", doc_id=new_doc, source_sha256=sha,
            text=perturb_text(chunk.text, shift, source, rng),
            section=shift_years(chunk.section, shift), title=shift_years(chunk.title, shift)))
    return chunks, noisy(source.vectors[rows], rng)


def synthetic_batches(source: Source, n: int, seed: int) -> Iterator[tuple[list[Chunk], np.ndarray]]:
    """``n`` synthetic chunks, one copied document at a time, the source documents in turn."""
    rng = np.random.default_rng(seed)
    order = sorted(source.documents)
    made, copy = 0, 0
    while made < n:
        doc_id = order[copy % len(order)]
        chunks, vectors = copy_document(doc_id, copy, source, rng, n - made)
        made += len(chunks)
        copy += 1
        yield chunks, vectors
