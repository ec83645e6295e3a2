"""Learned fusion inside `ragloupe tune`: trained on some questions, scored on others; and the shipped model.

The training rows of a question are its candidates (the RRF order of both
engines' lists in the configuration's window) with their features and 0/1
labels (is the candidate's unit gold?), computed once
(retrieve/replay.candidate_rows). Each family weighs the same in training:
each family's questions weigh the same in total, so the largest gold set does
not decide what the model learns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.goldset import GoldSet, load_goldsets
from ragloupe.evaluate.runs import FLOAT_DIGITS
from ragloupe.evaluate.tune_folds import HIT1, METRICS, RR, TuneQuestion, tune_questions
from ragloupe.evaluate.tune_replay import Fetched, fetch_all, indexed_only, metric_row, ranked_units, replay_config
from ragloupe.evaluate.tune_space import Config
from ragloupe.retrieve import learned
from ragloupe.retrieve.replay import candidate_rows, replay
from ragloupe.workspace import Workspace

# Folds of the inner cross-validation that gives a learned configuration its training figure:
# leave-one-group-out over a dozen groups would train a dozen models per outer fold.
INNER_FOLDS = 4


def unit_kind(questions: Sequence[TuneQuestion]) -> str:
    """What the questions' gold units are: "page", "record", or "page+record" for both."""
    kinds = sorted({"record" if tq.query.expected_records else "page" for tq in questions})
    return "+".join(kinds) or "page"


class LearnedTrainer:
    """Learned fusion under one configuration: trains on some questions, scores others."""

    learned = True  # its fitted model is the one the coverage audit shows

    def __init__(self, config: Config, questions: Sequence[TuneQuestion], fetched: Fetched, settings: Settings,
                 features: Sequence[str] | None = None):
        self.config, self.questions, self.fetched, self.settings = config, questions, fetched, settings
        self.features = tuple(features) if features else None  # None: features.MODEL_FEATURES
        self.replayed = replay_config(config, settings)
        self.rows, self.labels = [], []
        for q, tq in enumerate(questions):
            chunks, rows = candidate_rows(fetched.of(config, q), self.replayed)
            gold = set(tq.query.expected_units)
            self.rows.append(rows)
            self.labels.append(np.asarray([1 if c.unit in gold else 0 for c in chunks]))
        sizes: dict[str, int] = {}
        for tq in questions:
            sizes[tq.family] = sizes.get(tq.family, 0) + 1
        # N / (families x family size): each family sums to the same weight, and one family weighs 1 a question.
        self.weights = [len(questions) / (len(sizes) * sizes[tq.family]) for tq in questions]
        configured = settings.replace(**config.settings)
        self.fingerprint = {"settings": learned.assumed_settings(configured), "units": unit_kind(questions),
                            "candidate_window": int(configured.candidate_window)}

    def fit(self, train: np.ndarray, goldsets: dict | None = None):
        kinds = unit_kind([self.questions[i] for i in train])
        return learned.train([self.rows[i] for i in train], [self.labels[i] for i in train],
                             {**self.fingerprint, "units": kinds, "goldsets": goldsets or {}},
                             weights=[self.weights[i] for i in train], features=self.features)

    def score(self, model, test: np.ndarray) -> np.ndarray:
        return np.asarray([metric_row(ranked_units(self.config, q, self.settings, self.fetched, model=model,
                                                   replayed=self.replayed), self.questions[q].query)
                           for q in test]).reshape(len(test), len(METRICS))

    def fit_and_score(self, train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return self.score(self.fit(train), test)

    def grouped_score(self, subset: np.ndarray, groups: Sequence[str]) -> np.ndarray:
        return grouped_cross_validation(self.fit_and_score, subset, groups)


def grouped_cross_validation(fit_and_score: Callable[[np.ndarray, np.ndarray], np.ndarray], subset: np.ndarray,
                             groups: Sequence[str]) -> np.ndarray:
    """Grouped cross-validation within ``subset``: each of its questions scored by a model that
    never saw its group. Up to INNER_FOLDS folds, the groups dealt to them in name order (with
    three reports, that is leave one report out)."""
    labels = np.asarray(groups)[subset]
    names = sorted(set(labels.tolist()))
    bucket = {name: i % INNER_FOLDS for i, name in enumerate(names)}
    folds = np.asarray([bucket[name] for name in labels.tolist()])
    out = np.zeros((len(subset), len(METRICS)))
    for fold in sorted(set(folds.tolist())):
        inside = folds == fold
        out[inside] = fit_and_score(subset[~inside], subset[inside])
    return out


@dataclass(frozen=True)
class InForce:
    """The settings in force scored as search() runs them, when they use a learned model."""

    scores: np.ndarray  # [question, metric]
    note: str


def in_force_scores(sets: Sequence[GoldSet], questions: Sequence[TuneQuestion], config: Config,
                    fetched: Fetched, settings: Settings) -> InForce:
    """The settings in force with the configured learned model, not one trained in the folds.

    What a user's searches run is the configured model (the shipped one
    unless RAGLOUPE_LEARNED_MODEL says otherwise), with its own rules: it
    stands aside for units it was not trained on and for settings it does not
    fit. The "settings in force" row reports that, and says when it is an
    in-sample figure (the model was trained on these very gold sets).
    """

    configured = settings.replace(**config.settings)
    replayed = replay_config(config, settings)
    out = np.zeros((len(questions), len(METRICS)))
    fell_back = 0
    for q, tq in enumerate(questions):
        ranking = replay(fetched.of(config, q), replayed)
        fell_back += ranking.fusion != "learned"
        out[q] = metric_row(M.dedupe(p.unit for p in ranking.pages), tq.query)
    model = learned.read(configured)
    trained_on = set(model.fingerprint.get("goldsets", {}).values())
    seen = sorted(g.name for g in sets if g.sha256 in trained_on)
    parts = [f"the learned model in force ({learned.model_path(configured).name})"]
    if seen:
        parts.append(f"in-sample: it was trained on {', '.join(seen)}")
    if fell_back:
        parts.append(f"{fell_back} of {len(questions)} questions fused by {configured.learned_fallback} "
                     "instead (units or settings the model was not trained on)")
    return InForce(out, "; ".join(parts))


def train_learned(goldsets: Sequence[GoldSet | str | Path], out: Path, *, workspace: Workspace) -> dict:
    """Train learned fusion on every question of the gold sets (settings in force, fusion=learned)
    and write the model file; returns what was written and the model's leave-one-group-out figure.
    ``workspace``: the caller's (ragloupe.workspace), under the settings in force."""

    settings = workspace.settings
    sets = load_goldsets(goldsets)
    questions = indexed_only(tune_questions(sets), workspace.store)
    config = Config.of("hybrid", settings, fusion="learned")
    trainer = LearnedTrainer(config, questions, fetch_all(questions, [config], "doc", settings, workspace),
                             settings)
    everything = np.arange(len(questions))
    model = trainer.fit(everything, {g.name: g.sha256 for g in sets})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(learned.to_json(model), encoding="utf-8")
    groups = [q.group for q in questions]
    figures = {}
    if len(set(groups)) > 1:
        held_out = trainer.grouped_score(everything, groups)
        figures = {"hit@1": round(float(held_out[:, HIT1].mean()), FLOAT_DIGITS),
                   "mrr": round(float(held_out[:, RR].mean()), FLOAT_DIGITS)}
    return {"path": str(out), "n_questions": len(questions), "fingerprint": model.fingerprint,
            "leave_one_group_out": figures,
            "coefficients": dict(zip(model.features, [round(float(c), 4) for c in model.coef]))}
