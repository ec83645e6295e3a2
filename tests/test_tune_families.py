"""Per-family selection: tune chooses on the worst gold-set family, never on the pooled mean."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragloupe.evaluate import tune_folds
from ragloupe.evaluate import tuning as T
from ragloupe.evaluate.goldset import load_goldset


def _objective() -> tuple[np.ndarray, list[str], list[str]]:
    """Config 0: the pooled best (1.0 on 8 benchmark questions, 0.2 on 4 whole-report ones, mean 0.73);
    config 1: 0.6 everywhere (pooled 0.6, but its worst family is 0.6 against config 0's 0.2)."""
    families = ["benchmark"] * 8 + ["whole-report"] * 4
    groups = ["A", "B", "C", "D"] * 3
    objective = np.array([[1.0] * 8 + [0.2] * 4, [0.6] * 12])
    return objective, families, groups


def test_a_configuration_best_pooled_but_worst_on_one_family_is_not_chosen():
    objective, families, groups = _objective()
    folds = T.grouped_folds(groups)
    assert {p.chosen for p in T.select(objective, folds)} == {0}  # what the pooled mean would pick
    assert {p.chosen for p in T.select(objective, folds, families)} == {1}


def test_worst_family_ties_keep_the_first_configuration_the_settings_in_force():
    objective = np.array([[0.5, 0.5, 0.9, 0.9], [0.9, 0.9, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]])
    folds = T.grouped_folds(["A", "B", "A", "B"])
    assert [p.chosen for p in T.select(objective, folds, ["x", "x", "y", "y"])] == [0, 0]


def test_in_sample_best_is_chosen_by_the_same_rule():
    objective, families, _ = _objective()
    assert tune_folds.in_sample_best(objective, families) == 1


def _goldset(path, name: str, meta: dict | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"_meta": {"doc_id": "doc", **(meta or {})}, "queries": [
        {"query_id": "q1", "question": "What is it?", "expected_pages": [3], "doc_id": "doc"}]}))
    return load_goldset(path)


def test_family_comes_from_the_gold_set_file(tmp_path):
    base = tmp_path / "data/benchmarks"
    assert T.family_of(_goldset(base / "grampian/eval/doc.eval.json", "e")) == "benchmark"
    assert T.family_of(_goldset(base / "grampian/whole/doc.whole.json", "w")) == "whole-report"
    assert T.family_of(_goldset(base / "manuals/eval/doc.eval.json", "m")) == "manuals"
    assert T.family_of(_goldset(tmp_path / "mine.json", "x", {"family": "contracts"})) == "contracts"


def test_a_held_out_gold_set_is_refused_for_tuning(tmp_path):
    held = _goldset(tmp_path / "data/benchmarks/grampian/whole/doc.holdout.json", "h")
    with pytest.raises(T.TuningError, match="held-out gold set"):
        T.tune_questions([held])
