"""The own-gold-set faces in AppTest: LLM drafts on Evaluation, and the map coloured by a run."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from app_pages import run_page

from llm_server import FakeLlmServer
from test_drafting import _scripted_model





def _button(app: AppTest, label: str):
    return next(b for b in app.button if b.label == label)


def test_evaluation_drafts_with_the_configured_llm_and_lists_what_it_did_not_offer(demo_env, monkeypatch):
    with FakeLlmServer(_scripted_model()) as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OPENAI_MODEL", "fake-model")
        app = run_page("evaluation")
        app.text_input(key="goldsets.draft_name").input("drafted")
        app.number_input(key="goldsets.draft_n").set_value(8)
        _button(app, "Draft with openai:fake-model").click()
        app.run()
    assert not app.exception, [e.value for e in app.exception]
    captions = [c.value.replace("\\", "") for c in app.caption]  # markdown escapes taken off
    assert any(" of 8 drafts passed the checks (model openai:fake-model" in c for c in captions), captions
    assert any(e.label.endswith("not offered, and why") for e in app.expander)
    drafts = json.loads((demo_env.path("runs_dir") / "goldsets" / "drafts" / "drafted.json").read_text())
    assert {d["status"] for d in drafts["drafts"]} == {"offered", "rejected"}


def test_evaluation_without_an_llm_says_what_to_configure(demo_env, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    app = run_page("evaluation")
    assert any(i.value.replace("\\", "").startswith("drafting questions needs an LLM: no LLM is configured")
               for i in app.info)


def test_embeddings_map_colours_a_runs_gold_units_by_outcome(demo_env, monkeypatch, tmp_path, workspace_of):
    from ragloupe.evaluate.runs import evaluate

    monkeypatch.setenv("RAGLOUPE_PROJECTION_METHOD", "pca")
    gold = tmp_path / "two.eval.json"
    gold.write_text(json.dumps({"_meta": {"doc_id": "Grampian-2020-2021"}, "queries": [
        {"query_id": "A", "question": "What was the Total Revenue Resource Limit for 2020/21?",
         "expected_pages": [28]},
        {"query_id": "B", "question": "How large is the area NHS Grampian covers?", "expected_pages": [6]}]}))
    run = evaluate([gold], mode="bm25", ks=[1, 3], workspace=workspace_of(demo_env))
    outcomes = {"hit at 1" if q["first_relevant_rank"] == 1 else "in the top k"
                if (q["first_relevant_rank"] or 99) <= 5 else "missed" for q in run.data["queries"]}
    app = run_page("embeddings")
    app.radio(key="embeddings.colour").set_value("run outcome")
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("2 of the run's 2 gold units have chunks on the map" in c.value for c in app.caption)
    figure = json.loads(app.get("plotly_chart")[0].proto.spec)
    names = {t.get("name") for t in figure["data"]}
    assert names == outcomes | {"not a gold unit of the run"}
