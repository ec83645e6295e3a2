"""How the groundedness screen judges the gold answers, true, altered and mis-cited.

    .venv/bin/python benchmarks/screen_gold.py

For every Grampian gold query whose expected answer holds a figure, the
passages are the gold pages' text (pages/*.jsonl) followed by two other
pages of the same report (distractors), and three answers are screened:

- true:      the gold answer, citing the gold pages. Expected NOT_CONTRADICTED,
             or DERIVED where the gold answer is a computed value;
- altered:   the same answer with one digit of its first figure changed
             (to a value that is in none of the passages). Expected UNSUPPORTED;
- miscited:  the true answer citing only a distractor page. Expected
             MISATTRIBUTED (or UNSUPPORTED when the figure is derived).

Text-only gold answers are screened too (true answer only): their share of
UNVERIFIABLE shows how much of a corpus the screen cannot check.
No model is involved: the figures depend only on the code and the corpus.
Writes benchmarks/results/screen_gold.json.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter

from ragloupe.config import PROJECT_ROOT
from ragloupe.generate.citations import parse_citations
from ragloupe.generate.groundedness import extract_checkables, screen
from ragloupe.models import Chunk

CORPUS = PROJECT_ROOT / "data" / "benchmarks" / "grampian"
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "screen_gold.json"


def load_pages(doc_id: str) -> dict[int, str]:
    with open(CORPUS / "pages" / f"{doc_id}.jsonl", encoding="utf-8") as lines:
        return {record["page"]: record["text"] for record in map(json.loads, lines)}


def distractors(pages: dict[int, str], gold: list[int], n: int = 2) -> list[int]:
    """The nearest non-gold pages with text after the gold ones (finance tables sit together)."""
    chosen, page = [], max(gold) + 3
    while len(chosen) < n and page != max(gold):
        if page in pages and page not in gold and pages[page].strip():
            chosen.append(page)
        page = page + 1 if page < max(pages) else 1
    return chosen


def alter(answer: str, passages: list[str]) -> str | None:
    """The answer with one digit of its first checkable figure changed, or None."""
    token = next((c for c in extract_checkables(answer) if c.kind == "quantity"), None)
    if token is None:
        return None
    # Only the figure's own digits: not those of a "(£000)" scale note after it.
    number_end = token.start + len(re.match(r"[-−–]?[£$€]?\s?[\d,.]*", answer[token.start:]).group(0))
    digits = [i for i in range(token.start, number_end) if answer[i].isdigit()]
    for position in reversed(digits):
        for new in "3719":
            if new == answer[position]:
                continue
            candidate = answer[:position] + new + answer[position + 1:]
            changed = candidate[token.start:token.end]
            if not any(changed in p for p in passages):
                return candidate
    return None


def verdict_of(answer: str, chunks: list[Chunk]) -> str:
    return screen(answer, parse_citations(answer, chunks), [c.text for c in chunks]).verdict


def main() -> None:
    started = time.perf_counter()
    results: dict[str, Counter] = {name: Counter() for name in ("true", "altered", "miscited", "text_true")}
    examples: list[dict] = []
    n_screens = 0
    for eval_path in sorted((CORPUS / "eval").glob("*.eval.json")):
        goldset = json.loads(eval_path.read_text(encoding="utf-8"))
        doc_id = goldset["_meta"]["doc_id"]
        pages = load_pages(doc_id)
        for query in goldset["queries"]:
            gold = [p for p in query["expected_pages"] if p in pages]
            if not gold:
                continue
            others = distractors(pages, gold)
            chunks = [Chunk(f"{doc_id}-{p}", doc_id, p, 0, pages[p], 0, "clean") for p in gold + others]
            cite_gold = "".join(f"[{i}]" for i in range(1, len(gold) + 1))
            true_answer = f"{query['expected_answer'].rstrip('.')} {cite_gold}."
            has_figure = any(c.kind == "quantity" for c in extract_checkables(query["expected_answer"]))
            if not has_figure:
                results["text_true"][verdict_of(true_answer, chunks)] += 1
                n_screens += 1
                continue
            true_verdict = verdict_of(true_answer, chunks)
            results["true"][true_verdict] += 1
            miscited = f"{query['expected_answer'].rstrip('.')} [{len(gold) + 1}]."
            results["miscited"][verdict_of(miscited, chunks)] += 1
            altered = alter(true_answer, [c.text for c in chunks])
            if altered:
                results["altered"][verdict_of(altered, chunks)] += 1
            n_screens += 3 if altered else 2
            if true_verdict not in ("NOT_CONTRADICTED", "DERIVED") and len(examples) < 10:
                examples.append({"query_id": query["query_id"], "answer": true_answer, "verdict": true_verdict})
    elapsed = time.perf_counter() - started
    report = {
        "command": ".venv/bin/python benchmarks/screen_gold.py",
        "verdicts": {name: dict(sorted(counts.items())) for name, counts in results.items()},
        "totals": {name: sum(counts.values()) for name, counts in results.items()},
        "true_passes": _share(results["true"], ("NOT_CONTRADICTED", "DERIVED")),
        "altered_caught": _share(results["altered"], ("UNSUPPORTED",)),
        "miscited_caught": _share(results["miscited"], ("MISATTRIBUTED", "UNSUPPORTED")),
        "text_unverifiable": _share(results["text_true"], ("UNVERIFIABLE",)),
        "true_answers_not_passing": examples,
        "screens": n_screens,
        "ms_per_screen": round(1000 * elapsed / max(n_screens, 1), 2),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "true_answers_not_passing"}, indent=2))


def _share(counts: Counter, good: tuple[str, ...]) -> float:
    total = sum(counts.values())
    return round(sum(counts[g] for g in good) / total, 4) if total else 0.0


if __name__ == "__main__":
    main()
