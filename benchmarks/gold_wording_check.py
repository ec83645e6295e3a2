"""Check that gold questions do not copy the wording of their gold pages.

For each question of a gold file, prints the longest run of consecutive content words
(stopwords dropped, lower-cased, a plural "s" stripped) that the question shares with each of
its expected pages or records. Exits 1 if any run is 3 words or longer. Standard library only,
so the check cannot lean on ragloupe's own ranking code.

    python benchmarks/gold_wording_check.py GOLD.json PAGES.jsonl
    python benchmarks/gold_wording_check.py natech/paraphrased.gold.json natech/guidance.csv

PAGES is the page jsonl ({"doc_id", "page", "text"} per line) or, for record-level sets with
``expected_chapters``, the CSV with Chapter and Content columns.
"""
from __future__ import annotations

import csv
import json
import re
import sys

STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
down during each few for from further had hadn't has hasn't have haven't having he her here hers
herself him himself his how i if in into is isn't it it's its itself let's me more most mustn't my
myself no nor not of off on once only or other ought our ours ourselves out over own same shan't
she should shouldn't so some such than that that's the their theirs them themselves then there
there's these they this those through to too under until up very was wasn't we were weren't what
what's when where which while who whom why will with won't would wouldn't you your yours yourself
yourselves also does did do whether which many much may might must shall us per via etc its
""".split())
RUN_LIMIT = 3
TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")


def content_words(text: str) -> list[str]:
    """The text's content words in order: lower-cased, stopwords dropped, a plural s stripped."""
    words = []
    for raw in TOKEN.findall(text.lower().replace("’", "'")):
        word = raw[:-2] if raw.endswith("'s") else raw
        if word in STOPWORDS or not word:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


def longest_shared_run(question: list[str], page: list[str]) -> tuple[int, list[str]]:
    """The longest run of consecutive words of ``question`` that also stands consecutively in ``page``."""
    best, best_at = 0, 0
    previous = [0] * (len(page) + 1)
    for i in range(1, len(question) + 1):
        current = [0] * (len(page) + 1)
        for j in range(1, len(page) + 1):
            if question[i - 1] == page[j - 1]:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best, best_at = current[j], i
        previous = current
    return best, question[best_at - best:best_at]


def load_units(path: str) -> dict[str, str]:
    """Page number (as text) or Chapter value -> text."""
    if path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8") as handle:
            return {row["Chapter"].strip(): row["Content"] for row in csv.DictReader(handle)}
    units = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                units[str(record["page"])] = record["text"]
    return units


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0])
        print("usage: gold_wording_check.py GOLD.json PAGES.jsonl|RECORDS.csv")
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        gold = json.load(handle)
    units = load_units(argv[2])
    unit_words = {key: content_words(text) for key, text in units.items()}
    failures = 0
    for query in gold["queries"]:
        expected = query.get("expected_pages") or query.get("expected_chapters") or []
        words = content_words(query["question"])
        cells = []
        for unit in expected:
            key = str(unit)
            if key not in unit_words:
                cells.append(f"{key}: MISSING")
                failures += 1
                continue
            run, shared = longest_shared_run(words, unit_words[key])
            flag = " FAIL" if run >= RUN_LIMIT else ""
            failures += bool(flag)
            cells.append(f"{key}: {run} {' '.join(shared) or '-'}{flag}")
        print(f"{query['query_id']}\t" + "; ".join(cells))
    print(f"{len(gold['queries'])} questions, {failures} failing (run >= {RUN_LIMIT} or missing unit)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
