"""Rankings made outside ragloupe, scored like its own runs.

A RAG system built elsewhere (LangChain, LlamaIndex, a vendor's) is measured
on the same gold sets, metrics, confidence intervals and failure codes as
ragloupe's modes, and can be compared with them pair by pair. Its rankings
come from:

- a TREC run file, one line per ranked unit: ``qid Q0 docno rank score tag``,
  the docno being ``doc_id#pN`` (a page) or a record id (``doc_id#rec`` or
  the bare id when one document holds it);
- a JSON Lines file, one line per question: ``{"query_id": ..., "ranked": [...]}``
  where each entry is ``"doc_id#pN"``, a record id, ``[doc_id, page]`` or
  ``{"doc_id", "page"}`` / ``{"doc_id", "record_id"}``;
- a Python function ``question -> ranked list`` of the same entries, called
  live for every gold question (``load_retriever("pkg.module:function")``).

Bad input (a malformed line, an unknown query id, a unit the index does not
hold, a function that raises) is collected per line, or per question for a
function, and the whole ranking is refused with all of it: nothing
half-scored becomes a run. FP3 cannot be judged: a ranking names units, not
the chunks the system handed to its model, so each unit counts as handed on
whole.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ragloupe.config import Settings
from ragloupe.errors import OutsideRunInvalid, RagloupeError
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.audit import audit_queries
from ragloupe.evaluate.goldset import DocumentInfo, GoldQuery, GoldSet, all_findings, load_goldsets
from ragloupe.evaluate.coverage_sources import coverage_report
from ragloupe.evaluate.not_indexed import held_documents, scored_goldsets, split_by_index
from ragloupe.evaluate.runs import (IndexSnapshot, RunReport, build_report, content_hash, index_snapshot,
                                    normalise_ks, score_view)
from ragloupe.evaluate.taxonomy import RankingView

TREC_FIELDS = ("qid", "Q0", "docno", "rank", "score", "tag")
FP3_NOTE = ("FP3 is not judged for a ranking made outside ragloupe: it names units, not the chunks "
            "it handed on, so each unit counts as handed on whole")
_PAGE = re.compile(r"p(\d+)")


@dataclass(frozen=True)
class RunProblem:
    where: str  # "line 7", or a query id for a live retriever
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"

    def as_dict(self) -> dict:
        return {"where": self.where, "line": self.line, "reason": self.reason}


@dataclass(frozen=True)
class Entry:
    """One ranked entry as written, with the line it came from (None for a live retriever)."""

    value: Any
    line: int | None = None
    score: float | None = None


@dataclass(frozen=True)
class OutsideRanking:
    label: str  # the run's tag, the file's name or the function's name
    source: dict  # kind (trec | jsonl | retriever), path or function, sha256
    rankings: dict[str, list[Entry]]  # query id -> entries, best first
    lines: dict[str, int | None] = field(default_factory=dict)  # query id -> its first line
    problems: list[RunProblem] = field(default_factory=list)


# --- reading -----------------------------------------------------------------------

def parse_run_file(path: str | Path) -> OutsideRanking:
    """A TREC or JSON Lines run file read line by line; bad lines become problems, never a stop."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise RagloupeError(f"{path}: cannot read the run file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise RagloupeError(f"{path.name}: not a text file (UTF-8 expected)") from None
    return parse_run_text(text, path.name, {"path": str(path), "sha256": hashlib.sha256(raw).hexdigest()})


def parse_run_text(text: str, name: str, source: dict | None = None) -> OutsideRanking:
    """A run file's text (an upload) read like parse_run_file; ``name`` labels it when it has no tag."""
    lines = text.splitlines()
    first = next((s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")), "")
    if not first:
        raise RagloupeError(f"{name}: the run file is empty")
    source = source or {"path": name, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    stem = Path(name).stem
    if first.startswith("{"):
        rankings, where, problems = _parse_jsonl(lines)
        return OutsideRanking(stem, {"kind": "jsonl", **source}, rankings, where, problems)
    rankings, where, problems, tag = _parse_trec(lines)
    return OutsideRanking(tag or stem, {"kind": "trec", **source}, rankings, where, problems)


def _parse_trec(lines: Sequence[str]) -> tuple[dict, dict, list[RunProblem], str]:
    rows: dict[str, list[tuple]] = {}
    where: dict[str, int | None] = {}
    problems: list[RunProblem] = []
    tag, tag_line = "", 0
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) != len(TREC_FIELDS):
            problems.append(_at(number, f"expected {len(TREC_FIELDS)} fields ({' '.join(TREC_FIELDS)}), "
                                        f"found {len(parts)}"))
            continue
        qid, _, docno, rank_text, score_text, line_tag = parts
        rank, score = _int(rank_text), _float(score_text)
        if rank is None or rank < 1:
            problems.append(_at(number, f"rank {rank_text!r} is not a whole number of at least 1"))
            continue
        if score is None:
            problems.append(_at(number, f"score {score_text!r} is not a number"))
            continue
        if not tag:
            tag, tag_line = line_tag, number
        elif line_tag != tag:
            problems.append(_at(number, f"tag {line_tag!r} differs from {tag!r} (line {tag_line}): "
                                        "one run per file"))
            continue
        where.setdefault(qid, number)
        rows.setdefault(qid, []).append((rank, -score, number, docno))
    rankings = {qid: [Entry(docno, number, -neg) for _, neg, number, docno in sorted(entries)]
                for qid, entries in rows.items()}
    return rankings, where, problems, tag


def _parse_jsonl(lines: Sequence[str]) -> tuple[dict, dict, list[RunProblem]]:
    rankings: dict[str, list[Entry]] = {}
    where: dict[str, int | None] = {}
    problems: list[RunProblem] = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        try:
            item = json.loads(text)
        except ValueError as exc:
            problems.append(_at(number, f"not JSON ({getattr(exc, 'msg', exc)})"))
            continue
        if not isinstance(item, dict):
            problems.append(_at(number, 'a line must be a JSON object {"query_id": ..., "ranked": [...]}'))
            continue
        qid = item.get("query_id")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
            problems.append(_at(number, "no query_id"))
            continue
        qid = str(qid).strip()
        ranked = item.get("ranked")
        if not isinstance(ranked, list):
            problems.append(_at(number, f"{qid}: 'ranked' must be a list"))
            continue
        if qid in rankings:
            problems.append(_at(number, f"{qid} is already ranked on line {where[qid]}"))
            continue
        where[qid] = number
        rankings[qid] = [Entry(value, number) for value in ranked]
    return rankings, where, problems


# --- a live retriever ----------------------------------------------------------------

def load_retriever(spec: str) -> Callable[[str], Any]:
    """The function named ``package.module:function``; RagloupeError saying what is wrong."""
    return load_function(spec, "--retriever", RagloupeError)


def load_function(spec: str, option: str, error: type[RagloupeError]) -> Callable[[str], Any]:
    """The function named ``package.module:function`` (given as ``option``); ``error`` saying what is
    wrong: `ragloupe eval --retriever` and an attached Python engine load theirs alike."""
    module_name, sep, attr = (spec or "").partition(":")
    if not sep or not module_name or not attr:
        raise error(f"{option} wants package.module:function, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module failing to import is theirs to fix, in one line
        raise error(f"{option}: cannot import {module_name} ({type(exc).__name__}: {exc})") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise error(f"{option}: {module_name} has no function {attr!r}")
    return function


def rank_with(function: Callable[[str], Any], queries: Sequence[GoldQuery], label: str) -> OutsideRanking:
    """Ask ``function`` every gold question; a raise or a reply that is no list is a problem."""
    rankings: dict[str, list[Entry]] = {}
    problems: list[RunProblem] = []
    for query in queries:
        try:
            result = function(query.question)
        except Exception as exc:  # the user's function: its failure is reported, not ours
            problems.append(RunProblem(query.query_id, f"the retriever raised {type(exc).__name__}: {exc}"))
            continue
        if result is None or isinstance(result, (str, bytes, Mapping)) or not hasattr(result, "__iter__"):
            problems.append(RunProblem(query.query_id, f"the retriever returned {type(result).__name__}, "
                                                       "not a ranked list"))
            continue
        rankings[query.query_id] = [Entry(value) for value in result]
    return OutsideRanking(label, {"kind": "retriever", "function": label}, rankings, {}, problems)


# --- resolving and scoring -------------------------------------------------------------

def unit_of(value: Any, documents: Mapping[str, DocumentInfo],
            record_owners: Mapping[str, list[str]]) -> tuple[str, str]:
    """(unit id, "") for an entry naming a unit the index holds, else ("", why not)."""
    if isinstance(value, str):
        doc, sep, part = value.strip().rpartition("#")
        if sep:
            return _unit_in(doc, part, documents, value)
        owners = record_owners.get(value.strip(), [])
        if len(owners) == 1:
            return f"{owners[0]}#{value.strip()}", ""
        if owners:
            return "", f"record {value!r} is in {', '.join(owners)}: write doc_id#{value}"
        return "", f"{value!r} is neither doc_id#pN nor a record id the index holds"
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
        where = value[1]
        part = f"p{where}" if isinstance(where, int) and not isinstance(where, bool) else str(where)
        return _unit_in(value[0], part, documents, json.dumps(list(value)))
    if isinstance(value, dict) and isinstance(value.get("doc_id"), str):
        if value.get("record_id") not in (None, ""):
            return _unit_in(value["doc_id"], str(value["record_id"]), documents, json.dumps(value))
        if isinstance(value.get("page"), int):
            return _unit_in(value["doc_id"], f"p{value['page']}", documents, json.dumps(value))
    if isinstance(value, dict) and isinstance(value.get("unit"), str):
        return unit_of(value["unit"], documents, record_owners)
    return "", (f"{json.dumps(value, default=str)[:80]} is not a unit: write 'doc_id#pN', a record id, "
                '[doc_id, page] or {"doc_id": ..., "page": N}')


def _unit_in(doc: str, part: str, documents: Mapping[str, DocumentInfo], written: str) -> tuple[str, str]:
    info = documents.get(doc)
    if info is None:
        return "", f"document {doc!r} of {written} is not in the index"
    if part in info.record_ids:
        return f"{doc}#{part}", ""
    page = _PAGE.fullmatch(part)
    if page and not info.record_ids:
        if 1 <= int(page.group(1)) <= info.n_pages:
            return f"{doc}#{part}", ""
        return "", f"{written}: {doc} has pages 1-{info.n_pages}"
    return "", f"{written}: {doc} has no {'record' if info.record_ids else 'page'} {part!r}"


def resolve(outside: OutsideRanking, queries: Sequence[GoldQuery], documents: Mapping[str, DocumentInfo],
            missing_as_empty: bool = False) -> tuple[dict[str, list[tuple[str, float | None]]], list[RunProblem]]:
    """Each gold query id's ranked units, and every problem with its line.

    Problems: a query id no gold set has, an entry naming no unit the index
    holds, and (unless ``missing_as_empty``) a gold question the run does not rank.
    """
    owners: dict[str, list[str]] = {}
    for doc_id, info in sorted(documents.items()):
        for record in info.record_ids:
            owners.setdefault(record, []).append(doc_id)
    gold_ids = {q.query_id for q in queries}
    problems = list(outside.problems)
    resolved: dict[str, list[tuple[str, float | None]]] = {}
    for qid, entries in outside.rankings.items():
        if qid not in gold_ids:
            problems.append(_where(outside, qid, None, f"query id {qid!r} is in no gold set given"))
            continue
        units = []
        for entry in entries:
            unit, why = unit_of(entry.value, documents, owners)
            if why:
                problems.append(_where(outside, qid, entry.line, why))
            else:
                units.append((unit, entry.score))
        resolved[qid] = units
    reported = {p.where for p in problems}
    for query in queries:
        if query.query_id not in outside.rankings and query.query_id not in reported:
            if missing_as_empty:
                resolved[query.query_id] = []
            else:
                problems.append(RunProblem(query.query_id, "the run has no ranking for this gold question "
                                                           "(--missing-as-empty scores it as finding nothing)"))
    problems.sort(key=lambda p: (p.line is None, p.line or 0, p.where))
    return resolved, problems


def score_outside(goldsets: Sequence[GoldSet | str | Path], outside: OutsideRanking, settings: Settings,
                  ks: Sequence[int] = M.DEFAULT_KS, scope: str = "doc", failure_k: int = 1,
                  missing_as_empty: bool = False, snapshot: IndexSnapshot | None = None,
                  *, store) -> RunReport:
    """The run report of an outside ranking (not written); OutsideRunInvalid listing every problem.
    ``store``: the index the gold units are looked up in."""
    ks = normalise_ks(ks)
    sets = load_goldsets(goldsets)
    asked = [q for g in sets for q in g.queries]
    snapshot = snapshot or index_snapshot(settings, sorted({q.doc_id for q in asked}), store)
    # As ragloupe's own runs: a question about a document this index does not hold is not scored.
    queries, not_indexed = split_by_index(asked, held_documents(snapshot.indexed_units))
    resolved, problems = resolve(outside, queries, snapshot.documents, missing_as_empty)
    if problems:
        raise OutsideRunInvalid(outside.label, problems)
    audits = {(a.goldset, a.query_id): a for a in audit_queries(queries, snapshot.unit_texts)}
    results = []
    for query in queries:
        ranked = resolved.get(query.query_id, [])
        units = M.dedupe(u for u, _ in ranked)
        view = RankingView(ranked_units=tuple(units),
                           engine_ranks={u: {outside.label: i} for i, u in enumerate(units, start=1)},
                           retrieved_text={u: snapshot.unit_texts.get(u, "") for u in units})
        scores = {}
        for unit, score in ranked:
            scores.setdefault(unit, score)
        results.append(score_view(query, view, scores, ks, failure_k, snapshot,
                                  audits[(query.goldset, query.query_id)]))
    findings = all_findings(sets, snapshot.documents)
    data = build_report(sets, results, f"outside:{outside.label}", ks, scope, failure_k, settings,
                        snapshot, findings, list(audits.values()), answers=False, not_indexed=not_indexed)
    data["source"] = outside.source
    data["failures"]["note"] = FP3_NOTE
    data["coverage"] = coverage_report(scored_goldsets(sets, not_indexed), settings, store)  # no model of ours ranked it
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", outside.label).strip("-")[:40] or "run"
    timings = {"started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return RunReport(f"outside-{slug}-{content_hash(data)[:12]}", data, timings)


def _where(outside: OutsideRanking, qid: str, line: int | None, reason: str) -> RunProblem:
    line = line if line is not None else outside.lines.get(qid)
    return _at(line, reason) if line is not None else RunProblem(qid, reason)


def _at(line: int, reason: str) -> RunProblem:
    return RunProblem(f"line {line}", reason, line)


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
