"""The synthetic corpus behind benchmarks/scale.py: copies of real documents, perturbed."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np

from ragloupe.models import Chunk

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "scale_corpus.py"
_SPEC = importlib.util.spec_from_file_location("scale_corpus", _PATH)
scale_corpus = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(scale_corpus)


def _source() -> "scale_corpus.Source":
    chunks = [Chunk(chunk_id=f"{doc}-{page}-{pos}", doc_id=doc, page=page, position=pos,
                    text=f"Total expenditure for 2020/21 was 1,234.5 against 987 in 2019 page {page}",
                    n_tokens=12, quality="clean", section="Accounts 2020-21")
              for doc in ("Report-2020-2021", "guidance") for page in (1, 2, 3) for pos in (0, 1)]
    vectors = np.random.default_rng(0).standard_normal((len(chunks), 8)).astype(np.float32)
    return scale_corpus.Source(chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def test_shift_years_moves_plain_and_fiscal_years_together():
    assert scale_corpus.shift_years("in 2020/21, after 2019 and 2020-21", -7) == "in 2013/14, after 2012 and 2013-14"


def test_redrawn_figures_keep_their_shape_and_leave_years_alone():
    rng = np.random.default_rng(1)
    out = scale_corpus.redraw_numbers("paid 1,234.5 in 2020 and 987", rng)
    assert re.fullmatch(r"paid [1-9],\d{3}\.\d in 2020 and [1-9]\d{2}", out)
    assert out != "paid 1,234.5 in 2020 and 987"


def test_noisy_vectors_are_unit_length_and_near_their_source():
    source = _source()
    moved = scale_corpus.noisy(source.vectors, np.random.default_rng(2))
    assert np.allclose(np.linalg.norm(moved, axis=1), 1.0, atol=1e-5)
    cosines = (moved * source.vectors).sum(axis=1)
    assert cosines.min() > 0.9 and cosines.max() < 0.9999


def test_synthetic_batches_give_exactly_n_chunks_with_unique_ids_and_real_pages():
    source = _source()
    chunks = [c for batch, _ in scale_corpus.synthetic_batches(source, 29, seed=3) for c in batch]
    assert len(chunks) == 29
    assert len({c.chunk_id for c in chunks}) == 29
    assert {c.page for c in chunks} == {1, 2, 3}
    # Each copy is a document of its own, its years shifted the same way in its id and text.
    copy = [c for c in chunks if c.doc_id.startswith("Report-")][0]
    first_year = re.search(r"(\d{4})-\d{4}~", copy.doc_id).group(1)
    assert f"{first_year}/" in copy.text
    assert len({c.doc_id for c in chunks}) == 5
