"""Learned fusion: a logistic regression over per-candidate features, shipped as a small JSON file.

Pointwise learning to rank: each candidate chunk of a training question is
one row of features (retrieve/features.py), labelled 1 when its page (or
record) is a gold unit. The model is linear on standardised features, so a
hit's score splits exactly into one contribution per feature plus the
intercept: that split is what "why this hit ranked here" shows.

The model file holds the feature names, the scaler, the coefficients and a
fingerprint of what it was trained on: the gold sets' sha256, the feature
version and the settings the features assume (embedding model, chunking,
BM25 parameters, query analysis, the dense engine's sentence weight and query
adapter). ``load`` checks the fingerprint against the settings in force and
says plainly what differs. No pickle: JSON only, floats rounded, keys sorted,
so the same training data gives a byte-identical file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.errors import ACTION, Action, LearnedModelMismatch
from ragloupe.models import LearnedScore
from ragloupe.retrieve import query_adapter
from ragloupe.retrieve.features import FEATURE_VERSION, FEATURES, MODEL_FEATURES

SCHEMA = "ragloupe.learned/1"
SHIPPED = Path(__file__).with_name("learned_model.json")
DIGITS = 6
C = 1.0  # inverse regularisation strength of the logistic regression


@dataclass(frozen=True)
class LearnedModel:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    fingerprint: dict

    @property
    def units(self) -> str:
        """The kind of unit it was trained to rank: "page" (of a PDF) or "record"."""
        return str(self.fingerprint.get("units", "page"))

    @property
    def unit_kinds(self) -> frozenset[str]:
        """Every kind of unit it ranks: a model trained on both says "page+record"."""
        return frozenset(self.units.split("+"))

    def logits(self, rows: np.ndarray) -> np.ndarray:
        """``rows``: one column per name in features.FEATURES; the model reads its own columns."""
        return self.intercept + self._standardised(rows) @ self.coef

    def explain(self, rows: np.ndarray) -> list[LearnedScore]:
        """Each row's logit, probability and exact per-feature contributions (they sum to the logit)."""
        parts = self._standardised(rows) * self.coef
        intercept = float(self.intercept)
        out = []
        # Python floats from tolist() are the values float() gives each element, an order of
        # magnitude faster; each logit is still its own row's sum, as before.
        for raw, row, total in zip(self._columns(rows).tolist(), parts.tolist(), (r.sum() for r in parts)):
            logit = float(self.intercept + total)
            out.append(LearnedScore(logit=logit, probability=_sigmoid(logit), intercept=intercept,
                                    contributions=dict(zip(self.features, row)),
                                    values=dict(zip(self.features, raw))))
        return out

    def _columns(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=float)
        if rows.ndim == 2 and rows.shape[1] == len(self.features) and tuple(self.features) == tuple(FEATURES):
            return rows
        return rows[:, [FEATURES.index(name) for name in self.features]]

    def _standardised(self, rows: np.ndarray) -> np.ndarray:
        return (self._columns(rows) - self.mean) / self.scale


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def assumed_settings(settings: Settings) -> dict:
    """The settings the features depend on: a model trained under others would read them wrongly.

    Query analysis itself is not among them (learned fusion always reads the
    question's periods, amounts and codes); the BM25 expansion it can switch on is,
    because it changes what BM25 lists and scores. So are the dense engine's sentence
    weight and query adapter, which change what dense lists and scores.
    """
    return {"embedding_model": settings.embedding_model, "chunk_tokens": settings.chunk_tokens,
            "chunk_overlap": settings.chunk_overlap, "chunk_context": settings.chunk_context,
            "bm25_k1": _plain(settings.bm25_k1), "bm25_b": _plain(settings.bm25_b),
            "query_expansion": bool(settings.query_analysis and settings.query_expansion),
            "dense_sentence_weight": _plain(settings.dense_sentence_weight),
            "query_adapter": query_adapter.identity(settings)}


# What a model file written before a setting was recorded was trained under: the setting did not
# exist yet, so dense read each chunk's own embedding and the question's own.
ASSUMED_BEFORE_RECORDED = {"dense_sentence_weight": 0, "query_adapter": "off"}


def _plain(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def train(rows: Sequence[np.ndarray], labels: Sequence[np.ndarray], fingerprint: dict,
          weights: Sequence[float] | None = None, features: Sequence[str] | None = None) -> LearnedModel:
    """Fit the model on questions' candidate rows (one matrix per question) and 0/1 labels.

    Classes are balanced (a question has a handful of gold candidates among a
    hundred or more); ``weights`` (one per question, default 1) weigh its rows;
    ``features`` (default MODEL_FEATURES) are the columns it reads.
    The returned model is the one its JSON file holds: rounded, so scoring
    before and after shipping is the same.
    """
    from sklearn.linear_model import LogisticRegression

    weights = list(weights) if weights is not None else [1.0] * len(rows)
    names = tuple(features or MODEL_FEATURES)
    unknown = [name for name in names if name not in FEATURES]
    if unknown:
        raise LearnedModelMismatch(f"cannot train learned fusion on {unknown[0]!r}: not a feature")
    X = np.vstack([np.asarray(r, dtype=float) for r in rows if len(r)])[:, [FEATURES.index(n) for n in names]]
    y = np.concatenate([np.asarray(lab, dtype=int) for lab, r in zip(labels, rows) if len(r)])
    w = np.concatenate([np.full(len(r), float(q)) for q, r in zip(weights, rows) if len(r)])
    if X.size == 0 or len(set(y.tolist())) < 2:
        raise LearnedModelMismatch("cannot train learned fusion: the training questions have no gold "
                                   "candidate among their engine lists (or nothing else)")
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    fit = LogisticRegression(C=C, class_weight="balanced", max_iter=2000, solver="lbfgs")
    fit.fit((X - mean) / scale, y, sample_weight=None if np.all(w == 1.0) else w)
    model = LearnedModel(names, mean, scale, fit.coef_[0], float(fit.intercept_[0]),
                         {**fingerprint, "feature_version": FEATURE_VERSION, "n_rows": int(len(y)),
                          "n_positive": int(y.sum())})
    return from_json(to_json(model))


def to_json(model: LearnedModel) -> str:
    data = {
        "schema": SCHEMA,
        "features": list(model.features),
        "scaler": {"mean": _rounded(model.mean), "scale": _rounded(model.scale)},
        "coefficients": _rounded(model.coef),
        "intercept": round(float(model.intercept), DIGITS) + 0.0,
        "fingerprint": model.fingerprint,
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(v), DIGITS) + 0.0 for v in values]


def from_json(text: str, source: str = "learned model") -> LearnedModel:
    try:
        data = json.loads(text)
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}, expected {SCHEMA}")
        return LearnedModel(tuple(data["features"]), np.asarray(data["scaler"]["mean"], dtype=float),
                            np.asarray(data["scaler"]["scale"], dtype=float),
                            np.asarray(data["coefficients"], dtype=float), float(data["intercept"]),
                            dict(data["fingerprint"]))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LearnedModelMismatch(f"{source} is not a readable learned fusion model ({exc})") from None


def mismatches(model: LearnedModel, settings: Settings) -> list[str]:
    """What differs between the model's fingerprint and what is in force, in words (empty: it fits)."""
    return mismatches_with(model, assumed_settings(settings))


def mismatches_with(model: LearnedModel, in_force: dict) -> list[str]:
    """mismatches() against the assumed settings (assumed_settings) a fetch ran under."""
    problems = []
    version = model.fingerprint.get("feature_version")
    if version != FEATURE_VERSION or not set(model.features) <= set(FEATURES):
        problems.append(f"it was trained on feature version {version} and these features are version "
                        f"{FEATURE_VERSION}")
    assumed = {**ASSUMED_BEFORE_RECORDED, **model.fingerprint.get("settings", {})}
    words = {"query_adapter": query_adapter.described}  # a digest alone says nothing to a reader
    for name, value in in_force.items():
        if name in assumed and assumed[name] != value:
            said = words.get(name, str)
            problems.append(f"it assumes {name}={said(assumed[name])} and {name}={said(value)} is in force")
    return problems


def model_path(settings: Settings) -> Path:
    return Path(settings.learned_model) if settings.learned_model else SHIPPED


def load(settings: Settings, model: LearnedModel | None = None) -> LearnedModel:
    """The configured model (RAGLOUPE_LEARNED_MODEL, else the shipped one), checked against the settings.

    ``model``: the configured model as the caller's workspace already read it (Workspace.learned_model).
    """
    model = model if model is not None else read(settings)
    problems = mismatches(model, settings)
    if problems:
        raise LearnedModelMismatch(f"the learned fusion model {model_path(settings).name} does not fit: "
                                   + "; ".join(problems)
                                   + f"; {ACTION}, or use another fusion", action=Action.TRAIN_LEARNED)
    return model


def read(settings: Settings) -> LearnedModel:
    """The configured model file, read now; not checked against the settings."""
    return read_file(model_path(settings))


def read_file(path: Path, cache=None) -> LearnedModel:
    """The model in ``path``; with a ``cache`` (a content_cache.ContentCache), read once per change of the file."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        raise LearnedModelMismatch(f"no learned fusion model at {path}: {ACTION}, or use another fusion",
                                   action=Action.TRAIN_LEARNED) from None

    def parse() -> LearnedModel:
        return from_json(path.read_text(encoding="utf-8"), str(path))

    return cache.get((str(path), stamp), parse) if cache is not None else parse()


def feature_weights(model: LearnedModel) -> dict[str, float]:
    """Each feature's coefficient on its standardised value, by name, in the model's own order.

    The model scores standardised features, so these weights compare across features: the
    largest in size is what the model leans on most (the coverage audit reads them).
    """
    return {name: float(w) for name, w in zip(model.features, model.coef)}
