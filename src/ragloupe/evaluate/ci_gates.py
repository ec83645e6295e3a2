"""Quality gates for CI: a run under a floor, or a candidate measurably worse than its baseline.

``ragloupe eval ... --fail-under hit@3=0.90,mrr=0.80`` and ``ragloupe compare A B
--fail-if-worse`` exit 1 with one line saying which figure fell and by how
much. The floor is on a metric's mean over the gold questions; "worse" is the
paired test of compare() at the level the user sets, so noise on a small gold
set does not fail a build.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from ragloupe.errors import GateInvalid
from ragloupe.evaluate.compare import Comparison
from ragloupe.evaluate.stats import p_text

_METRIC = re.compile(r"^(hit|recall|ndcg|mrr)(@\d+)?$")


def parse_floors(text: str) -> dict[str, float]:
    """'hit@3=0.90,mrr=0.80' -> {'hit@3': 0.9, 'mrr': 0.8}; GateInvalid saying what is wrong."""
    floors: dict[str, float] = {}
    for item in (part.strip() for part in (text or "").split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip().lower()
        if not sep or not _METRIC.match(name) or (name.startswith(("hit", "recall", "ndcg")) and "@" not in name):
            raise GateInvalid(f"--fail-under wants METRIC=FLOOR items like hit@3=0.90,mrr=0.80; got {item!r}")
        try:
            floor = float(value)
        except ValueError:
            raise GateInvalid(f"--fail-under {name}: {value.strip()!r} is not a number") from None
        if not 0.0 <= floor <= 1.0:
            raise GateInvalid(f"--fail-under {name}: the floor must lie between 0 and 1, got {floor}")
        floors[name] = floor
    if not floors:
        raise GateInvalid("--fail-under names no metric (e.g. hit@3=0.90,mrr=0.80)")
    return floors


def check_floors_exist(floors: Mapping[str, float], ks: Sequence[int]) -> None:
    """GateInvalid when a floor names a cutoff the run does not measure, before anything runs."""
    for name in floors:
        k = name.partition("@")[2]
        if k and int(k) not in ks:
            raise GateInvalid(f"--fail-under {name}: the run measures k = {', '.join(map(str, ks))}; "
                              f"add {k} to --k")


def below_floors(aggregates: Mapping[str, Mapping], floors: Mapping[str, float]) -> list[str]:
    """'hit@3 0.867 is under its floor 0.900 by 0.033' for each figure below its floor."""
    fell = []
    for name, floor in floors.items():
        mean = float(aggregates[name]["mean"])
        if mean < floor - 1e-12:
            fell.append(f"{name} {mean:.3f} is under its floor {floor:.3f} by {floor - mean:.3f}")
    return fell


def worse_metrics(comparison: Comparison, metrics: Sequence[str], alpha: float) -> list[str]:
    """'mrr fell by 0.052 (0.801 -> 0.749, p = 0.012 < 0.05)' for each metric B is measurably worse on."""
    unknown = [m for m in metrics if m not in comparison.metrics]
    if unknown:
        raise GateInvalid(f"--metrics {unknown[0]}: not measured by both runs "
                          f"(they have {', '.join(comparison.metrics)})")
    fell = []
    for name in metrics:
        result = comparison.metrics[name]
        if result["diff"] < 0 and result["p_value"] < alpha:
            fell.append(f"{name} fell by {-result['diff']:.3f} ({result['a']:.3f} -> {result['b']:.3f}, "
                        f"{p_text(result['p_value'])}, below {alpha:g})")
    return fell
