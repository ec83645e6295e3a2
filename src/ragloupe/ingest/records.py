"""Reading records files (CSV, JSON Lines) into plain records.

Column names are matched case-insensitively against the candidate lists in
Settings (``record_id_fields`` etc.); the first candidate present wins. All
values are read as strings, so a chapter "4.6.1" or "4.10" never becomes a
float. A line that cannot be parsed becomes a blocking finding with its line
number: indexing a file with a lost record would silently hide it.

This module only reads; ``validate.py`` judges the records.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ragloupe.config import Settings, split_names
from ragloupe.errors import RecordsRefused
from ragloupe.models import Finding

# Chapters of technical reports can exceed csv's 128 KiB default field limit.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass(frozen=True)
class Record:
    """One record as read from the file, before validation."""

    row: int  # 1-based data row (header not counted; blank JSONL lines not counted)
    line: int  # 1-based line of the file where the record starts
    record_id: str
    text: str
    title: str
    section: str
    page: str


@dataclass(frozen=True)
class Columns:
    """Which of the file's own column names serve as id, text, title, section, page."""

    id: str | None
    text: str | None
    title: str | None
    section: str | None
    page: str | None


@dataclass(frozen=True)
class RecordsFile:
    records: tuple[Record, ...]
    columns: Columns
    findings: tuple[Finding, ...]  # parse problems (blocking)


def resolve_columns(names: list[str], settings: Settings) -> Columns:
    """Pick each role's column from the file's names (case-insensitive)."""
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.strip().lower(), name)

    def pick(candidates: str) -> str | None:
        return next((by_lower[c] for c in split_names(candidates) if c in by_lower), None)

    return Columns(id=pick(settings.record_id_fields), text=pick(settings.record_text_fields),
                   title=pick(settings.record_title_fields),
                   section=pick(settings.record_section_fields),
                   page=pick(settings.record_page_fields))


def _require_columns(columns: Columns, names: list[str], settings: Settings) -> None:
    """Without an id or a text column there is nothing to index: refuse the file."""
    found = ", ".join(names) if names else "none"
    for role, column, candidates in (("text", columns.text, settings.record_text_fields),
                                     ("id", columns.id, settings.record_id_fields)):
        if column is None:
            raise RecordsRefused(f"no {role} column: expected one of "
                                 f"{', '.join(split_names(candidates))} (found: {found})")


def _value(raw: object) -> str:
    """A field as a string: JSON numbers and booleans too; null is empty."""
    if raw is None:
        return ""
    if isinstance(raw, (dict, list)):
        return json.dumps(raw, ensure_ascii=False)
    return str(raw)


def _record(row: int, line: int, fields: dict[str, object], columns: Columns) -> Record:
    def get(name: str | None) -> str:
        return _value(fields.get(name)) if name else ""

    return Record(row=row, line=line, record_id=get(columns.id).strip(), text=get(columns.text),
                  title=get(columns.title), section=get(columns.section),
                  page=get(columns.page).strip())


def _parse_error(line: int, what: str) -> Finding:
    return Finding("blocking", "parse_error", f"line {line}: {what}")


def read_text(path: Path) -> str:
    """The file's text as UTF-8 (a byte-order mark is tolerated)."""
    data = Path(path).read_bytes()
    if not data:
        raise RecordsRefused("empty file (0 bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RecordsRefused(f"not UTF-8 text (line {line}, byte {exc.start}): "
                             "save the file as UTF-8") from None


def _delimiter(header_line: str) -> str:
    """The header's field separator: the most frequent of , ; tab | (comma when none).

    Spreadsheets saved in European locales separate with semicolons.
    """
    best = max(",;\t|", key=header_line.count)
    return best if header_line.count(best) else ","


def read_csv(path: Path, settings: Settings) -> RecordsFile:
    """CSV with a header row. Rows whose field count differs from the header's are refused."""
    # StringIO(newline="") splits lines on \n, \r and \r\n only, as csv expects;
    # str.splitlines would also split inside a field at U+2028 or a form feed.
    lines = io.StringIO(read_text(path), newline="")
    header_line = lines.readline()
    lines.seek(0)
    reader = csv.reader(lines, delimiter=_delimiter(header_line), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise RecordsRefused("no header row") from None
    except csv.Error as exc:
        raise RecordsRefused(f"line 1: unreadable header ({exc})") from None
    columns = resolve_columns(header, settings)
    _require_columns(columns, header, settings)

    records, findings = [], []
    row = 0
    while True:
        start = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            findings.append(_parse_error(start, f"malformed CSV ({exc})"))
            continue
        if not values or values == [""]:
            continue  # a blank line is not a record
        row += 1
        if len(values) != len(header):
            findings.append(Finding("blocking", "parse_error",
                                    f"line {start}: {len(values)} fields, the header has "
                                    f"{len(header)}", row=row))
            continue
        records.append(_record(row, start, dict(zip(header, values)), columns))
    return RecordsFile(tuple(records), columns, tuple(findings))


def read_jsonl(path: Path, settings: Settings) -> RecordsFile:
    """JSON Lines: one object per line; blank lines are skipped; keys compared lower-cased."""
    text = read_text(path)
    parsed: list[tuple[int, dict]] = []
    findings = []
    names: dict[str, None] = {}
    # Split on \n only: JSON strings may hold U+2028, which str.splitlines splits at.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            findings.append(_parse_error(number, f"invalid JSON ({exc.msg}, column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            kind = type(obj).__name__
            findings.append(_parse_error(number, f"expected a JSON object, got {kind}"))
            continue
        obj = {str(key).strip().lower(): value for key, value in obj.items()}
        parsed.append((number, obj))
        names.update(dict.fromkeys(obj))
    if not parsed and not findings:
        raise RecordsRefused("no records in the file")
    columns = resolve_columns(list(names), settings)
    if parsed:
        _require_columns(columns, list(names), settings)
    records = tuple(_record(row, number, obj, columns)
                    for row, (number, obj) in enumerate(parsed, start=1))
    return RecordsFile(records, columns, tuple(findings))


def read_records(path: Path, settings: Settings) -> RecordsFile:
    """Dispatch on the suffix: .csv or .jsonl. A file over ``records_file_max_mb``
    is refused before it is read: parsing, chunking and embedding it would
    cost memory and hours out of proportion to any corpus this serves."""
    size = Path(path).stat().st_size
    limit = settings.records_file_max_mb
    if size > limit * 1024 * 1024:
        raise RecordsRefused(f"file is {size / 2**20:,.1f} MB, over the {limit:,} MB limit "
                             "for a records file (RAGLOUPE_RECORDS_FILE_MAX_MB)")
    if Path(path).suffix.lower() == ".csv":
        return read_csv(path, settings)
    return read_jsonl(path, settings)
