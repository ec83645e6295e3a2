"""The query adapter: the dense engine searching with W q / |W q| (retrieve/query_adapter.py), the
matrix learned from gold questions (adapt/query_training.py).

Real parts: the bundled model, embedded Chroma, the small corpus's PDF and records; the shipped
adapter file is read with numpy here, not through the module under test, for the expected figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ragloupe.adapt import query_training
from ragloupe.config import BUNDLED_MODEL, TUNED_MODEL, Settings
from ragloupe.errors import SettingsInvalid
from ragloupe.evaluate.goldset import GoldQuery
from ragloupe.index import sentences
from ragloupe.index.pipeline import run_index
from ragloupe.retrieve import query_adapter
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

SHIPPED = Path(query_adapter.__file__).with_name("query_adapter.npz")
QUESTION = "How much did the water company spend on pipes?"


def shipped_matrix_and_record() -> tuple[np.ndarray, dict]:
    with np.load(SHIPPED, allow_pickle=False) as data:
        return data["matrix"].astype(np.float32), json.loads(str(data["meta"]))


def test_the_shipped_adapter_is_for_the_bundled_model_and_learned_from_the_shipped_gold_sets():
    matrix, record = shipped_matrix_and_record()
    assert matrix.shape == (384, 384)
    assert record["model"] == "bundled:all-MiniLM-L6-v2"
    assert record["questions"] > 1000
    # never a held-out set or the blind sets that scored it (11-16) or wait to (17); sets 1-10
    # were each scored before they joined its training
    assert not [f for f in record["gold_sets"] if "holdout" in f or "guidance2" in f
                or any(f"confirm{n}/" in f for n in (11, 12, 13, 14, 15, 16, 17))]
    assert any("confirm10/" in f for f in record["gold_sets"])
    assert np.linalg.norm(matrix - np.eye(384)) > 0.1  # it maps: not the identity


def test_dense_searches_with_the_mapped_question_and_scores_the_blend_of_its_cosines(
        small_corpus, settings, embedder):
    run_index([small_corpus], settings)
    workspace = Workspace.open(settings, embedder=embedder)
    matrix, _ = shipped_matrix_and_record()
    own = embedder.encode([QUESTION])[0]
    mapped = matrix @ own
    mapped /= np.linalg.norm(mapped)
    assert float(mapped @ own) < 0.999  # the map moves the question
    assert np.allclose(workspace.dense_query_vector(QUESTION), mapped, atol=1e-5)

    ranking = search(QUESTION, "dense", 5, workspace=workspace)
    assert ranking.hits
    for hit in ranking.hits:
        chunk_cos = float(embedder.encode([hit.chunk.search_text])[0] @ mapped)
        best = float(np.max(embedder.encode(sentences.sentence_texts(hit.chunk)) @ mapped))
        assert abs(hit.per_engine["dense"].score - (0.6 * chunk_cos + 0.4 * best)) < 1e-4

    off = search(QUESTION, "dense", 5, workspace=workspace, query_adapter="off")
    for hit in off.hits:
        chunk_cos = float(embedder.encode([hit.chunk.search_text])[0] @ own)
        assert abs(hit.per_engine["dense"].distance - (1 - chunk_cos)) < 1e-4


def test_an_adapter_file_of_the_users_is_read_and_the_identity_searches_as_off(
        small_corpus, settings, embedder, tmp_path):
    run_index([small_corpus], settings)
    path = tmp_path / "identity.npz"
    query_adapter.save(path, np.eye(384), settings.embedding_model, {"questions": 12})
    workspace = Workspace.open(settings.replace(query_adapter=str(path)), embedder=embedder)
    adapter, said = workspace.query_adapter()
    assert adapter is not None and said == f"the question mapped by the {path} query adapter (learned from 12 gold questions)"
    mine = [(h.chunk.chunk_id, round(h.score, 5)) for h in search(QUESTION, "dense", 5, workspace=workspace).hits]
    off = [(h.chunk.chunk_id, round(h.score, 5))
           for h in search(QUESTION, "dense", 5, workspace=workspace, query_adapter="off").hits]
    assert mine == off


def test_an_adapter_of_another_models_space_is_not_applied_and_says_why(tmp_path):
    settings = Settings.from_env(embedding_model=str(tmp_path / "my-adapted-model"))
    adapter, said = query_adapter.in_force(settings)
    assert adapter is None
    assert said == ("the question's own embedding: the shipped query adapter maps all-MiniLM-L6-v2's "
                    "space, not my-adapted-model's")
    assert query_adapter.in_force(Settings.from_env(query_adapter="off")) == (
        None, "the question's own embedding (RAGLOUPE_QUERY_ADAPTER=off)")


def adopted_model(index_dir: Path, name: str, merge_weight: float, source: str = BUNDLED_MODEL) -> Settings:
    """Settings over an index dir where `ragloupe adapt` adopted ``name``, averaged at ``merge_weight``
    with ``source`` (the model in force, from the environment): the two records it writes
    (adopted.json, the model's training.json)."""
    model_dir = index_dir / "models" / name
    model_dir.mkdir(parents=True)
    (model_dir / "training.json").write_text(json.dumps(
        {"source_model": source, "settings": {"merge_weight": merge_weight}}), encoding="utf-8")
    (index_dir / "models" / "adopted.json").write_text(json.dumps(
        {"model": name, "source_model": source}), encoding="utf-8")
    settings = Settings.from_env(index_dir=index_dir)
    assert settings.embedding_model == str(model_dir)
    return settings


def test_an_adapter_carries_over_to_a_half_fine_tuned_average_of_its_model_only(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_EMBEDDING_MODEL", BUNDLED_MODEL)
    half = adopted_model(tmp_path / "half", "adapted-0123456789ab", 0.5)
    adapter, said = query_adapter.in_force(half)
    assert adapter is not None and adapter.source == "shipped"
    assert said == ("the question mapped by the shipped query adapter (learned from 1,668 gold questions), "
                    "carried over to adapted-0123456789ab, an average of all-MiniLM-L6-v2 with 50% fine-tuned weights")
    trained = adopted_model(tmp_path / "trained", "adapted-ba9876543210", 1.0)
    assert query_adapter.in_force(trained) == (None, (
        "the question's own embedding: the shipped query adapter maps all-MiniLM-L6-v2's space, not "
        "adapted-ba9876543210's (100% of it fine-tuned; an adapter carries over to an average with 50% or less)"))
    # Off stays off; an index's own adapter learned in the bundled model's space carries over too.
    assert query_adapter.in_force(half.replace(query_adapter="off"))[0] is None
    for index in ("half", "trained"):  # what `ragloupe adapt --queries` leaves, before the model was adapted
        own = tmp_path / index / "models/query-adapter-00000000000a.npz"
        query_adapter.save(own, np.eye(384), "bundled:all-MiniLM-L6-v2", {"questions": 3})
        (own.parent / "query_adapter.json").write_text(json.dumps(
            {"file": own.name, "model": "bundled:all-MiniLM-L6-v2"}), encoding="utf-8")
    reread = Settings.from_env(index_dir=tmp_path / "half")
    assert reread.sources["query_adapter"] == "adopted"
    assert query_adapter.in_force(reread)[1].startswith("the question mapped by the index's own query adapter "
                                                        "(learned from 3 gold questions), carried over to")
    assert Settings.from_env(index_dir=tmp_path / "trained").query_adapter == "shipped"
    # Adapted from the default model, itself half fine-tuned from the bundled one: three quarters away.
    monkeypatch.setenv("RAGLOUPE_EMBEDDING_MODEL", TUNED_MODEL)
    of_default = adopted_model(tmp_path / "of-default", "adapted-00000000000c", 0.5, TUNED_MODEL)
    assert query_adapter.in_force(of_default) == (None, (
        "the question's own embedding: the shipped query adapter maps all-MiniLM-L6-v2's space, not "
        "adapted-00000000000c's (75% of it fine-tuned through all-MiniLM-L6-v2+questions; an adapter "
        "carries over to an average with 50% or less)"))


def test_a_bad_adapter_setting_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_QUERY_ADAPTER", str(tmp_path / "nowhere.npz"))
    with pytest.raises(SettingsInvalid) as missing:
        Settings.from_env()
    assert str(missing.value).startswith("RAGLOUPE_QUERY_ADAPTER=")
    assert str(missing.value).endswith("wants shipped, off or the path of a query adapter file (there is no such file)")
    assert "\n" not in str(missing.value)
    monkeypatch.delenv("RAGLOUPE_QUERY_ADAPTER")
    text = tmp_path / "notes.npz"
    text.write_text("not an adapter", encoding="utf-8")
    with pytest.raises(SettingsInvalid) as bad:
        query_adapter.configured(Settings.from_env(query_adapter=str(text)))
    assert str(bad.value) == (f"RAGLOUPE_QUERY_ADAPTER={text}: not a query adapter file "
                              "(an .npz holding a matrix and its record, docs/retrieval.md#the-query-adapter)")


def test_status_says_what_dense_searches_with(capsys, small_corpus, settings, monkeypatch):
    from ragloupe.cli import main

    run_index([small_corpus], settings)
    _, record = shipped_matrix_and_record()
    assert main(["status"]) == 0
    assert (f"question:  dense searches with the question mapped by the shipped query adapter "
            f"(learned from {record['questions']:,} gold questions), carried over to all-MiniLM-L6-v2+questions, "
            "an average of all-MiniLM-L6-v2 with 50% fine-tuned weights\n") in capsys.readouterr().out
    monkeypatch.setenv("RAGLOUPE_QUERY_ADAPTER", "off")
    assert main(["status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query_adapter"] == {"applied": False, "source": None,
                                     "line": "the question's own embedding (RAGLOUPE_QUERY_ADAPTER=off)"}


def test_training_widens_the_gold_records_lead_and_a_strong_pull_to_the_identity_holds_it_back(
        small_corpus, settings, embedder):
    run_index([small_corpus], settings)
    workspace = Workspace.open(settings.replace(query_adapter="off"), embedder=embedder)
    doc = query_training.doc_units(workspace, "notes")
    asked = [("Which machines keep things cold when the electricity goes out?", "n2"),
             ("Who looks at the containers once the river has gone down?", "n1")]
    questions = [GoldQuery(query_id=f"q{i}", question=text, doc_id="notes", expected_records=(record,))
                 for i, (text, record) in enumerate(asked)]
    vectors = np.asarray(embedder.encode([q.question for q in questions]), dtype=np.float32)
    parts = query_training.batches(questions, vectors, {"notes": doc})
    gold_rows = [doc.units.index(f"notes#{record}") for _, record in asked]

    def gold_lead(matrix: np.ndarray) -> float:
        """The smallest lead of a question's gold record over its best other record (dense's scores)."""
        mapped = torch.nn.functional.normalize(torch.tensor(vectors @ matrix.T, dtype=torch.float32), dim=1)
        scores = query_training.unit_scores(mapped, doc, 0.4).numpy()
        return float(min(row[g] - np.max(np.delete(row, g)) for row, g in zip(scores, gold_rows)))

    before = gold_lead(np.eye(384))
    trained = query_training.train(parts, 0.4, reg=0.001, steps=60)
    assert gold_lead(trained) > before + 0.01
    held = query_training.train(parts, 0.4, reg=1000.0, steps=60)
    assert np.linalg.norm(held - np.eye(384)) < 0.05 * np.linalg.norm(trained - np.eye(384))


def test_a_report_on_questions_the_adapter_learned_from_says_they_are_in_sample():
    from ragloupe.config import PROJECT_ROOT
    from ragloupe.evaluate.coverage_sources import adapter_in_sample
    from ragloupe.evaluate.goldset import load_goldset

    learned = load_goldset(PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json")  # a tuning set
    unseen = load_goldset(PROJECT_ROOT / "data/benchmarks/natech/guidance2.gold.json")  # held out
    n = len(json.loads((PROJECT_ROOT / "data/benchmarks/natech/guidance.gold.json").read_text())["queries"])
    settings = Settings.from_env()

    said = adapter_in_sample(settings, "hybrid", [learned, unseen])
    assert said["learned_from"] == n and said["questions"] == n + len(unseen.queries)
    assert said["warning"] == (f"{n} of these {n + len(unseen.queries)} questions are among those the shipped "
                               "query adapter learned from: dense and the default score them in-sample, higher "
                               "than a new question would be (RAGLOUPE_QUERY_ADAPTER=off scores them without it)")
    assert adapter_in_sample(settings, "hybrid", [unseen])["warning"] == ""
    assert adapter_in_sample(settings, "bm25", [learned])["learned_from"] == 0  # no dense, no adapter
    assert adapter_in_sample(settings.replace(query_adapter="off"), "hybrid", [learned])["warning"] == ""


def test_the_eval_commands_coverage_lines_say_in_sample_apart_from_the_coverage_warnings():
    from ragloupe.evaluate.coverage_text import render_lines

    said = ("19 of these 19 questions are among those the shipped query adapter learned from: dense and the "
            "default score them in-sample, higher than a new question would be (RAGLOUPE_QUERY_ADAPTER=off "
            "scores them without it)")
    coverage = {"goldsets": [], "pooled": {}, "warnings": ["a coverage finding"],
                "query_adapter": {"warning": said}}
    lines = render_lines(coverage)
    assert lines[-2:] == ["  warning: a coverage finding", f"  in-sample: {said}"]
    assert render_lines({**coverage, "query_adapter": {"warning": ""}})[-1] == "  warning: a coverage finding"
