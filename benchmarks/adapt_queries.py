"""`ragloupe adapt --queries` on gold sets of two sizes: how many of a user's questions a query adapter needs.

    RAGLOUPE_INDEX_DIR=<a copy of the benchmark index> .venv/bin/python benchmarks/adapt_queries.py \
        [--questions small|large] [--runs shipped:0.01,off:0.1,...] [--out PATH]

On a copy of the benchmark index of benchmarks/adapt.py (the Grampian PDFs, natech/guidance.csv and
the manuals): each run is adapt/query_run.adapt_queries as the CLI runs it (five folds by question,
every question searched with an adapter trained without it, against the baseline), with a
baseline (``shipped``: refine the shipped adapter; ``off``: learn from the identity) and a ``reg``:

- ``small``: the 224 questions the adapter shipped then never read (the held-out families and the
  eighth blind set), a user's gold sets of a few dozen questions a document;
- ``large``: the 1,314 questions that adapter was trained on (the tuning families and the retired
  blind sets 1-7), from the identity only (against that adapter they are in-sample).

The figures in docs/adapt.md were measured when the shipped adapter was that one (1,314 questions);
the package's adapter has since learned sets 8 and 9 as well. The earlier one is kept as
benchmarks/results/query_adapter_1314.npz: to repeat the ``shipped`` runs, name it as the baseline
(``--runs benchmarks/results/query_adapter_1314.npz:0.01``).

An adapter a run keeps is adopted by the index as the CLI would; the script removes the adoption
after each run so the next one starts from the same index. Writes benchmarks/results/adapt_queries_<questions>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, adopted_query_adapter_file, bootstrap_environment, get_settings

bootstrap_environment()

sys.path.insert(0, str(Path(__file__).parent))
import adapt as bench  # noqa: E402  (the families)
import query_adapter as shipped_bench  # noqa: E402  (the retired blind sets)

from ragloupe.adapt.query_run import adapt_queries  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"


def question_sets(size: str) -> list[Path]:
    fams = bench.families()
    if size == "small":
        return ([p for spec in fams.values() if not spec["tuning"] for p in spec["paths"]]
                + sorted((BENCH / "confirm8").glob("*/*.json")))
    return ([p for spec in fams.values() if spec["tuning"] for p in spec["paths"]]
            + [p for spec in shipped_bench.retired_families(7).values() for p in spec["paths"]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", choices=("small", "large"), default="small")
    parser.add_argument("--runs", default="shipped:0.01,shipped:0.1,shipped:1,off:0.01,off:0.1,off:1",
                        help="baseline:reg, comma-separated")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    paths = question_sets(args.questions)
    result = {"command": f"benchmarks/adapt_queries.py --questions {args.questions} --runs {args.runs}",
              "gold_sets": [str(p.relative_to(PROJECT_ROOT)) for p in paths], "runs": {}}
    for run in args.runs.split(","):
        baseline, _, reg = run.partition(":")
        settings = get_settings(query_adapter=baseline)
        adopted = adopted_query_adapter_file(settings)
        adopted.unlink(missing_ok=True)
        outcome = adapt_queries(Workspace.open(settings), paths, reg=float(reg))
        adopted.unlink(missing_ok=True)
        table = outcome.comparison
        result["runs"][run] = {
            "questions": outcome.questions, "folds": outcome.folds, "kept": outcome.kept, "reason": outcome.reason,
            "seconds": outcome.seconds, "all": table["all"],
            "hit@1_by_set": {name: [row["before"]["hit@1"], row["after"]["hit@1"]]
                             for name, row in table.items() if name != "all"}}
        every = table["all"]
        print(f"{run}: Hit@1 {every['before']['hit@1']:.3f} -> {every['after']['hit@1']:.3f} (p {every['p']['hit@1']}), "
              f"MRR {every['before']['rr']:.3f} -> {every['after']['rr']:.3f} (p {every['p']['rr']}); "
              f"{'kept' if outcome.kept else 'not kept'}", flush=True)
    result["loadavg"] = list(os.getloadavg())
    out = args.out or PROJECT_ROOT / f"benchmarks/results/adapt_queries_{args.questions}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
