"""The dense question without the words its document uses everywhere, tried as a signal past term overlap.

    .venv/bin/python benchmarks/dense_query_focus.py [--variants mean@0.15,mean@0.3,alone@0.3] [--out PATH]

On the index RAGLOUPE_INDEX_DIR points at (the benchmark index of benchmarks/adapt.py: the
Grampian PDFs, natech/guidance.csv and the manuals). Within one report, "NHS Grampian", "Board"
and the year stand in most chunks: they tell no page from another, yet they pull the question's
embedding toward every page that says them. Each variant ``HOW@T`` drops from the question the
words (other than function words) found in at least T of its document's chunks, embeds what is
left, and searches with:

- ``alone``: that focused embedding alone;
- ``mean``: the mean of the focused and the full question's embeddings, renormalised.

The dense engine is otherwise the shipped one (its nearest 100 chunks rescored with their best
sentence). Every tuning family of benchmarks/adapt.py is searched in dense and the default
hybrid mode, each question in its own document, against the shipped engine: Hit@1 per family
and the paired permutation p-value of the difference. Patched onto the dense engine for this
script only: it is not a setting of ragloupe (benchmarks/results/dense_query_focus.json).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

sys.path.insert(0, str(Path(__file__).parent))
import adapt as bench  # noqa: E402  (its families, measure(), variants_table(), write_variants())

from ragloupe.retrieve import engines  # noqa: E402

SHIPPED = engines.DenseEngine.search
FUNCTION_WORDS = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom whose when "
    "where why how did does do has have had this that these those it its as than into over under about after "
    "before during much many any each per".split())
WORD = re.compile(r"[A-Za-z][A-Za-z'-]+|\d[\d.,%]*")


class ChunkShares:
    """Per document: the share of its chunks each lower-cased word stands in."""

    def __init__(self):
        self.by_doc: dict[str, dict[str, float]] = {}

    def of(self, workspace, doc_id: str) -> dict[str, float]:
        if doc_id not in self.by_doc:
            table = workspace.chunk_table()
            chunks = [table.by_id[i] for i in table.by_doc.get(doc_id, ())]
            counts: dict[str, int] = {}
            for chunk in chunks:
                for word in {w.lower() for w in WORD.findall(chunk.text)}:
                    counts[word] = counts.get(word, 0) + 1
            self.by_doc[doc_id] = {w: n / max(len(chunks), 1) for w, n in counts.items()}
        return self.by_doc[doc_id]


def focused(question: str, shares: dict[str, float], threshold: float) -> str:
    """The question without the words in at least ``threshold`` of its document's chunks (all of it if none is left)."""
    kept = [w for w in WORD.findall(question)
            if w.lower() in FUNCTION_WORDS or shares.get(w.lower(), 0.0) < threshold]
    return " ".join(kept) or question


def with_focus(how: str, threshold: float, shares: ChunkShares):
    """DenseEngine.search with the focused question (one document in scope; else the shipped engine)."""
    def search(self, question, scope, k):
        doc_ids = (scope.filters or {}).get("doc_ids") or []
        if len(doc_ids) != 1:
            return SHIPPED(self, question, scope, k)
        workspace = scope.workspace
        full = workspace.query_vector(question.text)
        focus = workspace.query_vector(focused(question.text, shares.of(workspace, doc_ids[0]), threshold))
        embedding = focus if how == "alone" else (full + focus) / np.linalg.norm(full + focus)
        scope.shared["query_vector"] = full
        table = workspace.chunk_table() if "bm25" in scope.running else None
        hits = engines.dense_search(workspace.store, embedding, max(k, engines.SENTENCE_POOL), scope.filters, table)
        return engines.with_best_sentence(hits, embedding, scope.config.dense_sentence_weight,
                                          workspace.sentences_of)[:k]
    return search


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="mean@0.15,mean@0.3,alone@0.3")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/dense_query_focus.json")
    args = parser.parse_args()
    fams = {name: spec for name, spec in bench.families().items() if spec["tuning"]}
    settings = get_settings()
    shares = ChunkShares()
    runs = {"shipped": bench.measure(settings, fams, ("dense", "hybrid"))}
    for variant in args.variants.split(","):
        how, threshold = variant.split("@")
        if how not in ("mean", "alone"):
            raise SystemExit(f"unknown variant {variant}: mean@T or alone@T")
        engines.DenseEngine.search = with_focus(how, float(threshold), shares)
        runs[variant] = bench.measure(settings, fams, ("dense", "hybrid"))
        print(variant, file=sys.stderr, flush=True)
    engines.DenseEngine.search = SHIPPED
    table = bench.variants_table(runs, fams, "shipped", "p_vs_shipped")
    result = {"command": f"python benchmarks/dense_query_focus.py --variants {args.variants}",
              "index_dir": str(settings.path("index_dir")), "embedding_model": settings.embedding_model,
              "default": f"{settings.mode}, {settings.fusion}, sentence weight {settings.dense_sentence_weight}",
              "loadavg": [round(x, 2) for x in os.getloadavg()], "hit@1": table}
    bench.write_variants(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
