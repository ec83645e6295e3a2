"""The ONNX embedding backends (index/onnx_encoder.py): onnx the default, same vectors as torch, cached
export, torch standing in (with a notice) when the export fails, int8 an index setting."""

from __future__ import annotations

import numpy as np
import pytest

from ragloupe.config import BUNDLED_MODEL, TUNED_MODEL, Settings
from ragloupe.errors import EmbedderUnavailable, SettingsInvalid
from ragloupe.index import onnx_encoder
from ragloupe.index.embedder import get_embedder, resolve_model_path
from ragloupe.index.manifest import Manifest

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


@pytest.fixture(scope="module")
def torch_embedder(embedder):
    """The model itself encoding (the session's embedder shares its loaded model: no second load)."""
    return get_embedder(Settings.from_env(embedding_backend="torch"))


def test_default_backend_encodes_with_the_onnx_export_and_torch_vectors(models_dir, torch_embedder):
    default = get_embedder(Settings.from_env(models_dir=models_dir))
    expected = torch_embedder.encode(SENTENCES)
    got = default.encode(SENTENCES)

    assert default.backend == "onnx" and default.onnx is not None and default.notice is None
    assert default.onnx.path.is_relative_to(models_dir / "onnx")
    assert torch_embedder.backend == "torch" and torch_embedder.onnx is None
    assert got.shape == expected.shape and got.dtype == np.float32
    assert (got * expected).sum(axis=1).min() > 0.9999


def test_int8_backend_embeddings_are_close_to_torch(models_dir, torch_embedder):
    int8 = get_embedder(Settings.from_env(models_dir=models_dir, embedding_backend="onnx-int8"))
    expected = torch_embedder.encode(SENTENCES)
    got = int8.encode(SENTENCES)

    assert int8.onnx is not None and int8.backend == "onnx-int8"
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    assert (got * expected).sum(axis=1).min() > 0.99


def _unwritable(tmp_path):
    """A models_dir the export cannot be written under: a file stands where the directory should."""
    blocker = tmp_path / "models"
    blocker.write_text("not a directory")
    return blocker


def _corrupt(tmp_path):
    """A models_dir whose cached export is truncated garbage where model.onnx should be."""
    models = tmp_path / "models"
    exported = onnx_encoder.cache_dir(models, resolve_model_path(BUNDLED_MODEL))
    exported.mkdir(parents=True)
    (exported / "model.onnx").write_bytes(b"\x08\x07garbage, not a protobuf")
    return models


@pytest.mark.parametrize("broken", [_unwritable, _corrupt])
def test_a_failing_export_falls_back_to_torch_with_one_notice(broken, tmp_path, capsys):
    # The bundled model: it sits in its package, so only the export needs models_dir.
    torch_embedder = get_embedder(Settings.from_env(embedding_backend="torch", embedding_model=BUNDLED_MODEL))
    capsys.readouterr()
    settings = Settings.from_env(models_dir=broken(tmp_path), embedding_model=BUNDLED_MODEL)
    fallback = get_embedder(settings)
    again = get_embedder(settings)
    stderr = capsys.readouterr().err

    assert fallback.backend == "torch" and fallback.onnx is None
    assert fallback.notice.startswith("note: encoding with torch, not onnx (the onnx embedding backend "
                                      "could not be prepared")
    assert stderr.splitlines() == [fallback.notice]  # one line, once, no traceback
    assert again is fallback
    np.testing.assert_array_equal(fallback.encode(SENTENCES), torch_embedder.encode(SENTENCES))


def test_a_failing_int8_export_is_an_error_not_a_stand_in(tmp_path, embedder):
    with pytest.raises(onnx_encoder.OnnxUnavailable,
                       match="onnx-int8 embedding backend could not be prepared"):
        get_embedder(Settings.from_env(models_dir=_unwritable(tmp_path), embedding_backend="onnx-int8",
                                       embedding_model=BUNDLED_MODEL))


def test_the_default_model_under_a_models_dir_it_cannot_write_is_refused_in_a_line(tmp_path):
    # The default model is made under models_dir from the bundled weights and the shipped delta;
    # no other model's vectors stand in for it.
    with pytest.raises(EmbedderUnavailable) as refused:
        get_embedder(Settings.from_env(models_dir=_unwritable(tmp_path)))
    message = str(refused.value)
    assert message.startswith(f"cannot make the question-tuned model under {tmp_path / 'models'} (")
    assert message.endswith("set RAGLOUPE_MODELS_DIR to a folder this process can write, or "
                            "RAGLOUPE_EMBEDDING_MODEL=bundled:all-MiniLM-L6-v2")
    assert "\n" not in message


def test_export_is_cached_under_models_dir(models_dir, embedder):
    get_embedder(Settings.from_env(models_dir=models_dir, embedding_backend="onnx-int8"))
    (exported,) = (models_dir / "onnx").iterdir()

    assert sorted(p.name for p in exported.iterdir()) == ["export.lock", "model-int8.onnx", "model.onnx"]
    assert exported == onnx_encoder.cache_dir(models_dir, resolve_model_path(TUNED_MODEL, models_dir))


def test_export_key_changes_with_the_library_versions(tmp_path, monkeypatch):
    model = resolve_model_path(BUNDLED_MODEL)
    before = onnx_encoder.cache_dir(tmp_path, model)
    monkeypatch.setattr(onnx_encoder, "library_versions", lambda: "torch=0.0|onnxruntime=0.0")

    assert onnx_encoder.cache_dir(tmp_path, model) != before


def test_torch_and_onnx_share_the_index_fingerprint_int8_does_not():
    onnx = Settings.from_env()
    torch = onnx.replace(embedding_backend="torch")
    int8 = onnx.replace(embedding_backend="onnx-int8")

    assert onnx.embedding_backend == "onnx"
    assert torch.index_fingerprint() == onnx.index_fingerprint()
    assert "embedding_backend" not in onnx.shaping_settings()
    assert int8.shaping_settings()["embedding_backend"] == "onnx-int8"
    assert int8.index_fingerprint() != onnx.index_fingerprint()


def test_the_index_records_which_backend_encoded_it_and_serves_either(demo_index, embedder):
    manifest = Manifest.load(demo_index)

    assert manifest.encoded_with == [embedder.backend]
    assert manifest.stale_reason(demo_index.replace(embedding_backend="torch")) is None
    assert manifest.stale_reason(demo_index.replace(embedding_backend="onnx")) is None
    assert "embedding_backend" in manifest.stale_reason(demo_index.replace(embedding_backend="onnx-int8"))


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
