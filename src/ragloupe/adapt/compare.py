"""Before and after an adaptation, on the same gold questions: per set and pooled, with the
paired test, and the rule that says whether the adapted model is kept.

The rule (``decide``): the adapted model wins when, in the mode the user searches with, its
Hit@1 is not lower than the current model's on ANY gold set and its MRR over all the questions
pooled is higher. A tie keeps the current model: re-embedding costs time and a model nobody
showed to be better is no reason to change the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ragloupe.evaluate.stats import paired_bootstrap_ci, paired_permutation_p

MEASURES = ("hit@1", "hit@3", "rr")  # rr: the reciprocal rank (cut at 10), its mean the MRR
LABELS = {"hit@1": "Hit@1", "hit@3": "Hit@3", "rr": "MRR"}

# Per gold set, per question (in the set's order): {"hit@1", "hit@3", "rr"}.
Scores = Mapping[str, Sequence[Mapping[str, float]]]


@dataclass(frozen=True)
class Decision:
    keep_adapted: bool
    reason: str


def per_set_scores(report_data: dict) -> dict[str, list[dict[str, float]]]:
    """A run report's questions grouped by gold set, each with the measures compared."""
    out: dict[str, list[dict[str, float]]] = {}
    for query in report_data["queries"]:
        out.setdefault(query["goldset"], []).append({m: float(query["metrics"][m]) for m in MEASURES})
    return out


def compare(before: Scores, after: Scores) -> dict:
    """Per gold set and pooled ("all"): n, each measure's mean before and after, the paired
    difference's 95% CI and the paired permutation p-value."""
    sets = sorted(before)
    table = {name: _paired(before[name], after[name]) for name in sets}
    pooled_before = [q for name in sets for q in before[name]]
    pooled_after = [q for name in sets for q in after[name]]
    table["all"] = _paired(pooled_before, pooled_after)
    return table


def decide(table: Mapping[str, dict], new: str = "the adapted model", current: str = "the current model"
           ) -> Decision:
    """The rule of this module's docstring, over compare()'s table. ``new`` and ``current`` name what
    is compared in the reason (`ragloupe adapt --queries` compares query adapters)."""
    sets = [name for name in table if name != "all"]
    if not sets or not table["all"]["n"]:
        return Decision(False, f"no gold question to compare on: {current} stays")
    lower = [name for name in sets
             if table[name]["after"]["hit@1"] < table[name]["before"]["hit@1"]]
    if lower:
        return Decision(False, f"Hit@1 is lower with {new} on {', '.join(lower)}: {current} stays")
    gain = table["all"]["after"]["rr"] - table["all"]["before"]["rr"]
    if gain <= 0:
        return Decision(False, f"MRR over all questions does not rise ({gain:+.3f}): {current} stays")
    return Decision(True, f"Hit@1 not lower on any gold set and MRR {gain:+.3f} over all questions: "
                          f"{new} is kept")


def _paired(before: Sequence[Mapping[str, float]], after: Sequence[Mapping[str, float]]) -> dict:
    if len(before) != len(after):
        raise ValueError("before and after must score the same questions")
    row = {"n": len(before), "before": {}, "after": {}, "difference_ci": {}, "p": {}}
    for m in MEASURES:
        a, b = [q[m] for q in after], [q[m] for q in before]
        row["before"][m] = round(sum(b) / len(b), 4) if b else None
        row["after"][m] = round(sum(a) / len(a), 4) if a else None
        low, high = paired_bootstrap_ci(a, b) if a else (None, None)
        row["difference_ci"][m] = [None if low is None else round(low, 4), None if high is None else round(high, 4)]
        row["p"][m] = round(paired_permutation_p(a, b), 4) if a else None
    return row


def table_lines(table: Mapping[str, dict]) -> list[str]:
    """The comparison as text lines: one per gold set, then all questions pooled."""
    lines = [f"{'gold set':<32} {'n':>4}  " + "  ".join(f"{LABELS[m]:>21}" for m in MEASURES)]
    for name, row in table.items():
        cells = []
        for m in MEASURES:
            before, after, p = row["before"][m], row["after"][m], row["p"][m]
            cells.append(f"{_f(before)} -> {_f(after)} p={_f(p, 2)}" if before is not None else "-")
        lines.append(f"{name[:32]:<32} {row['n']:>4}  " + "  ".join(f"{c:>21}" for c in cells))
    return lines


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
