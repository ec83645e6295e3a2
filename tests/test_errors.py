"""Named errors live in errors.py, each with a kind the faces map; actions are worded per face."""

from __future__ import annotations

import ast
import inspect
import pickle

import pytest

from ragloupe import errors
from ragloupe.config import PROJECT_ROOT
from ragloupe.errors import COMMAND_LINE_WORDS, Action, Kind, RagloupeError, StaleIndex

SRC = PROJECT_ROOT / "src" / "ragloupe"
# Still defined where they are raised, inside code being reworked this round (retrieve/,
# evaluate/tune_space.py); api/app.py gives them their kinds until they move here.
PENDING = {"InvalidSearch", "LearnedModelMismatch", "RerankerUnavailable", "TuningError"}


def _named_errors() -> list[type[RagloupeError]]:
    return [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
            if issubclass(cls, RagloupeError) and cls.__module__ == errors.__name__]


def test_no_named_error_is_defined_outside_errors_py():
    names = {cls.__name__ for cls in _named_errors()} | PENDING
    outside = []
    for path in SRC.rglob("*.py"):
        if path.name == "errors.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & names and node.name not in PENDING:
                    outside.append(f"{path.relative_to(SRC)}: {node.name}")
    assert outside == []


def test_every_kind_has_an_http_status_and_every_error_a_kind():
    from ragloupe.api.app import STATUS, status_for

    assert set(STATUS) == set(Kind)
    for cls in _named_errors():
        assert isinstance(cls.kind, Kind), cls
        assert status_for(cls("x")) == STATUS[cls.kind]


@pytest.mark.parametrize("name, status", [
    ("IndexBusy", 409), ("StaleIndex", 409), ("StoreTimeout", 503), ("EmbedderUnavailable", 503),
    ("LlmUnavailable", 503), ("LlmBadOutput", 502), ("RunNotFound", 404), ("UnknownJob", 404),
    ("UnsupportedFile", 415), ("UploadRefused", 403), ("UploadTooLarge", 413),
    ("GoldSetInvalid", 422), ("SettingsInvalid", 422), ("CorruptPdf", 400)])
def test_the_api_answers_each_error_with_its_kinds_status(name, status):
    from ragloupe.api.app import status_for

    assert status_for(getattr(errors, name)("x")) == status


def test_the_errors_still_defined_in_retrieve_and_tuning_keep_their_statuses():
    from ragloupe.api.app import status_for
    from ragloupe.evaluate.tune_space import TuningError
    from ragloupe.retrieve.learned import LearnedModelMismatch
    from ragloupe.retrieve.rerank import RerankerUnavailable
    from ragloupe.retrieve.search import InvalidSearch

    assert [status_for(cls("x")) for cls in (InvalidSearch, LearnedModelMismatch,
                                            RerankerUnavailable, TuningError)] == [422, 409, 503, 400]


def test_every_action_has_words_in_each_face():
    from ragloupe.ui.guard import APP_WORDS

    assert set(COMMAND_LINE_WORDS) == set(Action) == set(APP_WORDS)
    assert not any("ragloupe" in words or "--" in words for words in APP_WORDS.values())


def test_an_unreadable_manifest_says_what_to_do_in_each_faces_words(tmp_path):
    from ragloupe.config import Settings
    from ragloupe.index.manifest import MANIFEST_NAME, Manifest
    from ragloupe.ui.guard import app_message

    (tmp_path / MANIFEST_NAME).write_text("{not json", encoding="utf-8")
    with pytest.raises(StaleIndex) as caught:
        Manifest.load(Settings.from_env(index_dir=tmp_path, chroma_host=""))
    assert str(caught.value).endswith("is unreadable (JSONDecodeError): run `ragloupe index --rebuild`")
    assert app_message(caught.value).endswith("is unreadable (JSONDecodeError): "
                                              "rebuild it on the Index page")


def test_an_error_keeps_its_action_across_processes():
    error = StaleIndex(f"stale: {errors.ACTION}", action=Action.REBUILD_INDEX)
    assert str(pickle.loads(pickle.dumps(error))) == "stale: run `ragloupe index --rebuild`"
