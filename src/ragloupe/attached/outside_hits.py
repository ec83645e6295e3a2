"""An outside system's ranked entries turned into engine hits that fusion and every view can read.

An entry names a unit the way a run file does (evaluate/outside.py): ``"doc_id#pN"``,
a record id (``doc_id#rec``, or bare when one document holds it), ``[doc_id, page]``
or ``{"doc_id": ..., "page": N}`` / ``{"doc_id": ..., "record_id": ...}``; a dict may
add ``"score"`` (the system's raw score; without one, the score is 1/rank) and
``"text"`` (what the system retrieved; without one, the unit's text in ragloupe's
index, so the failure audit reads the unit as handed on whole).

Each hit is a chunk of its own (``chunk_id`` ``NAME:unit`` or ``NAME:unit:n`` for
the nth chunk of a unit), never one of ragloupe's: the outside system chunked the
documents its own way, so it meets ragloupe's engines at the page (unit) level,
where evaluation and the page view judge. Filters: documents and pages are honoured,
quality is not (an outside chunk has no page quality).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ragloupe.models import Chunk, unit_id
from ragloupe.retrieve.engines import EngineHit

_PAGE = re.compile(r"p(\d+)")


@dataclass(frozen=True)
class UnitPlace:
    doc_id: str
    page: int
    record_id: str = ""


@dataclass(frozen=True)
class IndexUnits:
    """What ragloupe's index knows of units: each record's documents, and each unit's text."""

    record_owners: Mapping[str, tuple[str, ...]]
    unit_text: Mapping[str, str]
    record_page: Mapping[str, int]  # "doc#rec" -> the page the record's chunks carry

    @classmethod
    def of(cls, chunks: Iterable[Chunk]) -> "IndexUnits":
        owners: dict[str, list[str]] = {}
        texts: dict[str, list[str]] = {}
        pages: dict[str, int] = {}
        for chunk in chunks:
            if chunk.record_id:
                owners.setdefault(chunk.record_id, [])
                if chunk.doc_id not in owners[chunk.record_id]:
                    owners[chunk.record_id].append(chunk.doc_id)
                pages.setdefault(chunk.unit, chunk.page)
            texts.setdefault(chunk.unit, []).append(chunk.text)
        return cls({r: tuple(d) for r, d in owners.items()}, {u: "\n".join(t) for u, t in texts.items()}, pages)


def place_of(value: Any, index: IndexUnits) -> UnitPlace | None:
    """The unit an entry names (None when it names none)."""
    if isinstance(value, Mapping):
        if "unit" in value:
            return place_of(value["unit"], index)
        doc = value.get("doc_id")
        if not isinstance(doc, str) or not doc:
            return None
        if value.get("record_id") not in (None, ""):
            return _record(doc, str(value["record_id"]), index)
        page = value.get("page")
        return UnitPlace(doc, page) if isinstance(page, int) and not isinstance(page, bool) and page >= 1 else None
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
        where = value[1]
        if isinstance(where, int) and not isinstance(where, bool):
            return UnitPlace(value[0], where) if where >= 1 else None
        return place_of(f"{value[0]}#{where}", index)
    if isinstance(value, str):
        doc, sep, part = value.strip().rpartition("#")
        if not sep:
            owners = index.record_owners.get(value.strip(), ())
            return _record(owners[0], value.strip(), index) if len(owners) == 1 else None
        page = _PAGE.fullmatch(part)
        if page and f"{doc}#{part}" not in index.record_page:
            return UnitPlace(doc, int(page.group(1))) if int(page.group(1)) >= 1 else None
        return _record(doc, part, index)
    return None


def _record(doc: str, record: str, index: IndexUnits) -> UnitPlace:
    return UnitPlace(doc, index.record_page.get(f"{doc}#{record}", 1), record)


def hits_of(engine: str, entries: Iterable[Any], index: IndexUnits, filters: Mapping | None = None,
            k: int | None = None) -> list[EngineHit]:
    """The entries that name a unit, in their order, as hits within the filters (at most ``k``)."""
    hits: list[EngineHit] = []
    seen: dict[str, int] = {}
    for rank, entry in enumerate(entries, start=1):
        place = place_of(entry, index)
        if place is None or not within(place, filters):
            continue
        unit = unit_id(place.doc_id, place.page, place.record_id)
        score, text = _score_and_text(entry, rank)
        number = seen.get(unit, 0)
        seen[unit] = number + 1
        chunk_id = f"{engine}:{unit}" + (f":{number}" if number else "")
        text = text if text is not None else index.unit_text.get(unit, "")
        hits.append(EngineHit(outside_chunk(engine, chunk_id, place, text, number), score))
        if k is not None and len(hits) >= k:
            break
    return hits


def outside_chunk(engine: str, chunk_id: str, place: UnitPlace, text: str, position: int = 0,
                  section: str = "") -> Chunk:
    """A chunk an outside engine retrieved: its own id and text, ragloupe's doc id, page and record."""
    return Chunk(chunk_id=chunk_id, doc_id=place.doc_id, page=place.page, position=position, text=text,
                 n_tokens=0, quality="clean", section=section, method=f"engine:{engine}",
                 record_id=place.record_id)


def within(place: UnitPlace, filters: Mapping | None) -> bool:
    """The unit is in the filters' documents and pages (quality is not judged for an outside chunk)."""
    if not filters:
        return True
    doc_ids = filters.get("doc_ids")
    if doc_ids and place.doc_id not in doc_ids:
        return False
    pages = filters.get("pages")
    if pages:
        lo, hi = pages
        if (lo is not None and place.page < lo) or (hi is not None and place.page > hi):
            return False
    return True


def _score_and_text(entry: Any, rank: int) -> tuple[float, str | None]:
    score, text = None, None
    if isinstance(entry, Mapping):
        raw = entry.get("score")
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
            score = float(raw)
        if isinstance(entry.get("text"), str):
            text = entry["text"]
    return (score if score is not None else 1.0 / rank), text
