"""Settings are validated once, all of them, with one line a person can act on."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from ragloupe.config import CHOICES, PROJECT_ROOT, Settings, setting_warnings
from ragloupe.errors import SettingsInvalid


def test_a_word_for_a_number_names_the_variable_the_value_and_what_is_accepted(monkeypatch):
    monkeypatch.setenv("RAGLOUPE_TOP_K", "ten")
    with pytest.raises(SettingsInvalid) as caught:
        Settings.from_env()
    message = str(caught.value)
    assert "\n" not in message
    assert "RAGLOUPE_TOP_K='ten'" in message and "whole number >= 1" in message


@pytest.mark.parametrize("word", ["ture", "flase", "enabled", ""])
def test_a_misspelt_boolean_is_refused_not_read_as_false(monkeypatch, word):
    monkeypatch.setenv("RAGLOUPE_LEXICAL_RERANK", word)
    with pytest.raises(SettingsInvalid, match="RAGLOUPE_LEXICAL_RERANK.*true or false"):
        Settings.from_env()


@pytest.mark.parametrize("word, expected", [("true", True), ("YES", True), (" on ", True), ("1", True),
                                            ("false", False), ("No", False), ("off", False), ("0", False)])
def test_every_accepted_boolean_spelling(monkeypatch, word, expected):
    monkeypatch.setenv("RAGLOUPE_CHUNK_CONTEXT", word)
    assert Settings.from_env().chunk_context is expected


def test_a_choice_outside_its_list_is_refused_with_the_closest_allowed_value(monkeypatch):
    monkeypatch.setenv("RAGLOUPE_FUSION", "rff")
    with pytest.raises(SettingsInvalid, match=r"RAGLOUPE_FUSION='rff'.*one of rrf, minmax.*did you mean rrf"):
        Settings.from_env()


def test_choices_are_compared_without_case_and_mode_flags_in_any_order(monkeypatch):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "Ollama")
    monkeypatch.setenv("RAGLOUPE_MODE", "hybrid+rewrite+rerank")
    settings = Settings.from_env()
    assert (settings.llm_backend, settings.mode) == ("ollama", "hybrid+rerank+rewrite")


@pytest.mark.parametrize("name, value, accepted", [
    ("RAGLOUPE_BM25_B", "1.5", "between 0 and 1"),
    ("RAGLOUPE_LLM_TIMEOUT_S", "0", "> 0"),
    ("CHROMA_PORT", "70000", "between 1 and 65535"),
    ("RAGLOUPE_WEIGHT_DENSE", "nan", "number >= 0"),
])
def test_values_out_of_range_are_refused(monkeypatch, name, value, accepted):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsInvalid, match=rf"{name}='{value}'.*{accepted}"):
        Settings.from_env()


def test_several_bad_settings_are_one_line_and_a_value_from_dotenv_says_so(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text("RAGLOUPE_CHUNK_TOKENS=big\n", encoding="utf-8")
    monkeypatch.setenv("RAGLOUPE_FUSION", "mean")
    with pytest.raises(SettingsInvalid) as caught:
        Settings.from_env(env_file)
    message = str(caught.value)
    assert "\n" not in message
    assert "RAGLOUPE_CHUNK_TOKENS='big' (from .env)" in message
    assert "RAGLOUPE_FUSION='mean' (from the environment)" in message


def test_overrides_are_checked_and_named_by_their_field(settings):
    with pytest.raises(SettingsInvalid, match="top_k='0': wants a whole number >= 1"):
        settings.replace(top_k="0")
    with pytest.raises(SettingsInvalid, match="'topk' is not a setting.*did you mean top_k"):
        settings.replace(topk=3)
    assert settings.replace(weight_dense=2).weight_dense == 2.0


def test_a_field_added_later_is_validated_from_its_type_alone():
    extended = dataclasses.make_dataclass("Extended", [("new_window", "int", 5), ("new_flag", "bool", False)],
                                          bases=(Settings,), frozen=True)
    assert extended(new_window="7", new_flag="on").new_window == 7
    with pytest.raises(SettingsInvalid, match="RAGLOUPE_NEW_WINDOW"):
        extended(new_window="seven")
    with pytest.raises(SettingsInvalid, match="RAGLOUPE_NEW_FLAG"):
        extended(new_flag="maybe")


def test_each_choice_list_is_the_one_its_module_implements():
    from ragloupe.config import ADAPTED_MODEL_CHOICES
    from ragloupe.diagnostics.projections import METHODS as PROJECTIONS
    from ragloupe.generate import check
    from ragloupe.generate.llm import BACKENDS as LLMS
    from ragloupe.index.lexical import BACKENDS as BM25S
    from ragloupe import devices
    from ragloupe.index import embedder
    from ragloupe.retrieve import aggregate, cut, fusion, reader, units
    from ragloupe.retrieve.search import MODES
    from ragloupe.table_chunks import STRATEGIES

    implemented = {"mode": MODES, "fusion": fusion.METHODS, "learned_fallback": fusion.FIXED_METHODS,
                   "bm25_backend": BM25S,
                   "page_aggregation": aggregate.RULES, "dynamic_cut": cut.RULES,
                   "llm_backend": LLMS, "projection_method": PROJECTIONS,
                   "table_strategy": STRATEGIES, "unit_view": units.VIEWS, "unit_dense": units.DENSE_RULES,
                   "embedding_backend": embedder.BACKENDS, "device": devices.DEVICES,
                   "check_verifier": check.VERIFIERS, "check_evidence": check.EVIDENCE,
                   "adapted_model": ADAPTED_MODEL_CHOICES,
                   "reader_signal": reader.SIGNALS}
    assert {name: set(values) for name, values in CHOICES.items()} == \
        {name: set(values) for name, values in implemented.items()}


def test_a_misspelt_variable_name_is_warned_about_with_the_closest_name(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text("RAGLOUPE_CHUNK_TOKEN=128\n", encoding="utf-8")
    monkeypatch.setenv("RAGLOUPE_TOPK", "3")
    lines = setting_warnings(env_file)
    assert any("RAGLOUPE_TOPK" in line and "did you mean RAGLOUPE_TOP_K?" in line for line in lines)
    assert any("RAGLOUPE_CHUNK_TOKEN " in line and "(in the .env)" in line
               and "did you mean RAGLOUPE_CHUNK_TOKENS?" in line for line in lines)
    assert not any("RAGLOUPE_INDEX_DIR" in line for line in lines)  # set by the fixture: a real name


def test_the_cli_started_with_a_bad_setting_prints_one_line_and_exits_2(monkeypatch):
    monkeypatch.setenv("RAGLOUPE_TOP_K", "ten")
    done = subprocess.run([sys.executable, "-c", "import sys; from ragloupe.cli import main; sys.exit(main())",
                           "status"], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == ["ragloupe: RAGLOUPE_TOP_K='ten' (from the environment): "
                                        "wants a whole number >= 1"]


def test_the_cli_warns_about_an_unknown_name_and_goes_on(monkeypatch, capsys):
    from ragloupe.cli import main

    monkeypatch.setenv("RAGLOUPE_TOPK", "3")
    assert main(["runs"]) == 0
    assert "did you mean RAGLOUPE_TOP_K?" in capsys.readouterr().err


def test_the_app_shows_a_bad_setting_as_one_message_not_an_exception(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("RAGLOUPE_TOP_K", "ten")
    app = AppTest.from_file(str(PROJECT_ROOT / "pages" / "index_manage.py"), default_timeout=120)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert [e.value for e in app.error] == ["RAGLOUPE_TOP_K='ten' (from the environment): "
                                            "wants a whole number >= 1"]


def test_logging_an_error_never_fails_on_invalid_settings(monkeypatch):
    from ragloupe.logs import log_exception

    monkeypatch.setenv("RAGLOUPE_TOP_K", "ten")
    assert log_exception(RuntimeError("boom")).name == "ragloupe.log"


@pytest.mark.parametrize("argv", [["search", "q", "--set", "top_k=zero"],
                                  ["eval", "missing.json", "--set", "top_k=zero"]])
def test_a_bad_set_value_is_one_line_and_exit_2_in_every_command(argv, capsys):
    from ragloupe.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == ["ragloupe: --set: top_k='zero': wants a whole number >= 1"]


def test_a_set_item_without_a_value_is_refused(capsys):
    from ragloupe.cli import main

    assert main(["search", "q", "--set", "top_k"]) == 2
    assert "--set wants NAME=VALUE, got 'top_k'" in capsys.readouterr().err
