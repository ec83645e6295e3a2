"""Out-of-fold tuning: choose retrieval settings on some documents, score the choice on others.

A figure picked as the best of many configurations on the same questions it
is reported on is optimistic: some of the win is selection luck. ``tune``
measures the whole selection procedure instead, by grouped cross-validation:

1. Questions are grouped by document (a report of a page-level gold set;
   for record gold sets, a top-level chapter of the records file), so a fold
   never has questions of one document on both sides.
2. For each group in turn, every configuration of the search space is scored
   on the OTHER groups and the best (objective: the mean of Hit@1 and the
   reciprocal rank cut at 10, over questions) is scored on the held-out group.
   Learned fusion is trained on the training groups only, and its training
   score is itself an inner leave-one-group-out figure, never a fit to
   the questions it is scored on.
3. The held-out questions of all folds, concatenated, are the out-of-fold
   figure of the procedure, with bootstrap CIs; beside it, the in-sample best
   (chosen and scored on all questions) and the gap between the two.

Speed: the engines run once per question over the largest window; each
configuration replays search()'s later stages (search.replay) over those
lists, so a configuration costs milliseconds. A self-check replays a few
questions through search() itself and reports any difference.

Chunking: chunk size and overlap shape the index, so they cannot be
replayed. With ``chunking`` variants, each variant other than the one in
force gets a scratch index of the gold sets' documents (tune_indexes.py),
the whole space is scored on every variant (each configuration carries its
chunking in its knobs and label), and selection runs over (configuration x
chunking) with the same nested procedure; learned fusion is trained per
variant, on that variant's candidates.

The report is written as JSON under runs_dir (schema ragloupe.tune/1), byte-
identical on rerun apart from its ``timings``. ``apply_to_env`` writes the
chosen settings to .env only when the out-of-fold figure beats the current
settings with a paired test.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ragloupe.config import PROJECT_ROOT, Settings, get_settings
from ragloupe.errors import RagloupeError, RunNotFound
from ragloupe.evaluate import coverage_sources as CS
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.goldset import GoldQuery, GoldSet, load_goldsets
from ragloupe.evaluate.runs import (
    BOOTSTRAP_SEED,
    FLOAT_DIGITS,
    Report,
    content_hash,
    read_report,
    save_report,
)
from ragloupe.evaluate.stats import paired_bootstrap_ci, paired_permutation_p

SCHEMA = "ragloupe.tune/1"
KS = (1, 3, 5, 10)
SCOPES = ("doc", "all")
SPACES = ("small", "full")
# The settings a configuration fixes. Everything else comes from the settings in force.
KNOBS = ("candidate_window", "fusion", "rrf_k", "weight_dense", "weight_bm25", "bm25_k1", "bm25_b",
         "page_aggregation", "lexical_rerank", "lexical_rerank_weight", "query_analysis", "period_boost",
         "prefer_tables", "prefer_tables_boost", "unit_view", "unit_dense", "unit_weight_bm25",
         "unit_weight_dense", "unit_bm25_b", "query_expansion", "period_filter", "chunk_tokens", "chunk_overlap")
# The chunking is a knob like the others, so a configuration is everything --apply would write;
# but it is not replayed: each chunking is scored on an index cut with it (evaluate/tune_indexes.py).
CHUNKING_KNOBS = ("chunk_tokens", "chunk_overlap")
# Knobs that change what an engine lists (the others act after the engines): the query
# expansion adds the written variants of a question's periods and codes to BM25's query,
# and the period filter (whole-index scope) lists only the documents of the question's period.
ENGINE_KNOBS = ("bm25_k1", "bm25_b", "query_analysis", "query_expansion", "period_filter")
Progress = Callable[[float, str], None]
SCRATCH_NOTE = ("a chunking other than the index's is scored on a scratch index of the gold sets' documents "
                "only: dense search in the document scope is unaffected, but BM25's document frequencies (and, "
                "in the whole-index scope, the other documents a question competes with) differ from the "
                "main index's")


class TuningError(RagloupeError):
    """Tuning cannot run as asked (too few documents to hold one out, an unknown space ...)."""


# --- what is searched -------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """One point of the search space: a mode and a value for every knob."""

    mode: str
    knobs: tuple[tuple[str, Any], ...]  # (name, value) in KNOBS order

    @classmethod
    def of(cls, mode: str, base: Settings, **changes: Any) -> "Config":
        values = {name: getattr(base, name) for name in KNOBS}
        values.update(changes)
        return cls(mode, tuple((name, _plain(values[name])) for name in KNOBS))

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.knobs)

    @property
    def learned(self) -> bool:
        """Learned fusion: its model is trained inside each fold, so its scores depend on the fold."""
        return self.settings["fusion"] == "learned" and self.mode.split("+")[0] == "hybrid"

    @property
    def chunking(self) -> str:
        """The chunking the configuration is scored on, as TOKENS/OVERLAP."""
        return f"{self.settings['chunk_tokens']}/{self.settings['chunk_overlap']}"

    def on_chunking(self, tokens: int, overlap: int) -> "Config":
        """The same configuration over an index cut with another chunking."""
        changes = {"chunk_tokens": int(tokens), "chunk_overlap": int(overlap)}
        return Config(self.mode, tuple((name, changes.get(name, value)) for name, value in self.knobs))

    def engine_key(self) -> tuple:
        values = self.settings
        return tuple(values[name] for name in ENGINE_KNOBS)

    def label(self) -> str:
        """A short, readable name: 'hybrid minmax 1.5:1 w100 max k1=1.5 b=0.75 +qa chunks 256/64'."""
        return f"{self._label_without_chunking()} chunks {self.chunking}"

    def _label_without_chunking(self) -> str:
        v = self.settings
        bm25 = f"k1={v['bm25_k1']:g} b={v['bm25_b']:g}"
        qa = (f" +qa{' boost' + format(v['period_boost'], 'g') if v['period_boost'] else ''}"
              f"{' filter' if v['period_filter'] else ''}{' exp' if v['query_expansion'] else ''}"
              if v["query_analysis"] else "")
        if self.mode in ("dense", "bm25"):
            base = f"dense w{v['candidate_window']}" if self.mode == "dense" else f"bm25 {bm25}"
            return base + qa
        fusion = v["fusion"] + (f"{v['rrf_k']}" if v["fusion"] == "rrf" else "")
        if self.learned:
            return f"hybrid learned w{v['candidate_window']} {v['page_aggregation']} {bm25}{qa}"
        rerank = f" +lexrerank{v['lexical_rerank_weight']:g}" if self._reranks else ""
        return (f"{self.mode.split('+')[0]} {fusion} {v['weight_dense']:g}:{v['weight_bm25']:g} "
                f"w{v['candidate_window']} {v['page_aggregation']} {bm25}{rerank}{qa}")

    @property
    def _reranks(self) -> bool:
        return "rerank" in self.mode.split("+") or bool(self.settings["lexical_rerank"])

    def as_dict(self) -> dict:
        return {"mode": self.mode, **self.settings}


def _plain(value: Any) -> Any:
    """Settings values in one spelling (1.0 and 1 are the same weight)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def search_space(settings: Settings, space: str = "full", scope: str = "doc") -> list[Config]:
    """The configurations tried, the settings in force first (ties keep them).

    ``small`` is a handful of contrasting points (for tests and a quick look);
    ``full`` crosses BM25's k1 and b, query analysis on and off, fusion method
    (RRF k 10 and 60, min-max), weights from dense-heavy to lexical-heavy,
    candidate window and page aggregation. The period boost is tried only in
    the whole-index scope: with one document per question it changes nothing.
    """
    if space not in SPACES:
        raise TuningError(f"unknown search space {space!r}; use one of {', '.join(SPACES)}")
    boosts = (0.0, 0.5, 2.0) if scope == "all" else (0.0,)
    if "rewrite" in settings.mode.split("+"):
        raise TuningError(f"tune cannot replay the mode in force ({settings.mode}): query rewriting asks "
                          "an LLM per question; tune a mode without +rewrite (--set mode=hybrid)")
    off = {"query_analysis": False, "period_boost": 0.0, "lexical_rerank": False, "prefer_tables": False,
           "unit_view": "none", "query_expansion": False, "period_filter": False}
    current = Config.of(settings.mode, settings)
    configs = [current, Config.of("bm25", settings, **off), Config.of("dense", settings, **off)]
    if space == "small":
        hybrid = {**off, "page_aggregation": "max"}
        configs += [Config.of("hybrid", settings, **{**hybrid, "fusion": "rrf", "rrf_k": 60, "weight_dense": 1,
                                                     "weight_bm25": 1, "candidate_window": 50}),
                    Config.of("hybrid", settings, **{**hybrid, "fusion": "minmax", "weight_dense": 1,
                                                     "weight_bm25": 2, "candidate_window": 100}),
                    Config.of("hybrid", settings, **{**hybrid, "fusion": "minmax", "weight_dense": 1,
                                                     "weight_bm25": 1, "candidate_window": 100,
                                                     "query_analysis": True, "period_boost": boosts[-1]}),
                    Config.of("hybrid", settings, **{**hybrid, "fusion": "learned", "candidate_window": 50})]
        return _unique(configs)
    weights = ((1.5, 1), (1, 1), (1, 1.5), (1, 2), (1, 3))
    fusions = [{"fusion": "rrf", "rrf_k": 10}, {"fusion": "rrf", "rrf_k": 60}, {"fusion": "minmax"}]
    bm25_params = ((1.5, 0.75), (0.9, 0.4))
    for (k1, b), analysed in itertools.product(bm25_params, (False, True)):
        for boost in boosts if analysed else (0.0,):
            engine = {**off, "bm25_k1": k1, "bm25_b": b, "query_analysis": analysed, "period_boost": boost}
            configs.append(Config.of("bm25", settings, **engine))
            for fusion, (wd, wb), window, aggregation in itertools.product(
                    fusions, weights, (50, 100), ("max", "sum")):
                configs.append(Config.of("hybrid", settings, **engine, **fusion, weight_dense=wd,
                                         weight_bm25=wb, candidate_window=window, page_aggregation=aggregation))
    # The signals other stages added, each on a few contrasting bases: tables preferred for
    # questions asking for a figure, and the unit view (whole pages or records as their own signal).
    bases = [Config.of("hybrid", settings, **off, fusion="minmax", weight_dense=wd, weight_bm25=wb,
                       candidate_window=100, page_aggregation="max") for wd, wb in ((1.5, 1), (1, 1), (1, 2))]
    bases.append(Config.of("hybrid", settings, **off, fusion="rrf", rrf_k=60, weight_dense=1, weight_bm25=1,
                           candidate_window=50, page_aggregation="max"))
    for base in bases:
        configs.append(Config.of(base.mode, settings, **{**base.settings, "prefer_tables": True}))
        configs.append(Config.of(base.mode, settings, **{**base.settings, "unit_view": "all"}))
        configs.append(Config.of(base.mode, settings, **{**base.settings, "unit_view": "records"}))
    for analysed, window in itertools.product((False, True), (100,)):
        configs.append(Config.of("hybrid", settings, **{**off, "query_analysis": analysed}, fusion="learned",
                                 candidate_window=window, page_aggregation="max"))
    for wd, wb in ((1.5, 1), (1, 1), (1, 2)):
        configs.append(Config.of("hybrid+rerank", settings, **off, fusion="minmax", weight_dense=wd,
                                 weight_bm25=wb, candidate_window=100, page_aggregation="max",
                                 lexical_rerank_weight=0.3))
    return _unique(configs)


def _unique(configs: Iterable[Config]) -> list[Config]:
    return list(dict.fromkeys(configs))


# --- the questions and their groups ----------------------------------------------

@dataclass(frozen=True)
class TuneQuestion:
    query: GoldQuery
    group: str  # the document (or chapter group) this question is held out with


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


def tune_questions(goldsets: Sequence[GoldSet]) -> list[TuneQuestion]:
    return [TuneQuestion(q, group_of(q)) for g in goldsets for q in g.queries]


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


# --- scoring every configuration on every question -------------------------------

METRICS = tuple(M.metric_names(KS))  # hit@k, recall@k, ndcg@k for each k, then rr
_HIT1, _RR = METRICS.index("hit@1"), METRICS.index("rr")


def objective_per_query(scores: np.ndarray) -> np.ndarray:
    """The selection objective of each question: the mean of its Hit@1 and reciprocal rank."""
    return (scores[..., _HIT1] + scores[..., _RR]) / 2.0


@dataclass
class EngineLists:
    """Each question's engine lists over the largest window, per BM25 setting, and what replay needs."""

    dense: list[list] = field(default_factory=list)
    bm25: dict[tuple, list[list]] = field(default_factory=dict)
    analyses: list = field(default_factory=list)  # each question's QueryAnalysis
    periods: dict = field(default_factory=dict)  # doc_id -> DocumentPeriod (query analysis, learned fusion)
    corpora: dict = field(default_factory=dict)  # engine key -> the chunk-level BM25 index (learned fusion)
    embeddings: list = field(default_factory=list)  # each question's embedding (the unit view reads it)
    filters: list = field(default_factory=list)  # each question's search filters
    store: Any = None  # the unit view reads whole-unit signals from the store
    questions_text: list = field(default_factory=list)
    # Whole-index scope with the period filter: the dense lists within each question's period's documents.
    dense_period: list[list] = field(default_factory=list)


def fetch_lists(questions: Sequence[TuneQuestion], configs: Sequence[Config], scope: str,
                settings: Settings, store, embedder, progress: Progress | None = None) -> EngineLists:
    """Run the engines once per question: dense once, BM25 once per engine setting in the space."""
    from ragloupe.retrieve import doc_periods, engines, query_analysis
    from ragloupe.retrieve import search as S

    window = max(max(int(c.settings["candidate_window"]), 10) for c in configs)
    lists = EngineLists()
    lists.analyses = [query_analysis.analyze(tq.query.question, settings.fiscal_year_start_month)
                      for tq in questions]
    if any(c.settings["query_analysis"] or c.learned for c in configs):
        lists.periods = doc_periods.document_periods(store, settings)
    needs_dense = any(c.mode.split("+")[0] in ("dense", "hybrid") for c in configs)
    lists.store = store
    lists.questions_text = [tq.query.question for tq in questions]
    period_filtered = scope == "all" and any(_period_filtered(c.settings) for c in configs)

    def period_filters(position: int) -> dict:  # what search() filters to under period_filter
        scoped = query_analysis.period_documents(lists.analyses[position], lists.periods)
        return S.normalise_filters({"doc_ids": scoped}) if scoped else {}

    for position, tq in enumerate(questions):
        filters = _filters(tq.query, scope)
        lists.filters.append(filters)
        if needs_dense:
            embedding = S._embed_query(embedder, tq.query.question)
            lists.embeddings.append(embedding)
            lists.dense.append(engines.dense_search(store, embedding, window, filters))
            if period_filtered:
                lists.dense_period.append(engines.dense_search(store, embedding, window,
                                                               period_filters(position)))
        if progress and position % 10 == 0:
            progress(0.3 * position / max(len(questions), 1), "dense engine")
    for key in sorted({c.engine_key() for c in configs}):
        engine_settings = dict(zip(ENGINE_KNOBS, key))
        index = engines.lexical_index(store, settings.replace(**engine_settings))
        lists.corpora[key] = index
        by_period = scope == "all" and _period_filtered(engine_settings)
        lists.bm25[key] = [
            engines.bm25_search(index, tq.query.question, window,
                                period_filters(position) if by_period else _filters(tq.query, scope),
                                query_analysis.bm25_expansion(analysis)
                                if engine_settings["query_analysis"] and engine_settings["query_expansion"] else ())
            for position, (tq, analysis) in enumerate(zip(questions, lists.analyses))]
    return lists


def _period_filtered(knobs: dict) -> bool:
    return bool(knobs["query_analysis"] and knobs["period_filter"])


def _filters(query: GoldQuery, scope: str) -> dict:
    from ragloupe.retrieve import search as S

    return S.normalise_filters({"doc_ids": [query.doc_id]}) if scope == "doc" else {}


def replay_one(question: TuneQuestion, position: int, config: Config, configured: Settings,
               lists: EngineLists, model=None):
    """search()'s stages after the engines for one question, over its cached engine lists."""
    from ragloupe.retrieve import search as S

    plan = S.parse_mode(config.mode)
    window = max(int(configured.candidate_window), 10)
    key = config.engine_key()
    dense = lists.dense_period if lists.dense_period and _period_filtered(config.settings) else lists.dense
    available = {"dense": dense[position] if dense else None,
                 "bm25": lists.bm25[key][position] if key in lists.bm25 else None}
    cut_lists = {engine: available[engine][:window] for engine in plan.engines}
    analysis = lists.analyses[position] if configured.query_analysis else None
    wants_periods = analysis is not None or config.learned
    return S.replay(plan, question.query.question, cut_lists, configured, analysis=analysis,
                    periods=lists.periods if wants_periods else None, corpus=lists.corpora.get(key),
                    model=model)


def pages_of(staged, position: int, config: Config, configured: Settings, lists: EngineLists) -> list:
    """The page view search() returns from replayed hits: aggregation, then the unit view when on."""
    from ragloupe.retrieve import aggregate
    from ragloupe.retrieve import search as S

    pages = aggregate.aggregate_pages(staged.hits, configured.page_aggregation, configured.rrf_k)
    if configured.unit_view != "none":
        plan = S.parse_mode(config.mode)
        embedding = lists.embeddings[position] if "dense" in plan.engines and lists.embeddings else None
        pages = S._unit_view(plan, lists.questions_text[position], embedding, lists.filters[position], pages,
                             lists.store, configured, max(int(configured.candidate_window), 10))
    return pages


def ranked_units(question: TuneQuestion, position: int, config: Config, settings: Settings,
                 lists: EngineLists) -> list[str]:
    """The unit ranking search() would give under ``config``."""
    configured = settings.replace(**config.settings)
    staged = replay_one(question, position, config, configured, lists)
    return M.dedupe(p.unit for p in pages_of(staged, position, config, configured, lists))


def score_configs(questions: Sequence[TuneQuestion], configs: Sequence[Config], lists: EngineLists,
                  settings: Settings, progress: Progress | None = None) -> np.ndarray:
    """scores[c, q, m]: metric m (METRICS) of question q under configuration c.

    Configurations that differ only in page aggregation share one replay:
    aggregation is the last stage and reads nothing but the final hits, so
    each rule is applied to the same hits search() would have made.
    """
    scores = np.zeros((len(configs), len(questions), len(METRICS)))
    families: dict[tuple, list[int]] = {}
    for c, config in enumerate(configs):
        if not config.learned:  # scored per fold, by nested_select
            families.setdefault(_without_aggregation(config), []).append(c)
    done = 0
    for members in families.values():
        configured = [settings.replace(**configs[c].settings) for c in members]
        for q, tq in enumerate(questions):
            staged = replay_one(tq, q, configs[members[0]], configured[0], lists)
            for c, config_settings in zip(members, configured):
                pages = pages_of(staged, q, configs[c], config_settings, lists)
                row = M.query_metrics(M.dedupe(p.unit for p in pages), tq.query.expected_units, KS)
                scores[c, q] = [row[name] for name in METRICS]
        done += len(members)
        if progress:
            progress(0.3 + 0.65 * done / max(len(configs), 1), f"{done} of {len(configs)} configurations")
    return scores


def _without_aggregation(config: Config) -> tuple:
    return (config.mode,) + tuple(item for item in config.knobs if item[0] != "page_aggregation")


def check_replay(questions: Sequence[TuneQuestion], configs: Sequence[Config], lists: EngineLists,
                 scope: str, settings: Settings, store, embedder, n_questions: int = 3) -> dict:
    """Replay a few questions through search() itself: the sweep must measure what search() does."""
    from ragloupe.retrieve.search import search

    picked = list(range(0, len(questions), max(1, len(questions) // n_questions)))[:n_questions]
    checked, mismatches = 0, []
    special = [next((c for c in configs if test(c)), None) for test in (
        lambda c: c.settings["query_analysis"], lambda c: c.settings["unit_view"] != "none",
        lambda c: c.settings["prefer_tables"])]
    for config in configs[:2] + [c for c in special if c is not None and not c.learned]:
        configured = settings.replace(**config.settings)
        for q in picked:
            query = questions[q].query
            ranking = search(query.question, mode=config.mode, k=max(int(configured.candidate_window), 10),
                             filters=_filters(query, scope) or None, settings=configured,
                             store=store, embedder=embedder)
            expected = M.dedupe(p.unit for p in ranking.pages)
            got = ranked_units(questions[q], q, config, settings, lists)
            checked += 1
            if got != expected:
                mismatches.append(f"{query.query_id} under {config.label()}")
    return {"checked": checked, "mismatches": mismatches}


# --- nested selection ---------------------------------------------------------------

@dataclass(frozen=True)
class FoldResult:
    held_out: str
    chosen: int  # index of the configuration chosen on the training groups
    train_objective: np.ndarray  # per configuration, on the training groups
    held_out_objective: np.ndarray  # per configuration, on the held-out group


def select(objective: np.ndarray, folds: Sequence[Fold]) -> list[FoldResult]:
    """For each fold, the configuration best on its training questions (the first on ties).

    ``objective[c, q]`` is the per-question objective. Only the training
    columns decide; the held-out columns are read after the choice.
    """
    results = []
    for fold in folds:
        train = objective[:, fold.train].mean(axis=1)
        chosen = int(np.argmax(train))  # argmax returns the first of equal maxima
        results.append(FoldResult(fold.held_out, chosen, train, objective[:, fold.test].mean(axis=1)))
    return results


class LearnedTrainer:
    """Learned fusion under one configuration: trains on some questions, scores others.

    The training rows of a question are its candidates (the fused union of
    both engines' lists in the configuration's window) with their features
    and 0/1 labels (is the candidate's unit gold?). They are computed once.
    """

    def __init__(self, config: Config, questions: Sequence[TuneQuestion], lists: EngineLists,
                 settings: Settings):
        from ragloupe.retrieve import features
        from ragloupe.retrieve import search as S

        self.config, self.questions, self.lists = config, questions, lists
        self.configured = settings.replace(**config.settings)
        plan = S.parse_mode(config.mode)
        key = config.engine_key()
        window = max(int(self.configured.candidate_window), 10)
        views = features.corpus_views(lists.corpora[key])
        gather = self.configured.replace(fusion="rrf")
        self.rows, self.labels = [], []
        for q, tq in enumerate(questions):
            cut_lists = {"dense": lists.dense[q][:window], "bm25": lists.bm25[key][q][:window]}
            candidates, _ = S._fuse(plan, cut_lists, gather)
            chunks = [c.hit.chunk for c in candidates]
            self.rows.append(features.candidate_features(
                tq.query.question, chunks, [c.per_engine for c in candidates], views,
                lists.analyses[q], lists.periods))
            gold = set(tq.query.expected_units)
            self.labels.append(np.asarray([1 if c.unit in gold else 0 for c in chunks]))
        self.fingerprint = {"settings": learned_assumed(self.configured), "units": unit_kind(questions),
                            "candidate_window": int(self.configured.candidate_window)}

    def fit(self, train: np.ndarray, goldsets: dict | None = None):
        from ragloupe.retrieve import learned

        return learned.train([self.rows[i] for i in train], [self.labels[i] for i in train],
                             {**self.fingerprint, "goldsets": goldsets or {}})

    def score(self, model, test: np.ndarray) -> np.ndarray:
        out = np.zeros((len(test), len(METRICS)))
        for row, q in enumerate(test):
            staged = replay_one(self.questions[q], q, self.config, self.configured, self.lists, model)
            pages = pages_of(staged, q, self.config, self.configured, self.lists)
            metrics = M.query_metrics(M.dedupe(p.unit for p in pages),
                                      self.questions[q].query.expected_units, KS)
            out[row] = [metrics[name] for name in METRICS]
        return out

    def fit_and_score(self, train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return self.score(self.fit(train), test)

    def grouped_score(self, subset: np.ndarray, groups: Sequence[str]) -> np.ndarray:
        """Leave-one-group-out within ``subset``: each of its questions scored by a model that never saw its group."""
        labels = np.asarray(groups)[subset]
        out = np.zeros((len(subset), len(METRICS)))
        for name in sorted(set(labels.tolist())):
            inside = labels == name
            out[inside] = self.fit_and_score(subset[~inside], subset[inside])
        return out


def unit_kind(questions: Sequence[TuneQuestion]) -> str:
    """What the questions' gold units are: "record" if any is a record, else "page"."""
    return "record" if any(tq.query.expected_records for tq in questions) else "page"


def learned_assumed(settings: Settings) -> dict:
    from ragloupe.retrieve import learned

    return learned.assumed_settings(settings)


def nested_select(scores: np.ndarray, folds: Sequence[Fold], groups: Sequence[str],
                  trainers: dict[int, LearnedTrainer]) -> list[FoldResult]:
    """select() with learned configurations: inside each fold they are trained on the training
    groups only, and their training figure is itself leave-one-group-out over those groups.

    Fills ``scores[c][fold.test]`` of learned configuration c with its held-out figures
    for the fold, so out_of_fold() reads them like any other.
    """
    objective = objective_per_query(scores)
    held_out_scores = {}
    results = []
    for fold in folds:
        train = objective[:, fold.train].mean(axis=1)
        held = objective[:, fold.test].mean(axis=1)
        for c, trainer in trainers.items():
            if len(set(np.asarray(groups)[fold.train].tolist())) > 1:
                train[c] = objective_per_query(trainer.grouped_score(fold.train, groups)).mean()
            else:
                train[c] = -1.0  # one training group: no honest training figure, never chosen
            test_scores = trainer.fit_and_score(fold.train, fold.test)
            held_out_scores[(c, fold.held_out)] = test_scores
            held[c] = objective_per_query(test_scores).mean()
        chosen = int(np.argmax(train))
        results.append(FoldResult(fold.held_out, chosen, train, held))
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


# --- the run -----------------------------------------------------------------------

@dataclass(frozen=True)
class TuneReport(Report):
    """A written tuning run."""


def tune(goldsets: Sequence[GoldSet | str | Path], scope: str = "doc", space: str = "full",
         settings: Settings | None = None, store=None, embedder=None, write: bool = True,
         progress: Progress | None = None, configs: Sequence[Config] | None = None,
         chunking: str | Sequence[str] | None = None) -> TuneReport:
    """Search the space with nested leave-one-group-out selection; see the module docstring.

    ``chunking`` ("128/32,384/96"): chunking variants scored besides the one in
    force, each on a scratch index of the gold sets' documents (evaluate/tune_indexes.py);
    the whole space is scored on every variant and selection runs over both.
    """
    from ragloupe.evaluate import tune_indexes as TI

    settings = settings or get_settings()
    if scope not in SCOPES:
        raise TuningError(f"unknown scope {scope!r}; use doc or all")
    variants = TI.variants_to_score(settings, TI.parse_chunking(chunking))
    sets = load_goldsets(goldsets)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    questions = tune_questions(sets)
    folds = grouped_folds([q.group for q in questions])
    base_configs = list(configs) if configs is not None else search_space(settings, space, scope)
    if store is None:
        from ragloupe.index.store import open_store

        store = open_store(settings)
    if store.count() == 0:
        raise TuningError(f"the index at {settings.path('index_dir')} is empty: run `ragloupe index` first")
    if embedder is None:
        from ragloupe.index.embedder import get_embedder

        embedder = get_embedder(settings)
    cuts = TI.check_variants(variants, settings, embedder)  # refuse a bad variant before any build
    questions = _indexed_only(questions, store, scope)
    folds = grouped_folds([q.group for q in questions])
    groups = [q.group for q in questions]
    sources = (TI.gold_sources({q.query.doc_id for q in questions}, settings)
               if len(variants) > 1 else None)

    all_configs: list[Config] = []
    all_scores, trainers, replay_checks, index_timings = [], {}, [], []
    seconds = {"index_build_s": 0.0, "engines_s": 0.0, "replay_s": 0.0}
    for v, variant in enumerate(variants):
        share = _share_of(progress, v, len(variants))
        index = TI.variant_index(settings, variant, sources, (lambda text: share(0.0, text)) if share else None)
        seconds["index_build_s"] += index.seconds
        index_timings.append(index.timing())
        variant_settings = index.settings
        variant_store = store if not index.scratch else _open(variant_settings)
        if index.scratch and len(_indexed_only(questions, variant_store, scope)) != len(questions):
            raise TuningError(f"the scratch index for chunking {variant.label()} lacks some of the gold "
                              f"sets' documents; delete {variant_settings.path('index_dir')} and rerun")
        variant_configs = [c.on_chunking(variant.tokens, variant.overlap) for c in base_configs]
        t0 = time.perf_counter()
        lists = fetch_lists(questions, variant_configs, scope, variant_settings, variant_store, embedder, share)
        seconds["engines_s"] += time.perf_counter() - t0
        check = check_replay(questions, variant_configs, lists, scope, variant_settings, variant_store, embedder)
        replay_checks.append(check)
        t0 = time.perf_counter()
        all_scores.append(score_configs(questions, variant_configs, lists, variant_settings, share))
        seconds["replay_s"] += time.perf_counter() - t0
        # Learned fusion is trained on this variant's own candidates: a model of one chunking
        # would read another's features wrongly (its fingerprint records the chunking).
        trainers.update({len(all_configs) + c: LearnedTrainer(config, questions, lists, variant_settings)
                         for c, config in enumerate(variant_configs) if config.learned})
        all_configs += variant_configs
        if v == 0:  # the index in force: what search() runs on
            main_lists = lists
    scores = np.concatenate(all_scores, axis=0)
    t0 = time.perf_counter()
    picks = nested_select(scores, folds, groups, trainers)
    for c, trainer in trainers.items():  # the configuration's own figure: leave-one-group-out over all
        scores[c] = trainer.grouped_score(np.arange(len(questions)), groups)
    learned_s = time.perf_counter() - t0
    replay_check = {"checked": sum(c["checked"] for c in replay_checks),
                    "mismatches": [m for c in replay_checks for m in c["mismatches"]]}
    variant_rows = [{**cut, "index": "scratch" if v else "main",
                     "index_fingerprint": variant.applied_to(settings).index_fingerprint(),
                     "documents": sorted(sources) if v else "the main index",
                     "configs": [v * len(base_configs), (v + 1) * len(base_configs)]}
                    for v, (variant, cut) in enumerate(zip(variants, cuts))]
    in_force = (in_force_scores(sets, questions, all_configs[0], main_lists, settings)
                if all_configs[0].learned else None)
    data = build_report(sets, questions, all_configs, scores, folds, picks, scope, space, settings,
                        replay_check, variant_rows, in_force)
    best = data["in_sample_best"]["index"]  # the coverage audit, with the model tune would ship if learned
    tuned = [CS.fitted_model(trainers[best], len(questions), sets)] if best in trainers else []
    data["coverage"] = CS.coverage_report(sets, settings, store, all_configs[0].mode, tuned)
    run_id = f"tune-{scope}-{content_hash(data)[:12]}"
    timings = {"started_at": started_at, "total_s": round(time.perf_counter() - started, 2),
               **{name: round(value, 2) for name, value in seconds.items()},
               "learned_s": round(learned_s, 2),
               "configs_per_s": round(len(all_configs) / max(seconds["replay_s"], 1e-9), 2),
               "indexes": index_timings}
    report = TuneReport(run_id, data, timings)
    if progress:
        progress(1.0, "done")
    return save_report(report, settings) if write else report


def _open(settings: Settings):
    from ragloupe.index.store import open_store

    return open_store(settings)


def _share_of(progress: Progress | None, part: int, parts: int) -> Progress | None:
    """A progress callback for one of ``parts`` equal parts of the run (one per chunking variant)."""
    if progress is None:
        return None
    return lambda share, text: progress(min((part + share) / parts, 0.99),
                                        f"{text} (chunking {part + 1} of {parts})" if parts > 1 else text)


@dataclass(frozen=True)
class InForce:
    """The settings in force scored as search() runs them, when they use a learned model."""

    scores: np.ndarray  # [question, metric]
    note: str


def in_force_scores(sets: Sequence[GoldSet], questions: Sequence[TuneQuestion], config: Config,
                    lists: EngineLists, settings: Settings) -> InForce:
    """The settings in force with the configured learned model, not one trained in the folds.

    Inside the folds a learned configuration is trained afresh on the training
    groups. What a user's searches run is the configured model (the shipped
    one unless RAGLOUPE_LEARNED_MODEL says otherwise), with its own rules: it
    stands aside for units it was not trained on and for settings it does not
    fit. The "settings in force" row reports that, and says when it is an
    in-sample figure (the model was trained on these very gold sets).
    """
    from ragloupe.retrieve import learned

    configured = settings.replace(**config.settings)
    model = learned.read(configured)
    out = np.zeros((len(questions), len(METRICS)))
    fell_back = 0
    for q, tq in enumerate(questions):
        staged = replay_one(tq, q, config, configured, lists, model=None)
        fell_back += staged.fusion != "learned"
        pages = pages_of(staged, q, config, configured, lists)
        row = M.query_metrics(M.dedupe(p.unit for p in pages), tq.query.expected_units, KS)
        out[q] = [row[name] for name in METRICS]
    trained_on = set(model.fingerprint.get("goldsets", {}).values())
    seen = sorted(g.name for g in sets if g.sha256 in trained_on)
    parts = [f"the learned model in force ({learned.model_path(configured).name})"]
    if seen:
        parts.append(f"in-sample: it was trained on {', '.join(seen)}")
    if fell_back:
        parts.append(f"{fell_back} of {len(questions)} questions fused by {configured.learned_fallback} "
                     "instead (units or settings the model was not trained on)")
    return InForce(out, "; ".join(parts))


def _indexed_only(questions: list[TuneQuestion], store, scope: str) -> list[TuneQuestion]:
    """Questions whose document the index holds (the others cannot be tuned on)."""
    held = {c.doc_id for c in store.all_chunks()}
    kept = [q for q in questions if q.query.doc_id in held]
    if not kept:
        raise TuningError("none of the gold sets' documents is in the index: index them first")
    return kept


def build_report(sets: Sequence[GoldSet], questions: Sequence[TuneQuestion], configs: Sequence[Config],
                 scores: np.ndarray, folds: Sequence[Fold], picks: Sequence[FoldResult], scope: str,
                 space: str, settings: Settings, replay_check: dict, variants: Sequence[dict] | None = None,
                 in_force: InForce | None = None) -> dict:
    """The deterministic body of a tuning report.

    ``scores`` of a learned configuration are leave-one-group-out figures
    (each question scored by a model that never saw its group), so its
    "in-sample" figure is never a fit to the questions it is scored on.
    ``in_force`` (settings in force that use learned fusion) replaces the
    settings-in-force row with what search() does under them.
    """
    objective = objective_per_query(scores)
    oof = out_of_fold(scores, folds, picks)
    all_mean = objective.mean(axis=1)
    best = int(np.argmax(all_mean))
    current = 0
    bm25_alone = _index_of(configs, Config.of("bm25", settings, query_analysis=False, period_boost=0.0,
                                              lexical_rerank=False))

    def rows(matrix: np.ndarray) -> list[dict]:
        return [{name: float(value) for name, value in zip(METRICS, row)} for row in matrix]

    def figures(matrix: np.ndarray) -> dict:
        estimates = M.aggregate(rows(matrix), KS, seed=BOOTSTRAP_SEED)
        out = {name: estimates[name].as_dict(FLOAT_DIGITS) for name in ("hit@1", "hit@3", "hit@5", "hit@10", "mrr")}
        out["objective"] = round(float(objective_per_query(matrix).mean()), FLOAT_DIGITS)
        return out

    # How each configuration fared as a candidate: mean over folds of its training-group
    # objective and its held-out objective (the plot of the gap per configuration).
    train_mean = np.mean([p.train_objective for p in picks], axis=0)
    held_mean = np.mean([p.held_out_objective for p in picks], axis=0)
    per_config = [{"index": c, "label": cfg.label(), "config": cfg.as_dict(),
                   "in_sample_objective": float(all_mean[c]), "train_objective": float(train_mean[c]),
                   "held_out_objective": float(held_mean[c]),
                   "hit@1": float(scores[c, :, _HIT1].mean()), "mrr": float(scores[c, :, _RR].mean()),
                   "chosen_in_folds": [p.held_out for p in picks if p.chosen == c],
                   "learned": cfg.learned}
                  for c, cfg in enumerate(configs)]
    in_sample, oof_figures = figures(scores[best]), figures(oof)
    gap = {name: round(in_sample[name]["mean"] - oof_figures[name]["mean"], FLOAT_DIGITS)
           for name in ("hit@1", "hit@3", "mrr")}
    gap["objective"] = round(in_sample["objective"] - oof_figures["objective"], FLOAT_DIGITS)
    current_scores = in_force.scores if in_force is not None else scores[current]
    versus = {"current": paired(oof, current_scores), "bm25": paired(oof, scores[bm25_alone])}
    decision = apply_decision(configs[best], configs[current], versus["current"])
    variants = list(variants) if variants else [{"chunking": configs[current].chunking, "index": "main",
                                                 "configs": [0, len(configs)]}]
    return _rounded({
        "schema": SCHEMA, "scope": scope, "space": space, "ks": list(KS),
        "objective": "mean over questions of (Hit@1 + reciprocal rank cut at 10) / 2",
        "procedure": ("nested leave-one-group-out: per fold the configuration best on the training "
                      "groups is scored on the held-out group; held-out questions concatenated"),
        "goldsets": [{"name": g.name, "sha256": g.sha256, "queries": len(g.queries)} for g in sets],
        "fingerprints": {"goldsets": {g.name: g.sha256 for g in sets},
                         "index_settings": settings.index_fingerprint()},
        "groups": {f.held_out: int(len(f.test)) for f in folds},
        "n_questions": len(questions), "n_configs": len(configs),
        "fixed_settings": {k: v for k, v in sorted(settings.as_dict().items())
                           if k in ("top_k", "dynamic_cut", "dynamic_cut_value", "rerank_window",
                                    "bm25_backend", "embedding_model")},
        "in_sample_best": {"index": best, "label": configs[best].label(), "config": configs[best].as_dict(),
                           "figures": in_sample,
                           "note": "chosen and scored on the same questions: optimistic"},
        "out_of_fold": {"figures": oof_figures,
                        "folds": [{"held_out": p.held_out, "chosen": p.chosen,
                                   "label": configs[p.chosen].label(),
                                   "chunking": configs[p.chosen].chunking,
                                   "train_objective": float(p.train_objective[p.chosen]),
                                   "held_out_objective": float(p.held_out_objective[p.chosen]),
                                   "held_out_hit@1": float(scores[p.chosen][f.test, _HIT1].mean()),
                                   "held_out_mrr": float(scores[p.chosen][f.test, _RR].mean())}
                                  for f, p in zip(folds, picks)]},
        "optimism_gap": gap,
        "current": {"label": configs[current].label(), "config": configs[current].as_dict(),
                    "figures": figures(current_scores),
                    **({"note": in_force.note} if in_force is not None else {})},
        "bm25_alone": {"label": configs[bm25_alone].label(), "figures": figures(scores[bm25_alone])},
        "versus": versus,
        "decision": decision,
        "replay_check": replay_check,
        "chunking": {"in_force": configs[current].chunking,
                     "note": SCRATCH_NOTE if len(variants) > 1 else "",
                     "chosen_in_folds": {p.held_out: configs[p.chosen].chunking for p in picks},
                     "variants": [{**v, **per_variant(scores, folds, picks, configs, range(*v["configs"]))}
                                  for v in variants]},
        "configs": per_config,
        "queries": [{"goldset": tq.query.goldset, "query_id": tq.query.query_id, "group": tq.group,
                     "oof_hit@1": float(oof[i, _HIT1]), "oof_rr": float(oof[i, _RR]),
                     "current_hit@1": float(current_scores[i, _HIT1]),
                     "current_rr": float(current_scores[i, _RR])}
                    for i, tq in enumerate(questions)],
    })


def per_variant(scores: np.ndarray, folds: Sequence[Fold], picks: Sequence[FoldResult],
                configs: Sequence[Config], members: Iterable[int]) -> dict:
    """One chunking's figures: its in-sample best, the settings in force on it, and the
    out-of-fold figure of the procedure had it chosen among this chunking's configurations only
    (each fold's choice read from the same training figures the full selection used)."""
    members = np.asarray(list(members))
    objective = objective_per_query(scores)

    def brief(c: int, matrix: np.ndarray) -> dict:
        return {"index": int(c), "label": configs[c].label(),
                "objective": float(objective_per_query(matrix).mean()),
                "hit@1": float(matrix[:, _HIT1].mean()), "mrr": float(matrix[:, _RR].mean())}

    best = int(members[int(np.argmax(objective[members].mean(axis=1)))])
    oof = np.zeros(scores.shape[1:])
    chosen = []
    for fold, pick in zip(folds, picks):
        c = int(members[int(np.argmax(pick.train_objective[members]))])
        oof[fold.test] = scores[c][fold.test]
        chosen.append({"held_out": fold.held_out, "chosen": c, "label": configs[c].label()})
    first = int(members[0])
    return {"n_configs": int(len(members)), "in_sample_best": brief(best, scores[best]),
            "settings_in_force": {**brief(first, scores[first]), **(
                {"note": "learned fusion trained inside the folds on this chunking's candidates (out-of-fold); "
                         "the report's settings-in-force row runs the configured model instead"}
                if configs[first].learned else {})},
            "out_of_fold": {"objective": float(objective_per_query(oof).mean()),
                            "hit@1": float(oof[:, _HIT1].mean()), "mrr": float(oof[:, _RR].mean()),
                            "folds": chosen}}


def _index_of(configs: Sequence[Config], wanted: Config) -> int:
    for i, config in enumerate(configs):
        if config == wanted:
            return i
    for i, config in enumerate(configs):
        if config.mode == wanted.mode:
            return i
    return 0


def paired(candidate: np.ndarray, baseline: np.ndarray) -> dict:
    """Paired randomisation tests of the candidate's per-question scores against a baseline's.

    The same test and seed as `ragloupe compare` (evaluate/compare.py), on
    the objective, Hit@1 and MRR.
    """
    from ragloupe.evaluate.compare import ALPHA

    out = {}
    for name, a, b in (("objective", objective_per_query(candidate), objective_per_query(baseline)),
                       ("hit@1", candidate[:, _HIT1], baseline[:, _HIT1]),
                       ("mrr", candidate[:, _RR], baseline[:, _RR])):
        p = paired_permutation_p(a, b, seed=BOOTSTRAP_SEED)
        low, high = paired_bootstrap_ci(a, b, seed=BOOTSTRAP_SEED)
        out[name] = {"candidate": float(np.mean(a)), "baseline": float(np.mean(b)),
                     "diff": float(np.mean(a) - np.mean(b)), "p_value": p, "ci_low": low, "ci_high": high,
                     "significant_win": bool(p < ALPHA and np.mean(a) > np.mean(b))}
    return out


def apply_decision(chosen: Config, current: Config, versus_current: dict) -> dict:
    """Whether --apply may write the chosen settings, and why, in a sentence."""
    test = versus_current["objective"]
    if chosen == current:
        return {"apply": False, "reason": "the procedure chooses the settings in force: nothing to change"}
    rebuild = chosen.chunking != current.chunking
    if test["significant_win"]:
        return {"apply": True, "rebuild": rebuild,
                "reason": (f"out-of-fold objective {test['candidate']:.3f} beats the settings in force "
                           f"({test['baseline']:.3f}) by {test['diff']:+.3f}, paired test p = {test['p_value']:.3f}"
                           + (f"; chunking {current.chunking} -> {chosen.chunking} needs `ragloupe index --rebuild`"
                              if rebuild else ""))}
    return {"apply": False,
            "reason": (f"out-of-fold objective {test['candidate']:.3f} vs {test['baseline']:.3f} for the "
                       f"settings in force (diff {test['diff']:+.3f}, p = {test['p_value']:.3f}): "
                       "not a significant win, the settings stay as they are")}


# --- training the shipped learned model ------------------------------------------------

def train_learned(goldsets: Sequence[GoldSet | str | Path], out: Path, settings: Settings | None = None,
                  store=None, embedder=None) -> dict:
    """Train learned fusion on every question of the gold sets (settings in force, fusion=learned)
    and write the model file; returns what was written and the model's leave-one-group-out figure."""
    from ragloupe.retrieve import learned

    settings = settings or get_settings()
    sets = load_goldsets(goldsets)
    if store is None:
        from ragloupe.index.store import open_store

        store = open_store(settings)
    if embedder is None:
        from ragloupe.index.embedder import get_embedder

        embedder = get_embedder(settings)
    questions = _indexed_only(tune_questions(sets), store, "doc")
    config = Config.of("hybrid", settings, fusion="learned")
    lists = fetch_lists(questions, [config], "doc", settings, store, embedder)
    trainer = LearnedTrainer(config, questions, lists, settings)
    everything = np.arange(len(questions))
    model = trainer.fit(everything, {g.name: g.sha256 for g in sets})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(learned.to_json(model), encoding="utf-8")
    groups = [q.group for q in questions]
    figures = {}
    if len(set(groups)) > 1:
        held_out = trainer.grouped_score(everything, groups)
        figures = {"hit@1": round(float(held_out[:, _HIT1].mean()), FLOAT_DIGITS),
                   "mrr": round(float(held_out[:, _RR].mean()), FLOAT_DIGITS)}
    return {"path": str(out), "n_questions": len(questions), "fingerprint": model.fingerprint,
            "leave_one_group_out": figures,
            "coefficients": dict(zip(model.features, [round(float(c), 4) for c in model.coef]))}


# --- .env ---------------------------------------------------------------------------

def env_values(config: dict) -> dict[str, str]:
    """A chosen configuration as .env lines: RAGLOUPE_MODE and one line per knob."""
    values = {"RAGLOUPE_MODE": str(config["mode"])}
    for name in (name for name in KNOBS if name in config):
        value = config[name]
        values[f"RAGLOUPE_{name.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return values


def apply_to_env(report: TuneReport, env_file: Path | None = None) -> tuple[bool, str]:
    """Write the chosen settings to .env when the decision allows it; say what happened either way."""
    decision = report.data["decision"]
    env_file = Path(env_file) if env_file else PROJECT_ROOT / ".env"
    if not decision["apply"]:
        return False, f"not applied: {decision['reason']}"
    values = env_values(report.data["in_sample_best"]["config"])
    lines = env_file.read_text(encoding="utf-8").splitlines() if env_file.is_file() else []
    written = set()
    for i, line in enumerate(lines):
        name = line.split("=", 1)[0].strip()
        if name in values and not line.lstrip().startswith("#"):
            lines[i] = f"{name}={values[name]}"
            written.add(name)
    missing = [name for name in values if name not in written]
    if missing:
        lines.append(f"# chosen by ragloupe tune, run {report.run_id}")
        lines += [f"{name}={values[name]}" for name in missing]
    tmp = env_file.with_name(env_file.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(env_file)
    return True, f"applied to {env_file}: {decision['reason']}" + rebuild_note(report.data)


def rebuild_note(data: dict) -> str:
    """What the user must do after applying a chunking the index was not cut with; "" when nothing."""
    chosen, current = data["in_sample_best"]["config"], data.get("current", {}).get("config", {})
    if not all(name in chosen and name in current for name in CHUNKING_KNOBS):
        return ""
    if all(chosen[name] == current[name] for name in CHUNKING_KNOBS):
        return ""
    note = (f"\nthe chunking changed ({current['chunk_tokens']}/{current['chunk_overlap']} -> "
            f"{chosen['chunk_tokens']}/{chosen['chunk_overlap']}): the index needs a rebuild, "
            "run `ragloupe index --rebuild` before searching with these settings")
    if chosen.get("fusion") == "learned":
        note += ("\nlearned fusion's shipped model was trained for another chunking and falls back to "
                 "min-max until one is trained for this one: after the rebuild run `ragloupe tune "
                 "--train-learned` and set RAGLOUPE_LEARNED_MODEL to the file it writes")
    return note


# --- reports on disk ----------------------------------------------------------------

def load_tune(path: Path) -> TuneReport:
    run_id, data, timings = read_report(Path(path), SCHEMA, "tuning")
    return TuneReport(run_id, data, timings, Path(path))


def latest_tune(settings: Settings, scope: str | None = None) -> TuneReport | None:
    """The most recent tuning report under runs_dir (of one scope when given), or None."""
    runs_dir = settings.path("runs_dir")
    found = []
    for path in sorted(runs_dir.glob("tune-*.json")) if runs_dir.is_dir() else []:
        try:
            report = load_tune(path)
        except RunNotFound:
            continue
        if scope is None or report.data.get("scope") == scope:
            found.append(report)
    found.sort(key=lambda r: (r.timings.get("started_at", ""), r.run_id))
    return found[-1] if found else None


def _rounded(value: Any) -> Any:
    from ragloupe.evaluate.runs import _rounded as rounded

    return rounded(value)

