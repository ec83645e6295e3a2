"""The ONNX embedding backends (index/onnx_encoder.py): same vectors as torch, cached export, an index setting."""

from __future__ import annotations

import numpy as np
import pytest

from ragloupe.config import Settings
from ragloupe.errors import SettingsInvalid
from ragloupe.index import onnx_encoder
from ragloupe.index.embedder import get_embedder

SENTENCES = [
    "Flood defences protect the storage tanks from high water.",
    "The board spent £1.5m on estates in 2020/21.",
    "What is a Natech accident?",
    "Operators should identify a ride-out crew with the minimum personnel needed to secure the site.",
]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """One export per test module: exporting takes seconds, loading it after takes milliseconds."""
    return tmp_path_factory.mktemp("models")


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_onnx_backend_embeddings_agree_with_torch(backend, models_dir, embedder):
    onnx = get_embedder(Settings.from_env(models_dir=models_dir, embedding_backend=backend))
    expected = embedder.encode(SENTENCES)
    got = onnx.encode(SENTENCES)

    assert onnx.onnx is not None and onnx.backend == backend
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    assert (got * expected).sum(axis=1).min() > 0.99


def test_export_is_cached_under_models_dir(models_dir, embedder):
    get_embedder(Settings.from_env(models_dir=models_dir, embedding_backend="onnx-int8"))
    (exported,) = (models_dir / "onnx").iterdir()

    assert sorted(p.name for p in exported.iterdir()) == ["model-int8.onnx", "model.onnx"]
    assert exported == onnx_encoder.cache_dir(models_dir, _bundled_path())


def _bundled_path() -> str:
    from ragloupe.config import BUNDLED_MODEL
    from ragloupe.index.embedder import resolve_model_path

    return resolve_model_path(BUNDLED_MODEL)


def test_backend_is_an_index_setting_only_when_not_torch():
    default = Settings.from_env()
    onnx = default.replace(embedding_backend="onnx-int8")

    assert "embedding_backend" not in default.shaping_settings()
    assert onnx.shaping_settings()["embedding_backend"] == "onnx-int8"
    assert onnx.index_fingerprint() != default.index_fingerprint()


def test_unknown_backend_is_refused_in_one_line(models_dir):
    with pytest.raises(SettingsInvalid, match="embedding_backend='gpu'.*wants one of torch, onnx, onnx-int8"):
        Settings.from_env(models_dir=models_dir, embedding_backend="gpu")


def test_backend_needs_the_model_as_a_local_directory(models_dir, embedder):
    with pytest.raises(onnx_encoder.OnnxUnavailable, match="needs the model as a local directory"):
        onnx_encoder.load(embedder.model, "some-hub-name/not-a-path", "onnx", models_dir)


def test_masked_mean_pooling_ignores_padding():
    hidden = np.array([[[1.0, 1.0], [3.0, 3.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])

    np.testing.assert_allclose(onnx_encoder.pool(hidden, mask, "mean"), [[2.0, 2.0]])
    np.testing.assert_allclose(onnx_encoder.pool(hidden, mask, "cls"), [[1.0, 1.0]])
