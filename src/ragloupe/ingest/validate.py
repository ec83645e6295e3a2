"""Records validation: which records files may enter the index, and what to review.

Blocking findings refuse the whole file, because indexing it would lose or
hide something silently: an empty text, a missing id, a duplicate id (the
second record would overwrite the first), a line that does not parse, a
record over ``record_max_kb`` (one 50 MB record costs gigabytes of memory
and hours of embedding; see also ``records_file_max_mb`` in records.py).
Review findings are reported and do not block: a text under
``record_min_chars`` (usually a heading captured without its body), a
missing title, and a footnote marker welded onto the token before it by
PDF-to-text conversion ("ISO-310002" is ISO 31000 with footnote 2).

``validate_records`` serves both ``ragloupe validate`` and ``load_source``;
``format_findings`` turns the result into the text report.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.ingest.quality import assess_page
from ragloupe.ingest.records import Record, RecordsFile, read_records
from ragloupe.models import Finding, Page, SourceDoc

# --- welded footnote markers ------------------------------------------------
# Three shapes, each narrow on purpose (the checks must stay quiet on
# "Figure 1" next to "Figure 10", on "Section 4.6.1" next to "4.6.1.1" and on
# a number followed by a full stop):
#  1. a closing bracket with one or two digits stuck to it: "(2012/18/EC)1"
_AFTER_BRACKET = re.compile(r"\)(\d{1,2})(?=[.,;:]?(?:\s|$))")
#  2. a lower-case word of three or more letters with one or two digits stuck
#     to it: "situations3." Digits after a capital are left alone: "CO2",
#     "PM10", "COVID19" are names, not footnotes.
_AFTER_WORD = re.compile(r"(?<![\w/-])([a-z]{3,})(\d{1,2})(?=[.,;:)]?(?:\s|$))")
#  3. a named number that is another named number of the same text plus one
#     or two digits: "ISO-310002" when "ISO 31000" occurs elsewhere. Dotted
#     numbers ("4.6.1.1") never qualify, and the base must have three digits
#     or more, so "Figure 10" is not "Figure 1" plus a footnote.
_NAMED_NUMBER = re.compile(r"(?<![\w.])([A-Z][A-Za-z]+)([- ]?)(\d{3,})(?![\d])(?!\.\d)")


@dataclass(frozen=True)
class WeldedFootnote:
    row: int  # index into the texts given to find_welded_footnotes, 0-based
    token: str  # the token as it stands in the text: "ISO-310002"
    reading: str  # what it most likely is: 'ISO-31000 + footnote 2'


def _token_at(text: str, start: int, end: int) -> str:
    """The whitespace-delimited token around text[start:end]."""
    left = text.rfind(" ", 0, start) + 1
    right = text.find(" ", end)
    return text[left: right if right != -1 else len(text)].strip()


def find_welded_footnotes(texts: Sequence[str]) -> list[WeldedFootnote]:
    """Footnote markers glued to the token before them, across a corpus of texts.

    Corpus-wide because shape 3 needs to know which named numbers exist, and
    shape 2 skips a word+digits token that occurs more than once (a footnote
    marker appears once; a name such as "covid19" repeats).
    """
    word_digit_counts = Counter(m.group(0) for text in texts for m in _AFTER_WORD.finditer(text))
    named = Counter((m.group(1), m.group(3)) for text in texts
                    for m in _NAMED_NUMBER.finditer(text))
    found: list[WeldedFootnote] = []
    for row, text in enumerate(texts):
        for m in _AFTER_BRACKET.finditer(text):
            token = _token_at(text, m.start(), m.end())
            bracketed = token[: token.rindex(")") + 1]
            found.append(WeldedFootnote(row, token, f"{bracketed} + footnote {m.group(1)}"))
        for m in _AFTER_WORD.finditer(text):
            if word_digit_counts[m.group(0)] == 1:
                found.append(WeldedFootnote(row, _token_at(text, m.start(), m.end()),
                                            f"{m.group(1)} + footnote {m.group(2)}"))
        for m in _NAMED_NUMBER.finditer(text):
            prefix, separator, digits = m.group(1), m.group(2), m.group(3)
            if named[(prefix, digits)] > 1:
                continue
            for cut in (1, 2):
                base = digits[:-cut]
                if len(base) >= 3 and named[(prefix, base)] > 0:
                    found.append(WeldedFootnote(
                        row, _token_at(text, m.start(), m.end()),
                        f"{prefix}{separator}{base} + footnote {digits[-cut:]}"))
                    break
    return sorted(found, key=lambda w: (w.row, w.token))


# --- the checks ---------------------------------------------------------------

def _at(record: Record) -> str:
    """Where a finding is: 'row 14 (id 4.2)', so it can be found in a spreadsheet."""
    return f"row {record.row} (id {record.record_id})" if record.record_id else f"row {record.row}"


def check_records(records: Sequence[Record], has_title_column: bool,
                  settings: Settings) -> list[Finding]:
    """All findings for a file's records, blocking first, in row order."""
    findings: list[Finding] = []
    rows_by_id: dict[str, list[int]] = defaultdict(list)
    for record in records:
        rid = record.record_id or None
        if not record.record_id:
            findings.append(Finding("blocking", "missing_id", f"row {record.row}: no id",
                                    record.row))
        else:
            rows_by_id[record.record_id].append(record.row)
        text = record.text.strip()
        if not text:
            findings.append(Finding("blocking", "empty_text", f"{_at(record)}: empty text",
                                    record.row, rid))
        elif (size := len(text.encode("utf-8"))) > settings.record_max_kb * 1024:
            findings.append(Finding(
                "blocking", "record_too_large",
                f"{_at(record)}: text is {size / 1024:,.0f} KB, over the "
                f"{settings.record_max_kb:,} KB limit for one record (RAGLOUPE_RECORD_MAX_KB); "
                "split it into sections", record.row, rid))
        elif len(text) < settings.record_min_chars:
            findings.append(Finding(
                "review", "short_text",
                f"{_at(record)}: text is {len(text)} characters (under "
                f"{settings.record_min_chars}); often a heading captured without its body",
                record.row, rid))
        if has_title_column and not record.title.strip():
            findings.append(Finding("review", "missing_title", f"{_at(record)}: no title",
                                    record.row, rid))
        if record.page and not record.page.isdigit():
            findings.append(Finding(
                "review", "bad_page",
                f"{_at(record)}: page {record.page!r} is not a whole number; "
                f"the record's ordinal ({record.row}) is used", record.row, rid))
    for record_id, rows in rows_by_id.items():
        for row in rows[1:]:
            findings.append(Finding(
                "blocking", "duplicate_id",
                f"row {row}: id {record_id!r} already used on row {rows[0]} "
                "(it would overwrite that record)", row, record_id))
    if not has_title_column:
        findings.append(Finding("review", "missing_title",
                                "no title column: records will have no title"))
    # An oversized record is refused already; scanning its megabytes would take seconds.
    limit = settings.record_max_kb * 1024
    for welded in find_welded_footnotes([r.text if len(r.text.encode("utf-8")) <= limit else ""
                                         for r in records]):
        record = records[welded.row]
        findings.append(Finding(
            "review", "welded_footnote",
            f"{_at(record)}: footnote marker welded onto the token before it: "
            f"{welded.token!r} (reads as {welded.reading})",
            record.row, record.record_id or None))
    return sorted(findings, key=lambda f: (f.severity != "blocking", f.row or 0, f.code))


def record_pages(doc_id: str, records: Iterable[Record], settings: Settings) -> tuple[Page, ...]:
    """One Page per record, graded like a PDF page (a record is a page of its corpus).

    ``page`` is the record's page field when it is a whole number, else its
    1-based ordinal. ``section`` is the section field, or the title when the
    file has no section column, so every chunk has a heading to show.
    """
    pages = []
    for record in records:
        text = record.text.strip()
        graded = assess_page(text, settings)
        page = int(record.page) if record.page.isdigit() else record.row
        title = record.title.strip() or None
        pages.append(Page(doc_id=doc_id, page=page, text=text, method="record",
                          quality=graded.quality, reason=graded.reason,
                          record_id=record.record_id, title=title,
                          section=record.section.strip() or title))
    return tuple(pages)


def _refusal(findings: Sequence[Finding]) -> str | None:
    """One line saying why a file is refused, or None when nothing blocks."""
    blocking = [f for f in findings if f.severity == "blocking"]
    if not blocking:
        return None
    more = len(blocking) - 1
    tail = f"; and {more} more blocking finding{'s' if more > 1 else ''}" if more else ""
    return f"refused: {blocking[0].message}{tail} (see `ragloupe validate`)"


def validate_records(path: Path, settings: Settings, sha256: str | None = None) -> SourceDoc:
    """Read and check a records file; a refused file has ``error`` set and no pages."""
    from ragloupe.ingest.sources import file_sha256

    path = Path(path)
    base = dict(doc_id=path.stem, path=str(path), kind="records", sha256=sha256 or "")
    try:
        if sha256 is None:
            base["sha256"] = file_sha256(path)
        parsed: RecordsFile = read_records(path, settings)
    except RagloupeError as exc:
        return SourceDoc(**base, error=str(exc))
    except OSError as exc:
        return SourceDoc(**base, error=f"cannot read file: {exc.strerror or exc}")
    findings = list(parsed.findings) + check_records(
        parsed.records, parsed.columns.title is not None, settings)
    findings.sort(key=lambda f: (f.severity != "blocking", f.row or 0, f.code))
    refusal = _refusal(findings)
    pages = () if refusal else record_pages(path.stem, parsed.records, settings)
    return SourceDoc(**base, pages=pages, findings=tuple(findings), error=refusal)


def format_findings(doc: SourceDoc) -> str:
    """The validation report for people: a verdict line, then one line per finding."""
    blocking = sum(f.severity == "blocking" for f in doc.findings)
    review = len(doc.findings) - blocking
    name = Path(doc.path).name
    if doc.error and not doc.findings:
        return f"{name}: refused: {doc.error}"
    if doc.blocked:  # a refused file keeps no pages: counting them would say "0 records"
        lines = [f"{name}: REFUSED (nothing will be indexed); "
                 f"{blocking} blocking and {review} review findings"]
    else:
        lines = [f"{name}: ok; {len(doc.pages)} records, "
                 f"{blocking} blocking and {review} review findings"]
    for finding in doc.findings:
        lines.append(f"  {finding.severity:<8} {finding.code:<16} {finding.message}")
    return "\n".join(lines)
