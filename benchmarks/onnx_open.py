"""The ONNX encoder opened from its cached export and the model's files, against the one built over the
loaded sentence-transformers model: the same vectors, and what each costs to start.

    RAGLOUPE_INDEX_DIR=/path/to/demo/index .venv/bin/python benchmarks/onnx_open.py [--threads 2]

In one process: opens the export from the model directory's files
(onnx_encoder.open_saved; its parts timed: importing onnxruntime and tokenizers,
the session, the tokenizer), then loads the model with sentence-transformers
(timed) and builds the encoder over it (onnx_encoder.load), then encodes every
chunk of the index and every question of the shipped gold sets (the 150 Grampian
benchmark questions, the whole-report sets, both Natech sets) with both and
compares the float32 bytes. The export must already be cached (any earlier
`ragloupe index` or search made it). Writes benchmarks/results/onnx_open.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from ragloupe.config import BUNDLED_MODEL, PROJECT_ROOT, Settings, bootstrap_environment

RESULTS = PROJECT_ROOT / "benchmarks/results/onnx_open.json"
GOLD = [*sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json")),
        *sorted((PROJECT_ROOT / "data/benchmarks/natech").glob("*.gold.json")),
        *sorted((PROJECT_ROOT / "data/benchmarks/grampian/whole").glob("*.json"))]


def timed(parts: dict, name: str, work):
    began = time.perf_counter()
    out = work()
    parts[name] = round(time.perf_counter() - began, 3)
    return out


def open_light(settings: Settings, threads: int, parts: dict):
    """The encoder from the export and the model's files, its start in parts."""
    from ragloupe.index import model_files, onnx_encoder
    from ragloupe.index.embedder import resolve_model_path

    timed(parts, "import_onnxruntime_s", lambda: __import__("onnxruntime"))
    timed(parts, "import_tokenizers_s", lambda: __import__("tokenizers"))
    path = resolve_model_path(settings.embedding_model)
    files = timed(parts, "read_model_files_s", lambda: model_files.read(path))
    export = onnx_encoder.cache_dir(settings.path("models_dir"), path) / "model.onnx"
    timed(parts, "session_s", lambda: onnx_encoder.open_session(export, threads))
    timed(parts, "tokenizer_s", lambda: model_files.QueryTokenizer(files))
    encoder = timed(parts, "open_saved_s", lambda: onnx_encoder.open_saved(path, "onnx",
                                                                           settings.path("models_dir"), threads))
    if encoder is None:
        raise SystemExit(f"no cached export under {settings.path('models_dir')} (index or search once first)")
    parts["torch_imported"] = "torch" in sys.modules
    parts["sentence_transformers_imported"] = "sentence_transformers" in sys.modules
    return encoder


def open_loaded(settings: Settings, threads: int, parts: dict):
    """The encoder over the loaded sentence-transformers model (today's path before this change)."""
    from ragloupe.index import onnx_encoder
    from ragloupe.index.embedder import resolve_model_path

    def model():
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(resolve_model_path(settings.embedding_model), device="cpu")

    loaded = timed(parts, "load_sentence_transformers_model_s", model)
    return timed(parts, "load_s", lambda: onnx_encoder.load(loaded, resolve_model_path(settings.embedding_model),
                                                            "onnx", settings.path("models_dir"), threads))


def texts_to_compare(settings: Settings) -> dict[str, list[str]]:
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.workspace import Workspace

    questions = [q.question for path in GOLD for q in load_goldset(path).queries]
    return {"chunks": [c.text for c in Workspace.open(settings).chunks()], "gold_questions": questions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    bootstrap_environment()
    load_before = os.getloadavg()
    settings = Settings.from_env(chroma_host="", embedding_model=BUNDLED_MODEL)
    light_parts: dict = {}
    light = open_light(settings, args.threads, light_parts)
    loaded_parts: dict = {}
    loaded = open_loaded(settings, args.threads, loaded_parts)
    compared = {}
    for name, texts in texts_to_compare(settings).items():
        a, b = light.encode(texts), loaded.encode(texts)
        compared[name] = {"texts": len(texts), "byte_identical": a.tobytes() == b.tobytes()}
    result = {"what": "ONNX encoder opened from the export + the model's files vs built over the loaded "
                      "sentence-transformers model: vectors compared byte for byte, start-up parts timed",
              "identical": all(c["byte_identical"] for c in compared.values()), "compared": compared,
              "opened_from_files": light_parts, "over_the_loaded_model": loaded_parts,
              "index_dir": str(settings.path("index_dir")), "threads": args.threads,
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
              "command": "RAGLOUPE_INDEX_DIR=... python " + " ".join(["benchmarks/onnx_open.py", *sys.argv[1:]])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("identical", "compared", "opened_from_files",
                                             "over_the_loaded_model")}, indent=1))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
