"""Encoding speed of each embedding backend on this machine, and what it does to retrieval.

    .venv/bin/python benchmarks/encode_speed.py [--cache /tmp/ragloupe-encode] [--sample 512]

1. Speed: the first ``--sample`` chunks of the demo corpus (Grampian PDFs and
   natech/guidance.csv, chunked as the index does) are encoded by each
   backend (torch, onnx, onnx-int8) after one warm-up batch; chunks/s is the
   best of ``--repeats`` timed passes (the machine is shared: the best pass
   is the least disturbed one).
2. Agreement: cosine between each backend's vector and torch's, per chunk.
3. Retrieval: a torch index of the demo corpus (``--torch-index``, copied,
   never written; or built under --cache) is copied once per other backend
   and every chunk re-encoded with that backend, so the backends are compared
   on the very same chunks (chunking depends on the tokenizer only, which
   all backends share). The three Grampian gold sets (page level, each
   question in its own report) and the Natech tuning set are evaluated in
   dense and hybrid modes; each backend's Hit@1 and MRR are paired with
   torch's by question (bootstrap CI of the difference, permutation p).
   No setting is chosen here: nothing is tuned.

Writes benchmarks/results/encode_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

import numpy as np  # noqa: E402

from ragloupe.evaluate import metrics as M  # noqa: E402
from ragloupe.evaluate import stats  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402

SOURCES = [PROJECT_ROOT / "data/benchmarks/grampian/pdf", PROJECT_ROOT / "data/benchmarks/natech/guidance.csv"]
GOLD = [*sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json")),
        PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json"]
RESULTS = PROJECT_ROOT / "benchmarks/results/encode_speed.json"
BACKENDS = ("torch", "onnx", "onnx-int8")


def demo_chunks(settings: Settings, embedder) -> list[str]:
    """The demo corpus's chunk texts, in reading order, as the indexer cuts them."""
    from ragloupe.chunking import chunk_document
    from ragloupe.ingest import discover_sources, load_source

    texts: list[str] = []
    for path in discover_sources(SOURCES):
        doc = load_source(path, settings)
        texts += [c.search_text for c in chunk_document(doc, embedder.tokenizer, settings)]
    return texts


def speed(embedder, texts: list[str], repeats: int) -> dict:
    embedder.encode(texts[:embedder.batch_size])  # warm-up: first-call allocations, thread pools
    passes = []
    for _ in range(repeats):
        started = time.perf_counter()
        embedder.encode(texts)
        passes.append(time.perf_counter() - started)
    best = min(passes)
    return {"chunks": len(texts), "seconds_per_pass": [round(p, 3) for p in passes],
            "chunks_per_s": round(len(texts) / best, 1)}


def backend_settings(cache: Path, backend: str) -> Settings:
    root = cache / backend
    return Settings.from_env(index_dir=root / "index", runs_dir=root / "runs", raw_dir=root / "raw",
                             logs_dir=root / "logs", models_dir=cache / "models", chroma_host="",
                             embedding_backend=backend)


def torch_index(cache: Path, given: str | None) -> Settings:
    """The torch index: a copy of ``given``, or the demo corpus indexed under ``cache``."""
    from ragloupe.errors import StaleIndex
    from ragloupe.index.pipeline import run_index

    settings = backend_settings(cache, "torch")
    if given:
        shutil.rmtree(settings.path("index_dir"), ignore_errors=True)
        shutil.copytree(given, settings.path("index_dir"), ignore=shutil.ignore_patterns(".lock"))
        return settings
    try:
        summary = run_index(SOURCES, settings)
    except StaleIndex:
        summary = run_index(SOURCES, settings, rebuild=True)
    if summary.errors:
        raise SystemExit(f"indexing for torch failed: {summary.errors}")
    return settings


def reencoded_index(cache: Path, source: Settings, backend: str) -> Settings:
    """A copy of the torch index with every chunk's vector from ``backend`` (same ids, texts, metadata)."""
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store

    settings = backend_settings(cache, backend)
    shutil.rmtree(settings.path("index_dir"), ignore_errors=True)
    shutil.copytree(source.path("index_dir"), settings.path("index_dir"), ignore=shutil.ignore_patterns(".lock"))
    store = open_store(settings)
    chunks = store.all_chunks()
    started = time.perf_counter()
    store.upsert(chunks, get_embedder(settings).encode([c.search_text for c in chunks]))
    print(f"{backend}: {len(chunks)} chunks re-encoded in {time.perf_counter() - started:.0f}s", flush=True)
    return settings


def retrieval(settings: Settings) -> dict:
    """Per-question Hit@1 and reciprocal rank, per gold set and mode (scope: each question's document)."""
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store
    from ragloupe.retrieve.search import search
    from ragloupe.workspace import Workspace

    workspace = Workspace.open(settings, store=open_store(settings), embedder=get_embedder(settings))
    out: dict = {}
    for mode in ("dense", "hybrid"):
        for path in GOLD:
            gold = load_goldset(path)
            rows = []
            for q in gold.queries:
                ranking = search(q.question, mode=mode, k=10, filters={"doc_ids": [q.doc_id]}, workspace=workspace)
                ranked = M.dedupe(p.unit for p in ranking.pages)
                metrics = M.query_metrics(ranked, q.expected_units, (1, 3))
                rows.append({"hit@1": metrics["hit@1"], "rr": metrics["rr"]})
            out[f"{mode}|{gold.name}"] = rows
        # All Grampian questions together: one paired test over 150 instead of three over 50.
        out[f"{mode}|Grampian (all)"] = [row for key, rows in out.items() if key.startswith(f"{mode}|Grampian-")
                                         for row in rows]
    return out


def compare(base: list[dict], other: list[dict]) -> dict:
    out = {}
    for metric in ("hit@1", "rr"):
        xs, ys = [r[metric] for r in base], [r[metric] for r in other]
        low, high = stats.paired_bootstrap_ci(ys, xs)  # the CI of other - base
        out[metric] = {"torch": round(float(np.mean(xs)), 4), "backend": round(float(np.mean(ys)), 4),
                       "diff": round(float(np.mean(ys) - np.mean(xs)), 4),
                       "ci95_diff": [round(low, 4), round(high, 4)] if low is not None else None,
                       "p": round(stats.paired_permutation_p(xs, ys), 4)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/tmp/ragloupe-encode", help="where the per-backend indexes go")
    parser.add_argument("--sample", type=int, default=512, help="chunks timed per backend")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-retrieval", dest="retrieval", action="store_false")
    parser.add_argument("--no-speed", dest="speed", action="store_false", help="retrieval comparison only")
    parser.add_argument("--backends", default=",".join(BACKENDS[1:]),
                        help="backends compared with torch on retrieval, comma-separated")
    parser.add_argument("--torch-index", help="an existing index of the demo corpus with default settings "
                                              "(copied, not written); default: build one under --cache")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    from ragloupe.index.embedder import get_embedder

    import onnxruntime
    import torch

    base = Settings.from_env(models_dir=Path(args.cache) / "models")
    torch_embedder = get_embedder(base)
    texts: list[str] = []
    if args.speed and args.torch_index:  # the index's own chunks: no need to extract the PDFs again
        from ragloupe.index.store import open_store

        held = open_store(base.replace(index_dir=Path(args.torch_index))).all_chunks()
        texts = [c.search_text for c in held][:args.sample]
    elif args.speed:
        texts = demo_chunks(base, torch_embedder)[:args.sample]
    reference = torch_embedder.encode(texts)
    out: dict = {"what": "chunks/s per embedding backend, agreement with torch, retrieval paired with torch",
                 "model": base.embedding_model, "batch_size": base.embed_batch_size,
                 "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
                 "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                             "onnxruntime": onnxruntime.__version__},
                 "speed": {}, "agreement": {}}
    for backend in BACKENDS if args.speed else ():
        embedder = get_embedder(base.replace(embedding_backend=backend))
        out["speed"][backend] = speed(embedder, texts, args.repeats)
        cosines = (embedder.encode(texts) * reference).sum(axis=1)
        out["agreement"][backend] = {"min_cosine": round(float(cosines.min()), 4),
                                     "mean_cosine": round(float(cosines.mean()), 4)}
        print(f"{backend}: {out['speed'][backend]['chunks_per_s']} chunks/s, "
              f"min cosine to torch {out['agreement'][backend]['min_cosine']}", flush=True)
    if args.speed:
        torch_speed = out["speed"]["torch"]["chunks_per_s"]
        out["speedup_vs_torch"] = {b: round(out["speed"][b]["chunks_per_s"] / torch_speed, 2) for b in BACKENDS}

    if args.retrieval:
        cache = Path(args.cache)
        reference_index = torch_index(cache, args.torch_index)
        per_backend = {"torch": retrieval(reference_index)}
        compared = [b for b in args.backends.split(",") if b]
        for backend in compared:
            per_backend[backend] = retrieval(reencoded_index(cache, reference_index, backend))
        out["retrieval"] = {backend: {key: compare(per_backend["torch"][key], rows)
                                      for key, rows in per_backend[backend].items()}
                            for backend in compared}
        out["retrieval"]["torch"] = {key: {m: round(float(np.mean([r[m] for r in rows])), 4)
                                           for m in ("hit@1", "rr")}
                                     for key, rows in per_backend["torch"].items()}
    out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(out.get("speedup_vs_torch", {})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
