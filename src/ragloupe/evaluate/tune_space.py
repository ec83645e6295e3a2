"""What `ragloupe tune` searches: a configuration is a mode and a value for every knob.

``search_space`` lists the configurations tried, the settings in force first
(ties keep them). A configuration fixes everything --apply would write; the
chunking is a knob too, but is scored on an index cut with it
(evaluate/tune_indexes.py), never replayed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from ragloupe.config import Settings
from ragloupe.errors import TuningError
from ragloupe.retrieve.modes import runs_dense

SCOPES = ("doc", "all")
SPACES = ("small", "core", "full", "in-force")
# The settings a configuration fixes. Everything else comes from the settings in force.
KNOBS = ("candidate_window", "fusion", "rrf_k", "weight_dense", "weight_bm25", "bm25_k1", "bm25_b",
         "page_aggregation", "lexical_rerank", "lexical_rerank_weight", "query_analysis", "period_boost",
         "prefer_tables", "prefer_tables_boost", "unit_view", "unit_dense", "unit_weight_bm25",
         "unit_weight_dense", "unit_bm25_b", "query_expansion", "period_filter", "dense_sentence_weight",
         "query_adapter", "chunk_tokens", "chunk_overlap")
# The chunking is a knob like the others, so a configuration is everything --apply would write;
# but it is not replayed: each chunking is scored on an index cut with it (evaluate/tune_indexes.py).
CHUNKING_KNOBS = ("chunk_tokens", "chunk_overlap")
# Knobs that change what an engine lists (the others act after the engines): the query
# expansion adds the written variants of a question's periods and codes to BM25's query,
# and the period filter (whole-index scope) lists only the documents of the question's period.
# The dense engine's sentence weight blends each chunk's best sentence into its score (index/sentences.py),
# and the query adapter maps the question's vector before it searches (retrieve/query_adapter.py).
ENGINE_KNOBS = ("bm25_k1", "bm25_b", "query_analysis", "query_expansion", "period_filter",
                "dense_sentence_weight", "query_adapter")


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
    def adapted(self) -> bool:
        """It searches dense with a query adapter (the one in force: the only one a space holds)."""
        return self.settings["query_adapter"] != "off" and runs_dense([self.mode])

    @property
    def chunking(self) -> str:
        """The chunking the configuration is scored on, as TOKENS/OVERLAP."""
        return f"{self.settings['chunk_tokens']}/{self.settings['chunk_overlap']}"

    def on_chunking(self, tokens: int, overlap: int) -> "Config":
        """The same configuration over an index cut with another chunking."""
        changes = {"chunk_tokens": int(tokens), "chunk_overlap": int(overlap)}
        return Config(self.mode, tuple((name, changes.get(name, value)) for name, value in self.knobs))

    def without_adapter(self) -> "Config":
        """The same configuration searching dense with the question's own vector."""
        return Config(self.mode, tuple((name, "off" if name == "query_adapter" else value)
                                       for name, value in self.knobs))

    def engine_key(self) -> tuple:
        values = self.settings
        return tuple(values[name] for name in ENGINE_KNOBS)

    def label(self) -> str:
        """A short, readable name: 'hybrid minmax 1.5:1 w100 max k1=1.5 b=0.75 +qa chunks 256/64'."""
        return f"{self._label_without_chunking()} chunks {self.chunking}"

    def _label_without_chunking(self) -> str:
        return self._engines_and_fusion() + (" +adapter" if self.adapted else "")

    def _engines_and_fusion(self) -> str:
        v = self.settings
        bm25 = f"k1={v['bm25_k1']:g} b={v['bm25_b']:g}"
        qa = (f" +qa{' boost' + format(v['period_boost'], 'g') if v['period_boost'] else ''}"
              f"{' filter' if v['period_filter'] else ''}{' exp' if v['query_expansion'] else ''}"
              if v["query_analysis"] else "")
        sent = f" sent{v['dense_sentence_weight']:g}" if v["dense_sentence_weight"] else ""
        if self.mode in ("dense", "bm25"):
            base = f"dense{sent} w{v['candidate_window']}" if self.mode == "dense" else f"bm25 {bm25}"
            return base + qa
        fusion = v["fusion"] + (f"{v['rrf_k']}" if v["fusion"] == "rrf" else "")
        units = f" +units:{v['unit_view']}" if v["unit_view"] != "none" else ""
        if self.learned:
            return f"hybrid learned{sent} w{v['candidate_window']} {v['page_aggregation']} {bm25}{qa}{units}"
        rerank = f" +lexrerank{v['lexical_rerank_weight']:g}" if self._reranks else ""
        return (f"{self.mode.split('+')[0]} {fusion}{sent} {v['weight_dense']:g}:{v['weight_bm25']:g} "
                f"w{v['candidate_window']} {v['page_aggregation']} {bm25}{rerank}{qa}{units}")

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
    ``core`` the contenders of each kind (BM25 with two k1/b, RRF, min-max at
    three weights, learned fusion with and without the records' unit view);
    ``full`` crosses BM25's k1 and b, query analysis on and off, fusion method
    (RRF k 10 and 60, min-max), weights from dense-heavy to lexical-heavy,
    candidate window and page aggregation. The period boost is tried only in
    the whole-index scope: with one document per question it changes nothing.
    ``in-force`` is the settings in force and BM25 alone: what the default rule
    says of the settings as they are. Every space but that one holds the
    settings in force (and dense) without the query adapter too, when one is in force.
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
    if space == "in-force":  # the default rule's verdict on the settings in force, against BM25 alone
        return _unique([current, Config.of("bm25", settings, **off)])
    configs = [current, Config.of("bm25", settings, **off), Config.of("dense", settings, **off)]
    # The query adapter in force against the question's own vector, in the mode in force and in dense.
    configs += [c.without_adapter() for c in configs if c.adapted]
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
    if space == "core":
        return _unique(configs + core_space(settings, off))
    return _unique(configs + full_space(settings, off, boosts))


def largest_sentence_weight(configs: Iterable[Config]) -> float:
    """The largest sentence weight (dense_sentence_weight) a configuration that runs the dense engine
    tries: the sweep reads the documents' sentence vectors when it is above 0, whatever the
    settings in force say. 0 when none runs the dense engine."""
    return max((c.settings["dense_sentence_weight"] for c in configs if runs_dense([c.mode])), default=0.0)


def _unique(configs: Iterable[Config]) -> list[Config]:
    return list(dict.fromkeys(configs))


def core_space(settings: Settings, off: dict) -> list[Config]:
    """One or two contenders of each kind: what a per-family run on a shared machine can afford."""
    hybrid = {**off, "page_aggregation": "max", "candidate_window": 100}
    configs = [Config.of("bm25", settings, **{**off, "bm25_k1": 0.9, "bm25_b": 0.4}),
               Config.of("hybrid", settings, **hybrid, fusion="rrf", rrf_k=60, weight_dense=1, weight_bm25=1)]
    configs += [Config.of("hybrid", settings, **hybrid, fusion="minmax", weight_dense=wd, weight_bm25=wb)
                for wd, wb in ((2, 1), (1.5, 1), (1, 1), (1, 2))]
    # Dense by the chunk's own embedding alone and blended with its best sentence's (index/sentences.py).
    for weight in (0.0, 0.4):
        configs.append(Config.of("dense", settings, **off, dense_sentence_weight=weight))
        configs.append(Config.of("hybrid", settings, **hybrid, fusion="minmax", weight_dense=2, weight_bm25=1,
                                 dense_sentence_weight=weight))
        configs.append(Config.of("hybrid", settings, **hybrid, fusion="minmax", weight_dense=2, weight_bm25=1,
                                 dense_sentence_weight=weight, query_adapter="off"))
    learned = {**hybrid, "fusion": "learned", "query_analysis": True}
    # Learned fusion is trained inside every fold: the settings in force stand for it when they use it.
    if not (settings.fusion == "learned" and settings.query_analysis and settings.mode == "hybrid"):
        configs.append(Config.of("hybrid", settings, **learned))
    configs.append(Config.of("hybrid", settings, **{**learned, "unit_view": "records"}))
    return configs

def full_space(settings: Settings, off: dict, boosts: tuple[float, ...]) -> list[Config]:
    """BM25's k1 and b x query analysis x fusion x weights x window x aggregation, and the other stages."""
    configs: list[Config] = []
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
    return configs
