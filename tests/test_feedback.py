"""BM25 pseudo-relevance feedback: words of the first pass's best chunks reach a page the question's words miss."""

from __future__ import annotations

import numpy as np

from ragloupe.index.lexical import build_index, tokenize
from ragloupe.models import Chunk
from ragloupe.retrieve.feedback import FeedbackConfig, expansion_terms, feedback_scores


def _chunk(n: int, text: str) -> Chunk:
    return Chunk(chunk_id=f"c{n:02d}", doc_id="d", page=n, position=0, text=text, n_tokens=len(text.split()),
                 quality="clean")


CHUNKS = [
    _chunk(1, "The pension scheme liability is valued by the actuary each year."),
    _chunk(2, "Pension scheme contributions by the employer rose; the actuary advised on liability."),
    _chunk(3, "Superannuation: the actuary valuation of the liability of the scheme."),  # no "pension"
    _chunk(4, "Car parking charges were removed at every hospital site."),
    _chunk(5, "Cleaning contracts and laundry services for hospital wards."),
    _chunk(6, "Waiting times for outpatient clinics fell over the year."),
    _chunk(7, "The board approved the capital plan for new theatres."),
    _chunk(8, "Staff sickness absence was lower than the national rate."),
]


def test_feedback_adds_the_words_the_best_chunks_share_and_reaches_a_chunk_without_the_questions():
    index = build_index(CHUNKS)
    question = tokenize("pension")
    everywhere = np.ones(len(index), dtype=bool)
    plain = index.scores(question)
    scores, added = feedback_scores(index, question, everywhere, FeedbackConfig(terms=3, docs=2, weight=0.5))
    row = {c.chunk_id: i for i, c in enumerate(index.chunks)}["c03"]
    assert plain[row] == 0 and scores[row] > 0
    assert {"actuary", "liability"} <= {word for word, _ in added}
    assert max(w for _, w in added) == 0.5


def test_no_terms_means_no_feedback():
    index = build_index(CHUNKS)
    question = tokenize("pension")
    first = index.scores(question)
    assert expansion_terms(index, question, first, np.ones(len(index), dtype=bool),
                           FeedbackConfig(terms=0, docs=2, weight=0.5)) == []
