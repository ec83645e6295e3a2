"""How often the groundedness screen passes a made-up figure, per format, beside the true answers it passes.

    .venv/bin/python benchmarks/screen_adversarial.py               # the reported run (seed 2)
    .venv/bin/python benchmarks/screen_adversarial.py --seed 1 \\
        --out benchmarks/results/screen_adversarial_tune.json       # the run the rules were tuned on

A made-up figure is drawn at random in one of the formats real answers use,
written into a one-sentence answer and cited to a real page of the Grampian
reports (pages/*.jsonl, the text the shipped PDFs are rendered from), with the
two following pages as further retrieved passages. A draw whose number is
written on any of those pages (at any scale: 12.3 for £12.3m, 12,300 for it
in a £000 table) is redrawn, so every screened figure is one the pages do
not state. It is *wrongly passed* when the screen says NOT_CONTRADICTED or
DERIVED. Pages are drawn from all pages with text; the figure-heavy quarter
(most figures per page: the finance tables) is also reported on its own.

Beside it:

- true_in_format: a figure that IS on the cited page, written in the same
  format (a £000 table's 12,287 as "£12.3m"), must pass;
- derived_true / derived_made_up: an answer stating two same-unit figures of
  the cited page and their sum or difference (true), or a made-up "total"
  beside the same two figures (made-up);
- the true gold answers of benchmarks/screen_gold.py (their share passing).

Thresholds were tuned on seed 1 only; seed 2 is the report. No model is
involved. Writes benchmarks/results/screen_adversarial.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

from ragloupe.config import PROJECT_ROOT
from ragloupe.generate.groundedness import extract_checkables, screen
from ragloupe.models import Chunk
from ragloupe.numbers import extract_quantities

sys.path.insert(0, str(Path(__file__).resolve().parent))
import screen_gold  # noqa: E402  (the true gold answers, screened the same way)

CORPUS = PROJECT_ROOT / "data" / "benchmarks" / "grampian"
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "screen_adversarial.json"
PASSING = ("NOT_CONTRADICTED", "DERIVED")
TARGET_MADE_UP, TARGET_TRUE = 0.02, 0.97

TEMPLATES = (
    "The figure reported for the year was {fig} [1].",
    "NHS Grampian recorded {fig} in 2021/22 [1].",
    "According to the report, it was {fig} [1].",
    "The Board's accounts show {fig} for this line [1].",
)


# ---------------------------------------------------------------------------- formats
# Each returns (text as an answer writes it, the numbers it stands for), so a
# draw can be refused when a page states it.

def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def money_millions(rng):
    value = round(_log_uniform(rng, 0.1, 1500), 1)
    suffix = rng.choice(("m", " million"))
    return f"£{value:,.1f}{suffix}", {value, value * 1e3, value * 1e6}


def money_pounds(rng):
    value = int(_log_uniform(rng, 1e4, 2e9))
    return f"£{value:,}", {value, value / 1e3, value / 1e6}


def money_thousands_note(rng):
    value = int(_log_uniform(rng, 100, 2e6))
    note = rng.choice((" (£000)", " (£'000)", "k"))
    return f"£{value:,}{note}", {value, value * 1e3, value / 1e3}


def percent(decimals):
    def draw(rng):
        value = round(rng.uniform(0.1, 99.9), decimals)
        return f"{value:.{decimals}f}%", {value}
    draw.__name__ = f"percent_{decimals}dp"
    return draw


def length(rng):
    unit = rng.choice(("mm", "m", "km"))
    value = rng.randint(10, 999) if unit == "mm" else round(rng.uniform(1, 999), 1)
    return f"{value:g} {unit}", {value}


def days(rng):
    value = rng.randint(10, 365)
    return f"{value} days", {value}


def count(rng):
    value = int(_log_uniform(rng, 1000, 500000))
    noun = rng.choice(("patients", "staff", "attendances", "operations"))
    return f"{value:,} {noun}", {value}


FORMATS = (money_millions, money_pounds, money_thousands_note, percent(0), percent(1), percent(2),
           length, days, count)


# ---------------------------------------------------------------------------- pages

def load_pages() -> list[tuple[str, int, str]]:
    pages = []
    for path in sorted((CORPUS / "pages").glob("*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            pages += [(r["doc_id"], r["page"], r["text"]) for r in map(json.loads, lines) if r["text"].strip()]
    return pages


_NUMBER_RE = re.compile(r"\d[\d,]*(?:\.\d+)?")


def page_numbers(text: str) -> set[float]:
    return {float(m.group(0).replace(",", "")) for m in _NUMBER_RE.finditer(text)}


def stated_on(values: set[float], numbers: set[float]) -> bool:
    return any(math.isclose(v, n, rel_tol=1e-9) for v in values for n in numbers)


# ---------------------------------------------------------------------------- the runs

def made_up(rng, draw, pages, index) -> str:
    """A one-sentence answer with a figure none of its passages states."""
    numbers = set().union(*(page_numbers(t) for _, _, t in pages))
    for _ in range(100):
        text, values = draw(rng)
        if not stated_on(values, numbers):
            return rng.choice(TEMPLATES).format(fig=text)
    raise RuntimeError(f"no made-up {draw.__name__} figure avoids page {index}")


def true_in_format(rng, draw_name, page_text) -> str | None:
    """A figure of the cited page written as the format writes it, or None when the page has none."""
    quantities = [q for q in extract_quantities(page_text) if "." in q.raw or "," in q.raw or q.value >= 10]
    rng.shuffle(quantities)
    thousands = bool(re.search(r"£\s?'?000|\(£000", page_text))
    for q in quantities:
        if draw_name.startswith("percent") and q.percent:
            decimals = int(draw_name.split("_")[1][0])
            written = re.sub(r"[^\d.]", "", q.raw)
            if (len(written.split(".")[1]) if "." in written else 0) == decimals:
                return f"{written}%"
        unit = re.match(r"\s?(mm|km|m|days)\b", page_text[q.end:])
        if q.percent or q.scale != 1.0:
            continue
        if unit and not q.currency:
            if draw_name == "days" and unit.group(1) == "days" and q.value >= 10:
                return f"{q.raw} days"
            if draw_name == "length" and unit.group(1) != "days":
                return f"{q.raw} {unit.group(1)}"
            continue
        if draw_name == "count" and not q.currency and "," in q.raw and not thousands:
            return f"{q.raw} patients"
        if draw_name == "money_millions" and thousands and q.scale == 1.0 and q.value >= 1000:
            return f"£{q.value / 1e3:,.1f}m"
        if draw_name == "money_thousands_note" and thousands and q.scale == 1.0 and "," in q.raw:
            return f"£{q.raw} (£000)"
        if draw_name == "money_pounds" and q.currency and q.scale == 1.0 and "," in q.raw:
            return f"£{q.raw.lstrip('£')}"
    return None


def derived_pair(rng, page_text):
    """Two money figures of the page as an answer would write them (a £000 table's bare
    figures with their note), for a sum or difference answer; None when the page has none."""
    thousands = bool(re.search(r"£\s?'?000|\(£000", page_text))
    money = [(q.value, q.raw if q.currency else f"£{q.raw} (£000)") for q in extract_quantities(page_text)
             if not q.percent and "," in q.raw and q.scale == 1.0 and (q.currency or thousands)]
    money = list(dict(money).items())
    if len(money) < 2:
        return None
    (a, a_raw), (b, b_raw) = rng.sample(money, 2)
    note = " (£000)" if "(£000)" in a_raw + b_raw else ""
    if note and not (a_raw.endswith(note) and b_raw.endswith(note)):
        return None
    return (a, a_raw), (b, b_raw), note


def screen_one(answer: str, pages) -> str:
    citations = [type("C", (), {"start": m.start(), "end": m.end(), "passage": int(m.group(1))})()
                 for m in re.finditer(r"\[(\d+)\]", answer)]
    return screen(answer, citations, [t for _, _, t in pages]).verdict


def wilson_upper(passed: int, total: int, z: float = 1.96) -> float:
    if not total:
        return 0.0
    p = passed / total
    centre = p + z * z / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return round((centre + spread) / (1 + z * z / total), 4)


def share(counts: Counter, good=PASSING) -> dict:
    total = sum(counts.values())
    passed = sum(counts[v] for v in good)
    return {"n": total, "passed": passed, "share": round(passed / total, 4) if total else None,
            "upper_95": wilson_upper(passed, total), "verdicts": dict(sorted(counts.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--n", type=int, default=400, help="made-up answers per format")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    pages = load_pages()
    by_doc: dict[str, list[int]] = {}
    for i, (doc, _, _) in enumerate(pages):
        by_doc.setdefault(doc, []).append(i)
    figures = sorted(len(extract_quantities(t)) for _, _, t in pages)
    heavy_cut = figures[3 * len(figures) // 4]

    def passages_for(i):
        doc = pages[i][0]
        same = [j for j in by_doc[doc] if j > i][:2] or [j for j in by_doc[doc] if j < i][-2:]
        return [pages[i]] + [pages[j] for j in same]

    made, heavy, truth = {}, {}, {}
    examples = []
    for draw in FORMATS:
        made[draw.__name__], heavy[draw.__name__], truth[draw.__name__] = Counter(), Counter(), Counter()
        for _ in range(args.n):
            i = rng.randrange(len(pages))
            passages = passages_for(i)
            answer = made_up(rng, draw, passages, i)
            verdict = screen_one(answer, passages)
            made[draw.__name__][verdict] += 1
            if len(extract_quantities(pages[i][2])) >= heavy_cut:
                heavy[draw.__name__][verdict] += 1
            if verdict in PASSING and len(examples) < 25:
                examples.append({"format": draw.__name__, "page": f"{pages[i][0]} p{pages[i][1]}",
                                 "answer": answer, "verdict": verdict})
            true_answer = true_in_format(rng, draw.__name__, pages[i][2])
            if true_answer:
                truth[draw.__name__][screen_one(rng.choice(TEMPLATES).format(fig=true_answer), passages)] += 1

    derived_true, derived_made_up = Counter(), Counter()
    for _ in range(args.n):
        i = rng.randrange(len(pages))
        pair = derived_pair(rng, pages[i][2])
        if pair is None:
            continue
        (big, big_raw), (small, small_raw), note = sorted(pair[:2], reverse=True) + [pair[2]]
        passages = passages_for(i)
        operation, value = rng.choice((("total", big + small), ("difference", big - small)))
        stated = f"{big_raw} and {small_raw}"
        derived_true[screen_one(f"The {operation} of {stated} is £{value:,.0f}{note} [1].", passages)] += 1
        numbers = set().union(*(page_numbers(t) for _, _, t in passages))
        for _ in range(100):
            fake = int(_log_uniform(rng, max(small / 2, 1), big * 2 + 1))
            if abs(fake - (big + small)) > 1 and abs(fake - (big - small)) > 1 \
                    and not stated_on({fake}, numbers):
                break
        derived_made_up[screen_one(f"The {operation} of {stated} is £{fake:,}{note} [1].", passages)] += 1

    gold = gold_true_passes()
    per_format = {name: share(counts) for name, counts in made.items()}
    report = {
        "command": " ".join(["benchmarks/screen_adversarial.py", *sys.argv[1:]]),
        "seed": args.seed,
        "tuned_on_seed": 1,
        "pages": len(pages),
        "figure_heavy_min_figures": heavy_cut,
        "made_up_passed": per_format,
        "made_up_passed_figure_heavy": {name: share(counts) for name, counts in heavy.items()},
        "true_in_format_passed": {name: share(counts) for name, counts in truth.items()},
        "derived_true_passed": share(derived_true),
        "derived_made_up_passed": share(derived_made_up),
        "gold_true_passed": gold,
        "targets": {"made_up_max": TARGET_MADE_UP, "gold_true_min": TARGET_TRUE},
        "meets_targets": all(v["share"] <= TARGET_MADE_UP for v in per_format.values())
                         and gold["share"] >= TARGET_TRUE,
        "passed_examples": examples,
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    summary = {name: v["share"] for name, v in per_format.items()}
    print(json.dumps({"made_up_passed": summary,
                      "figure_heavy": {n: v["share"] for n, v in report["made_up_passed_figure_heavy"].items()},
                      "true_in_format": {n: v["share"] for n, v in report["true_in_format_passed"].items()},
                      "derived_true": report["derived_true_passed"]["share"],
                      "derived_made_up": report["derived_made_up_passed"]["share"],
                      "gold_true": gold["share"], "meets_targets": report["meets_targets"]}, indent=2))


def gold_true_passes() -> dict:
    """The share of true gold answers (with a figure) that pass, screened as screen_gold.py does."""
    counts = Counter()
    for eval_path in sorted((CORPUS / "eval").glob("*.eval.json")):
        goldset = json.loads(eval_path.read_text(encoding="utf-8"))
        doc_id = goldset["_meta"]["doc_id"]
        pages = screen_gold.load_pages(doc_id)
        for query in goldset["queries"]:
            gold = [p for p in query["expected_pages"] if p in pages]
            answer = query["expected_answer"]
            if not gold or not any(c.kind == "quantity" for c in extract_checkables(answer)):
                continue
            others = screen_gold.distractors(pages, gold)
            chunks = [Chunk(f"{doc_id}-{p}", doc_id, p, 0, pages[p], 0, "clean") for p in gold + others]
            cite = "".join(f"[{i}]" for i in range(1, len(gold) + 1))
            counts[screen_gold.verdict_of(f"{answer.rstrip('.')} {cite}.", chunks)] += 1
    return share(counts)


if __name__ == "__main__":
    main()
