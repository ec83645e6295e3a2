"""The questions of `ragloupe tune`, their groups and families, and the nested selection over folds.

A *group* is the unit of held-out data: a report for page-level gold, a
top-level chapter for records, so a fold never has questions of one document
(or chapter) on both sides. A *family* is a kind of gold set: the
benchmark-style sets, the whole-report sets, the Natech records, documents of
another kind. Selection scores each configuration per family on the training
questions and chooses on the worst family's objective, never the pooled mean:
a configuration that wins where one family's questions sit but loses on
another's is not chosen (docs/retrieval.md says why).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.runs import BOOTSTRAP_SEED
from ragloupe.evaluate.stats import paired_bootstrap_ci, paired_permutation_p
from ragloupe.evaluate.goldset import GoldQuery, GoldSet
from ragloupe.evaluate.tune_space import TuningError

KS = (1, 3, 5, 10)
METRICS = tuple(M.metric_names(KS))  # hit@k, recall@k, ndcg@k for each k, then rr
HIT1, RR = METRICS.index("hit@1"), METRICS.index("rr")
HELD_OUT_SUFFIX = ".holdout.json"


def objective_per_query(scores: np.ndarray) -> np.ndarray:
    """The selection objective of each question: the mean of its Hit@1 and reciprocal rank."""
    return (scores[..., HIT1] + scores[..., RR]) / 2.0


@dataclass(frozen=True)
class TuneQuestion:
    query: GoldQuery
    group: str  # the document (or chapter group) this question is held out with
    family: str = "benchmark"  # the kind of gold set it comes from


def group_of(query: GoldQuery) -> str:
    """The unit of held-out data: a report for page-level gold, a top-level chapter for records.

    Records of one file are one document; grouping them by their first
    expected record's top chapter ("4.6.1" -> "4") keeps questions about
    neighbouring sections of one chapter on the same side of a fold.
    """
    if query.expected_records:
        chapter = re.split(r"[.\s]", query.expected_records[0].strip(), maxsplit=1)[0] or "?"
        return f"{query.doc_id}:{chapter}"
    return query.doc_id


def is_held_out(path: str | Path) -> bool:
    """A ``*.holdout.json`` gold set: reported as held out, never tuned on."""
    return str(path).endswith(HELD_OUT_SUFFIX)


def family_of(goldset: GoldSet) -> str:
    """The gold set's family: ``_meta.family`` when it names one, else from where the file sits.

    ``*.whole.json`` -> "whole-report"; ``*.eval.json`` of the Grampian corpus ->
    "benchmark"; otherwise the corpus folder under data/benchmarks ("natech",
    "manuals"), else the gold set's own name.
    """
    path = Path(goldset.path)
    named = _meta_family(path)
    if named:
        return named
    if path.name.endswith(".whole.json"):
        return "whole-report"
    parts = path.parts
    corpus = parts[parts.index("benchmarks") + 1] if "benchmarks" in parts[:-2] else ""
    if path.name.endswith(".eval.json") and corpus in ("grampian", ""):
        return "benchmark"
    return corpus or goldset.name


def _meta_family(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    meta = data.get("_meta") if isinstance(data, dict) else None
    return str(meta.get("family", "")) if isinstance(meta, dict) else ""


def tune_questions(goldsets: Sequence[GoldSet]) -> list[TuneQuestion]:
    """Every question of the gold sets with its group and family; held-out sets are refused."""
    held = [g.name for g in goldsets if is_held_out(g.path)]
    if held:
        raise TuningError(f"{held[0]} is a held-out gold set (*{HELD_OUT_SUFFIX}): it is never tuned on; "
                          "score it with `ragloupe eval`")
    return [TuneQuestion(q, group_of(q), family_of(g)) for g in goldsets for q in g.queries]


@dataclass(frozen=True)
class Fold:
    held_out: str
    train: np.ndarray  # indices into the question list
    test: np.ndarray


def grouped_folds(groups: Sequence[str]) -> list[Fold]:
    """Leave one group out: one fold per group, sorted by group name.

    A group is on one side of every fold: its questions are all in ``test``
    of its own fold and all in ``train`` of the others.
    """
    names = sorted(set(groups))
    if len(names) < 2:
        raise TuningError(f"out-of-fold tuning needs questions from at least two documents "
                          f"(or chapter groups); these come from {len(names)}: {', '.join(names) or 'none'}")
    labels = np.asarray(groups)
    return [Fold(name, np.flatnonzero(labels != name), np.flatnonzero(labels == name)) for name in names]


def worst_family(objective: np.ndarray, families: Sequence[str], subset: np.ndarray) -> np.ndarray:
    """Per configuration, the lowest of its family means over the questions in ``subset``.

    ``objective[c, q]``; a family with no question in ``subset`` does not count.
    With one family this is the plain mean.
    """
    labels = np.asarray(families)[subset]
    means = [objective[:, subset[labels == name]].mean(axis=1) for name in sorted(set(labels.tolist()))]
    return np.min(means, axis=0) if means else np.zeros(objective.shape[0])


@dataclass(frozen=True)
class FoldResult:
    held_out: str
    chosen: int  # index of the configuration chosen on the training groups
    train_objective: np.ndarray  # per configuration, on the training groups (worst family)
    held_out_objective: np.ndarray  # per configuration, on the held-out group


def select(objective: np.ndarray, folds: Sequence[Fold], families: Sequence[str] | None = None
           ) -> list[FoldResult]:
    """For each fold, the configuration best on its training questions' worst family (the first on ties).

    ``objective[c, q]`` is the per-question objective. Only the training
    columns decide; the held-out columns are read after the choice.
    """
    families = families if families is not None else ["all"] * objective.shape[1]
    results = []
    for fold in folds:
        train = worst_family(objective, families, fold.train)
        chosen = int(np.argmax(train))  # argmax returns the first of equal maxima
        results.append(FoldResult(fold.held_out, chosen, train, objective[:, fold.test].mean(axis=1)))
    return results


def nested_select(scores: np.ndarray, folds: Sequence[Fold], groups: Sequence[str], trainers: dict,
                  families: Sequence[str] | None = None) -> list[FoldResult]:
    """select() with learned configurations: inside each fold they are trained on the training
    groups only, and their training figure is itself leave-one-group-out over those groups.

    Fills ``scores[c][fold.test]`` of learned configuration c with its held-out figures
    for the fold, so out_of_fold() reads them like any other.
    """
    families = families if families is not None else ["all"] * scores.shape[1]
    objective = objective_per_query(scores)
    held_out_scores, results = {}, []
    for fold in folds:
        train = worst_family(objective, families, fold.train)
        held = objective[:, fold.test].mean(axis=1)
        for c, trainer in trainers.items():
            if len(set(np.asarray(groups)[fold.train].tolist())) > 1:
                inner = np.zeros_like(objective[c])
                inner[fold.train] = objective_per_query(trainer.grouped_score(fold.train, groups))
                train[c] = worst_family(inner[None, :], families, fold.train)[0]
            else:
                train[c] = -1.0  # one training group: no honest training figure, never chosen
            test_scores = trainer.fit_and_score(fold.train, fold.test)
            held_out_scores[(c, fold.held_out)] = test_scores
            held[c] = objective_per_query(test_scores).mean()
        results.append(FoldResult(fold.held_out, int(np.argmax(train)), train, held))
    for fold in folds:
        for c in trainers:
            scores[c][fold.test] = held_out_scores[(c, fold.held_out)]
    return results


def out_of_fold(scores: np.ndarray, folds: Sequence[Fold], picks: Sequence[FoldResult]) -> np.ndarray:
    """Per-question metrics of the procedure: each question scored by its own fold's choice."""
    oof = np.zeros(scores.shape[1:])
    for fold, pick in zip(folds, picks):
        oof[fold.test] = scores[pick.chosen][fold.test]
    return oof


def in_sample_best(objective: np.ndarray, families: Sequence[str]) -> int:
    """The configuration best on every question's worst family (the first on ties)."""
    return int(np.argmax(worst_family(objective, families, np.arange(objective.shape[1]))))


def paired(candidate: np.ndarray, baseline: np.ndarray) -> dict:
    """Paired randomisation tests of the candidate's per-question scores against a baseline's.

    The same test and seed as `ragloupe compare` (evaluate/compare.py), on
    the objective, Hit@1 and MRR.
    """
    from ragloupe.evaluate.compare import ALPHA

    out = {}
    for name, a, b in (("objective", objective_per_query(candidate), objective_per_query(baseline)),
                       ("hit@1", candidate[:, HIT1], baseline[:, HIT1]),
                       ("mrr", candidate[:, RR], baseline[:, RR])):
        p = paired_permutation_p(a, b, seed=BOOTSTRAP_SEED)
        low, high = paired_bootstrap_ci(a, b, seed=BOOTSTRAP_SEED)
        out[name] = {"candidate": float(np.mean(a)), "baseline": float(np.mean(b)),
                     "diff": float(np.mean(a) - np.mean(b)), "p_value": p, "ci_low": low, "ci_high": high,
                     "significant_win": bool(p < ALPHA and np.mean(a) > np.mean(b))}
    return out
