"""What each setting accepts beyond its type, and the checks that say so in one line.

Settings (config.py) coerces every value through validate_value when it is
built: a string from the environment or .env, or a Python value from an
override. A refusal is a BadValue saying what is accepted; config.py adds
which variable it was and where it came from.
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{1,61}[A-Za-z0-9]")  # also a valid Chroma name

# Types come from the field annotations; the two tables below add what a type
# cannot say. A new field is type-checked with no entry here; give it one when
# only some values make sense.

# Settings that take one of a few words (compared lower-cased). Each list must
# equal the constant of the module that implements it (a test checks).
CHOICES: dict[str, tuple[str, ...]] = {
    "mode": ("dense", "bm25", "hybrid", "hybrid+rerank", "dense+rewrite", "bm25+rewrite",
             "hybrid+rewrite", "hybrid+rerank+rewrite", "hybrid+read"),  # retrieve.search.MODES
    "fusion": ("rrf", "minmax", "learned"),  # retrieve.fusion.METHODS
    "learned_fallback": ("rrf", "minmax"),  # retrieve.fusion.FIXED_METHODS
    "bm25_backend": ("rank_bm25", "bm25s"),  # index.lexical.BACKENDS
    "page_aggregation": ("max", "sum", "rrf"),  # retrieve.aggregate.RULES
    "dynamic_cut": ("none", "margin", "threshold"),  # retrieve.cut.RULES
    "llm_backend": ("ollama", "openai", "embedded", "none"),  # generate.llm.BACKENDS
    "check_verifier": ("auto", "llm", "model-free"),  # generate.check.VERIFIERS
    "check_evidence": ("per-claim", "per-claim-bm25", "whole-sources"),  # generate.check.EVIDENCE
    "projection_method": ("umap", "pca"),  # diagnostics.projections.METHODS
    "table_strategy": ("off", "whole", "rows", "row_blocks", "two_stage"),  # table_chunks.STRATEGIES
    "unit_view": ("none", "records", "all"),  # retrieve.units.VIEWS
    "unit_dense": ("centroid", "max", "mean", "top2"),  # retrieve.units.DENSE_RULES
    "embedding_backend": ("torch", "onnx", "onnx-int8", "ollama", "openai"),  # index.embedder.BACKENDS
    "device": ("auto", "cpu", "cuda", "mps"),  # devices.DEVICES
    "adapted_model": ("auto", "off"),  # config.ADAPTED_MODEL_CHOICES
    "reader_signal": ("yesno", "likelihood"),  # retrieve.reader.SIGNALS
}


class Bound(NamedTuple):
    """An allowed range; ``above`` makes the lower end exclusive (timeouts must be > 0)."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    def holds(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        low = "" if self.low is None else f"{'>' if self.above else '>='} {self.low:g}"
        if self.high is None:
            return low
        return f"between {self.low:g} and {self.high:g}" if self.low is not None else f"<= {self.high:g}"


_AT_LEAST_1, _AT_LEAST_0, _SHARE, _POSITIVE = Bound(1), Bound(0), Bound(0, 1), Bound(0, above=True)
BOUNDS: dict[str, Bound] = {
    "embed_batch_size": _AT_LEAST_1, "embed_threads": Bound(0, 256), "embedding_timeout_s": _POSITIVE,
    "boilerplate_min_share": _SHARE, "boilerplate_min_pages": _AT_LEAST_0,
    "quality_max_nonalpha": _SHARE, "quality_min_chars": _AT_LEAST_0, "quality_reject_garbage": _SHARE,
    "boilerplate_edge_lines": _AT_LEAST_0, "boilerplate_min_run": _AT_LEAST_0,
    "pdf_timeout_s": _POSITIVE, "pdf_max_memory_mb": _AT_LEAST_0,  # 0: no memory cap
    "record_min_chars": _AT_LEAST_0, "max_upload_mb": _AT_LEAST_1, "markup_max_mb": _AT_LEAST_1,
    "chunk_tokens": _AT_LEAST_1, "chunk_overlap": _AT_LEAST_0,
    "chroma_port": Bound(1, 65535),
    "chroma_timeout_s": _POSITIVE, "attached_timeout_s": _POSITIVE, "record_max_kb": _AT_LEAST_1, "records_file_max_mb": _AT_LEAST_1,
    "top_k": _AT_LEAST_1, "candidate_window": _AT_LEAST_1, "rrf_k": _AT_LEAST_0,
    "weight_dense": _AT_LEAST_0, "weight_bm25": _AT_LEAST_0,
    "bm25_k1": _AT_LEAST_0, "bm25_b": _SHARE, "lexical_rerank_weight": _SHARE,
    "rerank_window": _AT_LEAST_0, "dynamic_cut_value": _AT_LEAST_0,
    "reader_window": _AT_LEAST_1, "reader_weight": _SHARE, "reader_passage_chars": _AT_LEAST_0,
    "period_boost": _AT_LEAST_0, "fiscal_year_start_month": Bound(1, 12),
    "llm_timeout_s": _POSITIVE, "llm_max_tokens": _AT_LEAST_1, "rewrite_timeout_s": _POSITIVE,
    "context_budget_tokens": _AT_LEAST_1,
    "projection_max_points": _AT_LEAST_1, "llm_probe_timeout_s": _POSITIVE,
    "explorer_page_size": _AT_LEAST_1,
    "table_block_rows": _AT_LEAST_1, "ocr_dpi": Bound(72, 600), "prefer_tables_boost": _AT_LEAST_0,
    "unit_weight_bm25": _AT_LEAST_0, "unit_weight_dense": _AT_LEAST_0, "unit_bm25_b": _SHARE, "dense_sentence_weight": _SHARE,
    "api_port": Bound(1, 65535), "api_max_body_kb": _AT_LEAST_1, "api_max_sources": _AT_LEAST_1,
    "check_batch_tokens": Bound(100, 100_000),
    "adapt_max_steps": _AT_LEAST_0, "adapt_max_seconds": _POSITIVE, "adapt_batch_size": Bound(2, 1024),
    "adapt_learning_rate": Bound(0, 1), "adapt_max_tokens": Bound(16, 512),
    "adapt_merge_weight": _SHARE,
}

_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class BadValue(ValueError):
    """What is wrong with one value (the caller adds which setting and where it came from)."""


def validate_value(name: str, kind: str, value: Any) -> Any:
    """``value`` (a string from the environment, or a Python value) as the type ``kind``
    names, checked against CHOICES and BOUNDS; raises BadValue saying what is accepted."""
    if kind == "Path":
        if not isinstance(value, (str, os.PathLike)):
            raise BadValue("wants a path")
        return Path(value)
    if kind == "bool":
        return _as_bool(value)
    bound = BOUNDS.get(name)
    if kind in ("int", "float"):
        accepted = f"wants a {'whole ' if kind == 'int' else ''}number"
        accepted += f" {bound.describe()}" if bound else ""
        value = _as_int(value) if kind == "int" else _as_float(value)
        if value is None or (bound is not None and not bound.holds(value)):
            raise BadValue(accepted)
    elif kind == "str":
        if not isinstance(value, str):
            raise BadValue("wants text")
        if name in CHOICES:
            value = _as_choice(name, value)
        if name == "prefer_tables_sections":
            try:
                re.compile(value)
            except re.error as exc:
                raise BadValue(f"wants a regular expression ({exc})") from None
        if name == "query_adapter":
            value = value.lower() if value.lower() in ("shipped", "off") else value
            if value not in ("shipped", "off") and not Path(value).expanduser().is_file():
                raise BadValue("wants shipped, off or the path of a query adapter file (there is no such file)")
        if name == "collection" and not COLLECTION_NAME.fullmatch(value):
            raise BadValue("wants 3-63 letters, digits, - or _, starting and ending with a letter or digit")
    return value


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise BadValue("wants true or false (also accepted: 1/0, yes/no, on/off)")


def _as_int(value: Any) -> int | None:
    """An int, or None when ``value`` is no whole number (True is not 1 here)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _as_float(value: Any) -> float | None:
    """A finite float, or None."""
    number = None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    return number if number is not None and math.isfinite(number) else None


def _as_choice(name: str, value: str) -> str:
    allowed = CHOICES[name]
    word = value.strip().lower()
    if name == "mode":  # flags in any order: hybrid+rewrite+rerank = hybrid+rerank+rewrite
        base, *flags = word.split("+")
        word = "+".join([base, *sorted(flags)])
    if word in allowed:
        return word
    close = difflib.get_close_matches(word, allowed, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise BadValue(f"wants one of {', '.join(allowed)}{hint}")
