"""Out-of-fold tuning: choose retrieval settings on some documents, score the choice on others.

A figure picked as the best of many configurations on the same questions it
is reported on is optimistic: some of the win is selection luck. ``tune``
measures the whole selection procedure instead, by grouped cross-validation:

1. Questions are grouped by document (a report of a page-level gold set;
   for record gold sets, a top-level chapter of the records file), so a fold
   never has questions of one document on both sides (tune_folds.py).
2. For each group in turn, every configuration of the search space
   (tune_space.py) is scored on the OTHER groups and the one whose worst
   gold-set family does best (objective: the mean of Hit@1 and the
   reciprocal rank cut at 10, over the family's questions) is scored on the
   held-out group. Learned fusion is trained on the training groups only
   (tune_trainer.py), and its training score is itself an inner
   leave-one-group-out figure, never a fit to the questions it is scored on.
   So is the query adapter in force when it learned from the gold questions
   (tune_adapter.py): it is retrained in each fold and the held-out questions
   searched again with it.
3. The held-out questions of all folds, concatenated, are the out-of-fold
   figure of the procedure, overall and per family, with bootstrap CIs;
   beside it, the in-sample best and the gap between the two (tune_report.py).

Speed: fetch() runs once per question and engine setting over the largest
window; each configuration is a replay() of those candidates
(tune_replay.py). A self-check runs a few questions through search() itself.

Chunking: chunk size and overlap shape the index, so they cannot be
replayed. With ``chunking`` variants, each variant other than the one in
force gets a scratch index of the gold sets' documents (tune_indexes.py),
the whole space is scored on every variant, and selection runs over
(configuration x chunking); learned fusion is trained per variant.

The report is written as JSON under runs_dir (schema ragloupe.tune/1), byte-
identical on rerun apart from its ``timings``. Writing the chosen settings to
.env is the CLI's (cli/tune_cmd.py), only on a paired out-of-fold win.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.evaluate import coverage_sources as CS
from ragloupe.evaluate.goldset import GoldSet, load_goldsets
from ragloupe.evaluate.runs import content_hash, save_report
from ragloupe.evaluate.tune_folds import (HIT1, KS, METRICS, RR, Fold, FoldResult,  # noqa: F401
                                          TuneQuestion, family_of, group_of, grouped_folds, is_held_out,
                                          nested_select, objective_per_query, out_of_fold, paired, select,
                                          tune_questions)
from ragloupe.evaluate import tune_adapter as TA, tune_indexes as TI
from ragloupe.evaluate.tune_replay import (Fetched, check_replay, fetch_all, fetch_views, fetch_window, indexed_only,
                                           metric_row, ranked_units, score_configs)
from ragloupe.evaluate.tune_report import (SCHEMA, Scored, TuneReport, apply_decision, build_report,  # noqa: F401
                                           chosen_config, latest_tune, load_tune, rebuild_note, selected_default)
from ragloupe.evaluate.tune_rule import RULE, family_verdict_lines, judge, select_default, simplicity  # noqa: F401
from ragloupe.evaluate.tune_space import (CHUNKING_KNOBS, ENGINE_KNOBS, KNOBS, SCOPES, SPACES,  # noqa: F401
                                          Config, TuningError, search_space)
from ragloupe.evaluate.tune_trainer import (InForce, LearnedTrainer, grouped_cross_validation,  # noqa: F401
                                            in_force_scores, train_learned, unit_kind)
from ragloupe.workspace import Workspace

Progress = Callable[[float, str], None]


def tune(goldsets: Sequence[GoldSet | str | Path], scope: str = "doc", space: str = "full", *,
         workspace: Workspace, write: bool = True,
         progress: Progress | None = None, configs: Sequence[Config] | None = None,
         chunking: str | Sequence[str] | None = None,
         confirm: Sequence[GoldSet | str | Path] | None = None) -> TuneReport:
    """Search the space with nested leave-one-group-out selection; see the module docstring.

    ``confirm``: the confirmation family, gold sets written after the features were frozen.
    Every configuration is scored on them, none is chosen on them: they only gate the default
    (tune_rule.py), and the report's ``default_rule`` and ``confirmation`` say how.

    ``chunking`` ("128/32,384/96"): chunking variants scored besides the one in
    force, each on a scratch index of the gold sets' documents (tune_indexes.py).
    The report's ``coverage`` section is the gold-set coverage audit (coverage_sources.py),
    with the weights of the learned model tune would ship when it selects one.
    ``workspace``: the caller's (ragloupe.workspace); its settings are the ones in force.
    """

    settings = workspace.settings
    if scope not in SCOPES:
        raise TuningError(f"unknown scope {scope!r}; use doc or all")
    variants = TI.variants_to_score(settings, TI.parse_chunking(chunking))
    sets = load_goldsets(goldsets)
    started_at, started = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    questions = tune_questions(sets)
    grouped_folds([q.group for q in questions])  # refuse one group before opening anything
    confirm_sets = load_goldsets(confirm) if confirm else []
    confirming = confirmation_questions(confirm_sets, sets)
    base_configs = list(configs) if configs is not None else search_space(settings, space, scope)
    if workspace.store.count() == 0:
        raise TuningError(f"the index at {settings.path('index_dir')} is empty: run `ragloupe index` first")
    cuts = TI.check_variants(variants, settings, workspace.embedder)  # refuse a bad variant before any build
    asked = questions
    questions = indexed_only(questions, workspace.store)
    confirming = indexed_only(confirming, workspace.store) if confirming else []
    adapter_read = TA.needs_retraining(settings, questions)
    confirm_read = TA.needs_retraining(settings, confirming) if confirming else 0
    retrain = TA.retrains(adapter_read, len(questions))  # else scored as it is (none or a few read)
    if retrain:  # learned contenders learn from their candidates: none fetched by an adapter that read them
        base_configs = list(dict.fromkeys([base_configs[0], *(c.without_adapter() if c.learned else c
                                                              for c in base_configs[1:])]))
    with TA.scratch_dir() as scratch:
        sweep = _Sweep(questions, scope, settings, workspace, progress, confirming,
                       Path(scratch) if retrain else None, TA.retrains(confirm_read, len(confirming)))
        for v, variant in enumerate(variants):
            sweep.score_variant(v, variant, len(variants), base_configs)
        run, learned_s = sweep.select(sets, space, variants, cuts)
    data = build_report(run)
    data["query_adapter"] = TA.report_section(settings, questions, confirming, adapter_read, confirm_read,
                                                 run.configs[0])
    data["not_indexed"] = _left_out(asked, questions)
    if confirm_sets:
        data["confirmation_goldsets"] = [{"name": g.name, "sha256": g.sha256, "queries": len(g.queries)}
                                         for g in confirm_sets]
    best = data["in_sample_best"]["index"]  # the coverage audit, with the model tune would ship if learned
    trainer = sweep.trainers.get(best)
    tuned = [CS.fitted_model(trainer, len(questions), sets)] if trainer is not None and trainer.learned else []
    data["coverage"] = CS.coverage_report(sets, settings, workspace.store, sweep.configs[0].mode, tuned,
                                          adapter_retrained=retrain)
    timings = {"started_at": started_at, "total_s": round(time.perf_counter() - started, 2),
               **{name: round(value, 2) for name, value in sweep.seconds.items()},
               "learned_s": round(learned_s, 2),
               "configs_per_s": round(len(sweep.configs) / max(sweep.seconds["replay_s"], 1e-9), 2),
               "indexes": sweep.index_timings}
    report = TuneReport(f"tune-{scope}-{content_hash(data)[:12]}", data, timings)
    if progress:
        progress(1.0, "done")
    return save_report(report, settings) if write else report


class _Sweep:
    """The state of one tune run across its chunking variants: configurations, scores, trainers."""

    def __init__(self, questions: list[TuneQuestion], scope: str, settings: Settings, workspace,
                 progress: Progress | None, confirming: Sequence[TuneQuestion] = (),
                 adapter_scratch: Path | None = None, adapter_read_confirming: bool = False):
        self.questions, self.scope, self.settings = questions, scope, settings
        # Where the adapters retrained in the folds go; None: the adapter in force (if any) read none
        # of the questions, and configurations with it are scored as they are.
        self.adapter_scratch = adapter_scratch
        # The adapter in force read confirmation questions too: they are scored by one retrained on
        # every tuning question (the adapter itself otherwise).
        self.adapter_read_confirming = adapter_read_confirming
        self.adapter_fetches: dict = {}
        self.confirming = list(confirming)  # the confirmation family's questions: scored, never chosen on
        self.confirm_fetched: list[Fetched] = []
        self.confirm_scores: list[np.ndarray] = []
        self.workspace, self.progress = workspace, progress
        self.configs: list[Config] = []
        self.scores: list[np.ndarray] = []
        self.trainers: dict[int, LearnedTrainer] = {}
        self.checks: list[dict] = []
        self.index_timings: list[dict] = []
        self.seconds = {"index_build_s": 0.0, "engines_s": 0.0, "replay_s": 0.0}
        self.main: Fetched | None = None
        self.sources = None

    def score_variant(self, v: int, variant, n_variants: int, base_configs: Sequence[Config]) -> None:
        if n_variants > 1 and self.sources is None:
            self.sources = TI.gold_sources({q.query.doc_id for q in self.questions + self.confirming},
                                           self.settings)
        share = _share_of(self.progress, v, n_variants)
        index = TI.variant_index(self.settings, variant, self.sources,
                                 (lambda text: share(0.0, text)) if share else None)
        self.seconds["index_build_s"] += index.seconds
        self.index_timings.append(index.timing())
        settings = index.settings
        workspace = self.workspace if not index.scratch else self.workspace.sibling(settings)
        if index.scratch and len(indexed_only(self.questions, workspace.store)) != len(self.questions):
            raise TuningError(f"the scratch index for chunking {variant.label()} lacks some of the gold "
                              f"sets' documents; delete {settings.path('index_dir')} and rerun")
        configs = [c.on_chunking(variant.tokens, variant.overlap) for c in base_configs]
        t0 = time.perf_counter()
        fetched = fetch_all(self.questions, configs, self.scope, settings, workspace, share)
        self.seconds["engines_s"] += time.perf_counter() - t0
        self.checks.append(check_replay(self.questions, configs, fetched, self.scope, settings, workspace))
        t0 = time.perf_counter()
        self.scores.append(score_configs(self.questions, configs, fetched, settings, share))
        self.seconds["replay_s"] += time.perf_counter() - t0
        # Learned fusion is trained on this variant's own candidates: a model of one chunking
        # would read another's features wrongly (its fingerprint records the chunking).
        if self.confirming:
            confirm_fetched = fetch_all(self.confirming, configs, self.scope, settings, workspace)
            self.confirm_fetched += [confirm_fetched] * len(configs)
            self.confirm_scores.append(score_configs(self.confirming, configs, confirm_fetched, settings))
        self.trainers.update({len(self.configs) + c: LearnedTrainer(config, self.questions, fetched, settings)
                              for c, config in enumerate(configs) if config.learned})
        if self.adapter_scratch is not None and any(c.adapted for c in configs):
            fits = TA.AdapterFits(self.questions, settings, workspace, self.adapter_scratch / f"chunking-{v}")
            self.trainers.update({len(self.configs) + c: TA.AdapterTrainer(
                config, fits, self.scope, fetch_window(configs), fetch_views(configs), self.adapter_fetches)
                for c, config in enumerate(configs) if config.adapted and not config.learned})
        self.configs += configs
        if v == 0:  # the index in force: what search() runs on
            self.main = fetched

    def select(self, sets: Sequence[GoldSet], space: str, variants, cuts) -> tuple[Scored, float]:
        questions = self.questions
        groups, families = [q.group for q in questions], [q.family for q in questions]
        folds = grouped_folds(groups)
        scores = np.concatenate(self.scores, axis=0)
        t0 = time.perf_counter()
        # A trained configuration's row is what its folds held out: each group scored by a model (or
        # adapter) trained on every other group. That is its figure everywhere in the report.
        picks = nested_select(scores, folds, groups, self.trainers, families)
        learned_s = time.perf_counter() - t0
        check = {"checked": sum(c["checked"] for c in self.checks),
                 "mismatches": [m for c in self.checks for m in c["mismatches"]]}
        n = len(self.configs) // len(variants)
        variant_rows = [{**cut, "index": "scratch" if v else "main",
                         "index_fingerprint": variant.applied_to(self.settings).index_fingerprint(),
                         "documents": sorted(self.sources) if v else "the main index",
                         "configs": [v * n, (v + 1) * n]}
                        for v, (variant, cut) in enumerate(zip(variants, cuts))]
        in_force = (in_force_scores(sets, questions, self.configs[0], self.main, self.settings)
                    if self.configs[0].learned else None)
        if in_force is None and 0 in self.trainers:  # the settings in force search with an adapter that read them
            in_force = InForce(scores[0].copy(), TA.IN_FORCE_NOTE)
        confirm = self._confirm_scores()
        retrained = tuple(c for c, trainer in self.trainers.items() if not trainer.learned)
        confirm_families = [q.family for q in self.confirming] if confirm is not None else ()
        return Scored(sets, questions, self.configs, scores, folds, picks, self.scope, space, self.settings,
                      check, variant_rows, in_force, confirm, confirm_families, retrained), learned_s

    def _confirm_scores(self) -> np.ndarray | None:
        """Every configuration on the confirmation questions; a learned one with its model fitted on
        every tuning question (the model it would ship), never on a confirmation question."""
        if not self.confirming:
            return None
        scores = np.concatenate(self.confirm_scores, axis=0)
        everything = np.arange(len(self.questions))
        for c, trainer in self.trainers.items():
            if not trainer.learned:  # the adapter in force, unless it read confirmation questions too
                if self.adapter_read_confirming:
                    scores[c] = trainer.score_questions(trainer.fit(everything), self.confirming)
                continue
            model = trainer.fit(everything)
            fetched = self.confirm_fetched[c]
            scores[c] = np.asarray([metric_row(ranked_units(trainer.config, q, self.settings, fetched, model=model,
                                                            replayed=trainer.replayed), tq.query)
                                    for q, tq in enumerate(self.confirming)]).reshape(len(self.confirming), -1)
        return scores


def confirmation_questions(confirm_sets: Sequence[GoldSet], tuning_sets: Sequence[GoldSet]) -> list[TuneQuestion]:
    """The confirmation family's questions; a gold set tuned on cannot also confirm."""
    tuned = {g.sha256: g.name for g in tuning_sets}
    for g in confirm_sets:
        if g.sha256 in tuned or g.name in tuned.values():
            raise TuningError(f"{g.name} is both tuned on and named to confirm: a confirmation family must "
                              "be questions the selection never reads")
    return [TuneQuestion(q, group_of(q), f"{family_of(g)}") for g in confirm_sets for q in g.queries]


def _left_out(asked: Sequence[TuneQuestion], kept: Sequence[TuneQuestion]) -> dict[str, int]:
    """Per family, how many questions were left out because the index lacks their document."""
    counts: dict[str, int] = {}
    for tq in asked:
        counts[tq.family] = counts.get(tq.family, 0) + 1
    for tq in kept:
        counts[tq.family] -= 1
    return {family: n for family, n in sorted(counts.items()) if n}


def _share_of(progress: Progress | None, part: int, parts: int) -> Progress | None:
    """A progress callback for one of ``parts`` equal parts of the run (one per chunking variant)."""
    if progress is None:
        return None
    return lambda share, text: progress(min((part + share) / parts, 0.99),
                                        f"{text} (chunking {part + 1} of {parts})" if parts > 1 else text)
