"""The confirmation figures: questions written after the features were frozen, by a writer who never saw them.

    .venv/bin/python benchmarks/confirm.py --label bundled [--set confirm2] [--modes dense,bm25,hybrid] [--out PATH]
                                           [--against bundled]

On the index RAGLOUPE_INDEX_DIR points at (the three Grampian reports,
data/benchmarks/natech/guidance.csv and data/benchmarks/manuals/pdf), every set
under data/benchmarks/<--set>/ (confirm: the first confirmation set; confirm2: the second,
written on 2026-12-05 after the first had been used once; confirm3 to confirm17: the third to the
seventeenth, each written after the one before had been used once, or before it was; unseen1: questions
on three R manuals, data/benchmarks/rmanuals/, that nothing in ragloupe was made from, on an index
of those manuals) is scored by `ragloupe eval`'s evaluate(), each
question scoped to its document, in each mode. Nothing here chooses anything:
the sets are measured once, after tuning, and the figures are reported as they
come. Per family (Grampian reports split by the question's wording, manuals,
Natech records): Hit@1 / Hit@3 / MRR@10 with bootstrap CIs, Hit@1 per quarter
of the report, and each mode's paired difference in Hit@1 against BM25 alone
with its permutation p-value. ``--label`` names the index (e.g. ``bundled``,
``adapted``) and the output file, benchmarks/results/confirm_<label>.json (<set>_<label>.json
for the later sets). Each question's Hit@1 and reciprocal rank per mode are kept in the JSON, so
``--against LABEL`` can add, per family and mode, the paired difference against that label's
run of the same set (another index, e.g. the bundled model's against an adapted one's) with
its permutation p-value.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.evaluate import stats  # noqa: E402
from ragloupe.evaluate.runs import evaluate  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
# Kinds whose questions are also reported by wording (paraphrased, natural) besides all together.
BY_WORDING = ("grampian", "rmanuals")
METRICS = ("hit@1", "hit@3", "rr@10")


def confirmation_sets(name: str) -> list[Path]:
    return sorted((BENCH / name).glob("**/*.confirm.json"))


def question_facts(paths: list[Path]) -> dict[tuple[str, str], dict]:
    """(gold set name, query id) -> the family, the wording and the quarter the writer gave."""
    facts = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        name = path.name.removesuffix(".json")
        kind = path.parent.name  # grampian, manuals or natech
        for query in data.get("queries", []):
            wording = query.get("wording", "")
            family = f"{kind}-{wording}" if kind in BY_WORDING and wording else kind
            facts[(name, str(query["query_id"]))] = {"family": family, "kind": kind, "wording": wording,
                                                      "quarter": query.get("quarter")}
    return facts


def summarise(rows: list[dict]) -> dict:
    out = {"n": len(rows)}
    for metric in METRICS:
        values = [r["metrics"][metric] for r in rows]
        mean = sum(values) / len(values) if values else None
        low, high = stats.bootstrap_ci(values) if values else (None, None)
        label = "mrr@10" if metric == "rr@10" else metric
        out[label] = {"mean": None if mean is None else round(mean, 4),
                      "ci95": [None if low is None else round(low, 4), None if high is None else round(high, 4)]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="what index this is (bundled, adapted, ...)")
    parser.add_argument("--set", default="confirm", choices=("confirm", "confirm2", "confirm3", "confirm4", "confirm5", "confirm6", "confirm7", "confirm8", "confirm9", "confirm10",
                                                                  "confirm11", "confirm12", "confirm13", "confirm14", "confirm15",
                                                                  "confirm16", "confirm17", "unseen1"),
                        help="which confirmation set under data/benchmarks/")
    parser.add_argument("--modes", default="dense,bm25,hybrid")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--against", help="the label of an earlier run of this set to compare with, question by question")
    args = parser.parse_args()
    settings = get_settings()
    paths = confirmation_sets(args.set)
    if not paths:
        raise SystemExit(f"no confirmation sets under {BENCH / args.set}")
    facts = question_facts(paths)
    workspace = Workspace.open(settings)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    by_mode: dict[str, list[dict]] = {}
    seconds = {}
    for mode in modes:
        started = time.perf_counter()
        report = evaluate(paths, mode=mode, scope="doc", write=False, workspace=workspace)
        seconds[mode] = round(time.perf_counter() - started, 1)
        missing = [f for f in report.data["findings"] if "not in the index" in str(f).lower()
                   or "not indexed" in str(f).lower()]
        if missing or workspace.store.count() == 0:
            raise SystemExit(f"the index at {settings.path('index_dir')} lacks the sets' documents: "
                             f"{missing[:1] or 'it is empty'}")
        by_mode[mode] = [{**facts[(r["goldset"], str(r["query_id"]))], "key": (r["goldset"], str(r["query_id"])),
                          "metrics": r["metrics"]} for r in report.data["queries"]]
    kinds = {f["kind"] for f in facts.values()}
    families = sorted({f["family"] for f in facts.values()} | (set(BY_WORDING) & kinds))
    result: dict = {"label": args.label, "set": args.set, "index_dir": str(settings.path("index_dir")),
                    "embedding_model": settings.embedding_model, "default_mode": settings.mode,
                    "fusion": settings.fusion, "sets": [str(p.relative_to(PROJECT_ROOT)) for p in paths],
                    "seconds": seconds, "families": {}}
    for family in families:
        def keep(row: dict) -> bool:
            return row["family"] == family or (family in BY_WORDING and row["kind"] == family)
        entry: dict = {}
        for mode in modes:
            rows = [r for r in by_mode[mode] if keep(r)]
            entry[mode] = summarise(rows)
            quarters = sorted({r["quarter"] for r in rows if r["quarter"]})
            if quarters:
                entry[mode]["hit@1_by_quarter"] = {
                    str(q): round(sum(r["metrics"]["hit@1"] for r in rows if r["quarter"] == q)
                                  / sum(1 for r in rows if r["quarter"] == q), 4) for q in quarters}
            if "bm25" in by_mode and mode != "bm25":
                base = {r["key"]: r["metrics"]["hit@1"] for r in by_mode["bm25"] if keep(r)}
                mine = [r["metrics"]["hit@1"] for r in rows]
                theirs = [base[r["key"]] for r in rows]
                entry[mode]["vs_bm25_hit@1"] = {
                    "difference": round((sum(mine) - sum(theirs)) / len(rows), 4) if rows else None,
                    "p": round(stats.paired_permutation_p(mine, theirs), 4)}
        result["families"][family] = entry
    result["questions"] = {mode: {"|".join(r["key"]): [r["metrics"]["hit@1"], r["metrics"]["rr@10"]]
                                  for r in by_mode[mode]} for mode in modes}
    if args.against:
        result["against"] = against(args.set, args.against, result["questions"], by_mode, families)
    out = args.out or PROJECT_ROOT / f"benchmarks/results/{args.set}_{args.label}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for family, entry in result["families"].items():
        line = "  ".join(f"{m} {entry[m]['hit@1']['mean']}" for m in modes)
        print(f"{family:22s} n={entry[modes[0]]['n']:3d}  Hit@1: {line}")
    print(f"wrote {out}")


def against(name: str, label: str, questions: dict, by_mode: dict, families: list[str]) -> dict:
    """Per family and mode, this run's Hit@1 and MRR minus those of ``label``'s run of the same
    set, question by question, with the paired permutation p-value."""
    theirs = json.loads((PROJECT_ROOT / f"benchmarks/results/{name}_{label}.json").read_text(encoding="utf-8"))
    out: dict = {"label": label, "families": {}}
    for family in families:
        out["families"][family] = {}
        for mode, rows in by_mode.items():
            keys = ["|".join(r["key"]) for r in rows
                    if r["family"] == family or (family in BY_WORDING and r["kind"] == family)]
            keys = [k for k in keys if k in theirs.get("questions", {}).get(mode, {})]
            if not keys:
                continue
            entry = {"n": len(keys)}
            for i, metric in enumerate(("hit@1", "mrr@10")):
                mine = [questions[mode][k][i] for k in keys]
                before = [theirs["questions"][mode][k][i] for k in keys]
                entry[metric] = {"theirs": round(sum(before) / len(keys), 4), "ours": round(sum(mine) / len(keys), 4),
                                 "p": round(stats.paired_permutation_p(mine, before), 4)}
            out["families"][family][mode] = entry
    return out


if __name__ == "__main__":
    main()
