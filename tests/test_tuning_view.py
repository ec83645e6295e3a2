"""The Evaluation page's Tuning section, driven with Streamlit's AppTest on the demo index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ragloupe.config import PROJECT_ROOT, Settings
from ragloupe.ui.text import md_escape
from ragloupe.ui.tuning_view import gap_chart

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
    (bench / "manual.gold.json").write_text(json.dumps({"_meta": {"doc_id": "a-manual-not-indexed"}, "queries": [
        {"query_id": "m1", "question": "How is a page laid out?", "expected_pages": [2],
         "doc_id": "a-manual-not-indexed"}]}), encoding="utf-8")
    monkeypatch.setenv("RAGLOUPE_BENCHMARKS_DIR", str(bench))
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    return Settings.from_env()


def test_tuning_section_shows_out_of_fold_beside_in_sample_and_the_gap(tuning_env):
    app = AppTest.from_file(str(PROJECT_ROOT / "pages/evaluation.py"), default_timeout=300)
    app.run()
    assert not app.exception
    assert any("No tuning run yet" in c.value for c in app.caption)
    space = app.radio(key="tune_space")
    assert list(space.options) == ["small", "core", "full", "in-force"]
    assert "in-force: the settings in force against BM25 alone, the default rule's verdict on them" in space.help
    space.set_value("small")
    # With a gold set about a document the demo index does not hold: tuned without it, and said.
    app.multiselect(key="tune_goldsets").set_value([p.name for p in GRAMPIAN] + ["manual.gold.json"])
    next(b for b in app.button if b.label == "Run tuning").click()
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert md_escape("left out: 1 manual questions about documents the index does not hold (index them to tune "
                     "on them too)") in [w.value for w in app.warning]

    # The oracle is the run the page wrote, read back and recomputed here, not another tune():
    # the pooled out-of-fold Hit@1 is each fold's held-out Hit@1 weighted by its questions.
    run = json.loads(Path(app.session_state["tune_run"]).read_text(encoding="utf-8"))
    folds, sizes = run["out_of_fold"]["folds"], run["groups"]
    pooled_hit1 = sum(f["held_out_hit@1"] * sizes[f["held_out"]] for f in folds) / sum(sizes.values())
    assert sum(sizes.values()) == 24  # 8 questions from each of the three reports
    table = app.dataframe[-1].value
    assert list(table[""]) == ["out-of-fold (the procedure)", "in-sample best", "settings in force",
                               "bm25 alone"]
    shown = dict(zip(table[""], table["Hit@1"]))
    assert float(shown["out-of-fold (the procedure)"].split()[0]) == pytest.approx(pooled_hit1, abs=5e-4)
    in_sample = run["in_sample_best"]["figures"]
    assert float(shown["in-sample best"].split()[0]) == pytest.approx(in_sample["hit@1"]["mean"], abs=5e-4)
    gap = in_sample["objective"] - run["out_of_fold"]["figures"]["objective"]
    shown_gap = next(m.value for m in app.metric if m.label == "Optimism gap (objective)")
    assert float(shown_gap) == pytest.approx(gap, abs=5e-4)
    verdict = "yes" if run["decision"]["apply"] else "no"
    assert any(f"Would apply: {verdict}" in box.value for box in [*app.info, *app.success])
    assert run["default"]["why"]  # and what tuning leaves as the default, in the report's words
    assert f"default: {run['default']['label']} ({run['default']['why']})" in [t.value for t in app.text]
    assert run["coverage"]["warnings"]  # 24 questions from the first pages of each report
    assert all(line in [t.value for t in app.text] for line in run["coverage"]["warnings"])
    # The shipped query adapter learned from the 24 indexed questions (the coverage audit counts the
    # manual question too): the page says tune retrained it in the
    # folds, as an aside (not the in-sample warning an evaluation over them gets), and that the
    # settings in force were scored so.
    assert run["query_adapter"]["learned_from"] == 24 and run["query_adapter"]["retrained_in_folds"]
    assert md_escape("24 of these 25 questions are among those the shipped query adapter learned from, so tune "
                     "scored every configuration that searches with it by an adapter of its recipe retrained in "
                     "each fold, without the held-out document's questions.") in [box.value for box in app.info]
    assert not any("query adapter" in box.value for box in app.warning)
    assert ("settings in force: the query adapter in force learned from these questions: they are scored with "
            "an adapter of its recipe retrained without each question's document (in-sample they would score "
            "higher)") in [t.value for t in app.text]
    # The default embedding model was fine-tuned on the benchmark questions too, and tune cannot retrain it:
    # that one is a warning, with the count of the record beside its delta (the manual question is not in it).
    import hashlib

    read = set(json.loads((PROJECT_ROOT / "src/ragloupe/index/minilm_questions_read.json")
                          .read_text(encoding="utf-8"))["question_digests"])
    asked = [q["question"] for path in sorted(Path(tuning_env.path("benchmarks_dir")).glob("*.json"))
             for q in json.loads(path.read_text(encoding="utf-8"))["queries"]]
    tuned_on = sum(hashlib.sha256(" ".join(q.lower().split()).encode()).hexdigest()[:16] in read for q in asked)
    assert (tuned_on, len(asked)) == (24, 25)
    assert [box.value for box in app.warning if "questions the embedding model" in box.value] == [md_escape(
        "24 of these 25 questions are among the gold questions the embedding model all-MiniLM-L6-v2+questions was "
        "fine-tuned on: dense and the default score them in-sample, higher than a new question would be (an index "
        "built with RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2 scores them without it).")]

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
