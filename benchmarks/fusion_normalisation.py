"""How min-max fusion scales each engine's scores, swapped for other normalisations, on retired blind sets.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/fusion_normalisation.py \
        [--sets confirm15,confirm16] [--out PATH]

Min-max fusion (retrieve/fusion.py) stretches each engine's scores over its candidate list to
[0, 1] before the weighted sum, so a BM25 list whose best score is barely above the rest still
gives its first chunk the full weight. Per set, the default mode (hybrid, dense:BM25 2:1, the
settings in force) is scored by `ragloupe eval`'s evaluate() as benchmarks/confirm.py scores it,
each question in its own document, with each engine's scores scaled instead by:

- ``minmax``: as shipped;
- ``max``: divided by the list's best (zero stays zero: a weak BM25 list stays weak);
- ``z``: standardised over the list (mean 0, standard deviation 1);
- ``dbsf``: distribution-based score fusion, min-max between the mean -/+ 3 standard deviations,
  clipped to [0, 1];
- ``dbsf2``: the same between -/+ 2 standard deviations.

Writes, per normalisation and family (the reports, their paraphrased and natural questions, the
manuals, the Natech records), how many questions have the right unit first, to
benchmarks/results/fusion_normalisation.json. Nothing is chosen here: the sets were spent.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from confirm import confirmation_sets, question_facts  # noqa: E402  (bootstraps the environment)

from ragloupe.config import PROJECT_ROOT, get_settings  # noqa: E402
from ragloupe.evaluate.runs import evaluate  # noqa: E402
from ragloupe.retrieve import fusion  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

SHIPPED = fusion.min_max_scaled  # min-max fusion's weighted sum and order stay; only this is swapped


def scaled(values: dict[str, float], how: str) -> dict[str, float]:
    """One engine's first scores, scaled by ``how`` (see the module docstring)."""
    if how == "minmax":
        return SHIPPED(values)
    if how == "max":
        high = max(values.values())
        return {k: v / high if high else 0.0 for k, v in values.items()}
    mean, spread = statistics.fmean(values.values()), statistics.pstdev(values.values()) or 1.0
    if how == "z":
        return {k: (v - mean) / spread for k, v in values.items()}
    width = {"dbsf": 3, "dbsf2": 2}[how]
    bottom, top = mean - width * spread, mean + width * spread
    return {k: min(1.0, max(0.0, (v - bottom) / (top - bottom))) for k, v in values.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="confirm15,confirm16")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/fusion_normalisation.json")
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    workspace = Workspace.open(get_settings())
    found: dict = {}
    try:
        for how in ("minmax", "max", "z", "dbsf", "dbsf2"):
            fusion.min_max_scaled = lambda values, how=how: scaled(values, how)
            counts: Counter = Counter()
            for name in sets:
                paths = confirmation_sets(name)
                facts = question_facts(paths)
                report = evaluate(paths, mode="hybrid", scope="doc", write=False, workspace=workspace)
                for row in report.data["queries"]:
                    fact = facts[(row["goldset"], str(row["query_id"]))]
                    hit = int(row["metrics"]["hit@1"])
                    for family in {"all", fact["kind"], fact["family"]}:
                        counts[family] += hit
                    counts[f"n {fact['kind']}"] += 1
                    counts[f"n {fact['family']}"] += 1
                    counts["n all"] += 1
            found[how] = dict(sorted(counts.items()))
            print(how, {k: v for k, v in sorted(counts.items()) if not k.startswith("n ")})
    finally:
        fusion.min_max_scaled = SHIPPED
    result = {"command": f"python benchmarks/fusion_normalisation.py --sets {args.sets}", "sets": sets,
              "mode": "hybrid", "weights": {"dense": workspace.settings.weight_dense, "bm25": workspace.settings.weight_bm25},
              "found_first": found}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
