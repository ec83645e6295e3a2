"""What the dynamic cut does to the page view: pages kept in the top 10, and Hit@k, per rule.

    .venv/bin/python benchmarks/dynamic_cut.py [--mode hybrid]

Runs the 150 Grampian gold questions, each scoped to its own report, through
search() on the index in RAGLOUPE_INDEX_DIR (build it with `make index`),
once without a cut and once per rule below, and writes
benchmarks/results/dynamic_cut.json. Hit@k is judged on the page view, as
the evaluation does; "pages_in_top10" is how many pages the cut left of the
10 shown (10 when nothing was cut).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.index.embedder import get_embedder  # noqa: E402
from ragloupe.index.store import open_store  # noqa: E402
from ragloupe.retrieve.search import search  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

GOLD = sorted((PROJECT_ROOT / "data" / "benchmarks" / "grampian" / "eval").glob("*.eval.json"))
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "dynamic_cut.json"
RULES = [("none", 0.0), ("threshold", 0.6), ("threshold", 0.75), ("threshold", 0.85),
         ("margin", 0.05), ("margin", 0.1), ("margin", 0.25)]
KS = (1, 3, 5, 10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    workspace = Workspace.open(settings, store=open_store(settings), embedder=get_embedder(settings))
    questions = [q for path in GOLD for q in json.loads(path.read_text(encoding="utf-8"))["queries"]]
    rows = []
    for rule, value in RULES:
        kept, hits = [], {k: 0 for k in KS}
        for q in questions:
            ranking = search(q["question"], args.mode, 10, {"doc_ids": [q["doc_id"]]},
                             workspace=workspace, dynamic_cut=rule, dynamic_cut_value=value)
            units = [p.unit for p in ranking.pages]
            gold = {f"{q['doc_id']}#p{page}" for page in q["expected_pages"]}
            kept.append(min(len(units), 10))
            for k in KS:
                hits[k] += bool(gold & set(units[:k]))
        row = {"rule": rule, "value": value,
               "pages_in_top10_mean": round(statistics.fmean(kept), 2),
               "queries_cut": sum(1 for n in kept if n < 10),
               **{f"hit@{k}": round(hits[k] / len(questions), 3) for k in KS}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    report = {"benchmark": "dynamic_cut", "mode": args.mode, "questions": len(questions),
              "indexed_chunks": store.count(),
              # The cut is relative to the top score, so its effect depends on the score scale.
              "settings": {name: getattr(settings, name) for name in (
                  "chunk_tokens", "candidate_window", "fusion", "rrf_k", "weight_dense",
                  "weight_bm25", "page_aggregation", "lexical_rerank")},
              "command": "python benchmarks/dynamic_cut.py " + " ".join(argv or sys.argv[1:]),
              "rules": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
