"""Citations parsed out of a generated answer and mapped back to units.

The prompt asks for passage numbers in square brackets ([1], [2][3], [1, 4]);
models also write "(Grampian-2020-2021, page 28)" or "record 4.6.1". Both
are read here. Every citation keeps its character span in the answer, so the
groundedness screen can tell which sentence it belongs to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ragloupe.models import Chunk

# "[1]", "[1, 3]", "[1-3]", "[Passage 2]", "[passages 1 and 2]"
_NUMBERED = re.compile(
    r"\[\s*(?:passages?\s*)?(\d{1,3}(?:\s*(?:,|;|-|–|and)\s*(?:passage\s*)?\d{1,3})*)\s*\]",
    re.IGNORECASE)
_RANGE = re.compile(r"(\d{1,3})\s*[-–]\s*(\d{1,3})")


@dataclass(frozen=True)
class Citation:
    """One reference in an answer, resolved to a passage and its unit when possible."""

    raw: str  # the characters as written, e.g. "[2]" or "(Grampian-2020-2021, page 28)"
    start: int  # span in the answer text
    end: int
    passage: int | None  # 1-based passage number, None when the reference matches no passage
    unit: str  # 'Grampian-2020-2021#p28', 'guidance#4.6.1'; "" when unresolved
    doc_id: str = ""
    page: int | None = None
    record_id: str = ""
    # True when the model did not write it: chosen afterwards by constrained decoding
    # (generate.answer). Such a citation is never evidence: the screen and the claim
    # check ignore it.
    picked: bool = False

    @property
    def resolved(self) -> bool:
        return self.passage is not None


def parse_citations(text: str, passages: Sequence[Chunk]) -> list[Citation]:
    """Every citation in ``text``, in order of appearance (one per cited passage)."""
    found: list[Citation] = []
    for match in _NUMBERED.finditer(text):
        for number in _numbers(match.group(1)):
            found.append(_by_number(match, number, passages))
    found.extend(_named(text, passages, taken=[(c.start, c.end) for c in found]))
    return sorted(found, key=lambda c: (c.start, c.passage or 0))


def cited_units(citations: Sequence[Citation]) -> list[str]:
    """The distinct units cited, in order of first citation."""
    return list(dict.fromkeys(c.unit for c in citations if c.unit))


def _numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for lo, hi in _RANGE.findall(group):
        lo_i, hi_i = int(lo), int(hi)
        if lo_i <= hi_i and hi_i - lo_i < 20:  # "[1-3]" is a range; "[3-1]" or "[1-900]" is not
            numbers.extend(range(lo_i, hi_i + 1))
    group = _RANGE.sub(" ", group)
    numbers.extend(int(n) for n in re.findall(r"\d{1,3}", group))
    return list(dict.fromkeys(numbers))


def _by_number(match: re.Match, number: int, passages: Sequence[Chunk]) -> Citation:
    if 1 <= number <= len(passages):
        chunk = passages[number - 1]
        return Citation(match.group(0), match.start(), match.end(), number, chunk.unit,
                        chunk.doc_id, chunk.page, chunk.record_id)
    return Citation(match.group(0), match.start(), match.end(), None, "")


def _named(text: str, passages: Sequence[Chunk], taken: list[tuple[int, int]]) -> list[Citation]:
    """References written out: '<doc_id>, page 28', '<doc_id> p. 28', 'record 4.6.1'."""
    found: list[Citation] = []
    doc_ids = sorted({c.doc_id for c in passages}, key=len, reverse=True)
    patterns: list[re.Pattern] = []
    if doc_ids:
        docs = "|".join(re.escape(d) for d in doc_ids)
        patterns.append(re.compile(
            rf"\(?(?P<doc>{docs})\s*[,:;]?\s*(?:pages?|pp?\.?)\s*(?P<page>\d+)\)?", re.IGNORECASE))
    record_ids = sorted({c.record_id for c in passages if c.record_id}, key=len, reverse=True)
    if record_ids:
        records = "|".join(re.escape(r) for r in record_ids)
        patterns.append(re.compile(
            rf"\(?(?:(?P<doc>{'|'.join(re.escape(d) for d in doc_ids)})\s*[,:;]?\s*)?"
            rf"(?:record|chapter|section)\s+(?P<record>{records})(?![\d.]*\d)\)?", re.IGNORECASE))
    for pattern in patterns:
        for match in pattern.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue
            taken.append((match.start(), match.end()))
            found.append(_resolve_named(match, passages))
    return found


def _resolve_named(match: re.Match, passages: Sequence[Chunk]) -> Citation:
    groups = match.groupdict()
    doc = (groups.get("doc") or "").lower()
    record = groups.get("record") or ""
    page = int(groups["page"]) if groups.get("page") else None
    for number, chunk in enumerate(passages, start=1):
        if doc and chunk.doc_id.lower() != doc:
            continue
        if (record and chunk.record_id == record) or (page is not None and chunk.page == page
                                                      and not chunk.record_id):
            return Citation(match.group(0), match.start(), match.end(), number, chunk.unit,
                            chunk.doc_id, chunk.page, chunk.record_id)
    # A real-looking reference to a unit that was not in the context.
    doc_id = next((c.doc_id for c in passages if c.doc_id.lower() == doc), groups.get("doc") or "")
    unit = f"{doc_id}#{record}" if record and doc_id else (f"{doc_id}#p{page}" if doc_id and page else "")
    return Citation(match.group(0), match.start(), match.end(), None, unit, doc_id, page, record)
