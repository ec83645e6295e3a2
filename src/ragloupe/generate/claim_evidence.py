"""Per claim, the few source excerpts most likely to hold its evidence, packed into verification
batches under a token budget (the evidence step of rag-facts-check, the pipeline the EEA
chatbot's Halloumi endpoint runs, which ragloupe's /check follows).

Why: putting every whole source into every verification call wastes the model's context on
text no claim is about, and a long source list does not fit at all. The steps:

1. the sources are cut into sentences (groundedness.split_sentences, offsets kept);
2. BM25 (ragloupe's own tokenizer, so "£1,278,771" and "10 mm" stay whole) ranks the
   sentences for each claim and keeps a shortlist;
3. the embedder re-ranks the shortlist by cosine similarity to the claim (skipped when no
   embedder is given: BM25 order stands) and the best few are kept;
4. each kept sentence becomes an excerpt with one neighbour on each side (evidence often
   spans two sentences); overlapping excerpts of one source are merged;
5. claims are packed, in order, into batches whose excerpts (shared excerpts counted once)
   stay under the token budget and that hold at most ``max_claims`` claims.

An excerpt keeps its source number and offsets, so a quote the model copies from it is
located in the source itself (the Halloumi segments are offsets into the sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ragloupe.generate.groundedness import split_sentences

SHORTLIST = 12  # sentences BM25 keeps per claim for the embedder to re-rank
PER_CLAIM = 3  # sentences kept per claim after re-ranking
NEIGHBOURS = 1  # sentences added on each side of a kept one


@dataclass(frozen=True)
class Excerpt:
    source: int  # 1-based source number
    start: int  # character offsets into that source's text
    end: int
    text: str


@dataclass(frozen=True)
class Batch:
    claims: tuple[int, ...]  # indices into the claims given
    excerpts: tuple[Excerpt, ...]  # what the model sees, numbered from 1 in this order
    tokens: int  # the excerpts' tokens, as counted


def evidence_for_claims(claims: Sequence[str], sources: Sequence[str],
                        embed: Callable[[list[str]], np.ndarray] | None = None,
                        per_claim: int = PER_CLAIM, shortlist: int = SHORTLIST) -> list[list[Excerpt]]:
    """For each claim, its excerpts in source order (see the module docstring)."""
    sentences = [(n, s, e) for n, text in enumerate(sources, start=1) for s, e in split_sentences(text)]
    if not sentences or not claims:
        return [[] for _ in claims]
    texts = [sources[n - 1][s:e] for n, s, e in sentences]
    scores = _bm25_scores(claims, texts)
    sentence_vectors = embed(texts) if embed is not None else None
    claim_vectors = embed(list(claims)) if embed is not None else None
    picked: list[list[Excerpt]] = []
    for i in range(len(claims)):
        order = [j for j in np.argsort(-scores[i], kind="stable")[:shortlist] if scores[i][j] > 0]
        if sentence_vectors is not None and order:
            similarity = sentence_vectors[order] @ claim_vectors[i]
            order = [order[k] for k in np.argsort(-similarity, kind="stable")]
        if not order and sentence_vectors is not None:  # no word in common: the embedder alone
            order = list(np.argsort(-(sentence_vectors @ claim_vectors[i]), kind="stable"))
        picked.append(_excerpts(sorted(order[:per_claim]), sentences, sources))
    return picked


def pack_batches(excerpts: Sequence[Sequence[Excerpt]], count_tokens: Callable[[str], int],
                 budget: int, max_claims: int) -> list[Batch]:
    """Claims (by index) in order, packed while their excerpts fit ``budget`` tokens; a claim
    whose own excerpts exceed the budget gets a batch of its own with the excerpts that fit."""
    batches: list[Batch] = []
    claims: list[int] = []
    chosen: list[Excerpt] = []
    used = 0
    cost = {ex: count_tokens(ex.text) for group in excerpts for ex in group}
    for i, group in enumerate(excerpts):
        extra = [ex for ex in group if ex not in chosen]
        need = sum(cost[ex] for ex in extra)
        if claims and (used + need > budget or len(claims) >= max_claims):
            batches.append(Batch(tuple(claims), tuple(chosen), used))
            claims, chosen, used = [], [], 0
            extra, need = list(group), sum(cost[ex] for ex in group)
        if not claims and need > budget:  # alone and still too long: keep what fits, best first
            extra, need = _fit(list(group), cost, budget)
        claims.append(i)
        chosen += extra
        used += need
    if claims:
        batches.append(Batch(tuple(claims), tuple(chosen), used))
    return batches


def _fit(group: list[Excerpt], cost: dict[Excerpt, int], budget: int) -> tuple[list[Excerpt], int]:
    kept, used = [], 0
    for ex in group:
        if used + cost[ex] <= budget or not kept:
            kept.append(ex)
            used += cost[ex]
    return kept, used


def _bm25_scores(claims: Sequence[str], texts: list[str]) -> np.ndarray:
    from rank_bm25 import BM25Okapi

    from ragloupe.index.lexical import tokenize

    corpus = [tokenize(t) or ["∅"] for t in texts]
    # epsilon 0: a term in more than half the sentences scores 0, not a made-up floor (as the index does)
    model = BM25Okapi(corpus, epsilon=0.0)
    return np.array([model.get_scores(tokenize(c)) for c in claims], dtype=float)


def _excerpts(kept: list[int], sentences: list[tuple[int, int, int]], sources: Sequence[str]) -> list[Excerpt]:
    """Each kept sentence with its neighbours in the same source; overlapping ones merged."""
    spans: list[tuple[int, int, int]] = []
    for j in kept:
        source = sentences[j][0]
        lo, hi = max(0, j - NEIGHBOURS), min(len(sentences) - 1, j + NEIGHBOURS)
        while sentences[lo][0] != source:
            lo += 1
        while sentences[hi][0] != source:
            hi -= 1
        start, end = sentences[lo][1], sentences[hi][2]
        if spans and spans[-1][0] == source and start <= spans[-1][2]:
            spans[-1] = (source, spans[-1][1], max(end, spans[-1][2]))
        else:
            spans.append((source, start, end))
    return [Excerpt(n, s, e, sources[n - 1][s:e]) for n, s, e in spans]
