"""A linear map on the question's embedding, learned from gold questions: tried as a signal past term overlap.

    .venv/bin/python benchmarks/query_adapter.py [--variants none,lodo-r0.01,...] [--through 10] [--confirm confirm12] [--out PATH]
    .venv/bin/python benchmarks/query_adapter.py --ship    # writes src/ragloupe/retrieve/query_adapter.npz (sets 1-10)
    .venv/bin/python benchmarks/query_adapter.py --summary RUN.json ... --out SUMMARY.json  # no search

On the benchmark index of benchmarks/adapt.py (the Grampian PDFs, natech/guidance.csv and the
manuals, with sentence vectors). MiniLM embeds a question and the page that answers it as if
they were two sentences of the same kind; a question ("How many dentist surgeries run
independently?") and a page ("91 independent dental practices ...") are not. An adapter learns
a 384 x 384 matrix W, the question's vector becoming W q / |W q| before the dense engine reads
it; the chunks and their sentences keep the vectors the index holds, so nothing is re-embedded.

Training pairs are gold questions and their pages: every tuning family of benchmarks/adapt.py
and the retired blind sets 1-10 (data/benchmarks/confirm ... confirm10, written by other writers
and each scored once; sets 8 and 9 joined after they had scored the adapter trained without
them, set 10 after it had scored the one trained with them). ``--through 11`` adds set 11: the
adapter so trained (1,786 questions, benchmarks/results/query_adapter_1786.npz) lost a report
question to the shipped one on set 12 and was not kept. ``--through 13`` adds sets 11-13 (every
retired set): the adapter so trained (2,022 questions, benchmarks/results/query_adapter_2022.npz)
lost three report questions to the shipped one on set 14 and was not kept either. Never the held-out sets, never
confirm14 or confirm15. The loss is the dense engine's
own ranking as a softmax over the units (pages, records) of the question's document: each chunk
scored 0.6 by its own vector and 0.4 by its best sentence's, a unit by its best chunk, the gold
units against every other unit of the document at temperature 0.05, plus ``r`` x |W - I|^2.

Variants:
- ``none``: the bundled model's question vector (RAGLOUPE_QUERY_ADAPTER=off);
- ``lodo-rR``: for a question of document d, W trained on the questions of every other document
  (leave one document out: the figures say what a user's new document would get);
- ``all-rR``: one W trained on every document (in-sample on the tuning and retired sets; only the
  held-out families are out of sample, and only by question, not by document).

Every family (tuning, held out, and each retired blind set as a family ``blindK``; with
``--confirm``, the tenth blind set too) is searched in dense and the hybrid mode under the
settings in force (RAGLOUPE_WEIGHT_DENSE ... apply), each question in its own document, against
``none``: Hit@1 and MRR per family and the paired permutation p-value. ``--ship`` trains one W
on every training question at the shipped ``r`` (adapt/query_training.REG) and writes the
package's adapter file with its record. Training runs the dense score through torch; a matrix
is kept under --cache per training data, variant and left-out document.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

sys.path.insert(0, str(Path(__file__).parent))
import adapt as bench  # noqa: E402  (its families, measure(), variants_table(), write_variants())

from ragloupe.adapt import query_training as QT  # noqa: E402
from ragloupe.evaluate import stats  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.retrieve import query_adapter  # noqa: E402
from ragloupe.retrieve.query_adapter import QueryAdapter  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
RETIRED = ("confirm", "confirm2", "confirm3", "confirm4", "confirm5", "confirm6", "confirm7", "confirm8", "confirm9",
           "confirm10", "confirm11", "confirm12", "confirm13")
SENTENCE_WEIGHT = 0.4
SHIPPED_DENSE_VECTOR = Workspace.dense_query_vector


def retired_families(through: int = len(RETIRED)) -> dict[str, dict]:
    """The retired blind sets 1..``through`` as training families (10: the shipped adapter's, which
    sets 11 and 12 scored; 11: the one set 12 scored beside it, not kept; 9: the one set 10 scored;
    7: the one sets 8 and 9 scored, which ``--through 7 --confirm confirm8`` reproduces)."""
    return {f"blind{i + 1}": {"paths": sorted((BENCH / name).glob("*/*.json")), "tuning": True}
            for i, name in enumerate(RETIRED[:through])}


def trained(parts, variant: str, leave_out: str | None, cache: Path) -> np.ndarray:
    """train() on ``parts``, kept under ``cache`` (a folder per training data) by variant and left-out
    document: training is seeded, so the same data and variant give the same matrix."""
    path = cache / f"{variant}-{leave_out or 'all'}.npy"
    if path.is_file():
        return np.load(path)
    reg = float(variant.partition("-r")[2])
    matrix = QT.train(parts, SENTENCE_WEIGHT, reg)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


class Training:
    """The training questions of ``fams`` (the families marked tuning), their vectors and documents, and
    the adapters trained on them, kept under ``cache_root`` in a folder per training data."""

    def __init__(self, workspace, fams: dict[str, dict], cache_root: Path):
        self.families = {name: spec for name, spec in fams.items() if spec["tuning"]}
        self.questions = [q for spec in self.families.values() for path in spec["paths"]
                          for q in load_goldset(path).queries]
        self.docs = {d: QT.doc_units(workspace, d) for d in sorted({q.doc_id for q in self.questions})}
        self.vectors = np.asarray(workspace.embedder.encode([q.question for q in self.questions]), dtype=np.float32)
        data_key = hashlib.sha256(json.dumps([str(workspace.store.fingerprint()),
                                              [(q.query_id, q.doc_id) for q in self.questions]]).encode()).hexdigest()[:12]
        self.cache = cache_root / data_key

    def adapter(self, variant: str, leave_out: str | None) -> np.ndarray:
        keep = [i for i, q in enumerate(self.questions) if q.doc_id != leave_out]
        parts = QT.batches([self.questions[i] for i in keep], self.vectors[keep], self.docs)
        return trained(parts, variant, leave_out, self.cache)


def lodo_adapters(workspace, fams: dict[str, dict], variant: str = "lodo-r0.01",
                  cache_root: Path = Path("/tmp/query_adapter")) -> dict[str, np.ndarray]:
    """Each training document -> the adapter trained without it (what main()'s ``lodo-rR`` uses)."""
    data = Training(workspace, fams, cache_root)
    return {d: data.adapter(variant, d) for d in data.docs}


def hits_per_question(runs: dict) -> dict:
    """Variant -> family -> mode -> gold set -> each question's Hit@1 as a string of 0s and 1s, in the
    gold set's order: what a paired test between two runs (on two indexes) needs, in little room."""
    return {variant: {family: {mode: {name: "".join(str(int(q["hit@1"])) for q in questions)
                                      for name, questions in sets.items()}
                               for mode, sets in modes.items()}
                      for family, modes in scores.items()}
            for variant, scores in runs.items()}


def pooled_hits(per_question: dict, family: str, mode: str) -> list[float]:
    return [float(c) for hits in per_question[family][mode].values() for c in hits]


def summary(paths: list[Path], baseline: Path, baseline_variant: str = "none") -> dict:
    """From runs of this script (no search): per run and variant, in each mode, the questions gained
    against ``baseline``'s ``baseline_variant`` over the families trained on and over the held-out
    ones, and the worst family's change (what docs/retrieval.md's tables say); with per-question
    scores in both runs (runs since --borrow), each family's paired permutation p-value too."""
    first = json.loads(baseline.read_text(encoding="utf-8"))
    base = first["hit@1"][baseline_variant]
    base_questions = first.get("per_question", {}).get(baseline_variant)
    trained_on = [f for f in base if not f.endswith("holdout")]
    out = {"baseline": f"{baseline.name}: {baseline_variant}", "runs": {}}
    for path in paths:
        run = json.loads(path.read_text(encoding="utf-8"))
        out["runs"][path.name] = {"weight_dense": run["settings"]["weight_dense"],
                                  "embedding_model": run.get("embedding_model"), "variants": {}}
        for variant, fams in run["hit@1"].items():
            row = {}
            questions = run.get("per_question", {}).get(variant)
            for mode in ("dense", "hybrid"):
                gained = {f: round((fams[f][mode]["hit@1"] - base[f][mode]["hit@1"]) * fams[f][mode]["n"])
                          for f in base}
                row[mode] = {"gained_trained_on": sum(gained[f] for f in trained_on),
                             "worst_trained_on": min(gained[f] for f in trained_on),
                             "gained_held_out": {f: v for f, v in gained.items() if f not in trained_on},
                             "hit@1": {f: fams[f][mode]["hit@1"] for f in base}}
                if questions and base_questions:
                    row[mode]["p"] = {f: round(stats.paired_permutation_p(pooled_hits(questions, f, mode),
                                                                          pooled_hits(base_questions, f, mode)), 4)
                                      for f in base}
            out["runs"][path.name]["variants"][variant] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="none,lodo-r0.1,lodo-r0.01")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/query_adapter.json")
    parser.add_argument("--ship", action="store_true", help="train on every question the variants train "
                        f"on, at reg {QT.REG:g}, and write the adapter the package ships")
    parser.add_argument("--through", type=int, default=10,
                        help="train on the retired blind sets 1..N (default 10: the shipped adapter's; 13: all)")
    parser.add_argument("--confirm", choices=("confirm8", "confirm9", "confirm10", "confirm11", "confirm12"), help="also score this blind set (never trained on)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/query_adapter"),
                        help="where trained matrices are kept between runs")
    parser.add_argument("--borrow", type=Path, metavar="DIR",
                        help="variants named VARIANT@borrowed read their matrices from DIR (a --cache folder "
                        "of another index, e.g. the bundled model's when this index is adapted) instead of training")
    parser.add_argument("--summary-baseline", default="none", metavar="VARIANT",
                        help="with --summary: the first run's variant the others are counted against")
    parser.add_argument("--summary", nargs="+", type=Path, metavar="JSON",
                        help="search nothing: summarise these runs against the first one's none")
    args = parser.parse_args()
    if "@borrowed" in args.variants and args.borrow is None:
        parser.error("a VARIANT@borrowed needs --borrow DIR: the folder its matrices are read from")
    if args.summary:
        result = summary(args.summary, args.summary[0], args.summary_baseline)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        for name, run in result["runs"].items():
            for variant, row in run["variants"].items():
                print(f"{name} {variant}: " + "  ".join(
                    f"{mode} {r['gained_trained_on']:+d} (worst {r['worst_trained_on']:+d}), held out "
                    + ",".join(f"{v:+d}" for v in r["gained_held_out"].values()) for mode, r in row.items()))
        return 0
    settings = get_settings(query_adapter="off")  # the variants below stand in for it
    workspace = Workspace.open(settings)
    fams = {**bench.families(), **retired_families(args.through)}
    if args.confirm in RETIRED[:args.through]:
        raise SystemExit(f"{args.confirm} is among the training sets at --through {args.through}: "
                         f"it cannot confirm them")
    if args.confirm:  # scored, never trained on (only the tuning families are)
        for part in ("grampian", "manuals", "natech"):
            fams[f"{args.confirm}-{part}"] = {"paths": sorted((BENCH / args.confirm / part).glob("*.json")),
                                              "tuning": False}
    data = Training(workspace, fams, args.cache)
    training, questions, docs = data.families, data.questions, data.docs
    doc_of = {q.question: q.doc_id for spec in fams.values() for path in spec["paths"]
              for q in load_goldset(path).queries}

    if args.ship:
        matrix = data.adapter(f"all-r{QT.REG:g}", None)
        files = sorted({str(p.relative_to(PROJECT_ROOT)) for spec in training.values() for p in spec["paths"]})
        query_adapter.save(query_adapter.SHIPPED, matrix, settings.embedding_model, {
            "questions": len(questions), "gold_sets": files, "reg": QT.REG, "steps": QT.STEPS,
            "temperature": QT.TEMPERATURE, "learning_rate": QT.LEARNING_RATE,
            "sentence_weight": SENTENCE_WEIGHT, "trained_by": "python benchmarks/query_adapter.py --ship",
            "question_digests": sorted({query_adapter.question_digest(q.question) for q in questions}),
            "never_read": f"the held-out gold sets (*.holdout.json, natech/guidance2) and the blind sets after set {args.through}"})
        print(query_adapter.SHIPPED)
        return 0
    runs, record = {}, {}
    for variant in args.variants.split(","):
        started = time.perf_counter()
        if variant == "none":
            adapters = {}
        elif variant.endswith("@borrowed"):  # trained on another index (another model's space), applied here
            name = variant.removesuffix("@borrowed")
            adapters = {d: np.load(args.borrow / f"{name}-{d if name.startswith('lodo-') else 'all'}.npy")
                        for d in docs}
        elif variant.startswith("lodo-"):
            adapters = {d: data.adapter(variant, d) for d in docs}
        else:
            whole = data.adapter(variant, None)
            adapters = {d: whole for d in docs}
        record[variant] = {"seconds": round(time.perf_counter() - started, 1),
                           "distance_from_identity": {d: round(float(np.linalg.norm(w - np.eye(len(w)))), 3)
                                                      for d, w in adapters.items()}}

        def dense_query_vector(self, text, choice=None, adapters=adapters):
            vector = self.query_vector(text)
            w = adapters.get(doc_of.get(text))
            return vector if w is None else QueryAdapter(w, "").apply(vector)

        Workspace.dense_query_vector = dense_query_vector
        runs[variant] = bench.measure(settings, fams, ("dense", "hybrid"))
        Workspace.dense_query_vector = SHIPPED_DENSE_VECTOR
        print(variant, record[variant]["seconds"], "s", file=sys.stderr, flush=True)
    result = {
        "command": ("benchmarks/query_adapter.py --variants " + args.variants
                    + (f" --through {args.through}" if args.through != 10 else "")
                    + (f" --confirm {args.confirm}" if args.confirm else "")
                    + (f" --borrow {args.borrow}" if args.borrow else "")),
        "index": str(settings.index_dir), "embedding_model": settings.embedding_model,
        "trained_on": {"families": sorted(training), "questions": len(questions),
                       "per_document": {d: sum(q.doc_id == d for q in questions) for d in docs}},
        "loss": (f"softmax over the document's units at temperature {QT.TEMPERATURE}, {QT.STEPS} full-batch "
                 f"Adam steps at {QT.LEARNING_RATE:g}"),
        "settings": {"weight_dense": settings.weight_dense, "weight_bm25": settings.weight_bm25,
                     "dense_sentence_weight": settings.dense_sentence_weight},
        "variants": record,
        "loadavg": list(os.getloadavg()),
        "hit@1": bench.variants_table(runs, fams, "none", "p_vs_none"),
        "per_question": hits_per_question(runs),
    }
    bench.write_variants(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
