"""Does the embedded model's picked citation follow the content or the passage order?

    .venv/bin/python benchmarks/citation_order.py [--n 6] [--tokens 48]

For the first --n number-type Grampian gold questions with a single gold page
(round-robin across the three reports, as benchmarks/answer_embedded.py takes
them), the embedded Gemma 3 270M answers from two passages, the gold page and
a page three pages after it (the first 1,500 characters of each), once with
the gold page first and once second. It never cites by itself, so a citation
is picked by constrained decoding (generate/answer.py). Reported per order:
how often the pick was the gold page, the other page, or withheld (a near
tie). A pick that follows content is right in both orders; one that follows
order is right only when the gold page comes first.
Writes benchmarks/results/citation_order.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from answer_embedded import questions  # noqa: E402  (same question selection)
from ragloupe.generate.answer import answer  # noqa: E402
from ragloupe.models import Chunk, Hit, Ranking  # noqa: E402

RESULT = PROJECT_ROOT / "benchmarks" / "results" / "citation_order.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    settings = Settings.from_env(llm_backend="embedded", llm_max_tokens=args.tokens, llm_timeout_s=900)
    started, load_before = time.perf_counter(), os.getloadavg()
    rows = []
    single = [(d, q, p) for d, q, p in questions(10 * args.n) if len(q["expected_pages"]) == 1][: args.n]
    for doc_id, query, pages in single:
        gold_page = query["expected_pages"][0]
        other_page = next(p for p in range(gold_page + 3, gold_page + 40) if p in pages and pages[p].strip())
        gold = Chunk(f"{doc_id}-{gold_page}", doc_id, gold_page, 0, pages[gold_page][:1500], 0, "clean")
        other = Chunk(f"{doc_id}-{other_page}", doc_id, other_page, 0, pages[other_page][:1500], 0, "clean")
        for order, chunks in (("gold_first", [gold, other]), ("gold_second", [other, gold])):
            ranking = Ranking(query["question"], "gold", tuple(Hit(c, i, 1.0) for i, c in enumerate(chunks, 1)))
            result = answer(query["question"], ranking, settings, count_tokens=lambda t: len(t) // 4)
            picked = [c.page for c in result.citations if c.picked]
            written = [c.page for c in result.citations if not c.picked]
            outcome = ("model cited" if written else "withheld" if not picked
                       else "gold" if picked[0] == gold_page else "other")
            rows.append({"query_id": query["query_id"], "order": order, "gold_page": gold_page,
                         "other_page": other_page, "outcome": outcome,
                         "support_scores": list(result.support_scores), "answer": result.text})
            print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    summary = {order: dict(sorted(Counter(r["outcome"] for r in rows if r["order"] == order).items()))
               for order in ("gold_first", "gold_second")}
    report = {
        "command": f".venv/bin/python benchmarks/citation_order.py --n {args.n} --tokens {args.tokens}",
        "questions": len(single),
        "outcomes": summary,
        "picked_first_passage": sum(1 for r in rows if (r["outcome"] == "gold") == (r["order"] == "gold_first")
                                    and r["outcome"] in ("gold", "other")),
        "picks": sum(1 for r in rows if r["outcome"] in ("gold", "other")),
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": [load_before, os.getloadavg()],
        "rows": rows,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
