"""Per-candidate features for learned fusion: what each engine said, and what the chunk holds.

One row of floats per candidate chunk of a question, every name in FEATURES,
in that order. The features are chosen to mean the same thing on a report
the model never saw: ranks and scores relative to the question's own lists
(never raw BM25 scores, whose scale depends on the corpus), shares of the
question's terms, numbers, periods and codes found in the chunk, its page,
section and heading fields, whether it is a table, and where it sits in its
document.

Pure apart from ``corpus_views``, which builds (and keeps, per chunk-level
BM25 index) BM25 indexes over whole pages and whole sections from the chunks
the chunk-level index already holds.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ragloupe.index import lexical
from ragloupe.models import Chunk, EngineScore
from ragloupe.retrieve import query_analysis as QA

# Bump when a feature's meaning or computation changes: a learned model trained
# on another version refuses to load.
FEATURE_VERSION = 1

FEATURES = (
    "dense_rr",            # 1 / dense rank (0 when dense did not list it)
    "dense_gap",           # cosine similarity minus the question's best (0 at the top, < 0 below)
    "dense_missing",       # 1 when dense did not list it
    "bm25_rr",             # 1 / bm25 rank
    "bm25_rel",            # BM25 score / the question's best BM25 score
    "bm25_missing",        # 1 when bm25 did not list it
    "page_bm25_rel",       # BM25 of the whole page (or record) / the best page among the candidates
    "section_bm25_rel",    # BM25 of the whole section of its document / the best section among them
    "heading_match",       # share of the question's terms in the chunk's section heading and title
    "term_share",          # share of the question's terms in the chunk's own text
    "number_match",        # share of the question's plain numbers found in the chunk's tokens
    "period_in_chunk",     # query analysis: the chunk names the question's target period
    "doc_period_match",    # query analysis: its document is of that period (0.5: of another named one)
    "amount_match",        # query analysis: share of the question's amounts in the chunk
    "code_match",          # query analysis: share of the question's codes in the chunk
    "is_table",            # 1 for a table chunk (chunk.kind == "table"); prose otherwise
    "page_position",       # page / pages of its document (0 first, 1 last); records: ordinal share
    "first_on_page",       # 1 for the first chunk of its page or record
    "length",              # tokens / 256
)

_NUMBER = re.compile(r"^\d[\d,]*(?:\.\d+)?$")


@dataclass(frozen=True)
class CorpusViews:
    """BM25 over whole pages and whole sections, and each document's page count."""

    units: lexical.LexicalIndex
    unit_row: dict[str, int]
    sections: lexical.LexicalIndex
    section_row: dict[tuple[str, str], int]
    doc_pages: dict[str, int]


_views_lock = threading.Lock()
_views: list[tuple[lexical.LexicalIndex, CorpusViews]] = []


def corpus_views(index: lexical.LexicalIndex) -> CorpusViews:
    """Page- and section-level BM25 built from the chunk-level index's chunks (kept for its last two)."""
    with _views_lock:
        for source, views in _views:
            if source is index:
                return views
    by_unit: dict[str, list[Chunk]] = defaultdict(list)
    by_section: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    doc_pages: dict[str, int] = defaultdict(int)
    for chunk in index.chunks:
        by_unit[chunk.unit].append(chunk)
        by_section[(chunk.doc_id, chunk.section)].append(chunk)
        doc_pages[chunk.doc_id] = max(doc_pages[chunk.doc_id], chunk.page)

    def merged(key: str, doc_id: str, chunks: list[Chunk]) -> Chunk:
        ordered = sorted(chunks, key=lambda c: (c.page, c.position))
        return Chunk(chunk_id=key, doc_id=doc_id, page=ordered[0].page, position=0,
                     text="\n".join(c.text for c in ordered), n_tokens=0, quality="clean",
                     section=ordered[0].section, title=ordered[0].title)

    unit_keys = sorted(by_unit)
    unit_chunks = [merged(u, by_unit[u][0].doc_id, by_unit[u]) for u in unit_keys]
    section_keys = sorted(by_section)
    section_chunks = [merged(f"{d}\x1f{s}", d, by_section[(d, s)]) for d, s in section_keys]
    units = lexical.build_index(unit_chunks, k1=index.k1, b=index.b, backend=index.backend)
    sections = lexical.build_index(section_chunks, k1=index.k1, b=index.b, backend=index.backend)
    views = CorpusViews(units, {c.chunk_id: i for i, c in enumerate(units.chunks)},
                        sections, {tuple(c.chunk_id.split("\x1f", 1)): i for i, c in enumerate(sections.chunks)},
                        dict(doc_pages))
    with _views_lock:
        _views.append((index, views))
        del _views[:-2]
    return views


_terms_lock = threading.Lock()
_chunk_terms_cache: OrderedDict[tuple[str, str, str, str], tuple[frozenset, frozenset]] = OrderedDict()
_CHUNK_TERMS_CACHE_SIZE = 50_000  # a candidate window's chunks recur across questions; ~1 KB each


def chunk_terms(chunk: Chunk) -> tuple[frozenset, frozenset]:
    """The BM25 tokens of a chunk's text and of its section heading and title, kept per chunk.

    Tokenising every candidate was most of learned fusion's time per search;
    the same chunks come back as candidates question after question.
    """
    key = (chunk.chunk_id, chunk.text, chunk.section, chunk.title)
    with _terms_lock:
        found = _chunk_terms_cache.get(key)
        if found is not None:
            _chunk_terms_cache.move_to_end(key)
            return found
    found = (frozenset(lexical.tokenize(chunk.text)), frozenset(lexical.tokenize(f"{chunk.section} {chunk.title}")))
    with _terms_lock:
        _chunk_terms_cache[key] = found
        while len(_chunk_terms_cache) > _CHUNK_TERMS_CACHE_SIZE:
            _chunk_terms_cache.popitem(last=False)
    return found


def query_terms(query: str) -> set[str]:
    """The question's BM25 tokens (stop words dropped), as a set."""
    return set(lexical.tokenize(query))


_rows_lock = threading.Lock()
_rows_cache: OrderedDict[tuple, tuple] = OrderedDict()
_ROWS_CACHE_SIZE = 2048  # one entry per (question, candidate list): a tuning sweep replays each many times


def candidate_features(query: str, chunks: Sequence[Chunk], per_engine: Sequence[Mapping[str, EngineScore]],
                       views: CorpusViews, analysis: QA.QueryAnalysis | None = None,
                       periods: Mapping[str, QA.DocumentPeriod] | None = None) -> np.ndarray:
    """A (candidates x FEATURES) float matrix for one question's candidates.

    The same inputs always give the same rows, so they are kept (by question,
    candidates, engine views and corpus) for the replays of a tuning sweep.
    """
    key = (id(views), query, analysis, id(periods),
           tuple((c.chunk_id, tuple(sorted((e, v.rank, v.score) for e, v in engines.items())))
                 for c, engines in zip(chunks, per_engine)))
    with _rows_lock:
        cached = _rows_cache.get(key)
        # The objects themselves are kept and compared: an id can be reused once they are gone.
        if cached is not None and cached[0] is views and cached[1] is periods:
            _rows_cache.move_to_end(key)
            return cached[2].copy()
    rows = _candidate_features(query, chunks, per_engine, views, analysis, periods)
    with _rows_lock:
        _rows_cache[key] = (views, periods, rows)
        while len(_rows_cache) > _ROWS_CACHE_SIZE:
            _rows_cache.popitem(last=False)
    return rows.copy()


def _candidate_features(query: str, chunks: Sequence[Chunk], per_engine: Sequence[Mapping[str, EngineScore]],
                        views: CorpusViews, analysis: QA.QueryAnalysis | None,
                        periods: Mapping[str, QA.DocumentPeriod] | None) -> np.ndarray:
    terms = query_terms(query)
    tokens = lexical.tokenize(query)
    numbers = {t for t in terms if _NUMBER.match(t)}
    best_sim = max((v["dense"].score for v in per_engine if "dense" in v and v["dense"].rank is not None),
                   default=None)
    best_bm25 = max((v["bm25"].score for v in per_engine if "bm25" in v and v["bm25"].rank is not None),
                    default=None)
    unit_scores = views.units.scores(tokens)
    section_scores = views.sections.scores(tokens)
    page_values = [float(unit_scores[views.unit_row[c.unit]]) if c.unit in views.unit_row else 0.0
                   for c in chunks]
    section_values = [float(section_scores[views.section_row[(c.doc_id, c.section)]])
                      if (c.doc_id, c.section) in views.section_row else 0.0 for c in chunks]
    best_page, best_section = max(page_values, default=0.0), max(section_values, default=0.0)
    rows = np.zeros((len(chunks), len(FEATURES)))
    for i, (chunk, engines) in enumerate(zip(chunks, per_engine)):
        dense, bm25 = engines.get("dense"), engines.get("bm25")
        chunk_tokens, heading_tokens = chunk_terms(chunk)
        matches = _analysis_matches(analysis, chunk, periods)
        n_pages = max(views.doc_pages.get(chunk.doc_id, 1), 1)
        row = {
            "dense_rr": 1.0 / dense.rank if dense and dense.rank else 0.0,
            "dense_gap": (dense.score - best_sim) if dense and dense.rank and best_sim is not None else 0.0,
            "dense_missing": 0.0 if dense and dense.rank else 1.0,
            "bm25_rr": 1.0 / bm25.rank if bm25 and bm25.rank else 0.0,
            "bm25_rel": (bm25.score / best_bm25) if bm25 and bm25.rank and best_bm25 else 0.0,
            "bm25_missing": 0.0 if bm25 and bm25.rank else 1.0,
            "page_bm25_rel": page_values[i] / best_page if best_page > 0 else 0.0,
            "section_bm25_rel": section_values[i] / best_section if best_section > 0 else 0.0,
            "heading_match": len(terms & heading_tokens) / len(terms) if terms else 0.0,
            "term_share": len(terms & chunk_tokens) / len(terms) if terms else 0.0,
            "number_match": len(numbers & chunk_tokens) / len(numbers) if numbers else 0.0,
            **matches,
            "is_table": 1.0 if getattr(chunk, "kind", "prose") == "table" else 0.0,
            "page_position": (chunk.page - 1) / max(n_pages - 1, 1),
            "first_on_page": 1.0 if chunk.position == 0 else 0.0,
            "length": chunk.n_tokens / 256.0,
        }
        rows[i] = [row[name] for name in FEATURES]
    return rows


_ANALYSIS_FEATURES = ("period_in_chunk", "doc_period_match", "amount_match", "code_match")


def _analysis_matches(analysis: QA.QueryAnalysis | None, chunk: Chunk,
                      periods: Mapping[str, QA.DocumentPeriod] | None) -> dict[str, float]:
    if analysis is None or analysis.empty:
        return {name: 0.0 for name in _ANALYSIS_FEATURES}
    doc_period = periods.get(chunk.doc_id) if periods else None
    found = QA.match_features(analysis, chunk, doc_period.period if doc_period else None)
    return {name: float(found[name]) for name in _ANALYSIS_FEATURES}
