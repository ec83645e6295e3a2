"""Fusion of several engines' ranked lists into one: weighted RRF, or a min-max score sum.

Pure functions over ids and scores: no chunks, no store, no settings. The
caller passes each engine's full candidate window (before any cut to k), so a
chunk that one engine ranks 40th can still be lifted by the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

# "learned" is ranked by retrieve/learned.py over per-candidate features (it needs the
# chunks, not only ids and scores); search() applies it after an RRF pass that gathers the candidates.
METHODS = ("rrf", "minmax", "learned")
# The methods fuse() computes from the lists alone (learned fusion falls back to one of them).
FIXED_METHODS = ("rrf", "minmax")


@dataclass(frozen=True)
class Fused:
    """One id after fusion: its fused score and each engine's 1-based rank (None: not listed)."""

    id: str
    score: float
    ranks: dict[str, int | None] = field(default_factory=dict)


def first_ranks(ids: Sequence[str]) -> dict[str, int]:
    """id -> 1-based rank of its first occurrence; a repeated id counts once, at its best rank."""
    ranks: dict[str, int] = {}
    for position, item in enumerate(ids, start=1):
        ranks.setdefault(item, position)
    return ranks


def rrf(rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float] | None = None,
        k: int = 60) -> list[Fused]:
    """Weighted Reciprocal Rank Fusion over 1-based ranks.

    score(d) = sum over engines e that list d of weight_e / (k + rank_e(d)).
    A chunk missing from an engine's list gets nothing from that engine and
    its rank there is None, never an invented rank. RRF uses 1-based ranks:
    with 0-based ranks the first hit of a one-engine list would outweigh a
    hit both engines agree on.
    """
    weights = weights or {}
    per_engine = {engine: first_ranks(ids) for engine, ids in rankings.items()}
    scores: dict[str, float] = {}
    for engine, ranks in per_engine.items():
        weight = float(weights.get(engine, 1.0))
        for item, rank in ranks.items():
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return _ordered(scores, per_engine)


def minmax(scored: Mapping[str, Sequence[tuple[str, float]]],
           weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Min-max normalised weighted sum of the engines' raw scores.

    Each engine's scores are scaled to [0, 1] over its own list (best 1,
    worst listed 0; a list whose scores are all equal scales to 1), then
    summed with the weights. An engine that does not list a chunk adds 0.
    Repeated ids keep their first (best-ranked) score.
    """
    weights = weights or {}
    per_engine: dict[str, dict[str, int]] = {}
    scores: dict[str, float] = {}
    for engine, pairs in scored.items():
        per_engine[engine] = first_ranks([item for item, _ in pairs])
        first_score: dict[str, float] = {}
        for item, value in pairs:
            first_score.setdefault(item, float(value))
        if not first_score:
            continue
        weight = float(weights.get(engine, 1.0))
        for item, normalised in min_max_scaled(first_score).items():
            scores[item] = scores.get(item, 0.0) + weight * normalised
    return _ordered(scores, per_engine)


def min_max_scaled(values: Mapping[str, float]) -> dict[str, float]:
    """One engine's scores scaled to [0, 1] over its list: best 1, worst 0, all equal 1."""
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {item: (value - low) / span if span > 0 else 1.0 for item, value in values.items()}


def fuse(method: str, scored: Mapping[str, Sequence[tuple[str, float]]],
         weights: Mapping[str, float] | None = None, k: int = 60) -> list[Fused]:
    """Dispatch on the method name ("rrf" or "minmax"); scored lists are best first."""
    if method == "rrf":
        return rrf({engine: [item for item, _ in pairs] for engine, pairs in scored.items()},
                   weights, k)
    if method == "minmax":
        return minmax(scored, weights)
    if method == "learned":
        raise ValueError("learned fusion needs the chunks and their features: it runs in search(), "
                         "not in fusion.fuse")
    raise ValueError(f"unknown fusion method {method!r}; use one of {', '.join(METHODS)}")


def _ordered(scores: dict[str, float], per_engine: dict[str, dict[str, int]]) -> list[Fused]:
    """Best first. Ties go to the better best rank in any engine, then to the id,
    so the same inputs always give the same order."""
    engines = list(per_engine)

    def best_rank(item: str) -> int:
        return min((ranks[item] for ranks in per_engine.values() if item in ranks), default=10**9)

    ordered = sorted(scores, key=lambda item: (-scores[item], best_rank(item), item))
    return [Fused(item, scores[item], {e: per_engine[e].get(item) for e in engines})
            for item in ordered]
