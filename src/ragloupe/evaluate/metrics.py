"""Ranking metrics over units (pages or records), per query and aggregated.

Binary relevance throughout: a unit is relevant when the gold set lists it.
Written small rather than pulled from a library so each formula is on the
page and pinned by hand-computed tests:

- Hit@k: 1 when any relevant unit is in the top k;
- Recall@k: the share of the relevant units in the top k;
- reciprocal rank: 1 / rank of the first relevant unit, 0 when none is listed
  within the cutoff (MRR is its mean);
- nDCG@k: DCG with gain 1 at rank i discounted by log2(i + 1), divided by the
  DCG of a perfect ranking of min(|relevant|, k) units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ragloupe.evaluate.stats import bootstrap_ci

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)


def dedupe(units: Iterable[str]) -> list[str]:
    """Units in first-seen order: a unit ranked twice counts at its best rank."""
    return list(dict.fromkeys(units))


def first_relevant_rank(ranked: Sequence[str], relevant: Iterable[str]) -> int | None:
    """1-based rank of the first relevant unit, or None when none is listed."""
    wanted = set(relevant)
    for rank, unit in enumerate(ranked, start=1):
        if unit in wanted:
            return rank
    return None


def hit_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    return 1.0 if any(unit in wanted for unit in ranked[:k]) else 0.0


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    if not wanted:
        return 0.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str], cutoff: int | None = None) -> float:
    rank = first_relevant_rank(ranked[:cutoff] if cutoff else ranked, relevant)
    return 1.0 / rank if rank else 0.0


def ndcg_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1)
              for rank, unit in enumerate(ranked[:k], start=1) if unit in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def query_metrics(ranked: Sequence[str], relevant: Iterable[str], ks: Sequence[int]) -> dict[str, float]:
    """All metrics of one query: hit@k, recall@k, ndcg@k and rr@k (the reciprocal rank cut
    at k) for each k, and rr (cut at the largest k), so a sweep reports MRR at every k."""
    ranked = dedupe(ranked)
    relevant = tuple(relevant)
    out: dict[str, float] = {}
    for k in ks:
        out[f"hit@{k}"] = hit_at(ranked, relevant, k)
        out[f"recall@{k}"] = recall_at(ranked, relevant, k)
        out[f"ndcg@{k}"] = ndcg_at(ranked, relevant, k)
    out["rr"] = reciprocal_rank(ranked, relevant, cutoff=max(ks))
    for k in ks:
        out[f"rr@{k}"] = reciprocal_rank(ranked, relevant, cutoff=k)
    return out


def metric_names(ks: Sequence[int]) -> list[str]:
    """Per-query metric names; rr@k come last so the older names keep their positions."""
    names = [f"{name}@{k}" for name in ("hit", "recall", "ndcg") for k in ks]
    return names + ["rr"] + [f"rr@{k}" for k in ks]


def mean_label(name: str) -> str:
    """A per-query metric's name as a mean over queries: rr -> mrr, rr@5 -> mrr@5."""
    return "m" + name if name == "rr" or name.startswith("rr@") else name


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95% bootstrap confidence interval (None when n < 2)."""

    mean: float
    low: float | None
    high: float | None
    n: int

    def as_dict(self, digits: int = 4) -> dict:
        rnd = lambda v: None if v is None else round(v, digits)  # noqa: E731
        return {"mean": rnd(self.mean), "ci_low": rnd(self.low), "ci_high": rnd(self.high), "n": self.n}


def aggregate(per_query: Sequence[Mapping[str, float]], ks: Sequence[int], seed: int = 0,
              with_ci: bool = True) -> dict[str, Estimate]:
    """Mean of every metric over queries, with bootstrap CIs. The MRR is the mean of rr."""
    out: dict[str, Estimate] = {}
    for name in metric_names(ks):
        values = [float(q[name]) for q in per_query]
        label = mean_label(name)
        if not values:
            out[label] = Estimate(0.0, None, None, 0)
            continue
        mean = sum(values) / len(values)
        low, high = bootstrap_ci(values, seed=seed) if with_ci else (None, None)
        out[label] = Estimate(mean, low, high, len(values))
    return out


def rank_survival(first_ranks: Sequence[int | None], depth: int) -> list[dict]:
    """For k = 1..depth, the share of queries whose first relevant unit is within k.

    Data for a survival plot: the curve rises at each rank where gold units
    surface and stays below 1 by the share never found within the depth.
    """
    n = len(first_ranks)
    if n == 0:
        return []
    return [{"k": k, "share": round(sum(1 for r in first_ranks if r is not None and r <= k) / n, 4)}
            for k in range(1, depth + 1)]


def recall_plateau(recall_by_k: Mapping[int, float], tolerance: float = 1e-9) -> dict:
    """Where mean recall stops improving over the k sweep, said plainly.

    The plateau is the smallest k after which no larger k tried adds recall.
    When the last step still adds recall, the curve is still climbing at the
    largest k: that edge of the sweep is not a plateau, and the text says so.
    """
    ks = sorted(recall_by_k)
    if not ks:
        return {"plateau_k": None, "still_climbing": False, "text": "no k tried"}
    if len(ks) == 1:
        return {"plateau_k": None, "still_climbing": False,
                "text": f"only k={ks[0]} tried: cannot tell where recall stops improving"}
    last, before = ks[-1], ks[-2]
    gain = recall_by_k[last] - recall_by_k[before]
    if gain > tolerance:
        return {"plateau_k": None, "still_climbing": True,
                "text": (f"recall is still climbing at the largest k tried: "
                         f"{recall_by_k[before]:.3f} at k={before} -> {recall_by_k[last]:.3f} at k={last}")}
    plateau = last
    for k in reversed(ks[:-1]):
        if recall_by_k[last] - recall_by_k[k] > tolerance:
            break
        plateau = k
    return {"plateau_k": plateau, "still_climbing": False,
            "text": f"recall stops improving at k={plateau} ({recall_by_k[plateau]:.3f}); "
                    f"larger k up to {last} adds nothing"}
