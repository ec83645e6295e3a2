"""How often the gates before generation would withhold an answer on the shipped gold questions.

Each Grampian gold question (the three shipped *.eval.json sets, 150 questions) is searched
the way `ragloupe answer` does (hybrid, k=5, filtered to its report), its context is chosen
under RAGLOUPE_CONTEXT_BUDGET_TOKENS, and both gates are run over it. No LLM is asked: the
gates run before generation. The contexts are real retrievals from one report each, so a
figure gate that fires here is either a report stating one figure two ways (a restatement,
a table and a note) or the gate's label rule pairing two different figures: the JSON keeps
every problem line so a reader can tell which.

    RAGLOUPE_INDEX_DIR=/work/cache/demo-index python benchmarks/answer_gates.py
        -> benchmarks/results/answer_gates.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragloupe.config import bootstrap_environment, get_settings  # noqa: E402

bootstrap_environment()


def main() -> None:
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.generate.answer import context_gates, context_token_counter, manifest_units, select_context
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.manifest import Manifest
    from ragloupe.index.store import open_store
    from ragloupe.retrieve.search import search
    from ragloupe.workspace import Workspace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/answer_gates.json"))
    args = parser.parse_args()
    settings = get_settings()
    workspace = Workspace.open(settings, store=open_store(settings), embedder=get_embedder(settings))
    units = manifest_units(Manifest.load(settings))
    counter = context_token_counter(settings)
    rows = []
    for path in sorted((ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json")):
        for query in load_goldset(path).queries:
            ranking = search(query.question, mode="hybrid", k=args.k, filters={"doc_ids": [query.doc_id]},
                             workspace=workspace)
            passages, _ = select_context(ranking.hits, settings.context_budget_tokens, counter)
            report = context_gates(passages, ranking, settings, units)
            rows.append({"query_id": query.query_id, "doc_id": query.doc_id, "passages": len(passages),
                         "failed": [g.name for g in report.failed],
                         "problems": [p for g in report.failed for p in g.problems]})
    total = len(rows)
    summary = {"questions": total, "k": args.k, "mode": "hybrid",
               "context_budget_tokens": settings.context_budget_tokens,
               "withheld": sum(1 for r in rows if r["failed"]),
               "citations_failed": sum(1 for r in rows if "citations" in r["failed"]),
               "figures_failed": sum(1 for r in rows if "figures" in r["failed"])}
    summary["withheld_share"] = round(summary["withheld"] / max(total, 1), 4)
    Path(args.out).write_text(json.dumps({"summary": summary, "queries": rows}, indent=1, ensure_ascii=False) + "\n",
                              encoding="utf-8")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
