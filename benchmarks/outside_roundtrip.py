"""Does an outside run get ragloupe's own figures? A round trip through a TREC run file.

    RAGLOUPE_INDEX_DIR=/path/to/demo/index .venv/bin/python benchmarks/outside_roundtrip.py [--mode bm25]

Evaluates a ragloupe mode on the shipped Grampian gold sets, writes what it
ranked for every question as a TREC run file (the units the run report lists,
RANKED_IN_REPORT per question), scores that file as an outside run
(`ragloupe eval --run`) and pairs the two. The scorer is right when every
metric at k <= RANKED_IN_REPORT, the failure codes FP1/FP2/HIT and each
question's first relevant rank (within the units listed) come out the same (FP3 is not judged for an
outside run, so ragloupe's FP3 questions count as HIT there). Writes
benchmarks/results/outside_roundtrip.json. Needs the demo index.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, get_settings
from ragloupe.evaluate.compare import compare
from ragloupe.evaluate.outside import parse_run_file, score_outside
from ragloupe.evaluate.runs import RANKED_IN_REPORT, evaluate
from ragloupe.workspace import Workspace

GOLD = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "outside_roundtrip.json"
KS = (1, 3, 5, 10)


def trec_lines(run) -> list[str]:
    return [f"{q['query_id']} Q0 {entry['unit']} {entry['rank']} {entry['score'] or 0:.6f} ragloupe-{run.data['mode']}"
            for q in run.data["queries"] for entry in q["ranked"]]


def _listed(rank: int | None) -> int | None:
    return rank if rank is not None and rank <= RANKED_IN_REPORT else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="bm25")
    args = parser.parse_args()
    settings = get_settings()
    started = time.perf_counter()
    workspace = Workspace.open(settings)
    own = evaluate(GOLD, mode=args.mode, ks=KS, write=False, workspace=workspace)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "own.trec"
        path.write_text("\n".join(trec_lines(own)) + "\n", encoding="utf-8")
        outside = score_outside(GOLD, parse_run_file(path), settings, ks=KS, missing_as_empty=True,
                                store=workspace.store)
    comparison = compare(own, outside)
    # The file lists RANKED_IN_REPORT units per question: a deeper first relevant rank is None there.
    ranks_equal = all(_listed(a["first_relevant_rank"]) == b["first_relevant_rank"]
                      for a, b in zip(own.data["queries"], outside.data["queries"]))
    codes_own = own.data["failures"]["counts"]
    result = {
        "mode": args.mode, "questions": own.data["n_queries"], "goldsets": [p.name for p in GOLD],
        "ranked_per_question": RANKED_IN_REPORT,
        "metrics": {name: {"ragloupe": m["a"], "outside": m["b"], "diff": m["diff"], "p_value": m["p_value"]}
                    for name, m in comparison.metrics.items()},
        "max_abs_diff": max(abs(m["diff"]) for m in comparison.metrics.values()),
        "first_relevant_rank_equal": ranks_equal,
        "failures": {"ragloupe": codes_own, "outside": outside.data["failures"]["counts"]},
        "seconds": round(time.perf_counter() - started, 1),
    }
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("questions", "max_abs_diff", "first_relevant_rank_equal",
                                             "failures")}, indent=1))


if __name__ == "__main__":
    main()
