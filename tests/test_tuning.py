"""`ragloupe tune`: grouped folds, nested selection that never sees the held-out group, --apply's guard."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragloupe.cli import main
from ragloupe.config import PROJECT_ROOT, get_settings
from ragloupe.cli import tune_cmd
from ragloupe.evaluate import tuning as T
from ragloupe.evaluate.goldset import GoldQuery, load_goldset

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))
NATECH = PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json"


@pytest.fixture(scope="module")
def small_gold(tmp_path_factory) -> list[Path]:
    """The first 8 questions of each shipped Grampian gold set, as gold files of their own."""
    root = tmp_path_factory.mktemp("gold")
    paths = []
    for source in GRAMPIAN:
        data = json.loads(source.read_text(encoding="utf-8"))
        data["queries"] = data["queries"][:8]
        path = root / source.name
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    return paths


def test_grouped_split_never_puts_a_report_on_both_sides():
    questions = T.tune_questions([load_goldset(p) for p in GRAMPIAN])
    folds = T.grouped_folds([q.group for q in questions])
    assert [f.held_out for f in folds] == [load_goldset(p).name for p in GRAMPIAN]
    for fold in folds:
        train_docs = {questions[i].query.doc_id for i in fold.train}
        test_docs = {questions[i].query.doc_id for i in fold.test}
        assert test_docs == {fold.held_out}
        assert not train_docs & test_docs
        assert len(fold.train) + len(fold.test) == len(questions)


def test_record_questions_are_grouped_by_top_chapter():
    questions = T.tune_questions([load_goldset(NATECH)])
    groups = {q.query.query_id: q.group for q in questions}
    assert groups["N_LOC_01"] == groups["N_ENV_01"] == "guidance:4"  # 4.6.1.1 and 4.6.2.3
    assert groups["N_MIT_01"] == "guidance:5"
    for fold in T.grouped_folds(list(groups.values())):
        chapters = lambda idx: {questions[i].query.expected_records[0].split(".")[0] for i in idx}  # noqa: E731
        assert not chapters(fold.train) & chapters(fold.test)


def test_one_document_cannot_be_tuned_out_of_fold():
    with pytest.raises(T.TuningError, match="at least two documents"):
        T.grouped_folds(["Grampian-2020-2021"] * 5)


def test_a_config_that_wins_only_on_the_held_out_report_is_not_chosen_for_it():
    groups = ["A"] * 4 + ["B"] * 4 + ["C"] * 4
    folds = T.grouped_folds(groups)
    objective = np.full((3, 12), 0.5)
    objective[1, :8] = 0.3  # poor on A and B ...
    objective[1, 8:] = 1.0  # ... perfect on C
    objective[2, :] = 0.6  # steady everywhere
    picks = {p.held_out: p.chosen for p in T.select(objective, folds)}
    assert picks == {"A": 1, "B": 1, "C": 2}  # config 1 is chosen only where C is training data
    scores = np.zeros((3, 12, len(T.METRICS)))
    scores[..., T.METRICS.index("hit@1")] = objective
    oof = T.out_of_fold(scores, folds, T.select(objective, folds))
    assert np.all(oof[8:, T.METRICS.index("hit@1")] == 0.6)


def test_selection_breaks_ties_towards_the_settings_in_force():
    folds = T.grouped_folds(["A", "A", "B", "B"])
    picks = T.select(np.full((4, 4), 0.7), folds)
    assert [p.chosen for p in picks] == [0, 0]


def _report(decision_apply: bool, config: dict) -> T.TuneReport:
    return T.TuneReport("tune-doc-test", {"decision": {"apply": decision_apply, "reason": "because"},
                                          "in_sample_best": {"config": config}})


def test_apply_refuses_without_a_significant_win(tmp_path):
    env = tmp_path / ".env"
    env.write_text("RAGLOUPE_FUSION=minmax\n", encoding="utf-8")
    config = T.Config.of("bm25", get_settings()).as_dict()
    applied, note = tune_cmd.apply_to_env(_report(False, config), env)
    assert not applied and note.startswith("not applied")
    assert env.read_text(encoding="utf-8") == "RAGLOUPE_FUSION=minmax\n"


def test_apply_rewrites_known_lines_and_appends_the_rest(tmp_path):
    env = tmp_path / ".env"
    env.write_text("# mine\nRAGLOUPE_FUSION=minmax\nOLLAMA_BASE_URL=http://x\n", encoding="utf-8")
    config = T.Config.of("hybrid", get_settings(), fusion="rrf", rrf_k=30, lexical_rerank=False).as_dict()
    applied, _ = tune_cmd.apply_to_env(_report(True, config), env)
    lines = env.read_text(encoding="utf-8").splitlines()
    assert applied
    assert lines[:3] == ["# mine", "RAGLOUPE_FUSION=rrf", "OLLAMA_BASE_URL=http://x"]
    assert "RAGLOUPE_RRF_K=30" in lines and "RAGLOUPE_LEXICAL_RERANK=false" in lines
    assert get_settings().__class__.from_env(env_file=env).fusion == "rrf"


def test_decision_needs_a_paired_win_over_the_settings_in_force():
    settings = get_settings()
    current, other = T.Config.of("hybrid", settings), T.Config.of("bm25", settings)
    tie = np.zeros((10, len(T.METRICS)))
    better = tie.copy()
    better[:, T.METRICS.index("hit@1")] = 1.0
    better[:, T.METRICS.index("rr")] = 1.0
    assert not T.apply_decision(other, current, T.paired(tie, tie))["apply"]
    assert T.apply_decision(other, current, T.paired(better, tie))["apply"]
    assert not T.apply_decision(current, current, T.paired(better, tie))["apply"]


def test_tune_cli_reports_out_of_fold_and_refuses_to_apply_a_non_win(demo_env, small_gold, tmp_path, capsys):
    env = tmp_path / ".env"
    unindexed = tmp_path / "manual.json"
    unindexed.write_text(json.dumps({"_meta": {"doc_id": "a-manual-not-indexed"}, "queries": [
        {"query_id": "m1", "question": "How is a page laid out?", "expected_pages": [2],
         "doc_id": "a-manual-not-indexed"}]}), encoding="utf-8")
    code = main(["tune", *map(str, small_gold), str(unindexed), "--space", "small", "--apply",
                 "--env-file", str(env), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["not_indexed"] == {"manual": 1} and set(out["families"]) == {"benchmark"}
    assert out["replay_check"]["mismatches"] == []
    assert out["coverage"]["pooled"]["page"]["dimensions"]["position"]["skewed"]  # 24 early questions
    assert set(out["groups"]) == {"Grampian-2020-2021", "Grampian-2021-2022", "Grampian-2022-2023"}
    oof = out["out_of_fold"]["figures"]
    assert oof["hit@1"]["n"] == 24 and oof["hit@1"]["ci_low"] <= oof["hit@1"]["mean"] <= oof["hit@1"]["ci_high"]
    best = out["in_sample_best"]["figures"]
    assert out["optimism_gap"]["objective"] == pytest.approx(best["objective"] - oof["objective"], abs=1e-4)
    if not out["decision"]["apply"]:
        assert not out["applied"] and not env.exists()
    report = T.load_tune(Path(out["path"]))
    picks = {f["held_out"]: f["chosen"] for f in report.data["out_of_fold"]["folds"]}
    for held_out, chosen in picks.items():
        train = [c["train_objective"] for c in report.data["configs"]]
        assert report.data["configs"][chosen]["chosen_in_folds"].count(held_out) == 1
        assert len(train) == report.data["n_configs"]


def test_tune_report_is_byte_identical_on_rerun(demo_index, small_gold, workspace_of):
    # The settings in force (their adapter retrained in every fold), BM25, dense and the settings without
    # the adapter: each kind of scoring once; the rest of the small space adds time, not kinds.
    configs = [c for c in T.search_space(demo_index, "small") if not c.learned][:4]
    assert [c.mode for c in configs] == [demo_index.mode, "bm25", "dense", demo_index.mode]
    assert [c.adapted for c in configs] == [True, False, True, False]
    first = T.tune(small_gold, workspace=workspace_of(demo_index), configs=configs)
    second = T.tune(small_gold, workspace=workspace_of(demo_index), configs=configs)
    assert first.run_id == second.run_id
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "timings"}  # noqa: E731
    assert strip(first.path.read_text()) == strip(second.path.read_text())


def test_tune_cli_one_line_errors(demo_env, small_gold, tmp_path, capsys):
    assert main(["tune", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read the gold set" in err[0]
    assert main(["tune", str(small_gold[0]), "--space", "small"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least two documents" in err[0]


def test_settings_in_force_row_is_what_search_does_with_the_configured_model(demo_index, tmp_path, workspace_of):
    """Inside the folds learned fusion is trained afresh; the settings-in-force row is the shipped
    model as search() runs it: it ranks the records itself, and was trained on these very questions."""
    from ragloupe.evaluate.runs import evaluate

    s = demo_index.replace(fusion="learned", learned_model="", runs_dir=tmp_path)
    configs = [T.Config.of(s.mode, s),
               T.Config.of("bm25", s, query_analysis=False, period_boost=0.0, lexical_rerank=False)]
    assert configs[0].learned
    report = T.tune([NATECH], workspace=workspace_of(s), configs=configs, write=False)
    current = report.data["current"]
    assert "in-sample: it was trained on guidance" in current["note"] and "fused by" not in current["note"]
    run = evaluate([NATECH], mode=s.mode, workspace=workspace_of(s))
    for metric in ("hit@1", "hit@3", "mrr"):
        assert current["figures"][metric]["mean"] == pytest.approx(run.aggregates[metric]["mean"], abs=1e-4)
    per_query = {q["query_id"]: q["current_hit@1"] for q in report.data["queries"]}
    assert per_query == {q["query_id"]: q["metrics"]["hit@1"] for q in run.data["queries"]}


def test_a_trained_configurations_figure_is_what_its_folds_held_out(tmp_path):
    """A trained configuration (learned fusion, a retrained query adapter) is scored on each group by
    the model its fold trained on every other group, and that is its figure throughout the report:
    the procedure's, each fold's row and its own. Here a model is right only when it was trained on
    all four other groups; a 4-fold cross-validation over the five groups (what select() used to put
    in its row) trains two of them on three groups only."""
    from ragloupe.evaluate.tune_indexes import variants_to_score

    gold = tmp_path / "five.gold.json"
    gold.write_text(json.dumps({"queries": [
        {"query_id": doc, "question": f"What is on page 1 of {doc}?", "doc_id": doc, "expected_pages": [1]}
        for doc in "ABCDE"]}), encoding="utf-8")
    sets = [load_goldset(gold)]
    questions = T.tune_questions(sets)
    settings = get_settings()
    configs = [T.Config.of("hybrid", settings),  # with the query adapter, as if it read these questions
               T.Config.of("bm25", settings, query_analysis=False, period_boost=0.0, lexical_rerank=False)]

    class Trained:
        learned = False  # nothing for the coverage audit

        def fit_and_score(self, train, test):
            rows = np.zeros((len(test), len(T.METRICS)))
            if len(train) == len(questions) - 1:  # trained on every other group (one question a group)
                rows[:, T.METRICS.index("hit@1")] = rows[:, T.METRICS.index("rr")] = 1.0
            return rows

        def grouped_score(self, subset, groups):
            return T.grouped_cross_validation(self.fit_and_score, subset, groups)

    sweep = T._Sweep(questions, "doc", settings, workspace=None, progress=None)
    sweep.configs, sweep.trainers = configs, {0: Trained()}
    # BM25 finds nothing: inside each fold both configurations score 0 on the training groups (the
    # trained one's inner cross-validation trains on three groups), and the tie goes to the settings in force.
    sweep.scores = [np.zeros((2, len(questions), len(T.METRICS)))]
    sweep.checks = [{"checked": 0, "mismatches": []}]
    run, _ = sweep.select(sets, "small", variants_to_score(settings, []), [{}])
    assert run.scores[0][:, T.METRICS.index("hit@1")].tolist() == [1.0] * 5
    report = T.build_report(run)
    assert [f["chosen"] for f in report["out_of_fold"]["folds"]] == [0] * 5
    assert report["out_of_fold"]["figures"]["hit@1"]["mean"] == 1.0
    assert report["configs"][0]["hit@1"] == 1.0 and report["in_sample_best"]["figures"]["hit@1"]["mean"] == 1.0
    for row in report["out_of_fold"]["folds"]:
        assert row["held_out_hit@1"] == 1.0
        assert row["held_out_objective"] == pytest.approx((row["held_out_hit@1"] + row["held_out_mrr"]) / 2)
