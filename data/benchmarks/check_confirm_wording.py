"""Wording check for the confirmation gold sets (confirm, confirm2, confirm3, confirm4): the
longest run of consecutive content words a question shares with each of its expected pages (or
Natech chapters). One script for every set: each set's writer ran a copy of it, and the copies
differed only in the folder they read.

A question marked "paraphrased" fails when it shares a run of 3 or more content words with any
expected page; the script prints every question and exits 1 if any paraphrased question fails
(2, with one line, when a set folder or file it is given does not exist).
Stdlib only. Usage: python data/benchmarks/check_confirm_wording.py [SET | confirm-json ...]
(SET: a folder name such as confirm3; nothing: every confirm* set)
"""

import csv
import json
import re
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
FAIL_RUN = 3

STOPWORDS = set(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves s t don may might must shall also its
    per via etc e g ie eg""".split()
)


def content_words(text):
    """Lower-cased alphanumeric tokens with stopwords removed, in reading order."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


def longest_shared_run(question_words, page_words):
    """Length and words of the longest run of consecutive content words found in both sequences."""
    best, best_end = 0, 0
    previous = [0] * (len(page_words) + 1)
    for i, qw in enumerate(question_words, 1):
        current = [0] * (len(page_words) + 1)
        for j, pw in enumerate(page_words, 1):
            if qw == pw:
                current[j] = previous[j - 1] + 1
                if current[j] > best:
                    best, best_end = current[j], i
        previous = current
    return best, question_words[best_end - best:best_end]


def load_units(gold_path, doc_id):
    """Page (or chapter) texts keyed by their unit number as a string."""
    if gold_path.parent.name == "natech":
        with open(BENCH_DIR / "natech" / "guidance.csv", newline="", encoding="utf-8") as f:
            return {row["Chapter"]: f"{row['Title']} {row['Content']}" for row in csv.DictReader(f)}
    family = gold_path.parent.name
    units = {}
    with open(BENCH_DIR / family / "pages" / f"{doc_id}.jsonl", encoding="utf-8") as f:
        for line in f:
            page = json.loads(line)
            units[str(page["page"])] = page["text"]
    return units


def check_file(gold_path):
    """Print one line per question; return the ids of paraphrased questions that fail."""
    gold = json.loads(gold_path.read_text(encoding="utf-8"))
    doc_id = gold["_meta"].get("doc_id", "guidance")
    units = load_units(gold_path, doc_id)
    failures = []
    print(f"# {gold_path.relative_to(BENCH_DIR)}")
    for query in gold["queries"]:
        expected = query.get("expected_pages") or query.get("expected_chapters")
        question_words = content_words(query["question"])
        runs = []
        for unit in expected:
            length, words = longest_shared_run(question_words, content_words(units[str(unit)]))
            runs.append((length, unit, words))
        worst = max(runs, key=lambda r: r[0])
        wording = query.get("wording", "?")
        failed = wording == "paraphrased" and worst[0] >= FAIL_RUN
        if failed:
            failures.append(query["query_id"])
        per_unit = ", ".join(f"{unit}:{length}" for length, unit, _ in runs)
        flag = "FAIL" if failed else "ok"
        print(f"{flag:4} {query['query_id']:16} {wording:11} longest run {worst[0]} "
              f"[{' '.join(worst[2])}] per unit {per_unit}")
    return failures


def main(argv):
    sets = [BENCH_DIR / a for a in argv if (BENCH_DIR / a).is_dir()] or \
        ([] if argv else sorted(BENCH_DIR.glob("confirm*/")))
    paths = [Path(a).resolve() for a in argv if not (BENCH_DIR / a).is_dir()] + sorted(
        p for folder in sets for p in folder.rglob("*.confirm.json"))
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        print(f"no such set folder or gold set file: {', '.join(missing)}", file=sys.stderr)
        return 2
    failures = []
    for path in paths:
        failures += check_file(path)
    print(f"paraphrased questions with a shared run >= {FAIL_RUN}: {len(failures)}"
          + (f" ({', '.join(failures)})" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
