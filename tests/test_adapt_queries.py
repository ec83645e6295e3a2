"""`ragloupe adapt --queries` end to end on the small corpus: a query adapter learned from gold
questions, each question scored by an adapter trained without it, kept for the index only when
it wins, then used by every face until reverted. Real parts: the bundled model, embedded Chroma.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragloupe.cli import main
from ragloupe.config import BUNDLED_MODEL, Settings, adopted_query_adapter_file
from ragloupe.index.pipeline import run_index
from ragloupe.retrieve import query_adapter
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

# Each topic's questions are about another record's topic: dense on the question's own embedding
# finds the wrong record, and one linear map (power -> n1, flood -> n3, shaking -> n2) fixes all.
SWAPPED = {
    "n1": ["What starts when the electricity supply is lost?", "How long can the backup generators run?",
           "Which engines take over the cooling load in a blackout?", "What happens to cooling pumps without mains power?"],
    "n3": ["What protects the tanks when the river rises?", "How are bunds checked after high water?",
           "Who inspects tank anchoring after a flood?", "What keeps flood water away from storage tanks?"],
    "n2": ["How are pipe racks braced against shaking?", "What lets pipelines move when the ground shifts?",
           "How do long pipes avoid rupture in an earthquake?", "What flexible parts protect pipework from tremors?"],
}
# Each question the text of its own record: found first with no adapter, nothing left to gain.
VERBATIM = {
    "n1": ["The river flood defences protect the storage tanks from high water.",
           "Inspections after each flood check the bunds, the pumps and the anchoring of every tank."],
    "n2": ["A loss of mains power stops the cooling pumps.",
           "Two diesel generators start within thirty seconds and carry the cooling load for at least seventy-two hours."],
    "n3": ["Pipe racks are braced against ground shaking.",
           "Flexible joints let the long pipelines move without rupture when the ground shifts during an earthquake."],
}


def gold_file(path, asked: dict[str, list[str]], elsewhere: int = 0):
    queries = [{"query_id": f"{record}-{i}", "question": text, "doc_id": "notes", "expected_records": [record]}
               for record, texts in asked.items() for i, text in enumerate(texts)]
    queries += [{"query_id": f"x{i}", "question": f"What does the other manual say about item {i}?",
                 "doc_id": "another-manual", "expected_pages": [1]} for i in range(elsewhere)]
    path.write_text(json.dumps({"queries": queries}), encoding="utf-8")
    return path


@pytest.fixture
def indexed(small_corpus, settings, monkeypatch) -> Settings:
    """The small corpus indexed by the bundled model: these questions point at records its own space
    ranks low (the default model learned from gold questions and ranks some of them already)."""
    monkeypatch.setenv("RAGLOUPE_EMBEDDING_MODEL", BUNDLED_MODEL)
    run_index([small_corpus], Settings.from_env())
    monkeypatch.setenv("RAGLOUPE_MODE", "dense")
    return Settings.from_env()


def dense_hit1(settings: Settings, asked: dict[str, list[str]], choice: str) -> float:
    """Hit@1 of the questions by search() itself, each in its document, with the adapter ``choice``."""
    workspace = Workspace.open(settings)
    hits = [search(text, "dense", 3, {"doc_ids": ["notes"]}, workspace=workspace, query_adapter=choice).hits[0]
            .chunk.record_id == record for record, texts in asked.items() for text in texts]
    return sum(hits) / len(hits)


def test_an_adapter_that_wins_out_of_fold_is_kept_and_dense_then_searches_with_it(indexed, tmp_path, capsys):
    gold = gold_file(tmp_path / "swapped.gold.json", SWAPPED, elsewhere=1)
    before = dense_hit1(indexed, SWAPPED, "off")
    assert before <= 0.25  # the questions point at other records

    assert main(["adapt", "--queries", str(gold), "--set", "query_adapter=off", "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["questions"] == 12 and outcome["folds"] == 5 and outcome["baseline"] == "off"
    assert outcome["skipped"] == {"document not in this index": 1}
    every = outcome["comparison"]["all"]
    assert every["n"] == 12 and every["before"]["hit@1"] == pytest.approx(before, abs=1e-4)
    assert every["after"]["hit@1"] >= 0.75  # each question found by an adapter that never read it
    assert outcome["kept"] is True and outcome["overridden_by"] == ""  # --set lasts this run only

    adopted = Settings.from_env()
    assert adopted.sources["query_adapter"] == "adopted"
    assert adopted.query_adapter == outcome["adapter_file"]
    assert json.loads(adopted_query_adapter_file(adopted).read_text())["questions"] == 12
    assert dense_hit1(adopted, SWAPPED, adopted.query_adapter) >= 0.9  # it learned from all twelve
    assert main(["status"]) == 0
    assert ("question:  dense searches with the question mapped by the index's own query adapter "
            "(learned from 12 gold questions)\n") in capsys.readouterr().out

    assert main(["adapt", "--queries", "--revert"]) == 0
    assert capsys.readouterr().out.strip() == ("the index's own query adapter is no longer used: dense "
                                               "searches with RAGLOUPE_QUERY_ADAPTER=shipped")
    assert Settings.from_env().query_adapter == "shipped"
    assert main(["adapt", "--queries", "--revert"]) == 2
    assert capsys.readouterr().err.strip().endswith("this index has no query adapter of its own: nothing to revert")


def test_an_adapter_with_nothing_to_gain_is_not_kept_and_an_earlier_one_is_dropped(indexed, tmp_path, capsys):
    earlier = adopted_query_adapter_file(indexed).parent / "query-adapter-0123456789ab.npz"
    query_adapter.save(earlier, np.eye(384), indexed.embedding_model, {"questions": 30})
    adopted_query_adapter_file(indexed).write_text(json.dumps({"file": earlier.name, "model": indexed.embedding_model}))
    assert Settings.from_env().sources["query_adapter"] == "adopted"
    gold = gold_file(tmp_path / "verbatim.gold.json", {**VERBATIM, "n1": VERBATIM["n1"] * 2,
                                                        "n2": VERBATIM["n2"] * 2})
    assert main(["adapt", "--queries", str(gold), "--set", "query_adapter=off"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0] == "query adapter: 10 gold questions from 1 gold set(s)"
    assert said[-1].startswith("NOT KEPT: ")
    assert said[-1].endswith(": RAGLOUPE_QUERY_ADAPTER=off stays; the index's earlier query adapter is no longer used")
    assert not adopted_query_adapter_file(indexed).exists()
    assert Settings.from_env().sources["query_adapter"] == "default"


def test_too_few_questions_are_refused_in_one_line(indexed, tmp_path, capsys):
    gold = gold_file(tmp_path / "few.gold.json", {"n1": SWAPPED["n1"][:2], "n2": SWAPPED["n2"][:2]})
    assert main(["adapt", "--queries", str(gold)]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress lines
    assert last == ("ragloupe: 4 gold question(s) on indexed documents: a query adapter needs at least 10 to "
                    "learn from some and test on the others")


def test_an_adoption_for_another_model_or_an_explicit_setting_is_not_applied(indexed, tmp_path, monkeypatch):
    models = adopted_query_adapter_file(indexed).parent
    path = models / "query-adapter-0123456789ab.npz"
    query_adapter.save(path, np.eye(384), indexed.embedding_model, {"questions": 30})
    adopted_query_adapter_file(indexed).write_text(json.dumps({"file": path.name, "model": "another-model"}))
    assert Settings.from_env().query_adapter == "shipped"  # learned in another model's space
    adopted_query_adapter_file(indexed).write_text(json.dumps({"file": path.name, "model": indexed.embedding_model}))
    assert Settings.from_env().query_adapter == str(path)
    monkeypatch.setenv("RAGLOUPE_QUERY_ADAPTER", "off")  # the user's setting wins over the index's
    assert Settings.from_env().query_adapter == "off"


def test_index_page_learns_a_query_adapter_and_shows_what_it_kept(indexed, monkeypatch):
    from app_pages import finish, run_page
    from ragloupe.evaluate.usersets import goldsets_dir
    from ragloupe.ui import adapt_view
    from ragloupe.ui.cache import store_key

    monkeypatch.setenv("RAGLOUPE_QUERY_ADAPTER", "off")  # the baseline: dense on the question's own vector
    root = goldsets_dir(indexed)
    root.mkdir(parents=True, exist_ok=True)
    gold_file(root / "swapped.json", SWAPPED)
    app = run_page("index_manage")
    assert any(m.value == "Gold sets to learn from: 1 (swapped)" for m in app.markdown)
    app.button(key="adapt_queries_start").click().run()
    job = adapt_view._registry()[0][store_key(indexed) + " queries"]
    finish(job, app)
    assert job.error is None
    outcome = job.outcome
    assert any(s.value == f"Kept: {outcome.reason}" for s in app.success)
    assert outcome.reason.endswith("the learned query adapter is kept")
    # the environment's RAGLOUPE_QUERY_ADAPTER=off still decides what dense searches with, and the page says so
    assert [w.value for w in app.warning] == [
        "Saved for this index, but RAGLOUPE_QUERY_ADAPTER=off (from the environment) wins while it is set: "
        "unset it to search with the index's own query adapter."]
    assert Settings.from_env().query_adapter == "off"
    assert any(c.value.startswith("12 gold questions from 1 gold set(s). Before: RAGLOUPE_QUERY_ADAPTER=off; "
                                  "after: each question searched with an adapter learned from the other 4 of 5 folds")
               for c in app.caption), [c.value for c in app.caption]
    table = next(d.value for d in app.dataframe if "Hit@1 before" in d.value.columns)
    every = table.set_index("gold set").loc["all"]
    assert every["questions"] == 12
    assert every["Hit@1 before"] == pytest.approx(dense_hit1(indexed.replace(query_adapter="off"), SWAPPED, "off"),
                                                  abs=1e-4)
    assert every["Hit@1 after"] >= 0.75
