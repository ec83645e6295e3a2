"""How far fusing dense and BM25 could go on a confirmation set already scored, and where the default misses.

    .venv/bin/python benchmarks/confirm_ceiling.py --set confirm7 [--label bundled] [--with LABEL]

Reads benchmarks/results/<set>_<label>.json, written by benchmarks/confirm.py (each question's
Hit@1 and reciprocal rank at 10 in the dense, bm25 and hybrid modes); searches nothing. Per
question it notes which of dense alone, BM25 alone and the default rank the right page first,
and writes to benchmarks/results/<set>_<label>_ceiling.json:

- ``patterns``: how many questions have each (dense, bm25, default) Hit@1 pattern;
- ``ceiling``: the share with the right page first in dense or in BM25, the Hit@1 a perfect
  per-question choice between the two engines' first pages would reach;
- ``neither``: how many have it first in neither engine;
- ``default_misses_by_rank``: the default's misses by the rank of the first right page
  (2, 3, 4-10, beyond 10);
- ``by_family``: the ceiling and the default's Hit@1 for the Grampian reports, the manuals and
  the Natech records apart (the issue's targets are per family).

``--with LABEL`` reads that label's run of the same set too (another index, e.g. one built with
the bundled model) and adds ``ceiling_with_<LABEL>_dense``, overall and per family: the share
with the right page first in dense, BM25 or the other index's dense, what a third engine made of
that model could add to the choice. The file is then <set>_<label>_ceiling_with_<LABEL>.json.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def rank_band(reciprocal_rank: float) -> str:
    """The band of a miss's first right page, from its reciprocal rank at 10 (0: beyond 10)."""
    if reciprocal_rank <= 0:
        return ">10"
    rank = round(1 / reciprocal_rank)
    return str(rank) if rank <= 3 else "4-10"


def ceiling(questions: dict) -> dict:
    """confirm.py's per-question figures ({mode: {key: [hit@1, rr@10]}}) -> the counts above."""
    keys = list(questions["hybrid"])
    patterns, misses = Counter(), Counter()
    for key in keys:
        dense, bm25, default = (int(questions[mode][key][0]) for mode in ("dense", "bm25", "hybrid"))
        patterns[f"dense {dense}, bm25 {bm25}, default {default}"] += 1
        if not default:
            misses[rank_band(questions["hybrid"][key][1])] += 1
    either = sum(1 for k in keys if questions["dense"][k][0] or questions["bm25"][k][0])
    return {"questions": len(keys), "patterns": dict(sorted(patterns.items())),
            "ceiling": round(either / len(keys), 4), "neither": len(keys) - either,
            "default_hit@1": round(sum(questions["hybrid"][k][0] for k in keys) / len(keys), 4),
            "default_misses_by_rank": {band: misses[band] for band in ("2", "3", "4-10", ">10")}}


FAMILIES = {"Grampian": "reports", "guidance": "natech"}  # any other gold set is a manual


def family(key: str) -> str:
    """The family of a question by its gold set's name (confirm.py keys are "goldset|query id")."""
    name = key.split("|")[0]
    return next((f for prefix, f in FAMILIES.items() if name.startswith(prefix)), "manuals")


def with_third(questions: dict, third: dict, keys) -> float:
    """The share of ``keys`` with the right page first in dense, BM25 or ``third`` ({key: [hit@1, rr]})."""
    keys = list(keys)
    found = sum(1 for k in keys if questions["dense"][k][0] or questions["bm25"][k][0] or third[k][0])
    return round(found / len(keys), 4)


def by_family(questions: dict, third: dict | None = None, label: str = "") -> dict:
    """ceiling() per family, its ceiling and the default's Hit@1 only (and the ceiling with a
    third engine's first pages, when ``third`` is given)."""
    out = {}
    for name in ("reports", "manuals", "natech"):
        part = {mode: {k: v for k, v in rows.items() if family(k) == name} for mode, rows in questions.items()}
        if part["hybrid"]:
            whole = ceiling(part)
            out[name] = {"questions": whole["questions"], "ceiling": whole["ceiling"],
                         "default_hit@1": whole["default_hit@1"]}
            if third is not None:
                out[name][f"ceiling_with_{label}_dense"] = with_third(questions, third, part["hybrid"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", required=True, help="confirm2 ... confirm12")
    parser.add_argument("--label", default="bundled")
    parser.add_argument("--with", dest="third", help="another index's run of the set: its dense as a third engine")
    args = parser.parse_args()
    source = RESULTS / f"{args.set}_{args.label}.json"
    command = f"python benchmarks/confirm_ceiling.py --set {args.set} --label {args.label}"
    questions = json.loads(source.read_text(encoding="utf-8"))["questions"]
    third, name = None, f"{args.set}_{args.label}_ceiling.json"
    if args.third:
        third = json.loads((RESULTS / f"{args.set}_{args.third}.json").read_text(encoding="utf-8"))["questions"]["dense"]
        command += f" --with {args.third}"
        name = f"{args.set}_{args.label}_ceiling_with_{args.third}.json"
    result = {"command": command, "from": source.name, **ceiling(questions),
              "by_family": by_family(questions, third, args.third or "")}
    if third is not None:
        result[f"ceiling_with_{args.third}_dense"] = with_third(questions, third, questions["hybrid"])
    out = RESULTS / name
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
