"""What a search asks for: its mode (engines and optional stages), its filters, and their checks.

Shared by fetch() (which runs the engines a mode names) and replay() (which
runs the stages after them), so both read a mode and a filter the same way.

A mode is parts joined by ``+``: engines and flags. ``dense`` and ``bm25`` are
the built-in engines, ``hybrid`` is both; any other engine is named as the
registry knows it (a plugin's, or one attached with ``ragloupe attach``):
``mylc`` alone, ``hybrid+mylc`` (dense, bm25 and mylc fused), ``mylc+rerank``.
The flags ``rerank``, ``rewrite`` and ``read`` may follow in any order. The first part is
an engine (or hybrid); no part appears twice.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Iterator

from ragloupe.errors import InvalidSearch

BASES = {"dense": ("dense",), "bm25": ("bm25",), "hybrid": ("dense", "bm25")}
FLAGS = ("rerank", "rewrite", "read")  # any base may take any of them, e.g. bm25+read
# The built-in modes (what the pages offer first); a mode may name any registered engine too.
MODES = ("dense", "bm25", "hybrid", "hybrid+rerank",
         "dense+rewrite", "bm25+rewrite", "hybrid+rewrite", "hybrid+rerank+rewrite", "hybrid+read")
# What an engine may be called: lower case, so a mode reads the same however it is typed.
ENGINE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
RESERVED_NAMES = (*BASES, *FLAGS, "none", "all", "outside")
# The engines learned fusion was trained on: a mode fusing any other engine falls back.
LEARNED_ENGINES = ("dense", "bm25")
FILTER_KEYS = ("doc_ids", "pages", "quality")


@dataclass(frozen=True)
class ModePlan:
    engines: tuple[str, ...]
    rerank: bool
    rewrite: bool
    read: bool = False  # the reader rescores the first candidates (retrieve/reader.py)

    @property
    def learnable(self) -> bool:
        """Learned fusion can rank this mode: it fuses exactly the engines the model was trained on."""
        return sorted(self.engines) == sorted(LEARNED_ENGINES)


def parse_mode(mode: str, known: Collection[str] | None = None) -> ModePlan:
    """'hybrid+rerank+rewrite' -> engines (dense, bm25), rerank, rewrite (flags in any order);
    'hybrid+mylc' -> engines (dense, bm25, mylc). ``known``: the engines that exist (the
    registry's names); without it any well-formed engine name passes (replay checks the lists)."""
    parts = [part.strip().lower() for part in str(mode or "").split("+")]
    engines = [e for part in parts if part not in FLAGS for e in BASES.get(part, (part,))]
    malformed = [p for p in parts if p not in FLAGS and p not in BASES and not ENGINE_NAME.fullmatch(p)]
    unknown = [e for e in engines if known is not None and e not in known]
    if (malformed or unknown or not engines or parts[0] in FLAGS or len(set(parts)) != len(parts)
            or len(set(engines)) != len(engines)):
        others = sorted(set(known or ()) - set(BASES))
        also = f", or an engine ({', '.join(others)}) alone or after one with +" if others else ""
        raise InvalidSearch(f"unknown search mode {mode!r}; use one of: {', '.join(MODES)}{also}")
    return ModePlan(tuple(engines), "rerank" in parts, "rewrite" in parts, "read" in parts)


def runs_dense(modes: Iterable[str], explain: bool = False) -> bool:
    """Whether a search in any of ``modes`` runs the dense engine (``explain`` runs every built-in
    one): what decides if it reads the documents' sentence vectors. A malformed mode counts for
    nothing here; its search says what is wrong with it."""
    if explain:
        return True
    for mode in modes:
        try:
            if "dense" in parse_mode(mode).engines:
                return True
        except InvalidSearch:
            continue
    return False


def engine_name_problem(name: str) -> str:
    """Why ``name`` cannot name an engine ('' when it can)."""
    if not ENGINE_NAME.fullmatch(name or ""):
        return (f"engine name {name!r}: use 1-40 lower-case letters, digits, - or _, starting with a "
                "letter (a mode joins names with +)")
    if name in RESERVED_NAMES:
        return f"engine name {name!r} is a word modes already use; pick another"
    return ""


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
