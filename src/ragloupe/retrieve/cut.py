"""Dynamic cut: stop a ranking early when the scores say the rest is padding.

Pure. Both rules are relative to the top score, so one setting means the
same thing whatever scale a mode's scores are on (cosine similarity, BM25,
RRF, a reranker's). Rules (Settings.dynamic_cut, value in
Settings.dynamic_cut_value):

- ``none``: keep everything.
- ``margin``: cut after the first hit whose drop to the next hit is at least
  ``value`` times the top score (one strong hit followed by a cliff).
- ``threshold``: keep the hits scoring at least ``value`` times the top score.

A ranking whose top score is not positive is never cut: "relative to the
top" means nothing there.
"""

from __future__ import annotations

from typing import Sequence

RULES = ("none", "margin", "threshold")


def cut_position(scores: Sequence[float], rule: str = "none", value: float = 0.0) -> int | None:
    """How many hits to keep (None: keep all). ``scores`` are in final order, best first."""
    if rule not in RULES:
        raise ValueError(f"unknown dynamic cut {rule!r}; use one of {', '.join(RULES)}")
    if rule == "none" or len(scores) < 2 or scores[0] <= 0:
        return None
    top = scores[0]
    if rule == "margin":
        for i in range(len(scores) - 1):
            if scores[i] - scores[i + 1] >= value * top:
                return i + 1
        return None
    kept = sum(1 for s in scores if s >= value * top)
    return kept if kept < len(scores) else None
