"""Dense similarity at sentence grain, tried as a signal past term overlap.

    .venv/bin/python benchmarks/sentence_dense.py [--variants chunk,sent,mix50,max] [--out PATH]

On the index RAGLOUPE_INDEX_DIR points at (the benchmark index of benchmarks/adapt.py: the
Grampian PDFs, natech/guidance.csv and the manuals). A 256-token chunk embedded whole is one
average of everything it says; a question usually asks after one sentence of it, and MiniLM
was trained on sentence pairs. Each chunk's text is cut into sentences as the indexer cuts them
(index/sentences.py: pieces under 8 words joined to the next, the chunk's context line before
each), every sentence embedded once with the index's model (cached under --cache), and the
dense engine scores a chunk by:

- ``chunk``: the chunk's own embedding (the shipped engine, over every chunk in scope);
- ``sent``: its best sentence;
- ``mixNN``: NN% its best sentence, the rest the chunk's own;
- ``max``: the larger of the two;
- ``top2mixNN``: as mixNN with the mean of the chunk's two best sentences in place of its best;
- ``triSS_PP``: SS% its best sentence, PP% its best two neighbouring sentences, the rest the chunk's own;
- ``VARIANT@N``: the variant over the first N chunks by their own embedding only (what an
  engine that rescores Chroma's nearest chunks would see);
- ``shippedW``: the dense engine as shipped, at RAGLOUPE_DENSE_SENTENCE_WEIGHT=W (it rescores
  Chroma's nearest candidate_window chunks; its sentence vectors are the index's, encoded on the
  first search of a document when the indexer did not write them).

Every tuning family of benchmarks/adapt.py is searched in dense and the default hybrid mode,
each question in its own document, against ``chunk``: Hit@1 and MRR per family and the paired
permutation p-value of the Hit@1 difference. The engine is patched for this script only.
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

from ragloupe.index.sentences import sentence_texts  # noqa: E402
from ragloupe.retrieve import engines  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

SHIPPED = engines.DenseEngine.search


def grain_texts(chunk, grain: str) -> list[str]:
    """The chunk's sentences (as the indexer cuts them), or each two neighbouring sentences together."""
    texts = sentence_texts(chunk)
    if grain == "sentence" or len(texts) < 2:
        return texts
    head = f"{chunk.context}\n" if chunk.context else ""
    bare = [t[len(head):] for t in texts]
    return [f"{head}{a} {b}" for a, b in zip(bare, bare[1:])]


class SentenceIndex:
    """Every chunk's own embedding and its sentences' embeddings, as numpy arrays."""

    def __init__(self, workspace: Workspace, cache: Path, grain: str = "sentence"):
        table = workspace.chunk_table()
        self.table = table
        self.ids = sorted(table.by_id)
        self.row = {cid: i for i, cid in enumerate(self.ids)}
        chunks = [table.by_id[cid] for cid in self.ids]
        self.chunk_vectors = np.asarray(workspace.store.get_embeddings(self.ids), dtype=np.float32)
        texts, owner = [], []
        for i, chunk in enumerate(chunks):
            for text in grain_texts(chunk, grain):
                texts.append(text)
                owner.append(i)
        self.owner = np.asarray(owner)
        key = hashlib.sha256(json.dumps([workspace.settings.embedding_model, texts]).encode()).hexdigest()[:12]
        path = cache / f"sentence_vectors-{key}.npy"
        if path.is_file():
            self.sentence_vectors = np.load(path)
        else:
            started = time.perf_counter()
            self.sentence_vectors = workspace.embedder.encode(texts)
            self.encode_seconds = round(time.perf_counter() - started, 1)
            cache.mkdir(parents=True, exist_ok=True)
            np.save(path, self.sentence_vectors)
        self.n_sentences = len(texts)

    def scores(self, query: np.ndarray, rows: np.ndarray, top: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Each chunk row's own similarity and the mean of its ``top`` best sentences' (fewer when it has fewer)."""
        chunk = self.chunk_vectors[rows] @ query
        sims = self.sentence_vectors @ query
        if top == 1:
            best = np.full(len(self.ids), -1.0, dtype=np.float32)
            np.maximum.at(best, self.owner, sims)
            return chunk, best[rows]
        by_chunk: dict[int, list[float]] = {}
        for owner, sim in zip(self.owner.tolist(), sims.tolist()):
            by_chunk.setdefault(owner, []).append(sim)
        best = np.array([float(np.mean(sorted(by_chunk.get(int(r), [-1.0]), reverse=True)[:top])) for r in rows])
        return chunk, best


def with_sentences(index: SentenceIndex, variant: str, pairs: SentenceIndex | None = None):
    """DenseEngine.search scoring every chunk in scope by the variant (``pairs``: for triSS_PP)."""
    def search(self, question, scope, k):
        workspace = scope.workspace
        embedding = workspace.query_vector(question.text)
        scope.shared["query_vector"] = embedding
        filters = dict(scope.filters or {})
        doc_ids = filters.pop("doc_ids", None)
        if filters:
            raise SystemExit(f"filters this script does not apply: {sorted(filters)}")
        ids = ([i for d in doc_ids for i in index.table.by_doc.get(d, ())] if doc_ids else index.ids)
        rows = np.asarray([index.row[i] for i in ids])
        name, _, within = variant.partition("@")
        if within:  # rescore only the first `within` chunks by their own embedding
            first = np.argsort(-(index.chunk_vectors[rows] @ embedding), kind="stable")[:int(within)]
            rows = rows[first]
        top = 1
        if name.startswith("top2"):  # top2mixNN: the mean of the two best sentences in place of the best
            top, name = 2, name[4:]
        chunk, sent = index.scores(embedding, rows, top)
        if name == "chunk":
            score = chunk
        elif name == "sent":
            score = sent
        elif name == "max":
            score = np.maximum(chunk, sent)
        elif name.startswith("mix"):
            share = int(name[3:]) / 100
            score = share * sent + (1 - share) * chunk
        elif name.startswith("tri"):
            single, double = (int(x) / 100 for x in name[3:].split("_"))
            pair = pairs.scores(embedding, rows)[1]
            score = single * sent + double * pair + (1 - single - double) * chunk
        else:
            raise SystemExit(f"unknown variant {variant}")
        order = np.argsort(-score, kind="stable")[:k]
        return [engines.EngineHit(index.table.by_id[index.ids[rows[j]]], float(score[j]),
                                  float(1 - score[j])) for j in order]
    return search


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="chunk,sent,mix50,max")
    parser.add_argument("--families", default="", help="comma-separated; default every tuning family")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/sentence_dense.json")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sentence_dense"))
    parser.add_argument("--grain", choices=("sentence", "pair"), default="sentence",
                        help="what the patched variants score: each sentence, or each two neighbouring ones")
    args = parser.parse_args()
    wanted = set(filter(None, args.families.split(",")))
    fams = {name: spec for name, spec in bench.families().items()
            if (name in wanted if wanted else spec["tuning"])}
    settings = get_settings()
    workspace = Workspace.open(settings)
    index = SentenceIndex(workspace, args.cache, args.grain)
    pairs = (SentenceIndex(workspace, args.cache, "pair") if any(v.startswith("tri") for v in
                                                                  args.variants.split(",")) else None)
    print(f"{len(index.ids)} chunks, {index.n_sentences} sentences", file=sys.stderr, flush=True)
    runs = {}
    variants = args.variants.split(",")
    if "chunk" not in variants:
        variants.insert(0, "chunk")
    for variant in variants:
        if variant.startswith("shipped"):  # the engine as shipped, at this RAGLOUPE_DENSE_SENTENCE_WEIGHT
            engines.DenseEngine.search = SHIPPED
            runs[variant] = bench.measure(settings.replace(dense_sentence_weight=float(variant[7:])), fams,
                                          ("dense", "hybrid"))
        else:
            engines.DenseEngine.search = with_sentences(index, variant, pairs)
            runs[variant] = bench.measure(settings, fams, ("dense", "hybrid"))
        print(variant, file=sys.stderr, flush=True)
    engines.DenseEngine.search = SHIPPED
    table = bench.variants_table(runs, fams, "chunk", "p_vs_chunk")
    result = {"command": "python benchmarks/sentence_dense.py --variants " + args.variants
              + (f" --grain {args.grain}" if args.grain != "sentence" else ""), "grain": args.grain,
              "index_dir": str(settings.path("index_dir")), "embedding_model": settings.embedding_model,
              "default": f"{settings.mode}, {settings.fusion}", "chunks": len(index.ids),
              "sentences": index.n_sentences, "encode_seconds": getattr(index, "encode_seconds", None),
              "loadavg": [round(x, 2) for x in os.getloadavg()], "hit@1": table}
    bench.write_variants(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
