"""Named collections: two tiny indexes side by side, each with its own manifest, runs and gold sets."""

from __future__ import annotations

import json

import pytest

from conftest import write_records
from ragloupe.cli import main
from ragloupe.config import Settings
from ragloupe.errors import SettingsInvalid
from ragloupe.index.manifest import Manifest
from ragloupe.workspace import Workspace

POWER = [("p1", "Generators", "Two diesel generators start within thirty seconds of a loss of mains power "
                              "and carry the cooling pumps for at least seventy-two hours.")]
FLOODS = [("f1", "Flood walls", "The flood walls around the tank farm are inspected after every flood and "
                                "the drainage pumps are tested each spring before the wet season.")]


def _gold(path, doc_id: str, record: str, question: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"_meta": {"doc_id": doc_id}, "queries": [
        {"query_id": "Q1", "question": question, "expected_chapters": [record], "answer_type": "text"}]}))


@pytest.fixture
def two_collections(tmp_path, monkeypatch, capsys):
    """'alpha' holds power.csv, 'beta' floods.csv, both indexed through the CLI."""
    # --collection sets RAGLOUPE_COLLECTION in the process: recorded here so the test's end undoes it.
    monkeypatch.setenv("RAGLOUPE_COLLECTION", "ragloupe")
    power = write_records(tmp_path / "power.csv", POWER)
    floods = write_records(tmp_path / "floods.csv", FLOODS)
    assert main(["--collection", "alpha", "index", str(power)]) == 0
    assert main(["index", str(floods), "--collection", "beta"]) == 0  # after the subcommand too
    capsys.readouterr()
    monkeypatch.setenv("RAGLOUPE_COLLECTION", "ragloupe")  # the default again
    return Settings.from_env()


def test_search_manifest_and_runs_stay_in_their_collection(two_collections, capsys):
    from ragloupe.evaluate.runs import evaluate
    from ragloupe.retrieve.search import search

    alpha, beta = (two_collections.replace(collection=name) for name in ("alpha", "beta"))
    assert set(Manifest.load(alpha).documents) == {"power"}
    assert set(Manifest.load(beta).documents) == {"floods"}
    assert Manifest.load(two_collections).documents == {}  # the default collection got nothing
    for settings, doc in ((alpha, "power"), (beta, "floods")):
        hits = search("pumps", mode="hybrid", k=5, workspace=Workspace.open(settings)).hits
        assert hits and {h.chunk.doc_id for h in hits} == {doc}

    _gold(alpha.path("benchmarks_dir") / "power.gold.json", "power", "p1", "How long do the generators run?")
    report = evaluate([alpha.path("benchmarks_dir") / "power.gold.json"], mode="dense", ks=[1],
                      workspace=Workspace.open(alpha))
    assert report.path.parent == alpha.path("runs_dir") and report.data["settings"]["collection"] == "alpha"
    assert report.data["metrics"]["all"]["hit@1"]["mean"] == 1.0
    assert not beta.path("runs_dir").exists() or not list(beta.path("runs_dir").glob("*.json"))

    assert main(["collections", "list", "--json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert list(listed) == ["ragloupe", "alpha", "beta"]
    assert [(listed[n]["documents"], listed[n]["runs"], listed[n]["goldsets"]) for n in ("alpha", "beta")] == [
        (1, 1, 1), (1, 0, 0)]
    assert listed["ragloupe"]["current"] and not listed["alpha"]["current"]
    # The CLI searches the collection it is given.
    assert main(["--collection", "beta", "search", "pumps", "--json"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert {hit["chunk"]["doc_id"] for hit in ranking["hits"]} == {"floods"}


@pytest.fixture
def no_collection(monkeypatch):
    monkeypatch.setenv("RAGLOUPE_COLLECTION", "ragloupe")  # undone after the test, whatever --collection set
    return Settings.from_env()


def test_a_bad_collection_name_is_one_line(no_collection, capsys):
    assert main(["--collection", "../escape", "search", "pumps"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RAGLOUPE_COLLECTION='../escape'" in err and "letters, digits" in err
    with pytest.raises(SettingsInvalid):
        no_collection.replace(collection="a/b")


def test_create_makes_an_empty_collection_once(no_collection, capsys):
    assert main(["collections", "create", "gamma"]) == 0
    assert no_collection.replace(collection="gamma").path("index_dir").is_dir()
    assert main(["collections", "create", "gamma"]) == 2
    assert "exists already" in capsys.readouterr().err
