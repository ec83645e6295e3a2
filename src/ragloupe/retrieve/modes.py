"""What a search asks for: its mode (engines and optional stages), its filters, and their checks.

Shared by fetch() (which runs the engines a mode names) and replay() (which
runs the stages after them), so both read a mode and a filter the same way.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from ragloupe.errors import InvalidSearch

BASES = {"dense": ("dense",), "bm25": ("bm25",), "hybrid": ("dense", "bm25")}
MODES = ("dense", "bm25", "hybrid", "hybrid+rerank",
         "dense+rewrite", "bm25+rewrite", "hybrid+rewrite", "hybrid+rerank+rewrite", "hybrid+read")
FLAGS = ("rerank", "rewrite", "read")  # any base may take any of them, e.g. bm25+read
FILTER_KEYS = ("doc_ids", "pages", "quality")


@dataclass(frozen=True)
class ModePlan:
    engines: tuple[str, ...]
    rerank: bool
    rewrite: bool
    read: bool = False  # the reader rescores the first candidates (retrieve/reader.py)


def parse_mode(mode: str) -> ModePlan:
    """'hybrid+rerank+rewrite' -> engines (dense, bm25), rerank, rewrite (flags in any order)."""
    base, *flags = [part.strip().lower() for part in mode.split("+")]
    unknown = [f for f in flags if f not in FLAGS]
    if base not in BASES or unknown or len(set(flags)) != len(flags):
        raise InvalidSearch(f"unknown search mode {mode!r}; use one of: {', '.join(MODES)}")
    return ModePlan(BASES[base], "rerank" in flags, "rewrite" in flags, "read" in flags)


def normalise_filters(filters: dict | None) -> dict:
    """Check and tidy filters: doc_ids and quality as lists, pages as (lo, hi) ints or None."""
    if not filters:
        return {}
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise InvalidSearch(f"unknown filter {unknown[0]!r}; filters are {', '.join(FILTER_KEYS)}")
    out: dict[str, Any] = {}
    for key in ("doc_ids", "quality"):
        value = filters.get(key)
        if value:
            out[key] = [value] if isinstance(value, str) else [str(v) for v in value]
    if filters.get("pages"):
        try:
            lo, hi = filters["pages"]
            lo, hi = (int(lo) if lo is not None else None), (int(hi) if hi is not None else None)
        except (TypeError, ValueError):
            raise InvalidSearch(f"page filter must be (first, last), got {filters['pages']!r}") from None
        if lo is not None and hi is not None and lo > hi:
            raise InvalidSearch(f"page filter starts after it ends: {lo}-{hi}")
        out["pages"] = (lo, hi)
    return out


def check_k(k: int) -> int:
    k = int(k)
    if k < 1:
        raise InvalidSearch(f"k must be at least 1, got {k}")
    return k


def check_choices(settings) -> None:
    """Every setting with a fixed set of values holds one of them (one line naming it otherwise)."""
    from ragloupe.index import lexical
    from ragloupe.retrieve import aggregate, cut, fusion, units

    checks = [("fusion", settings.fusion, fusion.METHODS),
              ("page_aggregation", settings.page_aggregation, aggregate.RULES),
              ("dynamic_cut", settings.dynamic_cut, cut.RULES),
              ("bm25_backend", settings.bm25_backend, lexical.BACKENDS),
              ("unit_view", settings.unit_view, units.VIEWS),
              ("unit_dense", settings.unit_dense, units.DENSE_RULES)]
    for name, value, allowed in checks:
        if value not in allowed:
            raise InvalidSearch(f"RAGLOUPE_{name.upper()}={value!r} is not one of {', '.join(allowed)}")


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds the block takes to ``timings[stage]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start
