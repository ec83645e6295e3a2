"""How the embedded Gemma 3 270M answers gold questions when given the gold pages.

    .venv/bin/python benchmarks/answer_embedded.py [--n 12] [--tokens 48]

Generation in isolation: the context is the gold page(s) of each question
(the first 1,500 characters of each, as one passage per page), so retrieval
cannot be blamed. The first --n number-type questions of the Grampian gold
sets, taken round-robin across the three reports, are answered with the
embedded backend. Reported: the share of answers with at least one
citation, with a resolved citation, with a citation chosen by constrained
decoding (the base model writes none itself; see generate/answer.py; with a
single gold passage nothing is picked), saying the context lacks the answer,
the groundedness screen's verdicts, the share whose text holds the gold
figure (ragloupe.numbers.match_answer), and seconds per answer (with the
load average beside it: on a shared machine it moves).
Writes benchmarks/results/answer_embedded.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from itertools import zip_longest

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.generate.answer import answer  # noqa: E402
from ragloupe.generate.groundedness import screen_answer  # noqa: E402
from ragloupe.models import Chunk, Hit, Ranking  # noqa: E402
from ragloupe.numbers import match_answer  # noqa: E402

CORPUS = PROJECT_ROOT / "data" / "benchmarks" / "grampian"
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "answer_embedded.json"


def questions(n: int) -> list[tuple[str, dict, dict[int, str]]]:
    per_doc = []
    for path in sorted((CORPUS / "eval").glob("*.eval.json")):
        goldset = json.loads(path.read_text(encoding="utf-8"))
        doc_id = goldset["_meta"]["doc_id"]
        with open(CORPUS / "pages" / f"{doc_id}.jsonl", encoding="utf-8") as lines:
            pages = {r["page"]: r["text"] for r in map(json.loads, lines)}
        per_doc.append([(doc_id, q, pages) for q in goldset["queries"] if q["answer_type"] == "number"])
    mixed = [item for group in zip_longest(*per_doc) for item in group if item]
    return mixed[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    settings = Settings.from_env(llm_backend="embedded", llm_max_tokens=args.tokens, llm_timeout_s=600)
    rows, seconds = [], []
    load_before = os.getloadavg()
    for doc_id, query, pages in questions(args.n):
        chunks = [Chunk(f"{doc_id}-{p}", doc_id, p, 0, pages[p][:1500], 0, "clean")
                  for p in query["expected_pages"] if p in pages]
        ranking = Ranking(query["question"], "gold", tuple(Hit(c, i, 1.0) for i, c in enumerate(chunks, 1)))
        started = time.perf_counter()
        result = answer(query["question"], ranking, settings, count_tokens=lambda t: len(t) // 4)
        seconds.append(time.perf_counter() - started)
        rows.append({
            "query_id": query["query_id"], "expected": query["expected_answer"], "answer": result.text,
            "citations": len(result.citations), "resolved": len(result.citations) - len(result.unresolved_citations),
            "citation_method": result.citation_method, "support_scores": list(result.support_scores),
            "not_in_context": result.not_in_context, "screen": screen_answer(result).verdict,
            "gold_figure": match_answer(query["expected_answer"], result.text, "number").status,
        })
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    n = len(rows)
    report = {
        "command": f".venv/bin/python benchmarks/answer_embedded.py --n {args.n} --tokens {args.tokens}",
        "answers": n,
        "with_citation": round(sum(r["citations"] > 0 for r in rows) / n, 4),
        "with_resolved_citation": round(sum(r["resolved"] > 0 for r in rows) / n, 4),
        "cited_by_constrained_decoding": round(sum(r["citation_method"] == "constrained decoding"
                                                   for r in rows) / n, 4),
        "says_not_in_context": round(sum(r["not_in_context"] for r in rows) / n, 4),
        "gold_figure_found": round(sum(r["gold_figure"] == "found" for r in rows) / n, 4),
        "screen": dict(sorted(Counter(r["screen"] for r in rows).items())),
        "seconds_median": round(statistics.median(seconds), 1),
        "load_average": [load_before, os.getloadavg()],
        "rows": rows,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()
