"""The Answer page says one thing about a sentence: its verdict worded and coloured the same in
the answer's verdict, the token table and the citation panel; the backend it starts on when no
Ollama answers; the picker, not an environment variable, in its advice. AppTest on the demo
index, with a real local server speaking Ollama's protocol as the LLM (tests/llm_server.py)."""

from __future__ import annotations

import socket

import pytest
from streamlit.testing.v1 import AppTest

from app_pages import assert_clean, run_page
from llm_server import FakeLlmServer, chat_reply


# A figure no Grampian report holds, written as if it were the board's pay.
MADE_UP = "£7,654,321"
MADE_UP_ANSWER = f"The Board paid its non-executive members {MADE_UP} in remuneration [1]."
QUESTION = "How much were the non-executive board members paid?"


def verdict_shown(app: AppTest, label: str) -> str:
    """The verdict markdown drawn under ``label`` (ui.answer_view.show_verdict)."""
    return next(m.value.split("\n", 1)[1] for m in app.markdown if m.value.startswith(f":gray[{label}]"))


def everything_said(app: AppTest) -> list[str]:
    """Every text, caption, markdown and html body on the page."""
    return ([t.value for t in app.text] + [c.value for c in app.caption] + [m.value for m in app.markdown]
            + [element.proto.body for element in app.get("html")])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def made_up_answer(demo_env, monkeypatch):
    """The Answer page after the LLM answered with a made-up figure, citing passage [1]."""
    with FakeLlmServer(lambda path, body: chat_reply(path, MADE_UP_ANSWER)) as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
        app = run_page("answer")
        app.text_input(key="answer.question").input(QUESTION)
        next(b for b in app.button if b.label == "Answer").click()
        app.run()
        assert_clean(app)
        yield app


def test_a_made_up_figure_is_red_and_unsupported_wherever_the_page_names_it(made_up_answer):
    app = made_up_answer

    unsupported = ":red-badge[UNSUPPORTED] in none of the passages"
    assert verdict_shown(app, "Screen verdict") == unsupported
    assert verdict_shown(app, "The cited sentence's screen verdict") == unsupported
    tokens = next(d for d in app.dataframe if "found in passages" in d.value.columns)
    assert list(tokens.value["token"]) == [MADE_UP] and list(tokens.value["verdict"]) == ["UNSUPPORTED"]
    assert "background-color: #ffd6d6" in tokens.proto.arrow_data.styler.styles  # the red of the badge


def test_an_unsupported_sentence_is_never_called_evidence_located(made_up_answer):
    said = everything_said(made_up_answer)

    assert not any("evidence located" in line for line in said)
    assert any(f"{MADE_UP} is in none of the passages: nothing in this passage is marked as evidence"
               in line for line in said)
    passages = [e.proto.body for e in made_up_answer.get("html") if "non-executive members" not in e.proto.body]
    assert passages and not any("<mark>" in body for body in passages)  # nothing marked as evidence


def test_a_one_sentence_answer_is_shown_once(made_up_answer):
    said = everything_said(made_up_answer)

    assert sum("non-executive members" in line for line in said) == 1


def test_without_ollama_the_page_starts_on_the_embedded_model_and_says_why(demo_env, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", f"http://127.0.0.1:{closed_port()}")

    app = run_page("answer")

    assert app.selectbox(key="answer.backend").value == "embedded"
    note = next(i.value for i in app.info if "embedded Gemma 270M" in i.value)
    assert "picked because Ollama did not answer" in note and 'Pick Ollama in "LLM backend"' in note


def test_advice_for_an_unreachable_ollama_offers_the_picker_not_an_environment_variable(demo_env, monkeypatch):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "embedded")
    monkeypatch.setenv("OLLAMA_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    app = run_page("answer")

    app.selectbox(key="answer.backend").set_value("ollama")
    app.run()

    warning = next(w.value for w in app.warning if w.value.startswith("LLM:"))
    assert 'pick the embedded Gemma 270M in "LLM backend" above' in warning
    assert "RAGLOUPE_LLM_BACKEND" not in warning


def test_a_reachable_ollama_is_kept_with_no_note(demo_env, monkeypatch):
    with FakeLlmServer() as server:
        monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "ollama")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        monkeypatch.setenv("RAGLOUPE_OLLAMA_MODEL", "fake-model")
        app = run_page("answer")
    assert app.selectbox(key="answer.backend").value == "ollama"
    assert not any("embedded Gemma 270M" in i.value for i in app.info)


def test_every_verdict_has_one_colour_and_a_pass_colour_only_where_a_passage_backs_it():
    from typing import get_args

    from ragloupe.generate.claims import ClaimVerdict
    from ragloupe.generate.groundedness import Verdict
    from ragloupe.generate.verdicts import VERDICTS, badge

    assert set(VERDICTS) == set(get_args(Verdict)) | set(get_args(ClaimVerdict))
    assert {name for name, look in VERDICTS.items() if look.colour == "green"} == {"NOT_CONTRADICTED", "supported"}
    assert {name for name, look in VERDICTS.items() if look.colour == "red"} == {"UNSUPPORTED", "contradicted"}
    assert badge("MISATTRIBUTED") == ":orange-badge[MISATTRIBUTED] in a retrieved passage, but not the one cited"
