"""Before and after `ragloupe adapt` on the demo corpus, per gold-set family and search mode.

    .venv/bin/python benchmarks/adapt.py [--variants default,no-hard-negatives,...] [--out PATH]
                                         [--work DIR]

On the index RAGLOUPE_INDEX_DIR points at, which must hold the three Grampian reports,
data/benchmarks/natech/guidance.csv and the PDFs of data/benchmarks/manuals (built with
`ragloupe index data/benchmarks/grampian/pdf data/benchmarks/natech/guidance.csv
data/benchmarks/manuals/pdf`). That index is only read: each variant adapts a copy of it under
--work (default: a temporary directory).

Per variant (a set of adapt_* settings, ``VARIANTS``): the copy is adapted with every pair and
training setting of the variant, the adapted model is adopted whatever the gold sets say, and
every family is searched before and after in three modes (dense, bm25 and the default,
hybrid with the learned fusion as shipped), each question in its own document: Hit@1, Hit@3,
MRR@10 per family, the paired permutation p-value and the paired bootstrap CI of each
difference. The product's own rule (adapt/compare.py: Hit@1 not lower on any gold set and
MRR higher over all questions, default mode) is then applied to the TUNING families only, as
`ragloupe adapt` would with those gold sets, and its verdict is in the JSON.

Families: whole-report (grampian/whole/*.whole.json), benchmark (grampian/eval), manuals
(manuals/eval/*.eval.json), natech (guidance.gold.json), and the paraphrased sets of the
reports, the manuals and Natech (grampian/ and manuals/paraphrased/, natech/paraphrased.gold.json); held out, reported and never used to choose: every *.holdout.json and
guidance2.gold.json. The adaptation never reads a question: it trains on document text only.
The confirmation set under data/benchmarks/confirm is never read.

Written to benchmarks/results/adapt.json, after every variant (a long run keeps what it did).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.adapt import compare  # noqa: E402
from ragloupe.adapt.run import adapt  # noqa: E402
from ragloupe.evaluate import stats  # noqa: E402
from ragloupe.evaluate.runs import evaluate  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
RESULTS = PROJECT_ROOT / "benchmarks/results/adapt.json"
MODES = ("dense", "bm25", "hybrid")
# BM25 reads no vector: its rankings are the same before and after (the chunks do not change),
# so it is searched once, before, and its row repeats that.
MODES_AFTER = ("dense", "hybrid")
DEFAULT_MODE = "hybrid"

# Each variant: the adapt_* settings it changes from the defaults (config.py).
VARIANTS = {
    # The product's defaults: at most 200 steps or 600 s of training, whichever ends first (on a
    # loaded machine, time ends it: the steps run are in the JSON).
    "default": {},
    # A fixed number of steps, so that variants compare whatever the machine's load.
    "inbatch-128tok-lr5e-5-30": {"adapt_max_steps": 30, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                                 "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5},
    "hardneg-128tok-lr5e-5-30": {"adapt_max_steps": 30, "adapt_max_seconds": 7200, "adapt_hard_negatives": True,
                                 "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5},
    "inbatch-128tok-lr5e-5-90": {"adapt_max_steps": 90, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                                 "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5},
    # One and three epochs of the demo corpus's 2,453 pairs (77 batches of 32 an epoch).
    "inbatch-128tok-lr5e-5-80": {"adapt_max_steps": 80, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                                 "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5},
    "inbatch-128tok-lr5e-5-240": {"adapt_max_steps": 240, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                                  "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5},
    # Weight-space ensembles of the one-epoch model with the bundled one (WiSE-FT): the saved
    # model is this share of the fine-tuned weights, the rest the bundled model's.
    "wise50-of-80": {"adapt_max_steps": 80, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                     "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.5},
    "wise70-of-80": {"adapt_max_steps": 80, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                     "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.7},
    # One epoch in batches of 64 (more in-batch negatives per query, the same pairs and cost).
    "wise50-bs64-40": {"adapt_max_steps": 40, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                       "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.5,
                       "adapt_batch_size": 64},
    # Only the pairs BM25 does not solve (1,682 of 2,453: one epoch is 53 steps): a model that
    # learns what the fusion lacks.
    "wise50-bm25misses-53": {"adapt_max_steps": 53, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                             "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.5,
                             "adapt_bm25_misses_only": True},
    "wise30-of-80": {"adapt_max_steps": 80, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                     "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.3},
    "wise50-of-240": {"adapt_max_steps": 240, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                      "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.5},
    # Questions drafted by the embedded Gemma, one per page (adapt/drafts.py): alone, three epochs of
    # their ~450 pairs; and beside the other kinds, one epoch of all.
    "wise50-drafted-45": {"adapt_max_steps": 45, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                          "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.5,
                          "adapt_pair_kinds": "drafted"},
    "wise50-all-drafted-95": {"adapt_max_steps": 95, "adapt_max_seconds": 7200, "adapt_hard_negatives": False,
                              "adapt_max_tokens": 128, "adapt_learning_rate": 5e-5, "adapt_merge_weight": 0.5,
                              "adapt_pair_kinds": "sentence,heading,table,title,drafted"},
    "steps-40": {"adapt_max_steps": 40, "adapt_max_seconds": 7200},
    "no-hard-negatives-40": {"adapt_max_steps": 40, "adapt_max_seconds": 7200, "adapt_hard_negatives": False},
    "sentences-only-40": {"adapt_max_steps": 40, "adapt_max_seconds": 7200, "adapt_pair_kinds": "sentence"},
    "lr-5e-5-40": {"adapt_max_steps": 40, "adapt_max_seconds": 7200, "adapt_learning_rate": 5e-5},
    "steps-120": {"adapt_max_steps": 120, "adapt_max_seconds": 7200},
}


def families() -> dict[str, dict]:
    """Family -> its gold set files and whether tuning may read it (held out: never)."""
    def files(pattern: str) -> list[Path]:
        return sorted(p for p in BENCH.glob(pattern) if "confirm" not in p.parts)

    tuning = {
        "whole-report": files("grampian/whole/*.whole.json"),
        "benchmark": files("grampian/eval/*.eval.json"),
        "manuals": files("manuals/eval/*.eval.json"),
        "natech": [BENCH / "natech/guidance.gold.json"],
        "paraphrased-reports": files("grampian/paraphrased/*.paraphrased.json"),
        "paraphrased-manuals": files("manuals/paraphrased/*.paraphrased.json"),
        "paraphrased-natech": files("natech/paraphrased.gold.json"),
    }
    held_out = {
        "whole-report-holdout": files("grampian/whole/*.holdout.json"),
        "manuals-holdout": files("manuals/eval/*.holdout.json"),
        "natech-holdout": [BENCH / "natech/guidance2.gold.json"],
        "paraphrased-holdout": files("*/paraphrased/*.holdout.json"),
    }
    out = {name: {"paths": paths, "tuning": True} for name, paths in tuning.items() if paths}
    out.update({name: {"paths": paths, "tuning": False} for name, paths in held_out.items() if paths})
    return out


def measure(settings, fams: dict[str, dict], modes: tuple[str, ...] = MODES) -> dict:
    """Family -> mode -> gold set -> each question's Hit@1, Hit@3 and reciprocal rank."""
    workspace = Workspace.open(settings)
    out: dict = {}
    for family, spec in fams.items():
        out[family] = {}
        for mode in modes:
            report = evaluate(spec["paths"], mode=mode, scope="doc", write=False,
                              workspace=workspace)
            out[family][mode] = compare.per_set_scores(report.data)
    workspace.clear()
    return out


def pooled(scores: dict, family: str, mode: str, measure: str = "hit@1") -> list[float]:
    """One measure of every question of a family in a mode, the family's gold sets pooled (measure()'s output)."""
    return [q[measure] for s in scores[family][mode].values() for q in s]


def variants_table(runs: dict, fams: dict[str, dict], baseline: str, p_key: str,
                   modes: tuple[str, ...] = ("dense", "hybrid")) -> dict:
    """Per run of measure(), family and mode: n, Hit@1, MRR and the paired permutation p-value of the
    Hit@1 difference against the ``baseline`` run (the signal scripts' variants side by side)."""
    table: dict = {}
    for name, scores in runs.items():
        table[name] = {}
        for family in fams:
            table[name][family] = {}
            for mode in modes:
                mine, base = pooled(scores, family, mode), pooled(runs[baseline], family, mode)
                rr = pooled(scores, family, mode, "rr")
                table[name][family][mode] = {
                    "n": len(mine), "hit@1": round(sum(mine) / len(mine), 4), "mrr": round(sum(rr) / len(rr), 4),
                    p_key: round(stats.paired_permutation_p(mine, base), 4)}
    return table


def write_variants(path: Path, result: dict) -> None:
    """Write a signal script's result (its "hit@1": a variants_table()) as JSON, then print each
    variant's dense / default Hit@1 per family."""
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for variant, families in result["hit@1"].items():
        print(variant, " ".join(f"{f} {v['dense']['hit@1']:.3f}/{v['hybrid']['hit@1']:.3f}"
                                for f, v in families.items()))


def measured_before(base, fams: dict[str, dict], work: Path) -> dict:
    """The base index measured once per content and gold sets (kept under --work for the next run)."""
    from ragloupe.index.store import open_store

    key = json.dumps([open_store(base).fingerprint(), base.mode, base.fusion, base.dense_sentence_weight,
                      {f: [str(p) for p in spec["paths"]] for f, spec in fams.items()}], sort_keys=True)
    cached = work / "before.json"
    if cached.is_file():
        saved = json.loads(cached.read_text(encoding="utf-8"))
        if saved["key"] == key:
            return saved["scores"]
    scores = measure(base, fams)
    work.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"key": key, "scores": scores}), encoding="utf-8")
    return scores


def family_table(before: dict, after: dict, fams: dict[str, dict]) -> dict:
    """Per family and mode: the family's questions pooled, before and after, with the paired test."""
    table = {}
    for family in fams:
        table[family] = {}
        for mode in MODES:
            pooled_before = {"all": [q for s in before[family][mode].values() for q in s]}
            pooled_after = {"all": [q for s in after[family][mode].values() for q in s]}
            table[family][mode] = compare.compare(pooled_before, pooled_after)["all"]
    return table


def product_verdict(before: dict, after: dict, fams: dict[str, dict]) -> dict:
    """What `ragloupe adapt` would decide given the tuning families' gold sets (default mode)."""
    sets_before = {f"{family}/{name}": scores for family, spec in fams.items() if spec["tuning"]
                   for name, scores in before[family][DEFAULT_MODE].items()}
    sets_after = {f"{family}/{name}": scores for family, spec in fams.items() if spec["tuning"]
                  for name, scores in after[family][DEFAULT_MODE].items()}
    decision = compare.decide(compare.compare(sets_before, sets_after))
    return {"keep_adapted": decision.keep_adapted, "reason": decision.reason}


def run_variant(name: str, overrides: dict, base_index: Path, work: Path, before: dict,
                fams: dict[str, dict], reuse: bool = False, models: list[Path] = ()) -> dict:
    """Adapt a copy of the base index as the variant says (or, with ``reuse``, take the copy a
    killed run adapted, its outcome saved beside it) and measure every family after."""
    target = work / name
    paths = {"index_dir": target / "index", "runs_dir": target / "runs"}
    record = target / "adapt_outcome.json"
    if not (reuse and record.is_file()):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(base_index, target / "index", ignore=shutil.ignore_patterns(".lock", "models"))
        for model in models:  # trained before: adapt reuses a model of the same name
            shutil.copytree(model, target / "index/models" / model.name)
        settings = get_settings(**paths, **overrides)
        started = time.perf_counter()
        outcome = adapt(Workspace.open(settings), [], progress=_progress, keep_untested=True)
        adapt_seconds = round(time.perf_counter() - started, 1)
        record.write_text(json.dumps({"outcome": outcome.as_dict(), "adapt_seconds": adapt_seconds,
                                      "loadavg": _loadavg()}, default=str), encoding="utf-8")
    saved = json.loads(record.read_text(encoding="utf-8"))
    outcome, adapt_seconds = saved["outcome"], saved["adapt_seconds"]
    adapted = get_settings(**paths, **overrides)
    after = measure(adapted, fams, MODES_AFTER)
    for family in fams:
        after[family]["bm25"] = before[family]["bm25"]
    return {"settings": overrides, "model": outcome["model"], "pairs": outcome["pairs"],
            "training": {k: v for k, v in outcome["training"].items() if k != "trained_at"},
            "adapt_seconds": adapt_seconds, "stage_seconds": outcome["seconds"],
            "loadavg_after_adapt": saved["loadavg"], "loadavg_after": _loadavg(), "families": family_table(before, after, fams),
            "product_verdict_on_tuning_families": product_verdict(before, after, fams)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="default", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--work", default=None, help="where the adapted copies go (default: a temporary dir)")
    parser.add_argument("--reuse", action="store_true",
                        help="measure a variant's adapted copy left under --work instead of adapting again")
    parser.add_argument("--models", default="", help="comma-separated adapted model directories trained "
                        "before on this index, copied in so that a variant of the same name (or merging "
                        "one) does not train again")
    args = parser.parse_args(argv)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        print(f"unknown variant(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    base = get_settings()
    fams = families()
    out_path = Path(args.out)
    result = json.loads(out_path.read_text()) if out_path.is_file() else {}
    result.update({
        "command": "benchmarks/adapt.py --variants " + ",".join(names),
        "index": {"documents": _documents(base)},
        "families": {name: {"tuning": spec["tuning"], "goldsets": [str(p.relative_to(PROJECT_ROOT)) for p in spec["paths"]]}
                     for name, spec in fams.items()},
        "trained_on": "document text only: pseudo-queries cut from the indexed chunks; no question of any gold set",
        "learned_fusion": "the shipped model (trained on the bundled model's dense scores), unchanged",
        "rule": compare.__doc__.strip().splitlines()[2:5],
        "cpu": {"cores": os.cpu_count(), "loadavg_start": _loadavg()},
    })
    result.setdefault("variants", {})
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="ragloupe-adapt-"))
    before = measured_before(base, fams, work)
    for name in names:
        print(f"variant {name}", file=sys.stderr, flush=True)
        result["variants"][name] = run_variant(name, VARIANTS[name], base.path("index_dir"), work, before, fams,
                                               args.reuse, [Path(m) for m in args.models.split(",") if m])
        out_path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(out_path)
    return 0


def _documents(settings) -> list[str]:
    from ragloupe.index.manifest import Manifest

    return [e.doc_id for e in Manifest.load(settings).complete()]


def _progress(step) -> None:
    if step.stage != "train" or step.done % 10 == 0:
        print(f"  adapt: {step.stage} {step.done}/{step.total} {step.detail}", file=sys.stderr, flush=True)


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


if __name__ == "__main__":
    sys.exit(main())
