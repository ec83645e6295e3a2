"""The default rule of `ragloupe tune`: a default never loses to BM25 alone, on any tuning family
out-of-fold or on the confirmation family; otherwise the simpler kind stays the default."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragloupe.cli import main, tune_cmd
from ragloupe.config import get_settings
from ragloupe.evaluate import tuning as T

HIT1, RR = T.METRICS.index("hit@1"), T.METRICS.index("rr")
FAMILIES = ["benchmark"] * 6 + ["paraphrased"] * 4


def _configs():
    s = get_settings()
    off = {"query_analysis": False, "period_boost": 0.0, "lexical_rerank": False, "unit_view": "none"}
    return [T.Config.of("hybrid", s, fusion="learned"),  # the candidate: learned fusion
            T.Config.of("bm25", s, **off),
            T.Config.of("hybrid", s, **off, fusion="minmax", weight_dense=1.5, weight_bm25=1),
            T.Config.of("dense", s, **off)]


def _scores(hits: list[list[int]]) -> np.ndarray:
    """scores[c, q, m] whose Hit@1 (and reciprocal rank) are the given 0/1 per question."""
    hits = np.asarray(hits, dtype=float)
    scores = np.zeros((*hits.shape, len(T.METRICS)))
    scores[..., HIT1] = hits
    scores[..., RR] = np.where(hits > 0, 1.0, 0.5)
    return scores


# learned: 6/6 on the benchmark, 1/4 on the paraphrased family; BM25: 3/6 and 2/4;
# min-max: 5/6 and 2/4; dense 2/6 and 2/4.
TUNING = _scores([[1, 1, 1, 1, 1, 1, 1, 0, 0, 0],
                  [1, 1, 1, 0, 0, 0, 1, 1, 0, 0],
                  [1, 1, 1, 1, 1, 0, 1, 1, 0, 0],
                  [1, 1, 0, 0, 0, 0, 1, 1, 0, 0]])


def test_a_family_where_the_candidate_loses_to_bm25_keeps_the_simpler_default():
    configs = _configs()
    rule = T.select_default(configs, TUNING, FAMILIES, candidate=0, bm25=1)
    first, chosen = rule["ladder"][0], rule["chosen"]
    assert not first["passes"] and first["failed"] == ["paraphrased (0.250 < BM25 0.500)"]
    assert first["families"]["benchmark"]["at_least_bm25"] and not first["families"]["paraphrased"]["at_least_bm25"]
    assert chosen["index"] == 2 and chosen["kind"] == "fixed fusion of two engines"
    assert chosen["families"]["paraphrased"]["hit@1"] == 0.5 == chosen["families"]["paraphrased"]["bm25_hit@1"]
    assert "was not accepted" in rule["verdict"] and "provisional" in rule["verdict"]
    paired = first["families"]["paraphrased"]["paired_hit@1"]  # the paired test beside each verdict
    assert paired["diff"] == pytest.approx(-0.25) and 0 < paired["p_value"] <= 1


def test_when_every_simpler_kind_loses_too_bm25_alone_is_the_default():
    hits = TUNING.copy()
    # min-max loses the paraphrased family to BM25 too (1/4 first, the others second: still the
    # best of the simpler kinds on the worst family), and BM25 ranks its benchmark misses low
    hits[2, 6:, HIT1], hits[2, 6:, RR] = [1, 0, 0, 0], [1, 0.9, 0.9, 0.9]
    hits[1, 3:6, RR] = 0.1
    rule = T.select_default(_configs(), hits, FAMILIES, candidate=0, bm25=1)
    assert [r["index"] for r in rule["ladder"]] == [0, 2, 1]  # dense is judged no better than BM25's kind
    assert rule["chosen"]["index"] == 1 and rule["chosen"]["passes"]


def test_the_confirmation_family_gates_a_candidate_that_wins_every_tuning_family():
    tuning = TUNING.copy()
    tuning[0, 6:, HIT1] = [1, 1, 1, 0]  # learned now leads BM25 on both tuning families
    configs = _configs()
    families = ["confirm"] * 5
    losing = _scores([[0, 0, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    rule = T.select_default(configs, tuning, FAMILIES, 0, 1, losing, families)
    assert rule["ladder"][0]["failed"] == ["confirmation confirm (0.400 < BM25 0.600)"]
    assert rule["chosen"]["index"] == 2 and rule["confirmed"]
    winning = _scores([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    rule = T.select_default(configs, tuning, FAMILIES, 0, 1, winning, families)
    assert rule["chosen"]["index"] == 0 and rule["verdict"].startswith("accepted")
    assert rule["chosen"]["confirmation"]["confirm"]["hit@1"] == 0.8


def test_nothing_is_applied_without_a_confirmation_family():
    configs = _configs()
    tuning = TUNING.copy()
    tuning[0, 6:, HIT1] = [1, 1, 1, 0]
    unconfirmed = T.select_default(configs, tuning, FAMILIES, 0, 1)
    in_force = T.judge(2, configs[2], tuning[2], tuning[1], FAMILIES, None, None, ())
    decision = T.apply_decision(configs[0], configs[2], T.paired(tuning[0], tuning[2]), rule=unconfirmed,
                                in_force=in_force)
    assert not decision["apply"] and "--confirm" in decision["reason"]


def test_settings_in_force_that_fail_the_rule_give_way_once_confirmed():
    configs = _configs()
    confirm = _scores([[1, 1, 0], [1, 0, 0], [1, 0, 1], [0, 0, 0]])
    rule = T.select_default(configs, TUNING, FAMILIES, 0, 1, confirm, ["c"] * 3)
    in_force = T.judge(0, configs[0], TUNING[0], TUNING[1], FAMILIES, confirm[0], confirm[1], ["c"] * 3)
    decision = T.apply_decision(configs[2], configs[0], T.paired(TUNING[2], TUNING[0]), rule=rule,
                                in_force=in_force)
    assert decision["apply"] and "fail the default rule" in decision["reason"]


def test_settings_in_force_that_pass_the_rule_stay_when_the_ladder_lands_below_them_and_the_report_says_so():
    """The selection's candidate fails the confirmation family and the ladder falls to BM25 alone,
    but the settings in force pass the rule and BM25 does not beat them: they stay the default, and
    the last line says so instead of naming BM25."""
    s = get_settings()
    off = {"query_analysis": False, "period_boost": 0.0, "lexical_rerank": False, "unit_view": "none"}
    configs = [T.Config.of("hybrid", s, **off, fusion="minmax", weight_dense=2, weight_bm25=1),  # in force
               T.Config.of("bm25", s, **off),
               T.Config.of("hybrid", s, **off, fusion="minmax", weight_dense=1, weight_bm25=1),  # the candidate
               T.Config.of("dense", s, **off)]
    tuning = _scores([[1, 1, 1, 1, 1, 0, 1, 1, 0, 0],   # 5/6, 2/4
                      [1, 1, 1, 0, 0, 0, 1, 1, 0, 0],   # BM25: 3/6, 2/4
                      [1, 1, 1, 1, 1, 1, 1, 1, 1, 0],   # 6/6, 3/4: best on the worst family
                      [1, 1, 0, 0, 0, 0, 1, 0, 0, 0]])  # 2/6, 1/4
    confirm = _scores([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    rule = T.select_default(configs, tuning, FAMILIES, 2, 1, confirm, ["c"] * 5)
    assert [r["index"] for r in rule["ladder"]] == [2, 1] and rule["chosen"]["index"] == 1
    assert rule["verdict"].endswith(f"the ladder lands on the simpler {configs[1].label()}")
    in_force = T.judge(0, configs[0], tuning[0], tuning[1], FAMILIES, confirm[0], confirm[1], ["c"] * 5)
    assert in_force["passes"]
    decision = T.apply_decision(configs[1], configs[0], T.paired(tuning[1], tuning[0]), rule=rule, in_force=in_force)
    assert not decision["apply"]
    default = T.selected_default(configs, 1, rule, decision)
    assert default["index"] == 0 and default["label"] == configs[0].label()
    assert default["why"] == (f"the settings in force stay: they pass the default rule, and the rule's "
                              f"{configs[1].label()} does not beat them")
    lines = T.family_verdict_lines(rule, default)
    assert lines[-1] == f"default: {configs[0].label()} ({default['why']})"


def test_tune_cli_gates_on_a_confirmation_family_and_states_the_verdict(demo_env, tmp_path, capsys):
    """End to end on the demo index: two small tuning sets of two reports, one confirmation set of a
    third; the report says each family's verdict and the confirmation family is never a fold."""
    from ragloupe.config import PROJECT_ROOT

    paths = []
    for name in ("Grampian-2020-2021", "Grampian-2021-2022", "Grampian-2022-2023"):
        data = json.loads((PROJECT_ROOT / f"data/benchmarks/grampian/eval/{name}.eval.json").read_text())
        data["queries"] = data["queries"][:5]
        path = tmp_path / f"{name}.eval.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    confirm_dir = tmp_path / "confirm"
    confirm_dir.mkdir()
    paths[2].rename(confirm_dir / paths[2].name)
    code = main(["tune", *map(str, paths[:2]), "--confirm", str(confirm_dir), "--space", "small", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(out["groups"]) == {"Grampian-2020-2021", "Grampian-2021-2022"}  # never a fold
    rule = out["default_rule"]
    assert rule["confirmed"] and rule["confirmation_families"] == ["benchmark"]
    assert set(rule["chosen"]["confirmation"]) == {"benchmark"}
    assert out["confirmation"]["benchmark"]["n_questions"] == 5
    assert out["families"]["benchmark"]["default_rule"]["default"] == rule["chosen"]["label"]
    text = tune_cmd.render(T.load_tune(Path(out["path"])))  # what the command prints without --json
    assert "default rule:" in text and "confirmation benchmark" in text
    default = out["default"]  # what tuning leaves in force, said last under the rule's ladder
    assert f"default: {default['label']} ({default['why']})" in text.splitlines()
