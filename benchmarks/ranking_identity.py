"""Does a change to the retrieval code keep every ranking? Dump them before, dump them after, compare.

    PYTHONPATH=src .venv/bin/python benchmarks/ranking_identity.py dump INDEX_DIR before.json   # old code
    PYTHONPATH=src .venv/bin/python benchmarks/ranking_identity.py dump INDEX_DIR after.json    # new code
    .venv/bin/python benchmarks/ranking_identity.py compare before.json after.json

Every question of the 150 Grampian benchmark questions and both Natech sets
(203), in the modes bm25, dense, hybrid and hybrid+rerank, scoped to the
question's document and to the whole index: the top 20 chunks with their
scores and the page view, 3,248 rankings, through search() and one Workspace.

Two things would move rankings although the code did not, so both are pinned
for the comparison: the question vectors are encoded once and read back from
VECTORS (ONNX's threads sum in an order of their own, which moves near-ties),
(kept beside the dump), and dense search is exact (Store.query and Store.nearest) over the stored vectors (Chroma's HNSW answers the
deep part of a 100-candidate window differently from one process to the
next: the same code dumped twice differed in ~100 rankings). Nothing is
tuned or chosen here; the held-out sets are only read.

Writes the dump to the given path; compare prints the rankings that differ and exits 1 if any does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VECTORS = "ranking_identity_vectors.npz"  # beside the dump: the before and after dumps share it
MODES = ("bm25", "dense", "hybrid", "hybrid+rerank")


def goldsets():
    from ragloupe.evaluate.goldset import load_goldsets

    bench = ROOT / "data/benchmarks"
    return load_goldsets(sorted((bench / "grampian/eval").glob("*.eval.json"))
                         + [bench / "natech/guidance.gold.json", bench / "natech/guidance2.gold.json"])


class FixedVectors:
    """Stands in for the embedder: the question vectors encoded once."""

    model_name = "fixed"

    def __init__(self, table: dict):
        self.table = table

    def encode(self, texts):
        return np.stack([self.table[t] for t in texts])


def exact_dense(store_class) -> None:
    """Store.query and Store.nearest as exact searches over every stored vector (ties by chunk id)."""
    held: dict = {}

    def ranked(store, embedding, where, ids):
        if not held:
            held["chunks"] = store.all_chunks()
            held["matrix"] = store.get_embeddings([c.chunk_id for c in held["chunks"]])
        docs = None
        if where:
            if list(where) != ["doc_id"] or list(where["doc_id"]) != ["$in"]:
                raise SystemExit(f"exact search knows doc_id $in filters only, not {where}")
            docs = set(where["doc_id"]["$in"])
        allowed = set(ids) if ids is not None else None
        distance = 1.0 - held["matrix"] @ np.asarray(embedding, dtype=np.float32)
        return sorted((float(d), c.chunk_id, i) for i, (c, d) in enumerate(zip(held["chunks"], distance))
                      if (docs is None or c.doc_id in docs) and (allowed is None or c.chunk_id in allowed))

    def query(self, embedding, n, where=None):
        return [(held["chunks"][i], d) for d, _, i in ranked(self, embedding, where, None)[:n]]

    def nearest(self, embedding, n, where=None, ids=None):
        return [(chunk_id, d) for d, chunk_id, _ in ranked(self, embedding, where, ids)[:n]]

    store_class.query = query
    if hasattr(store_class, "nearest"):  # the dense engine's path when it reads chunks from the workspace
        store_class.nearest = nearest


def dump(index_dir: Path, out: Path) -> None:
    from ragloupe.config import Settings
    from ragloupe.index import store
    from ragloupe.retrieve.search import search
    from ragloupe.workspace import Workspace

    settings = Settings.from_env(index_dir=index_dir.resolve(), chroma_host="")
    sets = goldsets()
    vectors = out.parent / VECTORS
    if not vectors.exists():
        from ragloupe.index.embedder import get_embedder

        questions = sorted({q.question for g in sets for q in g.queries})
        np.savez(vectors, questions=np.array(questions), vectors=get_embedder(settings).encode(questions))
    saved = np.load(vectors)
    exact_dense(store.Store)
    workspace = Workspace.open(settings, embedder=FixedVectors(dict(zip(saved["questions"].tolist(), saved["vectors"]))))
    rankings = {}
    for goldset in sets:
        for q in goldset.queries:
            for mode in MODES:
                for scope, filters in (("doc", {"doc_ids": [q.doc_id]}), ("all", None)):
                    ranking = search(q.question, mode, 20, filters, workspace=workspace)
                    key = f"{goldset.name}/{q.query_id}/{mode}/{scope}"
                    rankings[key] = [[h.chunk.chunk_id, round(h.score, 6)] for h in ranking.hits]
                    rankings[key + "/pages"] = [p.unit for p in ranking.pages]
    out.write_text(json.dumps(rankings, indent=0, sort_keys=True), encoding="utf-8")
    print(f"{len(rankings)} rankings of {sum(len(g.queries) for g in sets)} questions -> {out}")


def compare(before: Path, after: Path) -> int:
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (before, after))
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    for key in differ[:20]:
        print(f"differs: {key}")
    print(f"{len(a)} rankings before, {len(b)} after, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "dump":
        dump(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        raise SystemExit(__doc__.split("\n\n")[1])
