"""Fine-tuning the embedding model on the corpus's own pairs (adapt/pairs.py), on the CPU.

The loss is MultipleNegativesRankingLoss written out: each query's positive must score above
every other passage of the batch (the other queries' positives and every hard negative), a
cross-entropy over cosine similarities times ``SCALE`` (sentence-transformers' default, 20).
A plain torch loop rather than sentence-transformers' Trainer: the Trainer needs the
``datasets`` package, and the loop is short enough to read.

Deterministic: torch's and Python's generators are seeded and batches are made in a seeded
order, so the same pairs and settings give the same weights (torch on one CPU build).
Training stops at ``max_steps`` or once ``max_seconds`` have gone, whichever comes first; the
steps actually run are in the record.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from ragloupe.adapt.pairs import Pair

SCALE = 20.0  # cosine similarities times this go into the cross-entropy
WARMUP_SHARE = 0.1  # the learning rate rises linearly over this share of the steps
CHECKPOINT_TOKENS = 8192  # passage tokens per step above which activations are recomputed


@dataclass(frozen=True)
class TrainConfig:
    """The knobs of one fine-tuning run (Settings.adapt_*)."""

    batch_size: int = 32
    max_steps: int = 200
    max_seconds: float = 600.0
    learning_rate: float = 2e-5
    max_seq_length: int = 256  # tokens per passage in training (the index's chunks fit)
    seed: int = 13
    threads: int = 0  # torch's CPU threads (0: its default)
    merge_weight: float = 1.0  # share of the fine-tuned weights in the saved model (merge_weights)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    """What a run did: the steps run, the loss of each, and how long it took."""

    steps: int = 0
    epochs: float = 0.0
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stopped_by: str = ""  # "steps" | "time" | "no pairs"


StepCallback = Callable[[int, int, float], None]  # (step done, steps planned, loss)


def batches(pairs: Sequence[Pair], batch_size: int, seed: int, epochs: int) -> list[list[Pair]]:
    """Shuffled batches, epoch after epoch, in which no two pairs share a page or a query: two
    queries of one page would each count the other's positive as a wrong answer."""
    out: list[list[Pair]] = []
    rng = random.Random(seed)
    for _ in range(epochs):
        pending = list(pairs)
        rng.shuffle(pending)
        while pending:
            batch, units, held_back = [], set(), []
            for pair in pending:
                if len(batch) < batch_size and pair.unit not in units:
                    batch.append(pair)
                    units.add(pair.unit)
                else:
                    held_back.append(pair)
            if len(batch) < 2:  # a lone pair has nothing to be told apart from
                break
            out.append(batch)
            pending = held_back
    return out


def fine_tune(model, pairs: Sequence[Pair], config: TrainConfig,
              on_step: StepCallback | None = None) -> TrainResult:
    """Train ``model`` (a loaded SentenceTransformer, changed in place) on ``pairs``."""
    import torch

    result = TrainResult()
    if config.threads > 0:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    steps_per_epoch = max(1, len(batches(pairs, config.batch_size, config.seed, 1)))
    epochs = max(1, -(-config.max_steps // steps_per_epoch))
    plan = batches(pairs, config.batch_size, config.seed, epochs)[:config.max_steps]
    if not plan:
        result.stopped_by = "no pairs" if not pairs else "steps"
        return result
    # Shorter passages in training only: the saved model reads as many tokens as before, the
    # chunk budget of the index (chunking.content_budget) rests on it.
    reads = int(model.max_seq_length)
    model.max_seq_length = min(reads, config.max_seq_length)
    # A batch of 32 queries, 32 positives and 32 negatives of 256 tokens kept ~8 GB of
    # activations for the backward pass; above CHECKPOINT_TOKENS passage tokens a step recomputes
    # each layer's activations in the backward pass instead (~1 GB, a third more compute).
    passages = config.batch_size * (2 if any(p.negative for p in pairs) else 1)
    transformer = getattr(model[0], "auto_model", None)
    recompute = passages * model.max_seq_length > CHECKPOINT_TOKENS and transformer is not None \
        and getattr(transformer, "supports_gradient_checkpointing", False)
    if recompute:
        transformer.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    warmup = max(1, int(len(plan) * WARMUP_SHARE))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
    model.train()
    started = time.perf_counter()
    result.stopped_by = "steps"
    for step, batch in enumerate(plan, start=1):
        loss = _batch_loss(model, batch, torch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        result.steps, value = step, float(loss.detach())
        result.losses.append(round(value, 4))
        if on_step:
            on_step(step, len(plan), value)
        if time.perf_counter() - started >= config.max_seconds and step < len(plan):
            result.stopped_by = "time"
            break
    model.eval()
    model.max_seq_length = reads
    if recompute:
        transformer.gradient_checkpointing_disable()
    result.seconds = round(time.perf_counter() - started, 1)
    result.epochs = round(result.steps / steps_per_epoch, 2)
    return result


def merge_weights(fine_tuned, source, weight: float) -> None:
    """Weight-space ensembling (WiSE-FT; Wortsman et al., CVPR 2022): every parameter of
    ``fine_tuned`` becomes ``weight`` of itself plus ``1 - weight`` of the same parameter of
    ``source`` (the model it was trained from), in place. Fine-tuning on the corpus's own pairs
    teaches what those pairs share (names and figures the passage repeats) and can unlearn the
    paraphrase matching the source model was trained for; the average keeps part of both."""
    import torch

    theirs = source.state_dict()
    with torch.no_grad():
        for name, tensor in fine_tuned.state_dict().items():
            if tensor.is_floating_point():
                tensor.copy_(weight * tensor + (1.0 - weight) * theirs[name])


def _batch_loss(model, batch: Sequence[Pair], torch):
    """MultipleNegativesRankingLoss over one batch: queries against positives then negatives."""
    queries = _embed(model, [p.query for p in batch])
    passages = _embed(model, [p.positive for p in batch] + [p.negative for p in batch if p.negative])
    scores = queries @ passages.T * SCALE  # both L2-normalised: cosine similarities
    return torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))


def _embed(model, texts: list[str]):
    """Normalised sentence embeddings with gradients (model.encode runs without them)."""
    import torch

    features = model.preprocess(texts)
    embedded = model(features)["sentence_embedding"]
    return torch.nn.functional.normalize(embedded, dim=-1)
