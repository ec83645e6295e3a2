"""A query tower against the linear query adapter: MiniLM's top layers fine-tuned for questions.

    RAGLOUPE_INDEX_DIR=<the benchmark index> .venv/bin/python benchmarks/query_tower.py \
        [--layers 1] [--lr 3e-4] [--steps 140] [--out PATH]

The query adapter (retrieve/query_adapter.py) maps the question's embedding linearly. A tower
fine-tunes the last ``--layers`` transformer layers of the bundled MiniLM for the question side
only (the index's vectors are kept, so nothing would be re-embedded) on the adapter's own loss
(adapt/query_training.py: a softmax over the units of the question's document, the dense score
at sentence grain 0.4, temperature 0.05), one document's questions a step, Adam at ``--lr``.

Leave one document out, as benchmarks/query_adapter.py's ``lodo`` variants: for each document,
a tower and a linear adapter (r 0.01, the shipped recipe) are trained on the questions of every
other document (the tuning families and the retired blind sets 1-7) and every family's
questions on that document are scored. The score is dense's Hit@1 over every unit of the
document (each unit by its best chunk, a chunk 0.6 its own cosine + 0.4 its best sentence's),
the ranking the dense engine makes before fusion. Writes benchmarks/results/query_tower.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

sys.path.insert(0, str(Path(__file__).parent))
import adapt as bench  # noqa: E402  (the families)
import query_adapter as adapter_bench  # noqa: E402  (the retired blind sets)

from ragloupe.adapt import query_training as QT  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.index.embedder import resolve_model_path  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

SENTENCE_WEIGHT = 0.4


class Tower:
    """The questions' hidden states below the trainable layers, computed once; the top layers run on them."""

    def __init__(self, model, texts: list[str], layers: int):
        bert, tokenizer = model[0].auto_model, model[0].tokenizer
        encoded = tokenizer(texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
        embedded = bert.embeddings(input_ids=encoded["input_ids"])
        self.mask = encoded["attention_mask"]
        self.attention = bert._create_attention_masks(attention_mask=self.mask, encoder_attention_mask=None,
                                                      embedding_output=embedded, encoder_hidden_states=None,
                                                      cache=None)[0]
        with torch.no_grad():
            states = bert(**encoded, output_hidden_states=True).hidden_states
        first = len(bert.encoder.layer) - layers
        self.hidden = states[first]
        self.layers = torch.nn.ModuleList(bert.encoder.layer[first:])
        self.row = {t: i for i, t in enumerate(texts)}

    def encode(self, layers, rows: list[int]) -> torch.Tensor:
        """Mean-pooled, normalised: what SentenceTransformer.encode gives with the original layers."""
        length = int(self.mask[rows].sum(1).max())
        h = self.hidden[rows][:, :length]
        attention = self.attention[rows][:, :, :length, :length]
        for layer in layers:
            out = layer(h, attention_mask=attention)
            h = out[0] if isinstance(out, tuple) else out
        keep = self.mask[rows][:, :length].unsqueeze(-1).float()
        return torch.nn.functional.normalize((h * keep).sum(1) / keep.sum(1), dim=1)


def train_tower(tower: Tower, questions, docs, lr: float, steps: int) -> torch.nn.ModuleList:
    layers = copy.deepcopy(tower.layers)
    optimiser = torch.optim.Adam(layers.parameters(), lr=lr)
    by_doc: dict[str, list] = {}
    for q in questions:
        doc = docs[q.doc_id]
        gold = [doc.units.index(u) for u in QT.gold_units(q) if u in doc.units]
        if gold:
            by_doc.setdefault(q.doc_id, []).append((tower.row[q.question], gold))
    order = sorted(by_doc)
    layers.train()
    for step in range(steps):  # one document's questions a step, in turn
        doc_id = order[step % len(order)]
        items = by_doc[doc_id]
        gold = torch.zeros(len(items), len(docs[doc_id].units), dtype=torch.bool)
        for i, (_, units) in enumerate(items):
            gold[i, units] = True
        optimiser.zero_grad()
        logits = QT.unit_scores(tower.encode(layers, [r for r, _ in items]), docs[doc_id], SENTENCE_WEIGHT)
        logits = logits / QT.TEMPERATURE
        positive = torch.logsumexp(logits.masked_fill(~gold, -1e9), dim=1)
        (torch.logsumexp(logits, dim=1) - positive).mean().backward()
        optimiser.step()
    layers.eval()
    return layers


def hits(vectors: torch.Tensor, questions, docs) -> int:
    found = 0
    for q, v in zip(questions, vectors):
        doc = docs[q.doc_id]
        scores = QT.unit_scores(v[None], doc, SENTENCE_WEIGHT)[0]
        found += int(torch.argmax(scores)) in {doc.units.index(u) for u in QT.gold_units(q) if u in doc.units}
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--steps", type=int, default=140)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/query_tower.json")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer  # loads torch models: only when run

    torch.manual_seed(13)
    settings = get_settings(query_adapter="off")
    workspace = Workspace.open(settings)
    fams = {**bench.families(), **adapter_bench.retired_families()}
    asked = {name: [q for path in spec["paths"] for q in load_goldset(path).queries] for name, spec in fams.items()}
    training = [q for name, spec in fams.items() if spec["tuning"] for q in asked[name]]
    docs = {d: QT.doc_units(workspace, d) for d in sorted({q.doc_id for qs in asked.values() for q in qs})}
    texts = list(dict.fromkeys(q.question for qs in asked.values() for q in qs))
    tower = Tower(SentenceTransformer(resolve_model_path(settings.embedding_model), device="cpu"), texts, args.layers)
    with torch.no_grad():
        own = tower.encode(tower.layers, list(range(len(texts))))
    results: dict[str, dict[str, int]] = {}
    seconds = {}
    for leave in sorted({q.doc_id for q in training}):
        started = time.perf_counter()
        trained_on = [q for q in training if q.doc_id != leave]
        layers = train_tower(tower, trained_on, docs, args.lr, args.steps)
        rows = [tower.row[q.question] for q in trained_on]
        matrix = QT.train(QT.batches(trained_on, own[rows].numpy(), docs), SENTENCE_WEIGHT)
        for family, questions in asked.items():
            questions = [q for q in questions if q.doc_id == leave]
            if not questions:
                continue
            rows = [tower.row[q.question] for q in questions]
            with torch.no_grad():
                none = own[rows]
                linear = torch.nn.functional.normalize(none @ torch.tensor(matrix).T, dim=1)
                towered = tower.encode(layers, rows)
            row = results.setdefault(family, {"n": 0, "none": 0, "linear": 0, "tower": 0})
            row["n"] += len(questions)
            for name, vectors in (("none", none), ("linear", linear), ("tower", towered)):
                row[name] += hits(vectors, questions, docs)
        seconds[leave] = round(time.perf_counter() - started, 1)
        print(leave, seconds[leave], "s", flush=True)
    total = {k: sum(r[k] for r in results.values()) for k in ("n", "none", "linear", "tower")}
    for family, row in results.items():
        print(f"{family:28s} n={row['n']:4d} none {row['none']:4d} linear {row['linear']:4d} tower {row['tower']:4d}")
    print("all", total)
    out = {"command": f"benchmarks/query_tower.py --layers {args.layers} --lr {args.lr:g} --steps {args.steps}",
           "measure": "dense Hit@1 over every unit of the question's document, questions found first (counts)",
           "left_out_by": "document", "families": results, "all": total, "seconds_per_document": seconds,
           "loadavg": list(os.getloadavg())}
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
