"""The default's figures over several blind sets already scored, pooled question by question.

    .venv/bin/python benchmarks/confirm_pooled.py --sets confirm11,confirm12,confirm13,confirm14 [--label bundled]

Reads benchmarks/results/<set>_<label>.json for each set (written by benchmarks/confirm.py: each
question's Hit@1 and reciprocal rank at 10 in the dense, bm25 and hybrid modes); searches nothing.
One set of 118 questions moves a family's Hit@1 by 0.1 from one writer to the next (the reports:
0.597 on set 11, 0.861 on set 14, the same default); pooled, the figure is what the sets say
together. Per family (Grampian reports, split by wording, the manuals, the Natech records) and
mode: the pooled Hit@1, Hit@3 (a reciprocal rank above 0.3: rank 3 or better, the JSON keeping
four decimals) and MRR@10 with 95% bootstrap CIs, each set's Hit@1 beside them, and the default's
Hit@1 against BM25 alone's with the paired permutation p-value (``all``: every question); with
``--against LABEL``, the default's Hit@1 and MRR@10 against that label's runs, paired. Writes benchmarks/results/confirm_pooled_<label>.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ragloupe.config import PROJECT_ROOT

sys.path.insert(0, str(Path(__file__).parent))
from confirm import confirmation_sets, question_facts  # noqa: E402

from ragloupe.evaluate import stats  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results"
FAMILIES = ("all", "grampian", "grampian-paraphrased", "grampian-natural", "manuals", "natech")


def family_of(fact: dict, family: str) -> bool:
    return family == "all" or fact["family"] == family or (family == "grampian" and fact["kind"] == "grampian")


def figures(values: list[list[float]]) -> dict:
    """Pooled means and bootstrap CIs of [hit@1, rr@10] pairs."""
    out = {"n": len(values)}
    for name, column in (("hit@1", [v[0] for v in values]), ("hit@3", [float(v[1] > 0.3) for v in values]),
                         ("mrr@10", [v[1] for v in values])):
        low, high = stats.bootstrap_ci(column)
        out[name] = {"mean": round(sum(column) / len(column), 4), "ci95": [round(low, 4), round(high, 4)]}
    return out


def runs_of(sets: list[str], label: str) -> dict:
    runs = {}
    for name in sets:
        path = RESULTS / f"{name}_{label}.json"
        if not path.is_file():
            raise SystemExit(f"no run of {name} labelled {label}: {path} (benchmarks/confirm.py writes it)")
        runs[name] = json.loads(path.read_text(encoding="utf-8"))["questions"]
    return runs


def pooled(sets: list[str], label: str, against: str | None = None) -> dict:
    runs = runs_of(sets, label)
    other = runs_of(sets, against) if against else None
    facts = {name: question_facts(confirmation_sets(name)) for name in sets}
    out: dict = {}
    for family in FAMILIES:
        entry: dict = {}
        for mode in ("hybrid", "bm25", "dense"):
            values, by_set = [], {}
            for name, questions in runs.items():
                mine = [v for key, v in questions[mode].items()
                        if family_of(facts[name][tuple(key.split("|", 1))], family)]
                by_set[name] = round(sum(v[0] for v in mine) / len(mine), 4) if mine else None
                values += mine
            if not values:
                continue
            entry[mode] = {**figures(values), "hit@1_by_set": by_set}
        if "hybrid" in entry and "bm25" in entry:
            ours = [v[0] for name in sets for key, v in runs[name]["hybrid"].items()
                    if family_of(facts[name][tuple(key.split("|", 1))], family)]
            theirs = [v[0] for name in sets for key, v in runs[name]["bm25"].items()
                      if family_of(facts[name][tuple(key.split("|", 1))], family)]
            entry["default_vs_bm25_hit@1"] = {"difference": round((sum(ours) - sum(theirs)) / len(ours), 4),
                                              "p": round(stats.paired_permutation_p(ours, theirs), 4)}
        if other is not None and "hybrid" in entry:
            keys = [(name, key) for name in sets for key in runs[name]["hybrid"]
                    if family_of(facts[name][tuple(key.split("|", 1))], family)]
            entry[f"default_vs_{against}"] = {
                metric: {"ours": round(sum(runs[n]["hybrid"][k][i] for n, k in keys) / len(keys), 4),
                         "theirs": round(sum(other[n]["hybrid"][k][i] for n, k in keys) / len(keys), 4),
                         "p": round(stats.paired_permutation_p([runs[n]["hybrid"][k][i] for n, k in keys],
                                                               [other[n]["hybrid"][k][i] for n, k in keys]), 4)}
                for i, metric in ((0, "hit@1"), (1, "mrr@10"))}
        if entry:
            out[family] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", required=True, help="confirmation sets already scored, comma-separated")
    parser.add_argument("--label", default="bundled", help="the confirm.py label of the runs to pool")
    parser.add_argument("--against", help="another label's runs of the same sets: the default's paired difference")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    result = {"command": "python benchmarks/confirm_pooled.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "sets": sets, "label": args.label, "families": pooled(sets, args.label, args.against)}
    out = args.out or RESULTS / f"confirm_pooled_{args.label}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for family, entry in result["families"].items():
        h = entry["hybrid"]
        print(f"{family:22s} n={h['n']:3d} default Hit@1 {h['hit@1']['mean']} {h['hit@1']['ci95']} Hit@3 "
              f"{h['hit@3']['mean']} MRR {h['mrr@10']['mean']}  BM25 {entry['bm25']['hit@1']['mean']} "
              f"(p {entry['default_vs_bm25_hit@1']['p']})"
              + (f"  vs {args.against} {entry[f'default_vs_{args.against}']}" if args.against else ""))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
