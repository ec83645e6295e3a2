"""Evaluation runs: gold sets in, a deterministic run report out, and the runs on disk.

``evaluate`` asks search() every gold question, scores the page (or record)
view of each ranking, labels every query with a failure code, audits the gold
labels, and writes the report as JSON under runs_dir. It indexes nothing: it
measures what the index holds: a question about a document the index does not hold is not
scored, and the report's ``not_indexed`` says so (not_indexed.py); a gold page of a held
document that has no chunk is FP1.

Determinism: the same index, settings and gold sets give a byte-identical
report except for its ``timings`` field. Keys are sorted, floats rounded to
FLOAT_DIGITS, the bootstrap is seeded and the run id is a hash of the content,
so a repeated run lands on the same file.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ragloupe.config import PROJECT_ROOT, Settings, get_settings
from ragloupe.errors import GoldSetInvalid, RagloupeError, RunNotFound
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.audit import CATEGORIES as AUDIT_CATEGORIES
from ragloupe.evaluate.audit import LabelAudit, audit_queries
from ragloupe.evaluate.coverage_sources import coverage_report
from ragloupe.evaluate.query_path import query_path, retrieved_chunk_ids
from ragloupe.evaluate.goldset import DocumentInfo, GoldQuery, GoldSet, all_findings, load_goldsets
from ragloupe.evaluate.not_indexed import held_documents, not_indexed_section, scored_goldsets, split_by_index
from ragloupe.evaluate.reports import (  # noqa: F401  (tuning.py imports them from here)
    FLOAT_DIGITS,
    Report,
    canonical_json,
    content_hash,
    read_report,
    rounded,
    save_report,
)
from ragloupe.evaluate.taxonomy import (
    GENERATION_CODES,
    NOT_ASSESSED,
    RETRIEVAL_CODES,
    TAXONOMY,
    Failure,
    IndexView,
    RankingView,
    classify_answer,
    classify_retrieval,
)
from ragloupe.index.manifest import Manifest
from ragloupe.models import Ranking
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace
from ragloupe.numbers import key_quantities, match_answer

SCHEMA = "ragloupe.run/1"
BOOTSTRAP_SEED = 20240501
SCOPES = ("doc", "all")
RANKED_IN_REPORT = 10  # units listed per query in the report (beyond the largest k when it is smaller)
# Settings that say where things are or hold secrets: not part of what a run measured.
_UNREPORTED_SETTINGS = {"raw_dir", "index_dir", "runs_dir", "benchmarks_dir", "models_dir", "logs_dir",
                        "collections_dir", "goldsets_dir", "openai_api_key"}

SearchFn = Callable[..., Ranking]


@dataclass(frozen=True)
class RunReport(Report):
    """A written evaluation run."""

    @property
    def aggregates(self) -> dict:
        return self.data["metrics"]["all"]


@dataclass(frozen=True)
class IndexSnapshot:
    """What the index holds for the documents a run is about."""

    documents: dict[str, DocumentInfo]
    indexed_units: frozenset[str]
    unit_notes: dict[str, str]
    unit_texts: dict[str, str]
    fingerprint: str


# --- the run --------------------------------------------------------------------

def evaluate(goldsets: Sequence[GoldSet | str | Path], mode: str = "hybrid",
             ks: Sequence[int] = M.DEFAULT_KS, scope: str = "doc", *, workspace: Workspace,
             answers: bool = False, failure_k: int = 1, write: bool = True,
             search_fn: SearchFn | None = None, snapshot: IndexSnapshot | None = None,
             answer_fn: Callable | None = None) -> RunReport:
    """Run every gold question through search() and write the report under runs_dir.

    ``scope="doc"`` filters each question to its gold document; ``"all"``
    searches the whole index. ``failure_k`` is the cutoff the failure codes are
    assigned at. ``answers=True`` also generates an answer per question with
    the configured LLM and assigns FP4-FP7. ``workspace`` (ragloupe.workspace)
    is the caller's open index and model, and its settings are the run's
    (``workspace.with_settings(other)`` for a sweep's); every question searches
    through it.
    ``search_fn`` and ``snapshot`` let a sweep reuse what it already has.
    Questions about documents the index does not hold are not scored (not_indexed.py);
    NothingToScore when that is every question.
    """
    settings = workspace.settings
    ks = normalise_ks(ks)
    _check_scope_and_cutoff(scope, failure_k)
    sets = load_goldsets(goldsets)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()

    store = workspace.store
    doc_ids = sorted({q.doc_id for g in sets for q in g.queries})
    snapshot = snapshot or index_snapshot(settings, doc_ids, store)
    search_fn = search_fn or search
    if answers and answer_fn is None:
        answer_fn = _load_answer_fn()

    findings = all_findings(sets, snapshot.documents)
    queries, not_indexed = split_by_index([q for g in sets for q in g.queries],
                                          held_documents(snapshot.indexed_units))
    depth = max(max(ks), int(settings.candidate_window), failure_k)
    audits = {(a.goldset, a.query_id): a for a in audit_queries(queries, snapshot.unit_texts)}

    results, seconds = [], {"search": [], "answer": []}
    for query in queries:
        t0 = time.perf_counter()
        ranking = _search_one(query, mode, depth, scope, settings, snapshot, search_fn, workspace)
        seconds["search"].append(time.perf_counter() - t0)
        result = score_query(query, ranking, ks, failure_k, snapshot, int(settings.top_k),
                             audits[(query.goldset, query.query_id)])
        if answers:
            t0 = time.perf_counter()
            result["answer"] = _answer_one(query, ranking, settings, answer_fn)
            seconds["answer"].append(time.perf_counter() - t0)
        results.append(result)

    data = build_report(sets, results, mode, ks, scope, failure_k, settings, snapshot, findings,
                        list(audits.values()), answers, not_indexed)
    # where the scored questions' gold pages sit
    data["coverage"] = coverage_report(scored_goldsets(sets, not_indexed), settings, store, mode)
    run_id = f"{mode}-{scope}-{content_hash(data)[:12]}"
    report = RunReport(run_id, data, _timings(started_at, time.perf_counter() - started, seconds))
    if write:
        report = save_report(report, settings)
    return report


def searched_documents(goldsets: Sequence[GoldSet], scope: str) -> list[str] | None:
    """The documents an evaluation (or a tuning sweep) of ``goldsets`` searches: each question's
    own under scope "doc", None (the whole index) under "all"."""
    return sorted({q.doc_id for g in goldsets for q in g.queries}) if scope == "doc" else None


def _check_scope_and_cutoff(scope: str, failure_k: int) -> None:
    """GoldSetInvalid, before anything runs, for a scope or failure cutoff that does not exist."""
    if scope not in SCOPES:
        raise GoldSetInvalid(f"unknown scope {scope!r}; use doc or all")
    if failure_k < 1:
        raise GoldSetInvalid("the failure cutoff k must be at least 1")


def _timings(started_at: str, total_s: float, seconds: dict[str, list[float]]) -> dict:
    """A run's timings field: kept apart from its data, so reruns stay byte-identical."""
    search = seconds["search"]
    timings = {"started_at": started_at, "total_s": round(total_s, 3),
               "search_s_mean": round(sum(search) / max(len(search), 1), 4),
               "search_s_max": round(max(search, default=0.0), 4)}
    if seconds["answer"]:
        timings["answer_s_mean"] = round(sum(seconds["answer"]) / len(seconds["answer"]), 3)
    return timings


def normalise_ks(ks: Iterable[int] | str) -> tuple[int, ...]:
    """'1,3,5,10' or [10, 1, 3] -> (1, 3, 5, 10); GoldSetInvalid for anything below 1."""
    if isinstance(ks, str):
        parts = [p.strip() for p in ks.split(",") if p.strip()]
        try:
            ks = [int(p) for p in parts]
        except ValueError:
            raise GoldSetInvalid(f"k takes whole numbers separated by commas, got {','.join(parts)!r}") from None
    values = sorted(set(int(k) for k in ks))
    if not values or values[0] < 1:
        raise GoldSetInvalid("every k must be a whole number of at least 1")
    return tuple(values)


def score_query(query: GoldQuery, ranking: Ranking | None, ks: Sequence[int], failure_k: int,
                snapshot: IndexSnapshot, context_chunks: int, audit: LabelAudit) -> dict:
    """Metrics, failure code and ranked units of one query, as a report entry; ``context_chunks``
    (Settings.top_k) is how many hits an answer reads."""
    scores = {p.unit: p.score for p in ranking.pages} if ranking else {}
    entry = score_view(query, ranking_view(ranking, context_chunks=context_chunks), scores,
                       ks, failure_k, snapshot, audit)
    # The question's path: what the engines searched and the chunks they retrieved, as deep as
    # the report lists units or an answer reads.
    entry["query_path"] = query_path(ranking)
    entry["retrieved_chunk_ids"] = retrieved_chunk_ids(ranking, max(max(ks), context_chunks, RANKED_IN_REPORT))
    return entry


def score_view(query: GoldQuery, view: RankingView, scores: Mapping[str, float | None], ks: Sequence[int],
               failure_k: int, snapshot: IndexSnapshot, audit: LabelAudit) -> dict:
    """score_query over a unit view: also how a ranking made outside ragloupe is scored."""
    ranked = list(view.ranked_units)
    expected = list(query.expected_units)
    first = M.first_relevant_rank(ranked, expected)
    index_view = IndexView(indexed_units=snapshot.indexed_units,
                           unit_notes={u: snapshot.unit_notes[u] for u in expected if u in snapshot.unit_notes},
                           page_text={u: snapshot.unit_texts.get(u, "") for u in expected})
    failure = classify_retrieval(expected, failure_k, view, index_view, query.expected_answer,
                                 query.answer_type)
    if failure.code == "FP2" and ranked:
        failure = _note_answer_on_top_unit(failure, query, ranked[0], snapshot)
    shown = ranked[:max(max(ks), RANKED_IN_REPORT)]
    return {
        "query_id": query.query_id, "goldset": query.goldset, "question": query.question,
        "doc_id": query.doc_id, "expected_units": expected, "expected_answer": query.expected_answer,
        "answer_type": query.answer_type, "difficulty": query.difficulty, "category": query.category,
        "first_relevant_rank": first,
        "metrics": M.query_metrics(ranked, expected, ks),
        "failure": failure.as_dict(),
        "label_audit": audit.as_dict(),
        # Every gold unit's final and engine ranks however deep, so a miss at rank 41 is shown
        # with its ranks even though "ranked" lists only the first units.
        "gold": [{"unit": u, "rank": ranked.index(u) + 1 if u in ranked else None,
                  "engines": dict(sorted(view.engine_ranks.get(u, {}).items()))} for u in expected],
        "ranked": [{"rank": i, "unit": u, "score": scores.get(u), "relevant": u in expected,
                    "engines": dict(sorted(view.engine_ranks.get(u, {}).items()))}
                   for i, u in enumerate(shown, start=1)],
    }


def _note_answer_on_top_unit(failure: Failure, query: GoldQuery, top_unit: str,
                             snapshot: IndexSnapshot) -> Failure:
    """Say so when the unit ranked first also holds the gold answer.

    Annual reports repeat their figures (a summary page and a note to the
    accounts), and gold sets name one page. Such a miss still counts as a
    miss; the note lets a reader see it is not a wrong answer source.
    """
    if not query.expected_answer or top_unit not in snapshot.unit_texts:
        return failure
    distinctive = query.answer_type != "number" or any(q.distinctive for q in key_quantities(query.expected_answer))
    match = match_answer(query.expected_answer, snapshot.unit_texts[top_unit], query.answer_type)
    holds = distinctive and match.status == "found"
    details = {**failure.details, "top_unit": top_unit, "top_unit_holds_answer": holds}
    evidence = failure.evidence + (f"; the unit ranked 1 ({top_unit}) also holds the gold answer" if holds else "")
    return Failure(failure.code, evidence, details)


def ranking_view(ranking: Ranking | None, context_chunks: int) -> RankingView:
    """The unit view of a Ranking for the taxonomy.

    A unit's retrieved text is what an answer would see of it: its chunks
    among the first ``context_chunks`` hits, and always its best chunk.
    """
    if ranking is None:
        return RankingView(ranked_units=())
    engine_ranks: dict[str, dict[str, int | None]] = {}
    chunk_text: dict[str, str] = {}
    chunk_rank: dict[str, int] = {}
    for hit in ranking.hits:
        chunk_text[hit.chunk.chunk_id] = hit.chunk.text
        chunk_rank[hit.chunk.chunk_id] = hit.rank
        ranks = engine_ranks.setdefault(hit.chunk.unit, {})
        for engine, score in hit.per_engine.items():
            current = ranks.get(engine)
            if score.rank is not None and (current is None or score.rank < current):
                ranks[engine] = score.rank
            else:
                ranks.setdefault(engine, current)
    retrieved: dict[str, str] = {}
    for page in ranking.pages:
        ids = [c for c in page.chunk_ids if chunk_rank.get(c, 10**9) <= context_chunks]
        ids = ids or list(page.chunk_ids[:1])
        retrieved[page.unit] = "\n".join(chunk_text.get(c, "") for c in ids)
    return RankingView(ranked_units=tuple(M.dedupe(p.unit for p in ranking.pages)),
                       engine_ranks=engine_ranks, retrieved_text=retrieved)


def build_report(sets: Sequence[GoldSet], results: list[dict], mode: str, ks: Sequence[int], scope: str,
                 failure_k: int, settings: Settings, snapshot: IndexSnapshot, findings: list,
                 audits: list[LabelAudit], answers: bool, not_indexed: dict | None = None) -> dict:
    """The deterministic body of a run report (no timings, no run id); ``not_indexed``: the
    questions left unscored (not_indexed.split_by_index), none when not given."""
    flagged = {(a.goldset, a.query_id) for a in audits if a.flagged}
    overall = M.aggregate([r["metrics"] for r in results], ks, seed=BOOTSTRAP_SEED)
    data = {
        "schema": SCHEMA,
        "mode": mode, "scope": scope, "ks": list(ks), "failure_k": failure_k,
        "answers": answers,
        "settings": {k: v for k, v in sorted(settings.as_dict().items()) if k not in _UNREPORTED_SETTINGS},
        "fingerprints": {"index": snapshot.fingerprint, "index_settings": settings.index_fingerprint(),
                         "goldsets": {g.name: g.sha256 for g in sets}},
        "goldsets": [{"name": g.name, "path": _display_path(g.path), "format": g.format,
                      "sha256": g.sha256, "queries": len(g.queries)} for g in sets],
        "n_queries": len(results),
        "not_indexed": not_indexed or not_indexed_section(len(results), []),
        "findings": [f.as_dict() for f in findings],
        "metrics": _metrics(results, flagged, ks),
        "recall_sweep": M.recall_plateau({k: overall[f"recall@{k}"].mean for k in ks}),
        "rank_survival": M.rank_survival([r["first_relevant_rank"] for r in results],
                                         depth=max(int(settings.candidate_window), max(ks))),
        "failures": _failures(results, failure_k, answers),
        "label_audit": {"flagged": sorted([a.as_dict() for a in audits if a.flagged],
                                          key=lambda a: (a["goldset"], a["query_id"])),
                        "n_flagged": len(flagged),
                        "by_category": dict(sorted(Counter(a.category for a in audits if a.flagged).items())),
                        "categories": AUDIT_CATEGORIES,
                        "n_checked": sum(1 for a in audits if a.status_on_expected != "unchecked")},
        "queries": results,
    }
    return rounded(data)


def _metrics(results: list[dict], flagged: set[tuple[str, str]], ks: Sequence[int]) -> dict:
    """Metrics with CIs over every question, without and with the suspected gold errors,
    and by gold set, difficulty and category."""
    def agg(rows: list[dict]) -> dict:
        return {name: est.as_dict(FLOAT_DIGITS)
                for name, est in M.aggregate([r["metrics"] for r in rows], ks, seed=BOOTSTRAP_SEED).items()}

    def grouped(key: Callable[[dict], str]) -> dict:
        groups: dict[str, list[dict]] = {}
        for r in results:
            groups.setdefault(key(r) or "(none)", []).append(r)
        return {name: agg(rows) for name, rows in sorted(groups.items())}

    suspect = [r for r in results if (r["goldset"], r["query_id"]) in flagged]
    return {"all": agg(results),
            "excluding_flagged": agg([r for r in results if (r["goldset"], r["query_id"]) not in flagged]),
            "label_suspect": agg(suspect) if suspect else {},
            "by_goldset": grouped(lambda r: r["goldset"]),
            "by_difficulty": grouped(lambda r: r["difficulty"]),
            "by_category": grouped(lambda r: r["category"])}


def _failures(results: list[dict], failure_k: int, answers: bool) -> dict:
    """Failure codes counted at ``failure_k``; FP4-FP7 only when answers were generated."""
    generation: dict[str, Any]
    if answers:
        generation = {"assessed": True,
                      "counts": _count([r["answer"]["failure"]["code"] for r in results],
                                       GENERATION_CODES + (NOT_ASSESSED,))}
    else:
        generation = {"assessed": False,
                      "note": "FP4-FP7 not assessed: no answers were generated (run with --answers)"}
    return {"k": failure_k, "counts": _count([r["failure"]["code"] for r in results], RETRIEVAL_CODES),
            "generation": generation,
            "fp2_top_unit_holds_answer": sum(
                1 for r in results if r["failure"]["details"].get("top_unit_holds_answer")),
            "taxonomy": TAXONOMY}


# --- the index side -------------------------------------------------------------

def index_snapshot(settings: Settings, doc_ids: Iterable[str], store) -> IndexSnapshot:
    """Documents, indexed units, reasons for unindexed units and unit texts, for ``doc_ids``.

    Unit texts are the unit's chunks joined in reading order: the text the
    index holds, which is what FP3 and the label audit must judge.
    """

    manifest = Manifest.load(settings)
    documents: dict[str, DocumentInfo] = {}
    notes: dict[str, str] = {}
    for doc_id, entry in sorted(manifest.documents.items()):
        documents[doc_id] = DocumentInfo(doc_id, n_pages=len(entry.pages),
                                         record_ids=frozenset(p.record_id for p in entry.pages if p.record_id))
        for page in entry.pages:
            if page.n_chunks:
                continue
            unit = f"{doc_id}#{page.record_id}" if page.record_id else f"{doc_id}#p{page.page}"
            what = f"record {page.record_id}" if page.record_id else f"page {page.page}"
            reason = entry.error or page.reason or "no chunk was made of it"
            notes[unit] = f"{what} of {doc_id} not indexed ({page.quality}): {reason}"
    for doc_id in doc_ids:
        if doc_id not in documents:
            continue
        entry = manifest.documents[doc_id]
        if entry.state != "complete":
            reason = entry.error or f"its indexing is {entry.state}"
            for page in entry.pages:
                unit = f"{doc_id}#{page.record_id}" if page.record_id else f"{doc_id}#p{page.page}"
                notes[unit] = f"{doc_id} is not in the index: {reason}"
    texts: dict[str, list[str]] = {}
    wanted = [d for d in doc_ids if d in documents]
    for doc_id in wanted:
        for chunk in store.all_chunks(where={"doc_id": doc_id}):
            texts.setdefault(chunk.unit, []).append(chunk.text)
    unit_texts = {u: "\n".join(parts) for u, parts in sorted(texts.items())}
    return IndexSnapshot(documents=documents, indexed_units=frozenset(unit_texts),
                         unit_notes=notes, unit_texts=unit_texts, fingerprint=store.fingerprint())


def _search_one(query: GoldQuery, mode: str, depth: int, scope: str, settings: Settings,
                snapshot: IndexSnapshot, search_fn: SearchFn, workspace) -> Ranking | None:
    """One question through search(); None when its document is not in the index."""
    if scope == "doc":
        if not any(u.startswith(query.doc_id + "#") for u in snapshot.indexed_units):
            return None
        filters = {"doc_ids": [query.doc_id]}
    else:
        filters = None
    return search_fn(query.question, mode=mode, k=depth, filters=filters, workspace=workspace)


def _load_answer_fn() -> Callable:
    try:  # optional: a build without the generate/ extras still evaluates retrieval
        from ragloupe.generate.answer import answer
    except ImportError as exc:
        raise RagloupeError(f"answers are not available in this build ({exc})") from None
    return answer


def _answer_one(query: GoldQuery, ranking: Ranking | None, settings: Settings, answer_fn: Callable) -> dict:
    """Generate an answer from the top_k hits and give it a generation code."""
    if ranking is None:
        ranking = Ranking(query=query.question, mode="", hits=())
    context = dataclasses.replace(ranking, hits=ranking.hits[: int(settings.top_k)])
    generated = answer_fn(query.question, context, settings)
    context_text = "\n".join(p.chunk.text for p in getattr(generated, "passages", ()))
    failure = classify_answer(query.expected_answer, query.answer_type, context_text, generated.text,
                              question=query.question)
    return {"text": generated.text, "cited_units": list(getattr(generated, "cited_units", ())),
            "model": getattr(generated, "model", ""), "failure": failure.as_dict()}


# --- runs on disk ---------------------------------------------------------------

def load_run(ref: str | Path, settings: Settings | None = None) -> RunReport:
    """A run by path, by id, or by a unique prefix of its id."""
    settings = settings or get_settings()
    path = Path(ref)
    if not path.is_file():
        runs_dir = settings.path("runs_dir")
        candidate = runs_dir / f"{ref}.json"
        if candidate.is_file():
            path = candidate
        else:
            matches = sorted(runs_dir.glob(f"{ref}*.json")) if runs_dir.is_dir() else []
            if len(matches) != 1:
                why = "no run" if not matches else f"{len(matches)} runs"
                raise RunNotFound(f"{why} matching {ref!r} in {runs_dir}; `ragloupe runs` lists them")
            path = matches[0]
    run_id, data, timings = read_report(path, SCHEMA, "run")
    return RunReport(run_id, data, timings, path)


def list_runs(settings: Settings | None = None) -> list[dict]:
    """One summary row per readable run report, newest first."""
    settings = settings or get_settings()
    runs_dir = settings.path("runs_dir")
    rows = []
    for path in sorted(runs_dir.glob("*.json")) if runs_dir.is_dir() else []:
        try:
            run = load_run(path, settings)
        except RunNotFound:
            continue
        overall = run.data["metrics"]["all"]
        rows.append({
            "run_id": run.run_id, "started_at": run.timings.get("started_at", ""),
            "mode": run.data["mode"], "scope": run.data["scope"],
            "goldsets": [g["name"] for g in run.data["goldsets"]], "queries": run.data["n_queries"],
            # questions asked, with those about documents not in the index (not scored)
            "asked": (run.data.get("not_indexed") or {}).get("n_asked", run.data["n_queries"]),
            "hit@1": overall.get("hit@1", {}).get("mean"), "mrr": overall.get("mrr", {}).get("mean"),
            "path": str(path)})
    rows.sort(key=lambda r: (r["started_at"], r["run_id"]), reverse=True)
    return rows


# --- helpers --------------------------------------------------------------------

def _count(codes: Iterable[str], vocabulary: Sequence[str]) -> dict[str, int]:
    counts = {code: 0 for code in vocabulary}
    for code in codes:
        counts[code] = counts.get(code, 0) + 1
    return counts


def _display_path(path: str) -> str:
    """Gold-set paths relative to the project when inside it, so reports do not depend on checkouts."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


_rounded = rounded  # tuning.py's name for it, until it imports reports.rounded
