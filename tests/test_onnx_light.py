"""The ONNX encoder opened from its cached export and the model directory's files (onnx_encoder.open_saved,
model_files.py): the vectors of the path over the loaded model, without importing torch or sentence-transformers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ragloupe.config import BUNDLED_MODEL, PROJECT_ROOT, TUNED_MODEL, Settings, share_cores_between_workers
from ragloupe.errors import SettingsInvalid
from ragloupe.index import model_files, onnx_encoder
from ragloupe.index.embedder import get_embedder, resolve_model_path
from ragloupe.workspace import Workspace

TEXTS = [
    "Flood defences protect the storage tanks from high water.",
    "The board spent £1.5m on estates in 2020/21 – “capital” ﬁnance, café, naïve, 東京.",
    "",
    "word " * 400,  # past max_seq_length: cut off the same way
]


@pytest.fixture(scope="module")
def both_paths(embedder):
    """The encoder over the loaded model (the export's first use) and the one opened from its files,
    over the same cached export and thread count."""
    settings = Settings.from_env()
    model = get_embedder(settings.replace(embedding_backend="torch")).model
    models = settings.path("models_dir")
    path = resolve_model_path(settings.embedding_model, models)
    loaded = onnx_encoder.load(model, path, "onnx", models, threads=2)
    opened = onnx_encoder.open_saved(path, "onnx", models, threads=2)
    return loaded, opened, model


def test_opened_encoder_gives_the_loaded_encoders_vectors_byte_for_byte(both_paths, demo_index):
    loaded, opened, _ = both_paths
    chunks = [c.text for c in Workspace.open(demo_index).chunks()[:24]]
    texts = TEXTS + chunks

    assert opened is not None and opened.path == loaded.path
    assert (opened.max_seq_length, opened.pooling, opened.dimension) == (256, "mean", 384)
    assert opened.encode(texts).tobytes() == loaded.encode(texts).tobytes()


def test_opened_tokenizer_gives_the_models_ids(both_paths):
    _, opened, model = both_paths
    expected = model.tokenizer(TEXTS, padding=True, truncation=True, max_length=256, return_tensors="np")
    got = opened.features(TEXTS)

    for name in ("input_ids", "attention_mask", "token_type_ids"):
        np.testing.assert_array_equal(got[name], expected[name])


def test_default_embedder_opens_the_cached_export_without_the_model(both_paths, tmp_path):
    loaded, _, _ = both_paths  # the default model's export
    models = tmp_path / "models"  # another models_dir: not the embedder this process already holds
    exported = onnx_encoder.cache_dir(models, resolve_model_path(TUNED_MODEL, models))
    exported.mkdir(parents=True)
    (exported / "model.onnx").symlink_to(loaded.path)
    opened = get_embedder(Settings.from_env(models_dir=models))

    assert opened.backend == "onnx" and opened.model is None and opened.onnx is not None
    assert (opened.dimension, opened.max_seq_length) == (384, 256)
    assert opened.tokenizer("a café in 2020/21", add_special_tokens=False)["input_ids"] == \
        get_embedder(Settings.from_env(embedding_backend="torch")).tokenizer(
            "a café in 2020/21", add_special_tokens=False)["input_ids"]


def test_opening_the_export_imports_neither_torch_nor_sentence_transformers(embedder):
    script = ("import sys; from ragloupe.config import Settings; from ragloupe.index.embedder import get_embedder; "
              "e = get_embedder(Settings.from_env()); e.encode(['a question']); "
              "print(e.model is None, sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
              "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=PROJECT_ROOT, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")})

    assert done.stdout.split("\n")[0] == "True []", done.stderr[-2000:]


def _model_copy(tmp_path):
    source = resolve_model_path(BUNDLED_MODEL)
    target = tmp_path / "model"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    return target


@pytest.mark.parametrize("change", [
    lambda d: _edit(d / "modules.json", lambda m: m + [{"idx": 3, "name": "3", "path": "3_Dense",
                                                         "type": "sentence_transformers.models.Dense"}]),
    lambda d: _edit(d / "1_Pooling" / "config.json", lambda c: {**c, "pooling_mode_mean_tokens": False,
                                                                "pooling_mode_max_tokens": True}),
    lambda d: _edit(d / "sentence_bert_config.json", lambda c: {**c, "do_lower_case": True}),
    lambda d: _edit(d / "tokenizer_config.json", lambda c: {**c, "padding_side": "left"}),
    lambda d: (d / "tokenizer.json").unlink(),
], ids=["dense-module", "max-pooling", "lower-casing", "left-padding", "no-tokenizer-json"])
def test_files_that_do_not_say_plainly_how_the_model_encodes_read_as_none(tmp_path, change):
    model = _model_copy(tmp_path)
    assert model_files.read(model) is not None
    change(model)

    assert model_files.read(model) is None


def _edit(path, change):
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_no_cached_export_means_the_model_is_loaded(tmp_path):
    assert onnx_encoder.open_saved(resolve_model_path(BUNDLED_MODEL), "onnx", tmp_path / "models") is None


def test_encoder_threads_default_to_the_cores_and_are_validated():
    assert Settings.from_env().encoder_threads() >= 1
    assert Settings.from_env(embed_threads=3).encoder_threads() == 3
    with pytest.raises(SettingsInvalid, match="embed_threads"):
        Settings.from_env(embed_threads=-1)


def test_serve_workers_share_the_cores(monkeypatch):
    monkeypatch.delenv("RAGLOUPE_EMBED_THREADS", raising=False)
    monkeypatch.setattr("ragloupe.config.usable_cores", lambda: 8)
    share_cores_between_workers(Settings.from_env(), 4)
    assert Settings.from_env().encoder_threads() == 2

    monkeypatch.setenv("RAGLOUPE_EMBED_THREADS", "3")  # the user's own count stands
    share_cores_between_workers(Settings.from_env(), 4)
    assert Settings.from_env().encoder_threads() == 3
