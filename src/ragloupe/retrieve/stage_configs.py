"""The few settings each stage after the engines reads, frozen: what replay() hands each stage.

``ReplayConfig`` (replay.py) holds every setting replay reads, built once from
Settings at the seam; each stage gets only its own part of it, so a stage's
signature says what it depends on and a test of one stage builds three or
four values, not a whole Settings.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FusionConfig:
    """How the engines' lists are fused into one candidate order."""

    method: str  # rrf | minmax | learned (learned: the RRF order, rescored by the model afterwards)
    weight_dense: float
    weight_bm25: float
    rrf_k: int

    @property
    def weights(self) -> dict[str, float]:
        return {"dense": self.weight_dense, "bm25": self.weight_bm25}


@dataclass(frozen=True)
class RerankConfig:
    """How the head of the fused order is rescored."""

    window: int  # candidates rescored; 0 = all of them
    cross_encoder_model: str  # empty: the lexical reranker
    lexical_weight: float
    device: str  # where a cross-encoder runs (auto, cpu, cuda, mps)


@dataclass(frozen=True)
class ReaderConfig:
    """How the reader (retrieve/reader.py) rescored the head of the fused order."""

    window: int  # candidates read, best first
    weight: float  # share of the reader's normalised score in the blend; 1 = the reader's order alone
    passage_chars: int  # each passage is cut to this many characters (at a word) before it is read
    signal: str  # yesno | likelihood (the embedded model; an HTTP server gives yesno or a listwise order)


@dataclass(frozen=True)
class CutConfig:
    """Where the ranking is cut and how its chunks make the page view."""

    rule: str  # dynamic_cut: none | ...
    value: float
    page_aggregation: str  # max | sum | rrf
    rrf_k: int


@dataclass(frozen=True)
class UnitViewConfig:
    """The unit view: the chunk view fused with the whole-unit signals."""

    view: str  # none | records | all
    dense_rule: str  # unit_dense: how a unit's dense signal is scored
    bm25_b: float
    weight_bm25: float
    weight_dense: float
    method: str  # the fusion of the signals (learned fusion's fallback when fusion is learned)
    rrf_k: int


@dataclass(frozen=True)
class EngineConfig:
    """What fetch's engines and whole-unit signals read: the BM25's parameters, the dense engine's
    sentence weight and the unit signals' rule."""

    bm25_k1: float
    bm25_b: float
    bm25_backend: str
    unit_bm25_b: float
    unit_dense: str
    dense_sentence_weight: float = 0.0
    query_adapter: str = "off"  # what the dense engine maps the question with (retrieve/query_adapter.py)

    @classmethod
    def of(cls, settings) -> "EngineConfig":
        """The engine part of ``settings`` (a Settings)."""
        return cls(float(settings.bm25_k1), float(settings.bm25_b), settings.bm25_backend,
                   float(settings.unit_bm25_b), settings.unit_dense, float(settings.dense_sentence_weight),
                   settings.query_adapter)
