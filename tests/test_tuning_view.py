"""The Evaluation page's Tuning section, driven with Streamlit's AppTest on the demo index."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from ragloupe.config import PROJECT_ROOT, Settings
from ragloupe.evaluate import tuning as T
from ragloupe.ui.tuning_view import figure_rows, gap_chart

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))


@pytest.fixture
def tuning_env(demo_env, tmp_path, monkeypatch) -> Settings:
    """The demo index, and a benchmarks folder holding the first 8 questions of each Grampian report."""
    bench = tmp_path / "bench"
    bench.mkdir()
    for source in GRAMPIAN:
        data = json.loads(source.read_text(encoding="utf-8"))
        data["queries"] = data["queries"][:8]
        (bench / source.name).write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("RAGLOUPE_BENCHMARKS_DIR", str(bench))
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    return Settings.from_env()


def test_tuning_section_shows_out_of_fold_beside_in_sample_and_the_gap(tuning_env):
    app = AppTest.from_file(str(PROJECT_ROOT / "pages/evaluation.py"), default_timeout=300)
    app.run()
    assert not app.exception
    assert any("No tuning run yet" in c.value for c in app.caption)
    app.radio(key="tune_space").set_value("small")
    next(b for b in app.button if b.label == "Run tuning").click()
    app.run()
    assert not app.exception, [e.value for e in app.exception]

    expected = T.tune(sorted(tuning_env.path("benchmarks_dir").glob("*.eval.json")), space="small",
                      settings=tuning_env, write=False).data
    table = app.dataframe[-1].value
    assert list(table[""]) == [row[""] for row in figure_rows(expected)]
    assert list(table["Hit@1"]) == [row["Hit@1"] for row in figure_rows(expected)]
    shown_gap = next(m.value for m in app.metric if m.label == "Optimism gap (objective)")
    assert shown_gap == f"{expected['optimism_gap']['objective']:+.3f}"
    verdict = "yes" if expected["decision"]["apply"] else "no"
    assert any(f"Would apply: {verdict}" in box.value for box in [*app.info, *app.success])
    assert expected["coverage"]["warnings"]  # 24 questions from the first pages of each report
    assert all(line in [t.value for t in app.text] for line in expected["coverage"]["warnings"])


def test_gap_chart_marks_each_fold_choice_and_the_in_sample_best():
    data = {"configs": [
        {"label": "a", "train_objective": 0.7, "held_out_objective": 0.6, "chosen_in_folds": ["X", "Y"]},
        {"label": "b", "train_objective": 0.8, "held_out_objective": 0.5, "chosen_in_folds": ["Z"]},
        {"label": "c", "train_objective": 0.5, "held_out_objective": 0.5, "chosen_in_folds": []}],
        "in_sample_best": {"index": 1}}
    figure = gap_chart(data)
    traces = {t.name: t for t in figure.data}
    assert list(traces["configurations"].x) == [0.7, 0.8, 0.5]
    assert list(traces["chosen in a fold"].text) == ["a (held out: X, Y)", "b (held out: Z)"]
    assert list(traces["in-sample best"].y) == [0.5]
