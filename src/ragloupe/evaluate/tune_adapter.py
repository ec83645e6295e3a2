"""The query adapter inside `ragloupe tune`: retrained in every fold when it learned from the gold questions.

The query adapter (retrieve/query_adapter.py) is learned from gold questions. When the one in
force learned from the questions tune scores (the shipped adapter learned from every shipped
tuning set; `ragloupe adapt --queries` from the user's), a configuration that searches with it
would be scored in-sample. So such a configuration is scored like learned fusion (tune_trainer):
for each fold an adapter of the same recipe (adapt/query_training.py: the loss, the
regularisation, the starting matrix) is trained on the training groups' questions only, and
the held-out questions are searched again with it (fetch(), the dense engine reading the fold's
adapter). An adapter that learned from none of the questions fits nothing of them: tune scores
it as a fixed configuration, and no trainer is made. Nor when it learned from a few, at most
FEW_READ of them (a retired gold set's question asked again word for word in yours): reading them
moves no figure over the questions by more than that share, while an adapter retrained on the
user's few hundred questions would stand for the shipped one, learned from 1,668, and score lower
than what the user gets. Those few are then in-sample, and the report says how many.

The configuration's training figure inside a fold is a grouped cross-validation of its own
(INNER_FOLDS folds of the training groups, as learned fusion's), so every figure the selection
reads comes from an adapter that never saw the question's document.

Cost: a fit is a few seconds (a 384 x 384 matrix, full-batch Adam); each fold fetches every
question once more per engine setting. Fits and fetches are kept per training set, so
configurations sharing their engine settings share them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ragloupe.adapt import query_training as QT
from ragloupe.config import Settings
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.tune_folds import METRICS, TuneQuestion
from ragloupe.evaluate.tune_replay import fetch_question, metric_row, replay_config
from ragloupe.evaluate.tune_space import Config
from ragloupe.evaluate.tune_trainer import grouped_cross_validation
from ragloupe.retrieve import query_adapter
from ragloupe.retrieve.search import replay

FEW_READ = 0.01  # the share of the questions an adapter may have learned from and still be scored as it is


def retrains(learned_from: int, n_questions: int) -> bool:
    """Whether tune retrains the adapter in its folds: it learned from more than FEW_READ of the questions."""
    return learned_from > FEW_READ * n_questions


IN_FORCE_NOTE = ("the query adapter in force learned from these questions: they are scored with an adapter of "
                 "its recipe retrained without each question's document (in-sample they would score higher)")


def needs_retraining(settings: Settings, questions: Sequence[TuneQuestion]) -> int:
    """How many of the tuning questions the query adapter in force learned from (0: none is in force,
    or it read none of them, and configurations with it are scored as they are)."""
    adapter, _ = query_adapter.in_force(settings)
    return query_adapter.learned_from(adapter, [tq.query.question for tq in questions]) if adapter else 0


class AdapterFits:
    """The in-force adapter's recipe, trained on subsets of the tuning questions; one per run,
    shared by every configuration that searches with the adapter (a fit depends on the questions only)."""

    def __init__(self, questions: Sequence[TuneQuestion], settings: Settings, workspace, scratch: Path):
        self.questions, self.settings, self.workspace, self.scratch = questions, settings, workspace, scratch
        adapter, _ = query_adapter.in_force(settings)
        refines = adapter.record.get("refines") if adapter else None
        start, _ = (workspace.query_adapter(refines) if refines not in (None, "off") else (None, ""))
        self.start = None if start is None else start.matrix
        self.reg = float(adapter.record.get("reg", QT.REG)) if adapter else QT.REG
        self.sentence_weight = float(adapter.record.get("sentence_weight", settings.dense_sentence_weight)
                                     if adapter else settings.dense_sentence_weight)
        self.model = settings.embedding_model
        workspace.check_embedded_by()  # the questions' vectors are set against the index's
        self.vectors = np.asarray([workspace.query_vector(tq.query.question) for tq in questions], dtype=np.float32)
        self.docs = {d: QT.doc_units(workspace, d) for d in sorted({tq.query.doc_id for tq in questions})}
        self._files: dict[tuple[int, ...], str] = {}

    def adapter_file(self, train: np.ndarray) -> str:
        """The file of the adapter trained on the questions ``train`` (trained on first asking)."""
        key = tuple(int(i) for i in train)
        if key not in self._files:
            parts = QT.batches([self.questions[i].query for i in key], self.vectors[list(key)], self.docs)
            path = self.scratch / f"fold-{len(self._files)}.npz"
            if parts:
                matrix = QT.train(parts, self.sentence_weight, reg=self.reg, start=self.start)
            else:  # no training question has its gold unit indexed: the recipe's starting point
                matrix = self.start if self.start is not None else np.eye(self.vectors.shape[1], dtype=np.float32)
            query_adapter.save(path, matrix, self.model, {"questions": len(key), "trained_by": "ragloupe tune"})
            self._files[key] = str(path)
        return self._files[key]


class AdapterTrainer:
    """One configuration that searches with the in-force adapter: the adapter retrained per fold,
    the held-out questions fetched again with it, then replayed under the configuration."""

    learned = False  # not a learned fusion model: nothing of it goes into the coverage audit's weights

    def __init__(self, config: Config, fits: AdapterFits, scope: str, window: int, views: Sequence[str],
                 fetch_cache: dict):
        self.config, self.fits, self.scope, self.window, self.views = config, fits, scope, window, list(views)
        self.questions, self.settings = fits.questions, fits.settings
        self.replayed = replay_config(config, fits.settings)
        self._fetched = fetch_cache  # (adapter file, engine key, question) -> Candidates, shared by configurations

    def fit(self, train: np.ndarray, goldsets: dict | None = None) -> str:
        return self.fits.adapter_file(train)

    def candidates(self, adapter_file: str, tq: TuneQuestion):
        """The question's candidates with the dense engine reading ``adapter_file``, under the
        configuration's engine settings, over the sweep's window (as fetch_all)."""
        key = (adapter_file, self.config.engine_key(), tq.query.query_id, tq.query.goldset)
        if key not in self._fetched:
            self._fetched[key] = fetch_question(tq, self.config.engine_key(), self.scope, self.settings,
                                                self.fits.workspace, self.window, self.views,
                                                query_adapter=adapter_file)
        return self._fetched[key]

    def score_questions(self, adapter_file: str, questions: Sequence[TuneQuestion]) -> np.ndarray:
        rows = [metric_row(M.dedupe(p.unit for p in replay(self.candidates(adapter_file, tq), self.replayed).pages),
                           tq.query) for tq in questions]
        return np.asarray(rows, dtype=float).reshape(len(questions), len(METRICS))

    def score(self, adapter_file: str, test: np.ndarray) -> np.ndarray:
        return self.score_questions(adapter_file, [self.questions[q] for q in test])

    def fit_and_score(self, train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return self.score(self.fit(train), test)

    def grouped_score(self, subset: np.ndarray, groups: Sequence[str]) -> np.ndarray:
        return grouped_cross_validation(self.fit_and_score, subset, groups)


def scratch_dir() -> tempfile.TemporaryDirectory:
    """Where a run's fold adapters are written (removed with the run)."""
    return tempfile.TemporaryDirectory(prefix="ragloupe-tune-adapters-")


def report_section(settings: Settings, questions: Sequence[TuneQuestion], confirming: Sequence[TuneQuestion],
                   learned_from: int, read_confirming: int, in_force: Config) -> dict:
    """The report's ``query_adapter``: the adapter in force, how many tuning (``learned_from``) and
    confirmation (``read_confirming``) questions it learned from, and how tune scored the
    configurations that search with it (``in_force``: the settings in force's configuration)."""
    adapter, why = query_adapter.in_force(settings)
    retrained = retrains(learned_from, len(questions))
    if adapter is None:
        scored = "no query adapter is in force: dense searches with the question's own vector"
    elif learned_from and not retrained:
        scored = (f"it learned from {learned_from} of the {len(questions)} tuning questions (asked word for word "
                  f"in a set it learned from), at most {FEW_READ:.0%} of them: configurations with it are scored "
                  "as they are, those questions in-sample")
    elif learned_from:
        scored = (f"it learned from {learned_from} of the {len(questions)} tuning questions: each configuration "
                  "that searches with it was scored with an adapter of its recipe retrained in every fold, "
                  "never on the held-out document's questions; learned fusion contenders search without it")
        if in_force.learned and in_force.adapted:
            scored += (" (but the settings in force, learned fusion over it: their dense features read the "
                       "adapter in-sample)")
    else:
        scored = "it learned from none of the tuning questions: configurations with it are scored as they are"
    if adapter is not None and confirming:
        scored += ("; on the confirmation family, with " + (
            "an adapter retrained on every tuning question (it learned from "
            f"{read_confirming} of the {len(confirming)} confirmation questions)"
            if retrains(read_confirming, len(confirming))
            else f"the adapter itself (it learned from {read_confirming or 'none'} of the confirmation questions)"))
    return {"in_force": why, "source": adapter.source if adapter else None,
            "digest": adapter.digest if adapter else None, "learned_from": int(learned_from),
            "confirmation_learned_from": int(read_confirming),
            "retrained_in_folds": bool(adapter is not None and retrained), "scored": scored}
