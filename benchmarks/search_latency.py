"""Search latency per mode at 1k, 10k and 100k chunks: p50 and p95, each stage apart.

    .venv/bin/python benchmarks/search_latency.py [--sizes 1000,10000,100000] [--queries 40]

Writes benchmarks/results/search_latency.json.

Synthetic corpus, real machinery. Chunk texts are 180-word windows cut at
random offsets from the shipped corpus text (the Grampian page texts and the
Natech guidance), so BM25 sees the real vocabulary and term statistics.
Chunk embeddings are random unit vectors: embedding 100k chunks with the
model would take hours on two cores, and HNSW search time does not depend
on what the vectors mean. They go into a real embedded Chroma collection
through the index's own Store, and every query runs through search(). So
are the sentence vectors the dense engine blends in (index/sentences.py),
written per document as the indexer writes them.

Query embedding is measured on its own, with the real bundled model, and is
excluded from the per-mode figures: search() receives the query vectors
precomputed, so "search time" is everything after the query is a vector
(Chroma, BM25, fusion, rerank, page view). Each BM25 backend is measured
for the modes that use BM25.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.index import sentences  # noqa: E402
from ragloupe.index.embedder import get_embedder  # noqa: E402
from ragloupe.index.store import open_store  # noqa: E402
from ragloupe.models import Chunk  # noqa: E402
from ragloupe.retrieve.search import search  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data" / "benchmarks"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "search_latency.json"
WORDS_PER_CHUNK = 180  # ~256 MiniLM tokens, the default chunk size
DIMENSION = 384  # all-MiniLM-L6-v2
MODES = ("dense", "bm25", "hybrid", "hybrid+rerank")
SEED = 20240601


def corpus_words() -> list[str]:
    """Every word of the shipped corpus text, in reading order."""
    words: list[str] = []
    for path in sorted((BENCH / "grampian" / "pages").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                words += json.loads(line)["text"].split()
    with open(BENCH / "natech" / "guidance.csv", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            words += row["Content"].split()
    return words


def gold_questions() -> list[str]:
    questions: list[str] = []
    for path in sorted((BENCH / "grampian" / "eval").glob("*.eval.json")):
        questions += [q["question"] for q in json.loads(path.read_text(encoding="utf-8"))["queries"]]
    return questions


def synthetic_chunks(n: int, words: list[str], rng: random.Random) -> list[Chunk]:
    chunks = []
    for i in range(n):
        start = rng.randrange(0, len(words) - WORDS_PER_CHUNK)
        text = " ".join(words[start:start + WORDS_PER_CHUNK])
        doc, page = divmod(i, 200)
        chunks.append(Chunk(chunk_id=f"synth-{i:06d}", doc_id=f"synth-{doc:04d}", page=page + 1,
                            position=0, text=text, n_tokens=WORDS_PER_CHUNK, quality="clean"))
    return chunks


def random_unit_vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class PrecomputedQueries:
    """Stands in for the embedder inside search(): returns vectors computed beforehand,
    so the per-mode figures exclude query embedding (measured separately)."""

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors

    def encode(self, texts):
        return np.stack([self.vectors[t] for t in texts])


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def summarise(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(samples, 50) * 1000, 2),
            "p95_ms": round(percentile(samples, 95) * 1000, 2),
            "mean_ms": round(statistics.fmean(samples) * 1000, 2)}


def measure_query_embedding(questions: list[str], settings: Settings) -> dict:
    embedder = get_embedder(settings)
    embedder.encode(questions[:3])  # warm-up
    samples = []
    for question in questions:
        start = time.perf_counter()
        embedder.encode([question])
        samples.append(time.perf_counter() - start)
    return {"n": len(samples), **summarise(samples), "model": settings.embedding_model}


def measure_scale(n: int, words: list[str], questions: list[str], query_vectors: dict,
                  backends: list[str], root: Path) -> dict:
    settings = Settings.from_env(index_dir=root / f"index-{n}", runs_dir=root / "runs",
                                 raw_dir=root / "raw", logs_dir=root / "logs", chroma_host="",
                                 llm_backend="none", lexical_rerank=False, cross_encoder_model="")
    chunks = synthetic_chunks(n, words, random.Random(SEED + n))
    vectors = random_unit_vectors(n, np.random.default_rng(SEED + n))
    store = open_store(settings)
    start = time.perf_counter()
    store.upsert(chunks, vectors)
    store.set_content_marker(f"synthetic-{n}")
    insert_s = time.perf_counter() - start
    if settings.dense_sentence_weight > 0:  # each chunk's sentence vectors, as the indexer writes them
        rng = np.random.default_rng(SEED + n + 1)
        by_doc: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        for doc_id, doc_chunks in sorted(by_doc.items()):
            sentences.save(settings, doc_id, sentences.build(
                doc_chunks, lambda texts: random_unit_vectors(len(texts), rng)))
    del chunks, vectors
    workspace = Workspace.open(settings, store=store, embedder=PrecomputedQueries(query_vectors))
    result: dict = {"chunks": n, "chroma_insert_s": round(insert_s, 1), "bm25_build_s": {}, "modes": {}}
    for backend in backends:
        run_settings = settings.replace(bm25_backend=backend)
        workspace.clear()  # each backend's build reads the store, as a first search does
        start = time.perf_counter()
        workspace.lexical(backend=backend)
        result["bm25_build_s"][backend] = round(time.perf_counter() - start, 1)
        for mode in MODES:
            if mode == "dense" and backend != backends[0]:
                continue  # the dense engine does not use BM25: measure it once
            key = mode if mode == "dense" else f"{mode} [{backend}]"
            for question in questions[:3]:  # warm-up: caches, HNSW pages
                search(question, mode, 10, workspace=workspace.with_settings(run_settings))
            totals: list[float] = []
            stages: dict[str, list[float]] = {}
            for question in questions:
                ranking = search(question, mode, 10, workspace=workspace.with_settings(run_settings))
                timings = ranking.timings
                totals.append(timings["total"] - timings.get("query_embedding", 0.0))
                for stage, seconds in timings.items():
                    if stage not in ("total", "query_embedding", "setup"):
                        stages.setdefault(stage, []).append(seconds)
            result["modes"][key] = {**summarise(totals), "stages_p50_ms": {
                stage: round(percentile(values, 50) * 1000, 2) for stage, values in stages.items()}}
            print(f"{n:>7} chunks  {key:<28} p50 {result['modes'][key]['p50_ms']:>8} ms  "
                  f"p95 {result['modes'][key]['p95_ms']:>8} ms", flush=True)
    # Release this scale's index and its BM25 caches before the next one.
    workspace.clear()
    del store, workspace
    shutil.rmtree(settings.path("index_dir"), ignore_errors=True)
    return result


def growth(scales: list[dict]) -> dict:
    """p50 ratio between consecutive scales next to the corpus-size ratio (linear: equal)."""
    out = {}
    for small, large in zip(scales, scales[1:]):
        size_ratio = large["chunks"] / small["chunks"]
        for key, figures in large["modes"].items():
            if key in small["modes"] and small["modes"][key]["p50_ms"] > 0:
                ratio = figures["p50_ms"] / small["modes"][key]["p50_ms"]
                out.setdefault(key, []).append({
                    "from": small["chunks"], "to": large["chunks"], "size_ratio": size_ratio,
                    "p50_ratio": round(ratio, 2), "no_worse_than_linear": ratio <= size_ratio})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=40, help="timed queries per mode and scale")
    parser.add_argument("--backends", default="rank_bm25,bm25s")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    settings = Settings.from_env(chroma_host="")
    words = corpus_words()
    questions = gold_questions()[: args.queries]
    print(f"query embedding: {len(questions)} gold questions with the bundled model", flush=True)
    embedding = measure_query_embedding(questions, settings)
    query_vectors = dict(zip(questions, get_embedder(settings).encode(questions)))
    load_before = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="ragloupe-bench-"))
    try:
        scales = [measure_scale(n, words, questions, query_vectors, backends, root) for n in sizes]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report = {
        "benchmark": "search_latency",
        "command": "python benchmarks/search_latency.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(),
                    # The machine may be shared: a load above the CPU count inflates every figure.
                    "load_average_1m_before_after": [round(load_before[0], 1),
                                                     round(os.getloadavg()[0], 1)]},
        "settings": {"k": 10, "candidate_window": settings.candidate_window, "fusion": settings.fusion,
                     "rerank": "lexical (hybrid+rerank, no cross-encoder)",
                     "words_per_chunk": WORDS_PER_CHUNK, "embeddings": "random unit vectors, 384-d",
                     "queries": len(questions)},
        "note": "mode figures exclude query embedding (reported apart); bm25_index is the "
                "in-process cache lookup, the build is in bm25_build_s",
        "query_embedding": embedding,
        "scales": scales,
        "growth": growth(scales),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
