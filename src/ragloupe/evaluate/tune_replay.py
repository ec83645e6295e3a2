"""Scoring every configuration on every question: one fetch per question and engine setting, then replays.

The engines run once per question for each engine setting of the space (BM25's
k1 and b, query analysis, expansion, the period filter) over the largest
window; every configuration is a ``replay`` of those candidates
(retrieve/replay.py), cut to its own window, so a configuration costs
milliseconds. ``check_replay`` runs a few questions through search() itself:
the sweep must measure what search() does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.goldset import GoldQuery
from ragloupe.evaluate.tune_folds import KS, METRICS, TuneQuestion
from ragloupe.evaluate.tune_space import ENGINE_KNOBS, Config, TuningError
from ragloupe.retrieve.search import Candidates, ReplayConfig, fetch, normalise_filters, replay, search

Progress = Callable[[float, str], None]
K = 10  # the ranks the metrics read; a replay's window is max(candidate_window, K)


@dataclass
class Fetched:
    """Each question's candidates (in question order) per engine setting of the space."""

    by_key: dict[tuple, list[Candidates]] = field(default_factory=dict)

    def of(self, config: Config, position: int) -> Candidates:
        return self.by_key[config.engine_key()][position]


def filters_for(query: GoldQuery, scope: str) -> dict:
    """The search filters of a question: its own document in the document scope, none in the whole index."""
    return normalise_filters({"doc_ids": [query.doc_id]}) if scope == "doc" else {}


def fetch_all(questions: Sequence[TuneQuestion], configs: Sequence[Config], scope: str, settings: Settings,
              workspace, progress: Progress | None = None) -> Fetched:
    """fetch() every question once per engine setting, over the largest window, with every unit view."""
    window, views = fetch_window(configs), fetch_views(configs)
    keys = sorted({c.engine_key() for c in configs})
    fetched = Fetched()
    for n, key in enumerate(keys):  # keys outermost: each key's BM25 and unit indexes are built once
        fetched.by_key[key] = [fetch_question(tq, key, scope, settings, workspace, window, views)
                               for tq in questions]
        if progress:
            progress(0.3 * (n + 1) / len(keys), "engines")
    return fetched


def fetch_question(tq: TuneQuestion, engine_key: tuple, scope: str, settings: Settings, workspace, window: int,
                   views: Sequence[str], **overrides):
    """One question's candidates under an engine setting (Config.engine_key) over ``window``, with
    the unit views ``views``; ``overrides``: other settings for this fetch (a fold's query adapter)."""
    key_settings = settings.replace(**{**dict(zip(ENGINE_KNOBS, engine_key)), **overrides}, candidate_window=window)
    return fetch(tq.query.question, "hybrid", K, filters_for(tq.query, scope),
                 workspace=workspace.with_settings(key_settings), unit_views=list(views), with_periods=True)


def fetch_window(configs: Sequence[Config]) -> int:
    """The candidate window one fetch serves every configuration from: the largest (at least K)."""
    return max(max(int(c.settings["candidate_window"]), K) for c in configs)


def fetch_views(configs: Sequence[Config]) -> list[str]:
    """The unit views one fetch scores for every configuration."""
    return sorted({c.settings["unit_view"] for c in configs} - {"none"})


def replay_config(config: Config, settings: Settings) -> ReplayConfig:
    return ReplayConfig.of(settings.replace(**config.settings), config.mode, K)


def ranked_units(config: Config, position: int, settings: Settings, fetched: Fetched, model=None,
                 replayed: ReplayConfig | None = None) -> list[str]:
    """The unit ranking search() would give under ``config`` for the question at ``position``."""
    ranking = replay(fetched.of(config, position), replayed or replay_config(config, settings), model=model)
    return M.dedupe(p.unit for p in ranking.pages)


def metric_row(units: Sequence[str], query: GoldQuery) -> list[float]:
    row = M.query_metrics(list(units), query.expected_units, KS)
    return [row[name] for name in METRICS]


def score_configs(questions: Sequence[TuneQuestion], configs: Sequence[Config], fetched: Fetched,
                  settings: Settings, progress: Progress | None = None) -> np.ndarray:
    """scores[c, q, m]: metric m (METRICS) of question q under configuration c (learned ones: later, per fold)."""
    scores = np.zeros((len(configs), len(questions), len(METRICS)))
    for c, config in enumerate(configs):
        if config.learned:  # scored per fold, by nested_select
            continue
        replayed = replay_config(config, settings)
        for q, tq in enumerate(questions):
            scores[c, q] = metric_row(ranked_units(config, q, settings, fetched, replayed=replayed), tq.query)
        if progress and c % 20 == 0:
            progress(0.3 + 0.65 * (c + 1) / len(configs), f"{c + 1} of {len(configs)} configurations")
    return scores


def check_replay(questions: Sequence[TuneQuestion], configs: Sequence[Config], fetched: Fetched, scope: str,
                 settings: Settings, workspace, n_questions: int = 3) -> dict:
    """Replay a few questions through search() itself: the sweep must measure what search() does."""
    picked = list(range(0, len(questions), max(1, len(questions) // n_questions)))[:n_questions]
    checked, mismatches = 0, []
    special = [next((c for c in configs if test(c)), None) for test in (
        lambda c: c.settings["query_analysis"], lambda c: c.settings["unit_view"] != "none",
        lambda c: c.settings["prefer_tables"])]
    for config in configs[:2] + [c for c in special if c is not None and not c.learned]:
        configured = settings.replace(**config.settings)
        for q in picked:
            query = questions[q].query
            ranking = search(query.question, mode=config.mode, k=max(int(configured.candidate_window), K),
                             filters=filters_for(query, scope) or None,
                             workspace=workspace.with_settings(configured))
            checked += 1
            if M.dedupe(p.unit for p in ranking.pages) != ranked_units(config, q, settings, fetched):
                mismatches.append(f"{query.query_id} under {config.label()}")
    return {"checked": checked, "mismatches": mismatches}


def indexed_only(questions: list[TuneQuestion], store) -> list[TuneQuestion]:
    """Questions whose document the index holds (the others cannot be tuned on)."""
    held = {c.doc_id for c in store.all_chunks()}
    kept = [q for q in questions if q.query.doc_id in held]
    if not kept:
        raise TuningError("none of the gold sets' documents is in the index: index them first")
    return kept
