"""Fusion diagnostics on every hit: the RRF score beside whatever fusion ranked it."""

from __future__ import annotations

import pytest

from ragloupe.retrieve.search import search


def test_every_hit_carries_its_rrf_score_whatever_fusion_ranked_it(demo_index, workspace_of):
    s = demo_index.replace(fusion="minmax", weight_dense=1.5, weight_bm25=1.0, rrf_k=60)
    ranking = search("What was the Core Revenue Resource Limit for 2020/21?", mode="hybrid", k=20,
                     filters={"doc_ids": ["Grampian-2020-2021"]}, workspace=workspace_of(s))
    assert ranking.fusion == "minmax"
    for hit in ranking.hits:
        expected = sum(weight / (60 + hit.per_engine[engine].rank)
                       for engine, weight in (("dense", 1.5), ("bm25", 1.0))
                       if hit.per_engine[engine].rank is not None)
        assert hit.rrf_score == pytest.approx(expected)
        assert hit.fused_score == hit.score  # min-max ranked it, RRF is shown beside


# --- learned fusion -------------------------------------------------------------------

import json  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ragloupe.cli import main  # noqa: E402
from ragloupe.config import PROJECT_ROOT  # noqa: E402
from ragloupe.evaluate import tuning as T  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.cli.search_cmd import format_ranking  # noqa: E402
from ragloupe.retrieve import features, learned, query_adapter  # noqa: E402
from ragloupe.ui.why import learned_rows  # noqa: E402

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))


@pytest.fixture(scope="module")
def trainer(demo_index, workspace_of):
    """Learned fusion's training rows for the first 6 questions of each Grampian report."""
    questions = [q for g in (load_goldset(p) for p in GRAMPIAN) for q in T.tune_questions([g])[:6]]
    config = T.Config.of("hybrid", demo_index, fusion="learned", candidate_window=50)
    lists = T.fetch_all(questions, [config], "doc", demo_index, workspace_of(demo_index))
    return T.LearnedTrainer(config, questions, lists, demo_index)


def test_every_candidate_gets_every_feature(trainer):
    rows = trainer.rows[0]
    assert rows.shape[1] == len(features.FEATURES)
    assert np.isfinite(rows).all()
    assert any(label.sum() for label in trainer.labels)  # gold pages are among the candidates


def test_same_training_data_gives_a_byte_identical_model_file(trainer):
    everything = np.arange(len(trainer.questions))
    first = learned.to_json(trainer.fit(everything, {"g": "abc"}))
    second = learned.to_json(trainer.fit(everything, {"g": "abc"}))
    assert first == second
    data = json.loads(first)
    assert data["features"] == list(features.MODEL_FEATURES)
    assert data["fingerprint"]["feature_version"] == features.FEATURE_VERSION
    assert data["fingerprint"]["goldsets"] == {"g": "abc"}


def test_a_model_trained_under_other_settings_is_refused_with_the_reason(trainer, demo_index, tmp_path):
    path = tmp_path / "model.json"
    path.write_text(learned.to_json(trainer.fit(np.arange(len(trainer.questions)))), encoding="utf-8")
    fits = demo_index.replace(learned_model=str(path))
    assert learned.load(fits).features == features.MODEL_FEATURES
    with pytest.raises(learned.LearnedModelMismatch, match="assumes chunk_tokens=256 and chunk_tokens=128"):
        learned.load(fits.replace(chunk_tokens=128))
    older = json.loads(path.read_text())
    older["fingerprint"]["feature_version"] = 0
    path.write_text(json.dumps(older), encoding="utf-8")
    with pytest.raises(learned.LearnedModelMismatch, match="feature version 0"):
        learned.load(fits)


def test_a_model_trained_under_another_dense_engine_is_refused_and_an_older_file_read_as_before_it(
        trainer, demo_index, tmp_path):
    """Learned fusion reads dense's ranks and score gaps, which the query adapter and the sentence
    weight change: a model trained under others is refused. A file that does not record them was
    trained before they existed: under the question's own embedding and each chunk's own vector."""
    path = tmp_path / "model.json"
    path.write_text(learned.to_json(trainer.fit(np.arange(len(trainer.questions)))), encoding="utf-8")
    fits = demo_index.replace(learned_model=str(path))
    assert fits.query_adapter == "shipped" and fits.dense_sentence_weight == 0.4  # the defaults
    assert learned.mismatches(learned.read(fits), fits) == []
    with pytest.raises(learned.LearnedModelMismatch, match=r"it assumes query_adapter=shipped "
                       r"\(sha256:[0-9a-f]{12}\) and query_adapter=off is in force"):
        learned.load(fits.replace(query_adapter="off"))
    with pytest.raises(learned.LearnedModelMismatch,
                       match="it assumes dense_sentence_weight=0.4 and dense_sentence_weight=0 is in force"):
        learned.load(fits.replace(dense_sentence_weight=0.0))
    # The adapter is known by its matrix, whatever file it is read from.
    copy = tmp_path / "same-adapter.npz"
    copy.write_bytes(query_adapter.SHIPPED.read_bytes())
    assert learned.mismatches(learned.read(fits), fits.replace(query_adapter=str(copy))) == []
    copy.write_bytes(b"not an adapter any more")  # a search without dense still runs; dense says why
    assert learned.assumed_settings(fits.replace(query_adapter=str(copy)))["query_adapter"] == "unreadable"

    older = json.loads(path.read_text(encoding="utf-8"))
    recorded = older["fingerprint"]["settings"]
    del recorded["query_adapter"], recorded["dense_sentence_weight"]
    path.write_text(json.dumps(older), encoding="utf-8")
    problems = learned.mismatches(learned.read(fits), fits)
    assert problems[0] == "it assumes dense_sentence_weight=0 and dense_sentence_weight=0.4 is in force"
    assert len(problems) == 2
    assert problems[1].startswith("it assumes query_adapter=off and query_adapter=shipped (sha256:")
    before_both = fits.replace(query_adapter="off", dense_sentence_weight=0.0)
    assert learned.mismatches(learned.read(fits), before_both) == []


def test_search_explains_each_learned_hit_exactly(trainer, demo_index, tmp_path, workspace_of):
    path = tmp_path / "model.json"
    path.write_text(learned.to_json(trainer.fit(np.arange(len(trainer.questions)))), encoding="utf-8")
    s = demo_index.replace(fusion="learned", learned_model=str(path), candidate_window=50)
    ranking = search("How much did NHS Grampian spend on capital in 2021/22?", mode="hybrid", k=10,
                     filters={"doc_ids": ["Grampian-2021-2022"]}, workspace=workspace_of(s))
    assert ranking.fusion == "learned"
    logits = [h.learned.logit for h in ranking.hits]
    assert logits == sorted(logits, reverse=True)
    for hit in ranking.hits:
        assert set(hit.learned.contributions) == set(features.MODEL_FEATURES)
        assert hit.learned.intercept + sum(hit.learned.contributions.values()) == pytest.approx(hit.learned.logit)
        assert hit.score == pytest.approx(hit.learned.probability)
        assert hit.rrf_score is not None
    rows = learned_rows(ranking.hits[0])  # what the Search page shows under "why this hit ranked here"
    assert [abs(r["contribution"]) for r in rows] == sorted((abs(r["contribution"]) for r in rows), reverse=True)
    assert sum(r["contribution"] for r in rows) == pytest.approx(
        ranking.hits[0].learned.logit - ranking.hits[0].learned.intercept, abs=1e-3)
    assert "why #1: logit" in format_ranking(ranking)


def test_search_cli_says_in_one_line_when_the_model_does_not_fit(demo_env, tmp_path, capsys, monkeypatch):
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("RAGLOUPE_LEARNED_MODEL", str(path))
    assert main(["search", "capital spend", "--set", "fusion=learned"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a readable learned fusion model" in err[0]


class RecordingTrainer(T.LearnedTrainer):
    """The real trainer, noting which questions each fit saw."""

    def __init__(self, source: T.LearnedTrainer):
        self.__dict__.update(source.__dict__)
        self.fitted_on: list[set[int]] = []

    def fit(self, train, goldsets=None):
        self.fitted_on.append(set(int(i) for i in train))
        return super().fit(train, goldsets)


def test_learned_fusion_in_tune_never_trains_on_the_held_out_report(trainer):
    recording = RecordingTrainer(trainer)
    groups = [q.group for q in trainer.questions]
    folds = T.grouped_folds(groups)
    scores = np.zeros((2, len(groups), len(T.METRICS)))
    T.nested_select(scores, folds, groups, {1: recording})
    # Folds run in order; each fits twice for its inner leave-one-out, then once on all its training groups.
    assert len(recording.fitted_on) == 3 * len(folds)
    for position, fold in enumerate(folds):
        held_out = {int(i) for i in fold.test}
        for fitted in recording.fitted_on[3 * position: 3 * position + 3]:
            assert not fitted & held_out
            assert {groups[i] for i in fitted} <= set(groups) - {fold.held_out}


def test_a_search_spanning_pages_and_records_is_ranked_by_the_one_shipped_model(demo_index, workspace_of):
    """The shipped model was trained on every tuning family, records included: a search over the
    Grampian PDFs and the Natech CSV together is ranked by it, with nothing falling back."""
    s = demo_index.replace(fusion="learned", learned_model="", learned_fallback="minmax")
    assert learned.load(s).unit_kinds == {"page", "record"}
    mixed = search("How are risks assessed and managed?", mode="hybrid", k=40,
                   filters={"doc_ids": ["guidance", "Grampian-2021-2022"]}, workspace=workspace_of(s))
    assert {"record" if h.chunk.record_id else "page" for h in mixed.hits} == {"page", "record"}
    assert mixed.fused_by == mixed.fusion == "learned" and mixed.fusion_fallback == ""
    assert all(h.learned is not None for h in mixed.hits)


def test_a_model_trained_on_records_ranks_records_and_leaves_pages_to_the_fallback(demo_index, tmp_path,
                                                                                   workspace_of):
    natech = load_goldset(PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json")
    questions = T.tune_questions([natech])
    config = T.Config.of("hybrid", demo_index, fusion="learned", candidate_window=30)
    lists = T.fetch_all(questions, [config], "doc", demo_index, workspace_of(demo_index))
    model = T.LearnedTrainer(config, questions, lists, demo_index).fit(np.arange(len(questions)))
    assert model.units == "record"
    path = tmp_path / "records-model.json"
    path.write_text(learned.to_json(model), encoding="utf-8")
    s = demo_index.replace(fusion="learned", learned_model=str(path), learned_fallback="rrf")
    records = search("How should flooding be considered in a natech risk assessment?", mode="hybrid", k=5,
                     filters={"doc_ids": ["guidance"]}, workspace=workspace_of(s))
    assert records.fusion == records.fused_by == "learned" and records.fusion_fallback == ""
    pages = search("How much did NHS Grampian spend on capital in 2021/22?", mode="hybrid", k=5,
                   filters={"doc_ids": ["Grampian-2021-2022"]}, workspace=workspace_of(s))
    assert pages.fusion.startswith("rrf (learned fusion was trained on records")
    # the fusion that ranked, by name, and why it is not the configured one: what a view shows as chosen
    assert pages.fused_by == "rrf" and pages.fusion_fallback.startswith("learned fusion was trained on records")


def test_a_model_that_does_not_fit_the_settings_falls_back_and_says_why(demo_index, workspace_of):
    s = demo_index.replace(fusion="learned", learned_model="", bm25_k1=0.9, learned_fallback="rrf")
    ranking = search("How much did NHS Grampian spend on capital in 2021/22?", mode="hybrid", k=5,
                     filters={"doc_ids": ["Grampian-2021-2022"]}, workspace=workspace_of(s))
    assert ranking.fusion == ("rrf (the learned fusion model does not fit: "
                              "it assumes bm25_k1=1.5 and bm25_k1=0.9 is in force)")
    assert all(h.learned is None for h in ranking.hits)
    assert "fusion rrf (the learned fusion model does not fit" in format_ranking(ranking)
