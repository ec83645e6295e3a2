"""The default rule of `ragloupe tune`: a default never loses to BM25 alone.

The selection (tune_folds.py) names a candidate: the configuration best on its
worst family. The rule then accepts it as the default only when

1. on every tuning family, its Hit@1 out-of-fold is at least BM25 alone's (a
   learned configuration's figure is leave-one-group-out: each question is
   ranked by a model that never saw its document; a fixed configuration fits
   nothing), and
2. on every confirmation family (gold sets the caller names with ``--confirm``:
   questions written after the features were frozen, by someone who never saw
   them), its Hit@1 is at least BM25 alone's. A confirmation family is never
   read to choose anything: it only gates.

A candidate that fails is replaced by the best configuration of a simpler kind
(learned fusion -> a fixed fusion of two engines -> one engine), judged by the
same rule; BM25 alone always passes against itself, so the ladder ends there.
Without a confirmation family the verdict is provisional: ``confirmed`` is
False and `--apply` writes nothing.

Each verdict carries the paired test (evaluate/stats.py) of the family's
per-question Hit@1 against BM25 alone's. Pure: arrays in, a JSON-ready dict out.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ragloupe.evaluate.tune_folds import HIT1, objective_per_query, paired, worst_family
from ragloupe.evaluate.stats import p_text
from ragloupe.evaluate.tune_space import Config
from ragloupe.retrieve.modes import parse_mode

RULE = ("a configuration is the default only when its Hit@1 is at least BM25 alone's on every tuning family "
        "out-of-fold and on every confirmation family (gold sets named with --confirm, written after the "
        "features were frozen, never used to choose); otherwise the best configuration of a simpler kind "
        "(learned fusion -> fixed fusion of two engines -> one engine) is judged the same way, down to BM25 "
        "alone")
KINDS = {1: "one engine", 2: "fixed fusion of two engines", 3: "learned fusion"}


def simplicity(config: Config) -> int:
    """How many moving parts a configuration has: 1 one engine, 2 a fixed fusion, 3 learned fusion."""
    if config.learned:
        return 3
    return 2 if len(parse_mode(config.mode).engines) > 1 else 1


def verdicts(candidate: np.ndarray, bm25: np.ndarray, families: Sequence[str]) -> dict:
    """Per family: the candidate's Hit@1 beside BM25 alone's, the paired test, and whether it holds."""
    labels = np.asarray(families)
    out = {}
    for name in sorted(set(families)):
        rows = np.flatnonzero(labels == name)
        hit, base = float(candidate[rows, HIT1].mean()), float(bm25[rows, HIT1].mean())
        out[name] = {"n_questions": int(len(rows)), "hit@1": hit, "bm25_hit@1": base,
                     "diff": hit - base, "at_least_bm25": bool(hit >= base - 1e-12),
                     "paired_hit@1": paired(candidate[rows], bm25[rows])["hit@1"]}
    return out


def judge(index: int, config: Config, scores: np.ndarray, bm25: np.ndarray, families: Sequence[str],
          confirm: np.ndarray | None, confirm_bm25: np.ndarray | None,
          confirm_families: Sequence[str]) -> dict:
    """One rung of the ladder: the configuration's verdict on every tuning and confirmation family."""
    tuning = verdicts(scores, bm25, families)
    confirmation = verdicts(confirm, confirm_bm25, confirm_families) if confirm is not None else {}
    failed = [f"{name} ({row['hit@1']:.3f} < BM25 {row['bm25_hit@1']:.3f})"
              for name, row in {**tuning, **{f"confirmation {k}": v for k, v in confirmation.items()}}.items()
              if not row["at_least_bm25"]]
    return {"index": int(index), "label": config.label(), "kind": KINDS[simplicity(config)],
            "config": config.as_dict(), "families": tuning, "confirmation": confirmation,
            "passes": not failed, "failed": failed}


def select_default(configs: Sequence[Config], scores: np.ndarray, families: Sequence[str], candidate: int,
                   bm25: int, confirm_scores: np.ndarray | None = None,
                   confirm_families: Sequence[str] = ()) -> dict:
    """The rule's ladder from ``candidate`` down to BM25 alone (bm25), and the default it lands on.

    ``scores[c, q, m]``: every configuration's out-of-fold metrics on the tuning questions;
    ``confirm_scores[c, q, m]``: on the confirmation questions (None: no confirmation family).
    """
    objective = objective_per_query(scores)
    every = np.arange(scores.shape[1])
    worst = worst_family(objective, families, every)
    pooled = objective.mean(axis=1)
    confirm_of = (lambda c: confirm_scores[c]) if confirm_scores is not None else (lambda c: None)
    ladder, at = [], candidate
    while True:
        rung = judge(at, configs[at], scores[at], scores[bm25], families, confirm_of(at), confirm_of(bm25),
                     confirm_families)
        ladder.append(rung)
        if rung["passes"] or at == bm25:
            break
        level = simplicity(configs[at])
        simpler = [c for c in range(len(configs)) if simplicity(configs[c]) < level]
        # the best of the simpler kinds on the worst family (then on every question; then the first
        # listed), else BM25 alone itself
        at = max(simpler, key=lambda c: (worst[c], pooled[c], -c)) if simpler else bm25
    chosen = ladder[-1]
    confirmed = confirm_scores is not None
    if chosen["index"] == candidate:
        verdict = "accepted: at least BM25 alone's Hit@1 on every family"
    else:
        verdict = (f"{ladder[0]['label']} was not accepted ({'; '.join(ladder[0]['failed'])}): "
                   f"the ladder lands on the simpler {chosen['label']}")
    if not confirmed:
        verdict += "; provisional: no confirmation family was named (--confirm), so nothing is applied"
    return {"rule": RULE, "candidate": ladder[0]["index"], "ladder": ladder, "chosen": chosen,
            "confirmed": confirmed, "confirmation_families": sorted(set(confirm_families)),
            "verdict": verdict}


def family_verdict_lines(rule: Mapping, default: Mapping | None = None) -> list[str]:
    """The rule's verdict per family, as the CLI prints it; ``default`` (the report's, see
    tune_report.selected_default) is what tuning leaves in force, said last."""
    chosen = rule["chosen"]
    lines = [f"default rule: {rule['verdict']}"]
    for rung in rule["ladder"]:
        rows = [*rung["families"].items(), *((f"confirmation {k}", v) for k, v in rung["confirmation"].items())]
        lines.append(f"  {rung['label']} ({rung['kind']}): {'passes' if rung['passes'] else 'fails'}")
        for name, row in rows:
            test = row["paired_hit@1"]
            lines.append(f"    {name:<28} Hit@1 {row['hit@1']:.3f} vs BM25 {row['bm25_hit@1']:.3f} "
                         f"({row['diff']:+.3f}, paired {p_text(test['p_value'])}) "
                         f"{'ok' if row['at_least_bm25'] else 'BELOW BM25'}")
    if default is not None:
        lines.append(f"default: {default['label']} ({default['why']})")
    else:  # a report written before it said so
        lines.append(f"default: {chosen['label']}" + ("" if rule["confirmed"] else " (provisional)"))
    return lines
