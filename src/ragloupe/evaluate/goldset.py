"""Gold sets: load the three formats into one shape, and validate them.

A gold set says, per question, which units (PDF pages, or records of a
CSV/JSONL corpus) a retriever should find. Three formats are read:

- Grampian (shipped in data/benchmarks): ``{"_meta": {...}, "queries": [{query_id,
  question, expected_pages, expected_answer, answer_type, difficulty, doc_id}]}``;
- record-level: ``{"_meta": {"doc_id": ...}, "queries": [{query_id, question,
  expected_chapters}]}``, the expected units being record ids;
- flat list: ``[{id, question, expected_document, expected_pages,
  reference_answer, category}]``.

Loading never stops at a bad query: it is left out with a finding (empty
question, duplicate id, no expected unit) and the rest load. Checking the gold
set against what the index holds (unknown documents, pages beyond a
document's length, unknown records) is ``validate_goldset``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from ragloupe.errors import GoldSetInvalid
from ragloupe.models import unit_id

GoldFormat = Literal["grampian", "records", "flat"]

# Q_<YEAR>_<CATEGORY>_<NN>[_P1]: the category is the third part.
_GRAMPIAN_ID = re.compile(r"^Q_\d{4}_(?P<category>[A-Z]+)_")


@dataclass(frozen=True)
class GoldQuery:
    """One question and the units that answer it."""

    query_id: str
    question: str
    doc_id: str  # the document the expected units belong to
    expected_pages: tuple[int, ...] = ()  # page-level gold (PDFs)
    expected_records: tuple[str, ...] = ()  # record-level gold (CSV/JSONL)
    expected_answer: str = ""
    answer_type: str = ""  # "number" | "text" | "" when the gold set does not say
    difficulty: str = ""  # LEX | MOD | STR in the Grampian sets
    category: str = ""
    goldset: str = ""  # the name of the gold set it came from
    bad_pages: tuple[str, ...] = ()  # expected page values that are not pages (0, "two", 2.5)

    @property
    def expected_units(self) -> tuple[str, ...]:
        """Unit ids as the index names them: 'doc#p28' or 'guidance#4.6.1'."""
        if self.expected_records:
            return tuple(unit_id(self.doc_id, 0, r) for r in self.expected_records)
        return tuple(unit_id(self.doc_id, p) for p in self.expected_pages)

    @property
    def level(self) -> str:
        return "record" if self.expected_records else "page"


@dataclass(frozen=True)
class GoldFinding:
    """A problem with a gold set. Queries with an error finding are not evaluated."""

    goldset: str
    code: str  # empty_question | duplicate_id | bad_page | no_expected_unit | unknown_document | page_out_of_range | unknown_record
    message: str
    query_id: str = ""
    severity: Literal["error", "warning"] = "error"

    def as_dict(self) -> dict[str, str]:
        return {"goldset": self.goldset, "code": self.code, "message": self.message,
                "query_id": self.query_id, "severity": self.severity}


@dataclass(frozen=True)
class GoldSet:
    name: str  # the file name without .json / .eval.json
    path: str
    format: GoldFormat
    sha256: str  # of the file's bytes: the report's fingerprint of the gold set
    queries: tuple[GoldQuery, ...]
    findings: tuple[GoldFinding, ...] = ()  # problems found while loading


@dataclass(frozen=True)
class DocumentInfo:
    """What the index holds of one document, as far as validation needs it."""

    doc_id: str
    n_pages: int
    record_ids: frozenset[str] = frozenset()
    extra: Mapping[str, Any] = field(default_factory=dict)


def load_goldset(path: str | Path) -> GoldSet:
    """Read a gold set in any of the three formats.

    Raises GoldSetInvalid when the file cannot be read at all (missing, not
    JSON, no recognisable format); bad single queries become findings.
    """
    path = Path(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        raise GoldSetInvalid(f"{path}: cannot read the gold set ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw_bytes.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GoldSetInvalid(f"{path.name}: not valid JSON ({exc})") from None
    name = goldset_name(path)
    gold_format = detect_format(data, path.name)
    if gold_format == "flat":
        parsed = [_flat_query(item, name) for item in data]
    else:
        meta = data.get("_meta") or {}
        default_doc = str(meta.get("doc_id") or "")
        parse = _records_query if gold_format == "records" else _grampian_query
        parsed = [parse(item, name, default_doc) for item in data["queries"]]
    queries, findings = _keep_valid(parsed, name)
    return GoldSet(name=name, path=str(path), format=gold_format,
                   sha256=hashlib.sha256(raw_bytes).hexdigest(),
                   queries=tuple(queries), findings=tuple(findings))


def load_goldsets(goldsets: Iterable[GoldSet | str | Path]) -> list[GoldSet]:
    """The gold sets given, each loaded unless it already is one; GoldSetInvalid when none is given."""
    sets = [g if isinstance(g, GoldSet) else load_goldset(g) for g in goldsets]
    if not sets:
        raise GoldSetInvalid("no gold set given")
    return sets


def goldset_name(path: Path) -> str:
    name = path.name
    for suffix in (".eval.json", ".gold.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def detect_format(data: Any, label: str = "gold set") -> GoldFormat:
    """Which of the three formats ``data`` is in, or GoldSetInvalid saying why none."""
    if isinstance(data, list):
        if all(isinstance(item, dict) for item in data):
            return "flat"
        raise GoldSetInvalid(f"{label}: a flat gold set must be a list of objects")
    if isinstance(data, dict) and isinstance(data.get("queries"), list):
        items = [q for q in data["queries"] if isinstance(q, dict)]
        if len(items) != len(data["queries"]):
            raise GoldSetInvalid(f"{label}: every entry of 'queries' must be an object")
        if any("expected_chapters" in q or "expected_records" in q for q in items):
            return "records"
        return "grampian"
    raise GoldSetInvalid(
        f"{label}: unknown gold-set format (expected an object with 'queries', "
        "or a list of {id, question, expected_document, expected_pages})")


def validate_goldset(goldset: GoldSet, documents: Mapping[str, DocumentInfo]) -> list[GoldFinding]:
    """Findings from checking each query against the documents the index holds.

    Unknown documents and units the document does not have are errors: such a
    query cannot be answered by any retriever. They are findings, not
    exceptions, so the rest of the gold set can still be evaluated.
    """
    findings: list[GoldFinding] = []
    for query in goldset.queries:
        info = documents.get(query.doc_id)
        if info is None:
            findings.append(GoldFinding(goldset.name, "unknown_document",
                                        f"{query.query_id}: document {query.doc_id!r} is not in the index",
                                        query.query_id))
            continue
        beyond = [p for p in query.expected_pages if p > info.n_pages]
        if beyond:
            findings.append(GoldFinding(
                goldset.name, "page_out_of_range",
                f"{query.query_id}: page {', '.join(map(str, beyond))} is beyond the end of "
                f"{query.doc_id} ({info.n_pages} pages)", query.query_id))
        unknown = [r for r in query.expected_records if r not in info.record_ids]
        if unknown:
            findings.append(GoldFinding(
                goldset.name, "unknown_record",
                f"{query.query_id}: record {', '.join(unknown)} is not in {query.doc_id}",
                query.query_id))
    return findings


def all_findings(goldsets: Iterable[GoldSet], documents: Mapping[str, DocumentInfo]) -> list[GoldFinding]:
    """Load-time and index-time findings of several gold sets, in a stable order."""
    out: list[GoldFinding] = []
    for goldset in goldsets:
        out.extend(goldset.findings)
        out.extend(validate_goldset(goldset, documents))
    return out


# --- parsing one query per format ---------------------------------------------

def _grampian_query(item: dict, name: str, default_doc: str) -> GoldQuery:
    query_id = str(item.get("query_id") or item.get("id") or "")
    match = _GRAMPIAN_ID.match(query_id)
    pages, bad_pages = _pages(item.get("expected_pages"))
    return GoldQuery(
        query_id=query_id, question=str(item.get("question") or "").strip(),
        doc_id=str(item.get("doc_id") or default_doc),
        expected_pages=pages,
        bad_pages=bad_pages,
        expected_answer=str(item.get("expected_answer") or ""),
        answer_type=str(item.get("answer_type") or ""),
        difficulty=str(item.get("difficulty") or ""),
        category=str(item.get("category") or (match.group("category") if match else "")),
        goldset=name,
    )


def _records_query(item: dict, name: str, default_doc: str) -> GoldQuery:
    records = item.get("expected_chapters", item.get("expected_records")) or []
    if isinstance(records, (str, int, float)):
        records = [records]
    # A user's gold set mixes records and pages (a page item has no expected_records).
    pages, bad_pages = _pages(item.get("expected_pages")) if not records else ((), ())
    return GoldQuery(
        query_id=str(item.get("query_id") or item.get("id") or ""),
        question=str(item.get("question") or "").strip(),
        doc_id=str(item.get("doc_id") or default_doc),
        expected_records=tuple(str(r).strip() for r in records if str(r).strip()),
        expected_pages=pages, bad_pages=bad_pages,
        expected_answer=str(item.get("expected_answer") or item.get("reference_answer") or ""),
        answer_type=str(item.get("answer_type") or ""),
        difficulty=str(item.get("difficulty") or ""),
        category=str(item.get("category") or ""),
        goldset=name,
    )


def _flat_query(item: dict, name: str) -> GoldQuery:
    document = str(item.get("expected_document") or item.get("doc_id") or "")
    # A flat set may name the file ("report.pdf"); the index names documents by stem.
    doc_id = Path(document).stem if Path(document).suffix.lower() in {".pdf", ".csv", ".jsonl"} else document
    pages, bad_pages = _pages(item.get("expected_pages"))
    return GoldQuery(
        query_id=str(item.get("id") or item.get("query_id") or ""),
        question=str(item.get("question") or "").strip(),
        doc_id=doc_id,
        expected_pages=pages,
        bad_pages=bad_pages,
        expected_answer=str(item.get("reference_answer") or item.get("expected_answer") or ""),
        answer_type=str(item.get("answer_type") or ""),
        difficulty=str(item.get("difficulty") or ""),
        category=str(item.get("category") or ""),
        goldset=name,
    )


def _pages(value: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Expected pages as 1-based ints, and the values that are not pages (0, -3, "two",
    2.5, true), shown as written so a finding can quote them."""
    if value is None:
        return (), ()
    if not isinstance(value, list):
        value = [value]
    pages, bad = [], []
    for v in value:
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            pages.append(v)
        elif isinstance(v, str) and v.strip().isdigit() and int(v) >= 1:
            pages.append(int(v))
        else:
            bad.append(json.dumps(v, ensure_ascii=False))
    return tuple(pages), tuple(bad)


def _keep_valid(parsed: list[GoldQuery], name: str) -> tuple[list[GoldQuery], list[GoldFinding]]:
    """Drop queries that cannot be evaluated, each with a finding; keep the rest in order."""
    kept: list[GoldQuery] = []
    findings: list[GoldFinding] = []
    seen: set[str] = set()
    for position, query in enumerate(parsed, start=1):
        label = query.query_id or f"query #{position}"
        if not query.query_id:
            findings.append(GoldFinding(name, "missing_id", f"{label}: no query id", label))
            continue
        if query.query_id in seen:
            findings.append(GoldFinding(name, "duplicate_id",
                                        f"{label}: duplicate id (the first one is kept)", label))
            continue
        seen.add(query.query_id)
        if not query.question:
            findings.append(GoldFinding(name, "empty_question", f"{label}: the question is empty", label))
            continue
        if not query.doc_id:
            findings.append(GoldFinding(name, "no_document", f"{label}: no document named", label))
            continue
        if query.bad_pages:
            findings.append(GoldFinding(name, "bad_page",
                                        f"{label}: expected page {', '.join(query.bad_pages)}: "
                                        "page must be a positive whole number", label))
            continue
        if not query.expected_units:
            findings.append(GoldFinding(name, "no_expected_unit",
                                        f"{label}: no expected page or record", label))
            continue
        kept.append(query)
    return kept, findings
