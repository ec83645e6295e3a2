"""The bundled MiniLM fine-tuned on gold questions of other documents, scored on a document it never saw.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/supervised_fine_tune.py \
        [--hold Grampian-2022-2023] [--work /tmp/supervised] [--merge 0.5] [--out PATH]
    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/supervised_fine_tune.py --ship \
        [--rank 64] [--work /tmp/supervised]

``--questions-read`` writes only src/ragloupe/index/minilm_questions_read.json, the digests of the
questions ``--ship`` trains on (``--ship`` writes it too), so reports on them say they are in-sample.

``--ship`` makes the default model (config.TUNED_MODEL): it trains the same way on every retired
gold question (the tuning families, blind sets 1-14; the Natech records and every manual
included, nothing held out), measures on ``--hold``'s chunks what the compressed delta keeps of
the averaged model at ranks 16, 32 and 64 (dense Hit@1 and the cosine of each chunk's vector to
the averaged model's), and writes the delta at ``--rank`` to src/ragloupe/index/minilm_questions.npz
(benchmarks/results/supervised_fine_tune_ship.json).

The query adapter learns a 384 x 384 map on the question's vector from gold questions; this asks
what the whole model learns from the same questions, both sides (question and passage) moving.
Training pairs: every gold question the 2,022-question adapter read (the tuning families and the
retired blind sets 1-13; benchmarks/query_adapter.py --through 13) whose document is not
``--hold`` (a document of the benchmark corpus: a report, a manual or ``guidance``, the Natech
records): the question, the chunk of
its gold page the bundled model ranks nearest, and BM25's
best chunk of another page of the same document as the hard negative (adapt/pairs.py's rule).
One epoch of adapt/training.fine_tune (in-batch negatives, batches of 32, lr 2e-5, 256 tokens),
saved as trained and averaged half and half with the bundled model (``--merge``, as `ragloupe
adapt` does).

The held-out document is then indexed alone (`ragloupe index`) once per model, and every question
about it (the tuning and held-out families, the retired blind sets 1-14) is asked in the default
mode and dense alone, each in its own document:

- ``bundled``: the bundled model, the question's own vector;
- ``bundled+adapter``: the bundled model with the query adapter trained without the document
  (the leave-one-document-out adapter of the 2,022 questions: what a new document gets today);
- ``merged``, ``merged+adapter``: the averaged model, alone and with that adapter carried over;
- ``trained``: the model as trained;
- ``compressed+adapter``: the averaged model as the package ships it (a delta at ``--rank``,
  index/tuned_model.py), the adapter carried over.

Per family and variant, and pooled over every question: Hit@1 and MRR@10, and the paired test
against ``bundled+adapter``. Models and indexes are kept under ``--work`` and reused (a rerun
reports the first run's training seconds): two saved models and three indexes a held-out
document, so clear it after. Writes --out (the recorded runs, one per report:
benchmarks/results/supervised_fine_tune_<report>.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragloupe.config import BUNDLED_MODEL, PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

sys.path.insert(0, str(Path(__file__).parent))
import query_adapter as QA  # noqa: E402  (the training families, the leave-one-document-out adapters)
import signals as S  # noqa: E402  (the fetch-once bench, the paired test)

from ragloupe.adapt import pairs as P  # noqa: E402
from ragloupe.adapt import training  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.index.embedder import resolve_model_path  # noqa: E402
from ragloupe.retrieve.query_adapter import QueryAdapter  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results/supervised_fine_tune.json"
SHIP_RESULTS = PROJECT_ROOT / "benchmarks/results/supervised_fine_tune_ship.json"
SHIP_RANKS = (16, 32, 64)
BENCH = PROJECT_ROOT / "data/benchmarks"
THROUGH = 13


def training_pairs(workspace, questions: list, hold: str, negatives: str = "bm25") -> list[P.Pair]:
    """``negatives``: "bm25", BM25's best chunk of another page of the document (adapt/pairs.py's
    rule); "neighbour", the chunk of the page just before or after the positive's (not a gold page)
    the bundled model ranks nearest the question, else BM25's: the neighbouring notes pages the
    default confuses most."""
    table, lexical = workspace.chunk_table(), workspace.lexical()
    out = []
    wanted = [q for q in questions if q.doc_id != hold and q.doc_id in table.by_doc]
    vectors = np.asarray(workspace.embedder.encode([q.question for q in wanted]), dtype=np.float32)
    for q, vector in zip(wanted, vectors):
        chunks = [table.by_id[i] for i in table.by_doc[q.doc_id]]
        gold = [c for c in chunks if c.unit in q.expected_units]
        if not gold:
            continue
        chunk_vectors = np.asarray(workspace.store.get_embeddings([c.chunk_id for c in gold]), dtype=np.float32)
        best = gold[int(np.argmax(chunk_vectors @ vector))]
        negative = ""
        if negatives == "neighbour":
            near = [c for c in chunks if abs(c.page - best.page) == 1 and c.unit not in q.expected_units]
            if near:
                near_vectors = np.asarray(workspace.store.get_embeddings([c.chunk_id for c in near]), dtype=np.float32)
                negative = near[int(np.argmax(near_vectors @ vector))].search_text
        negative = negative or P._hard_negative(lexical, "gold", q.question, best)
        out.append(P.Pair("gold", q.question, best.search_text, negative, q.doc_id, best.unit, best.chunk_id))
    return out


def train(pairs: list[P.Pair], work: Path, merge: float) -> dict[str, Path]:
    from sentence_transformers import SentenceTransformer

    trained_dir, merged_dir = work / "model-trained", work / f"model-merged{merge:g}"
    if not (trained_dir / "modules.json").is_file():
        model = SentenceTransformer(resolve_model_path(BUNDLED_MODEL), device="cpu")
        steps = -(-len(pairs) // 32)
        result = training.fine_tune(model, pairs, training.TrainConfig(max_steps=steps, max_seconds=3600),
                                    lambda step, total, loss: print(f"step {step}/{total} loss {loss:.3f}", flush=True))
        model.save(str(trained_dir))
        (trained_dir / "run.json").write_text(json.dumps({"pairs": len(pairs), "steps": result.steps,
                                                          "seconds": result.seconds, "losses": result.losses}))
    if not (merged_dir / "modules.json").is_file():
        model = SentenceTransformer(str(trained_dir), device="cpu")
        training.merge_weights(model, SentenceTransformer(resolve_model_path(BUNDLED_MODEL),
                                                          device="cpu"), merge)
        model.save(str(merged_dir))
    return {"trained": trained_dir, "merged": merged_dir}


def compressed(merged_dir: Path, work: Path, rank: int, record: dict) -> Path:
    """The averaged model as the package ships one: its change at ``rank`` (index/tuned_model.py),
    added back to the bundled weights under ``work``."""
    from ragloupe.index import tuned_model

    bundled = Path(resolve_model_path(BUNDLED_MODEL))
    delta = work / f"delta-r{rank}.npz"
    if not delta.is_file():
        tuned_model.write_delta(bundled, merged_dir, delta, rank, record)
    return tuned_model.model_dir(bundled, work / f"models-r{rank}", delta)


def index_alone(source: Path, index_dir: Path, model: str) -> None:
    if (index_dir / "manifest.json").is_file():
        return
    env = {**os.environ, "RAGLOUPE_INDEX_DIR": str(index_dir), "RAGLOUPE_EMBEDDING_MODEL": model}
    subprocess.run([sys.executable, "-c", "import sys; from ragloupe.cli import main; sys.exit(main(sys.argv[1:]))",
                    "index", str(source)], env=env, check=True, stdout=subprocess.DEVNULL)


def eval_families(hold: str) -> dict[str, list[Path]]:
    fams = {name: spec["paths"] for name, spec in QA.bench.families().items()}
    fams.update({f"blind{i + 1}": sorted((BENCH / name).glob("*/*.json"))
                 for i, name in enumerate(QA.RETIRED + ("confirm14",))})
    return fams


def score(index_dir: Path, model: str, adapter: np.ndarray | None, fams: dict, hold: str) -> dict:
    settings = get_settings(index_dir=index_dir, embedding_model=model, query_adapter="off")
    workspace = Workspace(settings)
    mapped = None if adapter is None else QueryAdapter(adapter, "")
    # as query_adapter.py does: every workspace the bench opens searches with this adapter (or none)
    Workspace.dense_query_vector = lambda self, text, choice=None: (
        self.query_vector(text) if mapped is None else mapped.apply(self.query_vector(text)))
    bench = S.Bench(settings, workspace)
    out = {}
    for family, paths in fams.items():
        qs = [q for p in paths for q in load_goldset(p).queries if q.doc_id == hold]
        if not qs:
            continue
        plain = bench.candidates(family, qs, {})
        out[family] = {mode: bench.rows(qs, plain, mode, {})[0] for mode in ("hybrid", "dense")}
    Workspace.dense_query_vector = QA.SHIPPED_DENSE_VECTOR
    return out


def ship_families() -> dict[str, dict]:
    """Every retired gold set: the tuning families and blind sets 1-14 (set 15 is never read)."""
    return {**QA.bench.families(), **QA.retired_families(THROUGH),
            "blind14": {"paths": sorted((BENCH / "confirm14").glob("*/*.json")), "tuning": True}}


def ship_questions() -> list[str]:
    """The text of every question --ship trains on (QA.Training's list for ship_families())."""
    return [q.question for spec in ship_families().values() if spec["tuning"]
            for path in spec["paths"] for q in load_goldset(path).queries]


def dense_hit1(model_dir: str, chunks: list, questions: list) -> tuple[float, np.ndarray]:
    """Dense alone over one document's chunks: the share of questions whose nearest chunk is on a gold
    page, and the chunk vectors (to compare two models' by cosine)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    vectors = model.encode([c.search_text for c in chunks], normalize_embeddings=True, batch_size=32)
    asked = model.encode([q.question for q in questions], normalize_embeddings=True, batch_size=32)
    best = np.argmax(asked @ vectors.T, axis=1)
    return float(np.mean([chunks[b].unit in q.expected_units for b, q in zip(best, questions)])), vectors


def ship(args) -> int:
    """Train on every retired gold question, measure what each rank of the compressed delta keeps of
    the averaged model (on ``--hold``'s chunks and questions: read in training, so this measures the
    compression, not the model), and write the delta at ``--rank`` into the package."""
    import tempfile

    from ragloupe.index import tuned_model

    started = time.perf_counter()
    base = Workspace.open(get_settings(query_adapter="off", embedding_model=BUNDLED_MODEL))
    data = QA.Training(base, ship_families(), Path("/tmp/query_adapter"))
    pairs = training_pairs(base, data.questions, hold="")
    models = train(pairs, args.work / "all", args.merge)
    bundled = Path(resolve_model_path(BUNDLED_MODEL))
    table = base.chunk_table()
    chunks = [table.by_id[i] for i in table.by_doc[args.hold]]
    questions = [q for q in data.questions if q.doc_id == args.hold]
    trained = json.loads((models["trained"] / "run.json").read_text())
    record = {"pairs": len(pairs), "questions": len(data.questions), "merge_weight": args.merge,
              "sets": sorted(data.families),  # the families marked tuning: what was trained on
              "steps": trained["steps"], "training_seconds": round(trained["seconds"]),
              "command": "python benchmarks/supervised_fine_tune.py --ship"}
    fidelity = {}
    for name, folder in (("bundled", bundled), ("averaged", models["merged"])):
        hit, vectors = dense_hit1(str(folder), chunks, questions)
        fidelity[name] = {"dense_hit@1": round(hit, 4)}
        if name == "averaged":
            full = vectors
    with tempfile.TemporaryDirectory() as tmp:
        for rank in SHIP_RANKS:
            folder = compressed(models["merged"], Path(tmp), rank, record)
            hit, vectors = dense_hit1(str(folder), chunks, questions)
            fidelity[f"rank {rank}"] = {"dense_hit@1": round(hit, 4), "megabytes": round((Path(tmp) / f"delta-r{rank}.npz").stat().st_size / 1e6, 2),
                                        "cosine_to_averaged_min": round(float(np.min(np.sum(vectors * full, axis=1))), 5),
                                        "cosine_to_averaged_mean": round(float(np.mean(np.sum(vectors * full, axis=1))), 5)}
            print(rank, fidelity[f"rank {rank}"], flush=True)
    saved = tuned_model.write_delta(bundled, models["merged"], tuned_model.DELTA, args.rank, record)
    tuned_model.write_questions_read(ship_questions())
    result = {"command": "python benchmarks/supervised_fine_tune.py --ship " + f"--rank {args.rank} --hold {args.hold}",
              "shipped": saved, "fidelity_document": args.hold, "fidelity_questions": len(questions),
              "fidelity_chunks": len(chunks), "fidelity": fidelity,
              "seconds": round(time.perf_counter() - started, 1)}
    SHIP_RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(fidelity), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", default="Grampian-2022-2023")
    parser.add_argument("--work", type=Path, default=Path("/tmp/supervised"))
    parser.add_argument("--merge", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--ship", action="store_true",
                        help="train on every retired gold question and write the shipped delta (index/tuned_model.py)")
    parser.add_argument("--rank", type=int, default=64, help="the rank each encoder matrix's change keeps in the shipped form (--ship, compressed+adapter)")
    parser.add_argument("--variants", default="", help="comma-separated variants to score (default: all; bundled+adapter is the baseline)")
    parser.add_argument("--negatives", choices=("bm25", "neighbour"), default="bm25",
                        help="each pair's hard negative: BM25's best chunk of another page (shipped), or the nearest chunk of a neighbouring page")
    parser.add_argument("--questions-read", action="store_true",
                        help="only write index/minilm_questions_read.json: which gold questions the shipped delta was trained on")
    args = parser.parse_args(argv)
    if args.ship:
        return ship(args)
    if args.questions_read:
        from ragloupe.index import tuned_model

        written = tuned_model.write_questions_read(ship_questions())
        print(f"{written['questions']} questions ({len(written['question_digests'])} distinct) -> {tuned_model.QUESTIONS_READ}")
        return 0
    started, load = time.perf_counter(), [round(os.getloadavg()[0], 1)]
    settings = get_settings(query_adapter="off", embedding_model=BUNDLED_MODEL)  # the benchmark index's model
    base = Workspace.open(settings)
    fams = {**QA.bench.families(), **QA.retired_families(THROUGH)}
    data = QA.Training(base, fams, Path("/tmp/query_adapter"))
    adapter = data.adapter("lodo-r0.01", args.hold)
    pairs = training_pairs(base, data.questions, args.hold, args.negatives)
    models = train(pairs, args.work / args.hold, args.merge)
    models["compressed"] = compressed(models["merged"], args.work / args.hold, args.rank, {"merge_weight": args.merge})
    # the held-out document's file: a report's or a manual's PDF, or the Natech records' CSV ("guidance")
    source = next(p for p in sorted(BENCH.glob("*/pdf/*.pdf")) + [BENCH / "natech/guidance.csv"] if p.stem == args.hold)
    variants = {"bundled": (BUNDLED_MODEL, None), "bundled+adapter": (BUNDLED_MODEL, adapter),
                "merged": (str(models["merged"]), None), "merged+adapter": (str(models["merged"]), adapter),
                "trained": (str(models["trained"]), None),
                "compressed+adapter": (str(models["compressed"]), adapter)}
    if args.variants:
        variants = {name: variants[name] for name in args.variants.split(",")}
    fams_eval = eval_families(args.hold)
    runs = {}
    for name, (model, matrix) in variants.items():
        index_dir = args.work / args.hold / f"index-{name.split('+')[0]}"
        index_alone(source, index_dir, model)
        runs[name] = score(index_dir, model, matrix, fams_eval, args.hold)
        print(name, {f: round(sum(r["hit@1"] for r in m["hybrid"]) / len(m["hybrid"]), 3) for f, m in runs[name].items()},
              flush=True)
    base_runs = runs["bundled+adapter"]
    table = {}
    for family in base_runs:
        table[family] = {}
        for name, run in runs.items():
            table[family][name] = {mode: {**S.figures(run[family][mode]),
                                          "vs_bundled+adapter": S.paired(run[family][mode], base_runs[family][mode])["hit@1"]}
                                   for mode in ("hybrid", "dense")}
    pooled = {name: {mode: {"found_first": int(sum(r["hit@1"] for f in run for r in run[f][mode])),
                            "vs_bundled+adapter": S.paired([r for f in run for r in run[f][mode]],
                                                           [r for f in base_runs for r in base_runs[f][mode]])}
                     for mode in ("hybrid", "dense")}
              for name, run in runs.items()}
    record = json.loads((models["trained"] / "run.json").read_text())
    result = {"command": "python benchmarks/supervised_fine_tune.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "held_out_document": args.hold, "training_pairs": len(pairs),
              "training": {k: v for k, v in record.items() if k != "losses"},
              "loss_first_last_10": [round(float(np.mean(record["losses"][:10])), 3),
                                     round(float(np.mean(record["losses"][-10:])), 3)],
              "questions": sum(len(m["hybrid"]) for m in base_runs.values()),
              "pooled": pooled, "families": table,
              "load_average": load + [round(os.getloadavg()[0], 1)], "seconds": round(time.perf_counter() - started, 1)}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(pooled), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
