"""Training a query adapter (retrieve/query_adapter.py) from gold questions and their pages.

The loss is the dense engine's own ranking written as a softmax over the units (pages, records)
of each question's document: a chunk scored (1 - w) by its own vector and w by its best
sentence's (index/sentences.py, w = Settings.dense_sentence_weight), a unit by its best chunk,
the gold units against every other unit of the document at ``TEMPERATURE``, plus
``reg`` x |W - I|^2 so that W stays near the identity (the question's own embedding) where the
questions say nothing (near the adapter it refines, for `ragloupe adapt --queries`). Full-batch Adam for ``STEPS`` steps from W = I, seeded: the same questions
and index give the same matrix. The index's vectors are read, never changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from ragloupe.evaluate.goldset import GoldQuery
from ragloupe.models import unit_id

TEMPERATURE = 0.05
STEPS = 150
LEARNING_RATE = 1e-3
REG = 0.01  # benchmarks/query_adapter.py: leave-one-document-out over the shipped gold sets


@dataclass
class DocUnits:
    """One document's chunk and sentence vectors, and which unit each chunk is of."""

    chunk_vectors: torch.Tensor  # (chunks, dim), unit rows
    sentence_vectors: torch.Tensor  # (sentences, dim), unit rows
    sentence_owner: torch.Tensor  # the chunk row of each sentence
    chunk_unit: torch.Tensor  # the unit row of each chunk
    units: list[str]


def doc_units(workspace, doc_id: str) -> DocUnits:
    """The document's vectors as the index holds them (its sentence vectors encoded if missing)."""
    table = workspace.chunk_table()
    ids = list(table.by_doc[doc_id])
    chunks = [table.by_id[i] for i in ids]
    units = list(dict.fromkeys(c.unit for c in chunks))
    unit_row = {u: i for i, u in enumerate(units)}
    found = workspace.sentences_of(doc_id)
    row_of = {cid: i for i, cid in enumerate(ids)}
    owner = [row_of[cid] for cid, start, end in zip(found.chunk_ids, found.starts[:-1], found.starts[1:])
             for _ in range(int(end - start))]
    return DocUnits(torch.tensor(np.asarray(workspace.store.get_embeddings(ids), dtype=np.float32)),
                    torch.tensor(np.asarray(found.vectors, dtype=np.float32)).reshape(len(owner), -1),
                    torch.tensor(owner, dtype=torch.long), torch.tensor([unit_row[c.unit] for c in chunks]), units)


def gold_units(query: GoldQuery) -> list[str]:
    if query.expected_records:
        return [unit_id(query.doc_id, 0, r) for r in query.expected_records]
    return [unit_id(query.doc_id, p) for p in query.expected_pages]


def unit_scores(queries: torch.Tensor, doc: DocUnits, sentence_weight: float) -> torch.Tensor:
    """(questions, units): the dense engine's score of each unit's best chunk for each unit question vector."""
    chunk = queries @ doc.chunk_vectors.T
    if sentence_weight > 0 and len(doc.sentence_owner):
        sims = queries @ doc.sentence_vectors.T
        best = torch.full_like(chunk, -1.0).scatter_reduce(1, doc.sentence_owner.expand_as(sims), sims, "amax")
        chunk = (1 - sentence_weight) * chunk + sentence_weight * best
    return torch.full((len(queries), len(doc.units)), -2.0).scatter_reduce(
        1, doc.chunk_unit.expand_as(chunk), chunk, "amax")


@dataclass
class Batch:
    """The questions of one document: their vectors and a mask of their gold units."""

    vectors: torch.Tensor
    gold: torch.Tensor  # bool (questions, units)
    doc: DocUnits


def batches(questions: Sequence[GoldQuery], vectors: np.ndarray, docs: dict[str, DocUnits]) -> list[Batch]:
    """One Batch per document of the questions that have a gold unit among its chunks' units."""
    rows: dict[str, list[tuple[int, list[int]]]] = {}
    for i, query in enumerate(questions):
        doc = docs.get(query.doc_id)
        if doc is None:
            continue
        gold = [doc.units.index(u) for u in gold_units(query) if u in doc.units]
        if gold:
            rows.setdefault(query.doc_id, []).append((i, gold))
    out = []
    for doc_id, found in rows.items():
        mask = torch.zeros(len(found), len(docs[doc_id].units), dtype=torch.bool)
        for r, (_, gold) in enumerate(found):
            mask[r, gold] = True
        out.append(Batch(torch.tensor(vectors[[i for i, _ in found]], dtype=torch.float32), mask, docs[doc_id]))
    return out


def train(parts: Iterable[Batch], sentence_weight: float, reg: float = REG, steps: int = STEPS,
          seed: int = 13, start: np.ndarray | None = None) -> np.ndarray:
    """W minimising the gold units' softmax loss over their documents' units, plus reg x |W - S|^2,
    S being ``start`` (an adapter learned elsewhere that this one refines) or the identity."""
    parts = list(parts)
    torch.manual_seed(seed)
    dim = parts[0].vectors.shape[1]
    delta = torch.zeros(dim, dim, requires_grad=True)
    optimiser = torch.optim.Adam([delta], lr=LEARNING_RATE)
    base = torch.eye(dim) if start is None else torch.tensor(np.asarray(start, dtype=np.float32))
    n = sum(len(p.vectors) for p in parts)
    for _ in range(steps):
        optimiser.zero_grad()
        loss = reg * (delta ** 2).sum()
        for part in parts:
            mapped = torch.nn.functional.normalize(part.vectors @ (base + delta).T, dim=1)
            logits = unit_scores(mapped, part.doc, sentence_weight) / TEMPERATURE
            positive = torch.logsumexp(logits.masked_fill(~part.gold, -1e9), dim=1)
            loss = loss + (torch.logsumexp(logits, dim=1) - positive).sum() / n
        loss.backward()
        optimiser.step()
    return (base + delta).detach().numpy()
