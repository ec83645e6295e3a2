"""Late interaction over the default's first candidates: MiniLM's token vectors, MaxSim, no training.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/late_interaction.py \
        [--families whole-report,...] [--sets confirm8,confirm9] [--out PATH]

The recorded runs had the 1,314-question query adapter in force
(RAGLOUPE_QUERY_ADAPTER=benchmarks/results/query_adapter_1314.npz), which never read sets 8 and 9.

The dense engine compares one pooled vector per chunk (and per sentence) with one per
question. Late interaction (ColBERT's MaxSim) keeps a vector per word piece instead: each of the
question's word pieces finds its nearest word piece in the chunk, and the chunk scores the mean
of those cosines. Here the vectors are the bundled MiniLM's last hidden states, unpooled and
unit length (punctuation and [CLS]/[SEP] left out), with no training: a test of whether
word-piece-level meaning tells apart the neighbouring pages the default confuses.

Each question is asked in its own document, as signals.py asks the tuning families; the
default's first ``window`` chunks are re-scored by blending their fused score with MaxSim
(reader.blend: both min-max normalised over the window) at each weight, and the pages re-ranked.
Per family: Hit@1 / Hit@3 / MRR and the paired test against the default and BM25 alone, and the
seconds per question the token pass costs. Writes benchmarks/results/late_interaction.json.
"""

from __future__ import annotations

import argparse
import json
import os
import string
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import signals as S  # noqa: E402  (the families, the fetch-once bench, the paired test)

from ragloupe.config import PROJECT_ROOT, get_settings  # noqa: E402
from ragloupe.evaluate import metrics as M  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.index.embedder import resolve_model_path  # noqa: E402
from ragloupe.retrieve import reader as R  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results/late_interaction.json"
OPTIONS = [(window, weight) for window in (5, 10) for weight in (0.2, 0.35, 0.5, 1.0)]


class TokenVectors:
    """Each text's word-piece vectors (last hidden state, unit length), cached by text."""

    def __init__(self, model_path: str, max_length: int = 256):
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(model_path, device="cpu")
        self.bert, self.tokenizer = model[0].auto_model.eval(), model[0].tokenizer
        self.max_length = max_length
        self.cache: dict[str, np.ndarray] = {}
        self.skip = set(self.tokenizer.all_special_ids) | {
            self.tokenizer.convert_tokens_to_ids(c) for c in string.punctuation}

    def __call__(self, texts: list[str]) -> list[np.ndarray]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for start in range(0, len(todo), 16):
            batch = todo[start:start + 16]
            encoded = self.tokenizer(batch, padding=True, truncation=True, max_length=self.max_length,
                                     return_tensors="pt")
            with torch.no_grad():
                hidden = self.bert(**encoded).last_hidden_state.numpy()
            for text, ids, states in zip(batch, encoded["input_ids"].numpy(), hidden):
                keep = np.array([i not in self.skip for i in ids])
                vectors = states[keep]
                self.cache[text] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-9)
        return [self.cache[t] for t in texts]


def maxsim(question: np.ndarray, chunk: np.ndarray) -> float:
    if not len(question) or not len(chunk):
        return 0.0
    return float((question @ chunk.T).max(axis=1).mean())


def maxsim_read(tokens: TokenVectors):
    """blend_after's ``read``: each chunk's MaxSim against the question."""
    def read(question: str, texts: list[str]) -> list[float]:
        q, *chunks = tokens([question] + texts)
        return [maxsim(q, v) for v in chunks]
    return read


def blend_after(read, window: int, weight: float, seconds: list[float]):
    """Bench.rows' ``after``: the first ``window`` chunks re-ranked by their fused score blended with
    ``read(question, chunk texts)`` at ``weight`` (reader.blend), then the pages in that order."""
    def after(q, c, ranking):
        hits = list(ranking.hits)[:window]
        if not hits:
            return M.dedupe(p.unit for p in ranking.pages)
        started = time.perf_counter()
        scores = read(q.question, [h.chunk.text for h in hits])
        seconds.append(time.perf_counter() - started)
        scores = R.blend([h.score for h in hits], scores, weight)
        order = [h for _, _, h in sorted(zip(scores, range(len(hits)), hits), key=lambda t: (-t[0], t[1]))]
        return M.dedupe([h.chunk.unit for h in order] + [p.unit for p in ranking.pages])
    return after


def retired(names: str) -> dict[str, list[Path]]:
    """Retired confirmation sets by family, as confirm.py groups them (reports by wording)."""
    out: dict[str, list[Path]] = {}
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        for path in sorted((PROJECT_ROOT / "data/benchmarks" / name).glob("**/*.confirm.json")):
            kind = path.parent.name
            if kind == "grampian":
                for wording in ("paraphrased", "natural"):
                    out.setdefault(f"{kind}-{wording}", []).append((path, wording))
            else:
                out.setdefault(kind, []).append((path, ""))
    return out


def questions(paths: list, held: set[str]) -> list:
    """The tuning families' questions, or a retired set's of one wording ((path, wording) pairs)."""
    if not paths or not isinstance(paths[0], tuple):
        return S.questions_of(paths, held)
    out = []
    for path, wording in paths:
        raw = json.loads(path.read_text(encoding="utf-8"))["queries"]
        ids = {str(q["query_id"]) for q in raw if not wording or q.get("wording") == wording}
        out += [q for q in load_goldset(path).queries if q.doc_id in held and str(q.query_id) in ids]
    return out


def family_arguments(parser: argparse.ArgumentParser, out: Path) -> None:
    """The options run_blends reads: --families, --sets and --out."""
    parser.add_argument("--families", default="", help="only these families (comma-separated)")
    parser.add_argument("--sets", default="", help="retired confirmation sets as the families instead "
                        "(e.g. confirm8,confirm9: questions the query adapter never read)")
    parser.add_argument("--out", default=str(out))


def run_blends(args, make_read, name: str, argv, *, script: str, what: str, note: str) -> None:
    """Every (window, weight) of OPTIONS over each family (args.families, args.sets), beside the default
    and BM25 alone, written to args.out: the loop late_interaction.py and learned_sparse.py share.
    ``make_read(settings)`` gives blend_after's ``read`` for the index in force."""
    torch.set_num_threads(2)
    settings = get_settings()
    workspace = Workspace(settings)
    held = {c.doc_id for c in workspace.store.all_chunks()}
    bench = S.Bench(settings, workspace)
    read = make_read(settings)
    wanted = {f.strip() for f in args.families.split(",") if f.strip()}
    load, started = [round(os.getloadavg()[0], 1)], time.perf_counter()
    out = {}
    for family, paths in (retired(args.sets) if args.sets else S.families()).items():
        if wanted and family not in wanted:
            continue
        qs = questions(paths, held)
        if not qs:
            continue
        default, bm25, plain = S.baselines(bench, family, qs)
        row = {"default": S.option_entry(default["rows"], default["rows"], bm25["rows"], 0.0),
               "bm25": S.option_entry(bm25["rows"], default["rows"], bm25["rows"], 0.0)}
        for window, weight in OPTIONS:
            seconds: list[float] = []
            rows, _ = bench.rows(qs, plain, "hybrid", {}, after=blend_after(read, window, weight, seconds))
            row[f"{name} top{window} w{weight:g}"] = S.option_entry(
                rows, default["rows"], bm25["rows"], sum(seconds) / max(len(seconds), 1))
        out[family] = row
        print(family, len(qs), {k: v["hit@1"] for k, v in row.items()}, flush=True)
    result = {"what": f"{what} (benchmarks/{script})",
              "index": str(bench.settings.path("index_dir")), "scope": "each question in its own document",
              "command": f"python benchmarks/{script} " + " ".join(argv if argv is not None else sys.argv[1:]),
              "families": out, "winners": S.winners(out),
              "load_average": load + [round(os.getloadavg()[0], 1)],
              "seconds": round(time.perf_counter() - started, 1), "note": note}
    if getattr(args, "model", None):
        result["model"] = args.model
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    family_arguments(parser, RESULTS)
    args = parser.parse_args(argv)
    run_blends(args, lambda settings: maxsim_read(TokenVectors(resolve_model_path(settings.embedding_model))),
               "maxsim", argv, script="late_interaction.py",
               what="MaxSim over MiniLM's word-piece vectors, blended over the default's first chunks",
               note="seconds_per_question: the token pass alone (chunks cached across options, so the "
                    "first option of a family pays it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
