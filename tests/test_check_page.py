"""The Answer page's "check an answer you paste" panel and Run info's LLM call log, in AppTest,
on the demo index, with a real local server speaking Ollama's protocol as the LLM."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app_pages import run_page

from check_fixtures import ACCOUNTS, ANSWER, NOTES, claim_checker
from llm_server import FakeLlmServer
from ragloupe.config import Settings
from ragloupe.generate.check import Source, check
from ragloupe.index.store import open_store
from ragloupe.ui.check_panel import parse_pages, pasted_sources, picked_sources





def metric(app: AppTest, label: str) -> str:
    return next(m.value for m in app.metric if m.label == label)


def verdict_shown(app: AppTest, label: str) -> str:
    """The verdict name in the badge drawn under ``label`` (ui.answer_view.show_verdict)."""
    shown = next(m.value.split("\n", 1)[1] for m in app.markdown if m.value.startswith(f":gray[{label}]"))
    return shown.split("-badge[", 1)[1].split("]", 1)[0]


@pytest.fixture
def fake_llm(demo_env, monkeypatch):
    with FakeLlmServer(claim_checker) as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
        yield Settings.from_env()


def test_pasted_sources_split_at_separator_lines():
    assert pasted_sources("one\n---\ntwo\n  ---  \n\n---\nthree") == ["one", "two", "three"]
    assert parse_pages("28, 30-31 and 7") == [7, 28, 30, 31]


def test_pasted_answer_is_checked_against_pasted_sources(fake_llm):
    app = run_page("answer")
    app.text_area(key="paste_answer").input(ANSWER)
    app.text_area(key="paste_sources").input(f"{ACCOUNTS}\n---\n{NOTES}")
    next(b for b in app.button if b.label == "Check the answer").click()
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    expected = check(ANSWER, [Source(ACCOUNTS), Source(NOTES)], fake_llm)
    assert verdict_shown(app, "Screen verdict") == expected.screen.verdict
    assert metric(app, "Claim score (0–10)") == f"{expected.answer_score:.2f}"
    claims = app.dataframe[-1].value
    assert list(claims["verdict"]) == [c.verdict for c in expected.claims] == ["supported", "contradicted", "unverified"]
    assert list(claims["evidence"]) == ["exact", "exact", "not found"]


def test_answer_checked_against_pages_picked_from_the_index(demo_env, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    settings = Settings.from_env()
    answer = "The Core Revenue Resource Limit was £1,278,771 (£000) [1]."
    app = run_page("answer")
    app.text_area(key="paste_answer").input(answer)
    app.selectbox(key="paste_doc").set_value("Grampian-2020-2021")
    app.text_input(key="paste_pages").input("28")
    next(b for b in app.button if b.label == "Check the answer").click()
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    sources = picked_sources(open_store(settings), "Grampian-2020-2021", [28])
    assert sources and all(s.page == 28 for s in sources)
    assert verdict_shown(app, "Screen verdict") == "NOT_CONTRADICTED"  # the figure is on page 28
    # No LLM: the panel offers no LLM and checks the claim without a model, saying so.
    assert app.radio(key="paste_verifier").options == ["no model (figures and words matched)", "not at all"]
    claims = app.dataframe[-1].value
    assert list(claims["verdict"]) == ["supported"] and list(claims["evidence"]) == ["exact"]
    assert "no model" in claims["rationale"][0].lower()
    app.radio(key="paste_verifier").set_value("none")
    next(b for b in app.button if b.label == "Check the answer").click()
    app.run()
    assert any("Claims not checked" in i.value for i in app.info)


def test_run_info_lists_the_llm_calls(fake_llm):
    check(ANSWER, [Source(ACCOUNTS)], fake_llm)
    app = run_page("run_info")
    calls = next(d.value for d in app.dataframe if "outcome" in d.value.columns)
    assert len(calls) == 2 and set(calls["outcome"]) == {"ok"} and set(calls["backend"]) == {"ollama"}
