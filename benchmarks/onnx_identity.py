"""Do the onnx (float32) and torch embedding backends rank the same? Top-10 by top-10, every gold question.

    .venv/bin/python benchmarks/onnx_identity.py --torch-index DIR --onnx-index DIR

Both indexes hold the demo corpus (the three Grampian PDFs and
natech/guidance.csv) with the default settings, one built with
``embedding_backend=torch`` and one with ``onnx`` (``benchmarks/index_speed.py
--backend X --keep DIR`` builds either; they are read, never written). Each
index is queried with its own backend, the way ragloupe serves it.

For every question of the shipped gold sets (the 150 Grampian benchmark
questions, the whole-report and held-out sets in grampian/whole/, both
Natech sets), in dense mode and in the default hybrid mode, scoped to the
question's document (as evaluation does) and, for the --corpus-modes, to the
whole corpus, the top 10 hits' (doc_id, page, chunk_id) are compared in order. Nothing is
tuned or chosen here: the held-out sets are only read. Also reported: the
two indexes hold the same chunk ids, the stored vectors' cosine per chunk, and
the largest difference of a dense score between the backends.

Writes benchmarks/results/onnx_identity.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

import numpy as np  # noqa: E402

from ragloupe.evaluate.goldset import load_goldset  # noqa: E402

GOLD = [*sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json")),
        *sorted((PROJECT_ROOT / "data/benchmarks/natech").glob("*.gold.json")),
        *sorted((PROJECT_ROOT / "data/benchmarks/grampian/whole").glob("*.json"))]
RESULTS = PROJECT_ROOT / "benchmarks/results/onnx_identity.json"
BACKENDS = ("torch", "onnx")


def opened(index_dir: Path, backend: str, scratch: Path):
    """(settings, store, embedder) of an index, queried with ``backend``."""
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store
    from ragloupe.workspace import Workspace

    settings = Settings.from_env(index_dir=index_dir, runs_dir=scratch / backend / "runs",
                                 logs_dir=scratch / backend / "logs", chroma_host="",
                                 embedding_backend=backend)
    embedder = get_embedder(settings)
    if embedder.backend != backend:
        raise SystemExit(f"{backend} was asked for but {embedder.backend} encodes: {embedder.notice}")
    return settings, open_store(settings), embedder, Workspace.open(settings, embedder=embedder)


def stored_vectors(opened_pair) -> dict:
    """Same chunk ids in both indexes, and the cosine of their stored vectors."""
    (_, torch_store, _, _), (_, onnx_store, _, _) = opened_pair
    ids = sorted(torch_store.ids())
    if set(ids) != set(onnx_store.ids()):
        return {"same_chunk_ids": False, "torch_chunks": len(ids), "onnx_chunks": len(onnx_store.ids())}
    a, b = torch_store.get_embeddings(ids), onnx_store.get_embeddings(ids)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"same_chunk_ids": True, "chunks": len(ids), "min_cosine": float(cosines.min()),
            "mean_cosine": float(cosines.mean()), "max_abs_component_diff": float(np.abs(a - b).max())}


def top10(question: str, mode: str, filters: dict | None, handles) -> tuple[list[tuple], list[float]]:
    from ragloupe.retrieve.search import search

    settings, _, _, workspace = handles
    ranking = search(question, mode=mode, k=10, filters=filters, workspace=workspace)
    hits = ranking.hits[:10]
    return [(h.chunk.doc_id, h.chunk.page, h.chunk.chunk_id) for h in hits], [float(h.score) for h in hits]


def compare_set(path: Path, handles: dict, keys: list[str]) -> dict:
    """Per mode and scope: questions compared, those whose top-10 differ, and how."""
    gold = load_goldset(path)
    out: dict = {"file": str(path.relative_to(PROJECT_ROOT)), "questions": len(gold.queries)}
    for key in keys:
        mode, scope = key.split("|")
        differ, max_score_diff = [], 0.0
        for q in gold.queries:
            filters = {"doc_ids": [q.doc_id]} if scope == "document" and q.doc_id else None
            (ids_t, scores_t), (ids_o, scores_o) = (top10(q.question, mode, filters, handles[b])
                                                    for b in BACKENDS)
            if ids_t != ids_o:
                first = next((i for i, (x, y) in enumerate(zip(ids_t, ids_o)) if x != y),
                             min(len(ids_t), len(ids_o)))
                differ.append({"question": q.question, "first_difference_at_rank": first + 1,
                               "overlap": len(set(ids_t) & set(ids_o))})
            elif scores_t:
                max_score_diff = max(max_score_diff, float(np.abs(np.subtract(scores_t, scores_o)).max()))
        out[f"{mode}|{scope}"] = {"differ": len(differ), "max_abs_score_diff_when_same": max_score_diff,
                                  "differences": differ}
    return out


def summary(sets: dict, keys: list[str], handles: dict, base: Settings, args, started: float,
            load_before) -> dict:
    import onnxruntime
    import torch

    totals = {k: {"questions": sum(s["questions"] for s in sets.values()),
                  "differ": sum(s[k]["differ"] for s in sets.values())} for k in keys}
    return {
        "what": "top-10 (doc_id, page, chunk_id) in order, torch index + torch queries vs onnx index + onnx "
                "queries, every shipped gold question, dense and the default hybrid mode",
        "identical": all(t["differ"] == 0 for t in totals.values()),
        "totals": totals, "stored_vectors": stored_vectors(tuple(handles.values())),
        "default_mode": base.mode, "fusion": base.fusion, "sets": sets,
        "indexes": {"torch": str(args.torch_index), "onnx": str(args.onnx_index)},
        "seconds": round(time.perf_counter() - started, 1),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "machine": {"cpus": os.cpu_count(), "torch": torch.__version__,
                    "onnxruntime": onnxruntime.__version__},
        "command": "python " + " ".join(sys.argv),
    }


def write(result: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-index", type=Path, required=True)
    parser.add_argument("--onnx-index", type=Path, required=True)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/ragloupe-onnx-identity"),
                        help="runs and logs directories of the two searchers")
    parser.add_argument("--corpus-modes", default="dense,hybrid",
                        help="modes also compared over the whole corpus, comma-separated")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    started, load_before = time.perf_counter(), os.getloadavg()
    handles = {"torch": opened(args.torch_index, "torch", args.scratch),
               "onnx": opened(args.onnx_index, "onnx", args.scratch)}
    base = handles["torch"][0]
    modes = ("dense", base.mode) if base.mode != "dense" else ("dense",)
    keys = [f"{m}|document" for m in modes] + [f"{m}|corpus" for m in modes
                                               if m in args.corpus_modes.split(",")]
    sets: dict = {}
    result: dict = {}
    for path in GOLD:  # the JSON is rewritten after each set: a run cut short keeps what it compared
        sets[path.stem] = compare_set(path, handles, keys)
        counts = {k: v["differ"] for k, v in sets[path.stem].items() if isinstance(v, dict)}
        print(path.name, counts, flush=True)
        result = summary(sets, keys, handles, base, args, started, load_before)
        result["complete"] = len(sets) == len(GOLD)
        write(result, args.out)
    print(json.dumps({"identical": result["identical"], "totals": result["totals"],
                      "stored_vectors": result["stored_vectors"]}, indent=1))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
