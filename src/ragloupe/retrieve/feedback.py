"""Pseudo-relevance feedback for BM25: words of the first pass's best chunks added to the question.

A question that does not use its page's words misses it in BM25 however the
words are weighted. Feedback (RM3-style) takes the ``docs`` best chunks of a
first BM25 pass, weighs each word in them by how much of each chunk it makes
times that chunk's share of the first-pass score and by its rarity in the
corpus (idf), and adds the ``terms`` heaviest words the question lacks to a
second pass, each scaled by its weight relative to the heaviest and by
``weight``. Settings.bm25_feedback_terms = 0 (the default) leaves BM25 as it was.
Measured in benchmarks/results/signals.json.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ragloupe.index.lexical import LexicalIndex, tokenize


@dataclass(frozen=True)
class FeedbackConfig:
    terms: int  # words added (0: no feedback)
    docs: int  # first-pass chunks they are drawn from
    weight: float  # the added words' share against the question's own (each question word weighs 1)


def expansion_terms(index: LexicalIndex, query_tokens: list[str], first: np.ndarray, eligible: np.ndarray,
                    config: FeedbackConfig) -> list[tuple[str, float]]:
    """(word, weight in (0, weight]) of the words feedback adds, heaviest first."""
    rows = np.flatnonzero(eligible & (first > 0))
    if not rows.size or config.terms <= 0:
        return []
    top = rows[np.lexsort((rows, -first[rows]))][:max(int(config.docs), 1)]
    shares = first[top] / first[top].sum()
    freq = document_frequencies(index)
    n = len(index)
    own = set(query_tokens)
    weights: Counter = Counter()
    for row, share in zip(top, shares):
        tokens = tokenize(index.chunks[row].search_text)
        counts = Counter(t for t in tokens if t not in own and not any(ch.isdigit() for ch in t))
        for token, count in counts.items():
            df = freq.get(token, 0)
            if df < 2:  # a word of one chunk only says nothing about any other
                continue
            weights[token] += share * count / len(tokens) * math.log(n / df)
    chosen = weights.most_common(int(config.terms))
    if not chosen:
        return []
    heaviest = chosen[0][1]
    return [(token, config.weight * w / heaviest) for token, w in chosen]


def feedback_scores(index: LexicalIndex, query_tokens: list[str], eligible: np.ndarray,
                    config: FeedbackConfig) -> tuple[np.ndarray, list[tuple[str, float]]]:
    """The second pass's score of every chunk (the question's BM25 plus the weighted added words) and the words."""
    first = index.scores(query_tokens)
    added = expansion_terms(index, query_tokens, first, eligible, config)
    scores = first.copy()
    for token, weight in added:
        scores += weight * index.scores([token])
    return scores, added


def document_frequencies(index: LexicalIndex) -> Counter:
    """How many chunks of the index hold each token: computed once per index and kept on it."""
    found = index.__dict__.get("_document_frequencies")
    if found is None:
        found = Counter()
        for chunk in index.chunks:
            found.update(set(tokenize(chunk.search_text)))
        index.__dict__["_document_frequencies"] = found
    return found
