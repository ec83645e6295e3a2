"""`ragloupe tune` and the query adapter: an adapter that learned from the tuning questions is
retrained in every fold, so no question is scored by an adapter that read it; one that read none of
them is scored as search() runs it. Real parts: the small corpus, the bundled model, embedded Chroma.
"""

from __future__ import annotations

import json

import pytest

from ragloupe.cli import main, tune_cmd
from ragloupe.config import Settings
from ragloupe.evaluate import tune_adapter as TA
from ragloupe.evaluate import tuning as T
from ragloupe.index.pipeline import run_index
from ragloupe.workspace import Workspace
from test_adapt_queries import SWAPPED, VERBATIM, dense_hit1, gold_file


@pytest.fixture
def adopted(small_corpus, settings, monkeypatch, tmp_path, capsys) -> Settings:
    """The small corpus indexed, dense the mode, and a query adapter learned from the SWAPPED
    questions by `ragloupe adapt --queries`, adopted by the index."""
    run_index([small_corpus], settings)
    monkeypatch.setenv("RAGLOUPE_MODE", "dense")
    gold = gold_file(tmp_path / "swapped.gold.json", SWAPPED)
    assert main(["adapt", "--queries", str(gold), "--set", "query_adapter=off", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kept"] is True
    adopted = Settings.from_env()
    assert adopted.sources["query_adapter"] == "adopted"
    return adopted


def tune_with(settings: Settings, gold) -> T.TuneReport:
    configs = [c for c in T.search_space(settings, "small") if not c.learned]
    return T.tune([gold], configs=configs, workspace=Workspace.open(settings), write=False)


def test_an_adapter_that_read_the_tuning_questions_is_retrained_in_every_fold(adopted, tmp_path):
    gold = gold_file(tmp_path / "swapped.gold.json", SWAPPED)
    assert dense_hit1(adopted, SWAPPED, adopted.query_adapter) >= 0.9  # in-sample: it read all twelve

    report = tune_with(adopted, gold)
    data = report.data
    # One record's questions held out at a time.
    assert data["groups"] == {"notes:n1": 4, "notes:n2": 4, "notes:n3": 4}
    assert data["query_adapter"]["learned_from"] == 12 and data["query_adapter"]["retrained_in_folds"]
    rows = {row["label"]: row for row in data["configs"]}
    current = data["configs"][0]
    assert current["config"]["mode"] == "dense" and current["adapter_retrained"]
    assert not rows[current["label"].replace(" +adapter", "")]["adapter_retrained"]  # its twin without it
    # Each record's questions point at another record: an adapter that never read that record's
    # questions cannot know where they point, so the settings in force score low, as a new question would.
    assert data["current"]["figures"]["hit@1"]["mean"] <= 0.5
    assert data["current"]["note"] == TA.IN_FORCE_NOTE
    said = tune_cmd.render(report)
    assert ("query adapter (index's own): it learned from 12 of the 12 tuning questions: each configuration that "
            "searches with it was scored with an adapter of its recipe retrained in every fold, never on the "
            "held-out document's questions; learned fusion contenders search without it") in said
    assert ("  query adapter: 12 of these 12 questions are among those the index's own query adapter learned "
            "from, so tune scored every configuration that searches with it by an adapter of its recipe retrained "
            "in each fold, without the held-out document's questions") in said.splitlines()


def test_an_adapter_that_read_none_of_them_is_scored_as_search_runs_it(adopted, tmp_path):
    gold = gold_file(tmp_path / "verbatim.gold.json", VERBATIM)
    data = tune_with(adopted, gold).data
    assert data["query_adapter"]["learned_from"] == 0 and not data["query_adapter"]["retrained_in_folds"]
    assert not any(row["adapter_retrained"] for row in data["configs"])
    assert "note" not in data["current"]
    searched = dense_hit1(adopted, VERBATIM, adopted.query_adapter)
    assert data["current"]["figures"]["hit@1"]["mean"] == pytest.approx(searched, abs=1e-4)


def test_the_spaces_hold_the_settings_in_force_without_the_adapter_and_apply_names_only_shipped_or_off(tmp_path):
    settings = Settings.from_env()
    space = T.search_space(settings, "small")
    assert space[0].adapted and space[0].without_adapter() in space
    assert space[0].label().endswith(f"+adapter chunks {space[0].chunking}")
    assert not space[0].without_adapter().adapted
    # in-force: the settings as they are and BM25 alone, for the default rule's verdict on them.
    assert [c.label() for c in T.search_space(settings, "in-force")] == [
        space[0].label(), f"bm25 k1={settings.bm25_k1:g} b={settings.bm25_b:g} chunks {space[0].chunking}"]
    for choice in ("off", "shipped"):
        assert tune_cmd.env_values({"mode": "hybrid", "query_adapter": choice})["RAGLOUPE_QUERY_ADAPTER"] == choice
    # An index's own adapter file stays named where `adapt --queries` put it, not copied into .env.
    own = {"mode": "hybrid", "query_adapter": str(tmp_path / "query-adapter-0123456789ab.npz")}
    assert "RAGLOUPE_QUERY_ADAPTER" not in tune_cmd.env_values(own)


def test_an_adapter_that_read_a_few_of_them_is_scored_as_search_runs_it_and_they_are_called_in_sample(
        adopted, tmp_path, monkeypatch):
    # Six questions of its own record each plus one the adapter learned from: 1 of 7, within the share
    # FEW_READ allows here. Retraining on six questions would stand for an adapter that learned elsewhere.
    monkeypatch.setattr(TA, "FEW_READ", 0.2)
    asked = {record: list(texts) for record, texts in VERBATIM.items()}
    asked["n1"] = asked["n1"] + [SWAPPED["n1"][0]]
    gold = gold_file(tmp_path / "mixed.gold.json", asked)
    data = tune_with(adopted, gold).data
    assert data["query_adapter"]["learned_from"] == 1 and not data["query_adapter"]["retrained_in_folds"]
    assert not any(row["adapter_retrained"] for row in data["configs"])
    assert data["query_adapter"]["scored"] == (
        "it learned from 1 of the 7 tuning questions (asked word for word in a set it learned from), at most 20% "
        "of them: configurations with it are scored as they are, those questions in-sample")
    searched = dense_hit1(adopted, asked, adopted.query_adapter)
    assert data["current"]["figures"]["hit@1"]["mean"] == pytest.approx(searched, abs=1e-4)
    assert data["coverage"]["query_adapter"]["warning"].startswith(
        "1 of these 7 questions are among those the index's own query adapter learned from: dense and the default "
        "score them in-sample")
    assert TA.retrains(3, 7) and not TA.retrains(0, 7)  # above the share: retrained in the folds, as before
