"""Per-candidate features for learned fusion: what each engine said, what the chunk and its page hold.

One row of floats per candidate chunk of a question, every name in FEATURES,
in that order. The features are chosen to mean the same thing on a document
the model never saw: ranks and scores relative to the question's own lists
(never raw BM25 scores, whose scale depends on the corpus), shares of the
question's terms, numbers, periods and codes found in the chunk and its page,
and how the question's terms sit beside the figures of an accounts table.
Nothing reads where a chunk sits in its document: a gold set's questions
cluster where its author read (the shipped benchmark's on pages 4-33 of
150-page reports), and a position feature learns that instead of relevance.

A pointwise model weighs a signal that is the same for every candidate of a
question only through a product with one that is not, so the question-level
signals (how much the engines agree in their top 10, how peaked each engine's
scores are, how many of the question's terms the corpus lacks) enter as
interactions with the engines' reciprocal ranks: "trust dense when the two
agree", "trust BM25 when its scores are peaked".

Pure: ``build_views`` builds BM25 indexes over whole pages and whole sections,
each page's and each chunk's terms, from the chunks the chunk-level index
already holds; the workspace keeps them once per store content
(Workspace.corpus_views), with the feature rows of recent questions.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, fields
from typing import AbstractSet, Mapping, Sequence

import numpy as np

from ragloupe.index import lexical
from ragloupe.models import Chunk, EngineScore
from ragloupe.retrieve import query_analysis as QA
from ragloupe.retrieve import term_arrays
from ragloupe.content_cache import ContentCache

# Bump when a feature's meaning or computation changes: a learned model trained
# on another version refuses to load.
FEATURE_VERSION = 2

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
    "page_term_share",     # share of the question's terms anywhere on its page (or record)
    "number_match",        # share of the question's plain numbers found in the chunk's tokens
    "page_number_match",   # share of them anywhere on its page
    "label_match",         # share of the question's words among the 8 words before one figure of the chunk
    "caps_heading_match",  # share of the question's words in its page's upper-case headings ("7A. PROVISIONS")
    "period_in_chunk",     # query analysis: the chunk names the question's target period
    "doc_period_match",    # query analysis: its document is of that period (0.5: of another named one)
    "amount_match",        # query analysis: share of the question's amounts in the chunk
    "code_match",          # query analysis: share of the question's codes in the chunk
    "is_table",            # 1 for a table chunk (chunk.kind == "table"); prose otherwise
    "first_on_page",       # 1 for the first chunk of its page or record
    "length",              # tokens / 256
    "dense_rr_x_agree",    # dense_rr x the share of dense's top 10 that BM25's top 10 also holds
    "bm25_rr_x_agree",     # bm25_rr x the same agreement
    "dense_rr_x_peak",     # dense_rr x how far dense's best similarity stands above its 10th
    "bm25_rr_x_peak",      # bm25_rr x how far BM25's best score stands above its 10th (share of the best)
    "dense_rr_x_unseen",   # dense_rr x the share of the question's terms no page of the corpus holds
    "bm25_rr_x_unseen",    # bm25_rr x the same share
)

# The features a model is trained on unless told otherwise. first_on_page and length are
# computed (for the explanation and for experiments) but left out: out-of-fold on every
# family, the worst family's objective is higher without them (docs/retrieval.md,
# benchmarks/results/ranking_features.json).
MODEL_FEATURES = tuple(name for name in FEATURES if name not in ("first_on_page", "length"))

_NUMBER = re.compile(r"^\d[\d,]*(?:\.\d+)?$")
_FIGURE = re.compile(r"^\(?-?£?\d[\d,]*(?:\.\d+)?\)?%?$")
_WORD = re.compile(r"[A-Za-z][A-Za-z'&-]*|\(?-?£?\d[\d,]*(?:\.\d+)?\)?%?")
# An upper-case heading of a flattened accounts page: "7a. PROPERTY, PLANT AND EQUIPMENT".
_CAPS_RUN = re.compile(r"(?:\b[A-Z][A-Z&'-]{2,}\b[ ,/-]*){2,}")
LABEL_WINDOW = 8
# The format of what build_views returns as index.derived_saved keeps it: bump it by hand when the views
# (or term_arrays, or the tokenizer they are built with) change, so no copy saved by older code is loaded.
VIEWS_FORMAT = 1
ROWS_KEPT = 4096  # feature rows of (question, candidate list) kept per corpus views


@dataclass(frozen=True)
class ChunkTerms:
    """What a chunk's text says, read once: its tokens, its heading's, and its words in order."""

    tokens: frozenset
    heading: frozenset
    words: np.ndarray  # ids (CorpusViews.word_ids) of its normalised words and figures, in reading order
    figures: np.ndarray  # positions in ``words`` that are figures


@dataclass(frozen=True)
class CorpusViews:
    """BM25 over whole pages and whole sections, each page's and each chunk's tokens, each document's page count.

    Built once per chunk-level BM25 index (so once per store content): every
    candidate's page- and chunk-level terms are then a look-up, not a reading
    of its text per question. ``unit_tokens``, ``unit_headings`` and ``chunk_terms``
    are mappings over compact arrays (retrieve.term_arrays) that make a page's
    frozenset or a chunk's ChunkTerms when a candidate asks for it; ``word_ids``,
    ``vocabulary`` and the BM25s' vocabularies are arrays over one table of
    strings; the page and section BM25s keep their models, not the merged texts
    they were built from.
    """

    units: lexical.LexicalIndex
    unit_row: dict[str, int]
    sections: lexical.LexicalIndex
    section_row: dict[tuple[str, str], int]
    doc_pages: dict[str, int]
    unit_tokens: Mapping[str, frozenset]  # unit -> the BM25 tokens of its whole text
    unit_headings: Mapping[str, frozenset]  # unit -> the tokens of its upper-case headings
    vocabulary: AbstractSet[str]  # every token some page holds
    word_ids: Mapping[str, int] = field(default_factory=dict)  # every word of a chunk -> its id in ChunkTerms.words
    chunk_terms: Mapping[str, ChunkTerms] = field(default_factory=dict)  # chunk_id -> its terms, every chunk
    # fiscal-year start month -> chunk_id -> the periods its text names, filled as candidates come
    named_periods: dict[int, dict[str, frozenset]] = field(default_factory=dict, compare=False)
    # the feature rows of recent (question, candidates): a tuning sweep replays each many times
    rows: ContentCache = field(default_factory=lambda: ContentCache(size=ROWS_KEPT), compare=False)

    def __reduce__(self):
        """Pickled (index.derived_saved) without what fills per process (the named periods, the
        feature rows); the term tables pickle as their arrays."""
        return (_restored_views, ({f.name: getattr(self, f.name) for f in fields(self) if f.compare},))

    def chunk_ids(self) -> list[str]:
        """The chunks these views were built over, in the chunk BM25's order."""
        return list(self.chunk_terms)

    def periods_in(self, chunk: Chunk, fy_start_month: int) -> frozenset:
        """The fiscal periods the chunk's text names (query_analysis.periods_named_in), read once per chunk."""
        known = self.named_periods.setdefault(fy_start_month, {})
        found = known.get(chunk.chunk_id)
        if found is None:
            found = QA.periods_named_in(chunk.text, fy_start_month)
            if chunk.chunk_id in self.chunk_terms:  # only chunks of this content are kept
                known[chunk.chunk_id] = found
        return found

    def terms(self, chunk: Chunk) -> ChunkTerms:
        """The chunk's terms: looked up for a chunk of the index, read for any other."""
        found = self.chunk_terms.get(chunk.chunk_id)
        return found if found is not None else read_terms(chunk, self.word_ids, {})


def _restored_views(core: dict) -> CorpusViews:
    return CorpusViews(**core)


def build_views(index: lexical.LexicalIndex) -> CorpusViews:
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

    unit_chunks = [merged(u, by_unit[u][0].doc_id, by_unit[u]) for u in sorted(by_unit)]
    section_chunks = [merged(f"{d}\x1f{s}", d, by_section[(d, s)]) for d, s in sorted(by_section)]
    units = _textless(lexical.build_index(unit_chunks, k1=index.k1, b=index.b, backend=index.backend))
    sections = _textless(lexical.build_index(section_chunks, k1=index.k1, b=index.b, backend=index.backend))
    strings = term_arrays.Strings()
    unit_row = {key: i for i, key in enumerate(units.chunks.keys)}
    # unit_chunks are in unit_row's order (build_index orders by chunk_id, the unit)
    unit_tokens = term_arrays.TokenSets(unit_row, strings, *_joined(
        [strings.row(lexical.tokenize(c.text)) for c in unit_chunks]))
    headings = term_arrays.TokenSets(unit_row, strings, *_joined([strings.row(lexical.tokenize(
        " ".join(m.group() for m in _CAPS_RUN.finditer(c.text)))) for c in unit_chunks]))
    on_a_page = np.zeros(len(strings.ids), dtype=bool)
    on_a_page[unit_tokens.ids] = True
    del unit_chunks, section_chunks
    word_ids, terms = _chunk_terms(index.chunks, strings)
    for model in (units.model, sections.model):  # their vocabularies as arrays over the same strings
        if hasattr(model, "vocab_dict"):
            model.vocab_dict = strings.local(model.vocab_dict)
    return CorpusViews(units, unit_row, sections,
                       {tuple(key.split("\x1f", 1)): i for i, key in enumerate(sections.chunks.keys)},
                       dict(doc_pages), unit_tokens, headings, term_arrays.StringSet(strings, on_a_page),
                       word_ids, terms)


def _textless(index: lexical.LexicalIndex) -> lexical.LexicalIndex:
    """A whole-page or whole-section BM25 without the merged texts it was built from."""
    docs = index.doc_codes
    index.chunks = term_arrays.TextlessRows([c.chunk_id for c in index.chunks], list(docs.names), docs.codes,
                                            index.pages)
    return index


def _chunk_terms(chunks, strings: term_arrays.Strings) -> tuple[Mapping[str, int], term_arrays.ChunkTermTable]:
    """Every chunk's terms (read_terms), as rows of arrays: token ids, heading, word ids, figures."""
    word_ids: dict[str, int] = {}
    heading_tokens: dict[str, frozenset] = {}
    headings: dict[int, int] = {}  # id() of a heading's frozenset -> its index
    heading_sets: list[frozenset] = []
    row: dict[str, int] = {}
    token_rows, heading_of, words, figures = [], [], [], []
    for chunk in chunks:
        found = read_terms(chunk, word_ids, heading_tokens, grow=True)
        row[chunk.chunk_id] = len(row)
        token_rows.append(strings.row(found.tokens))
        if id(found.heading) not in headings:
            headings[id(found.heading)] = len(heading_sets)
            heading_sets.append(found.heading)
        heading_of.append(headings[id(found.heading)])
        words.append(found.words.astype(np.int32))
        figures.append(found.figures.astype(np.int32))
    tokens = term_arrays.TokenSets(row, strings, *_joined(token_rows))
    return strings.local(word_ids), term_arrays.ChunkTermTable(
        tokens, heading_sets, np.asarray(heading_of, dtype=np.int32), _joined(words), _joined(figures), ChunkTerms)


def _joined(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    at = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in arrays], out=at[1:])
    return (np.concatenate(arrays).astype(np.int32) if arrays else np.zeros(0, dtype=np.int32)), at


def read_terms(chunk: Chunk, word_ids: dict[str, int], headings: dict[str, frozenset],
               grow: bool = False) -> ChunkTerms:
    """The BM25 tokens of a chunk's text and heading, and its words in order as ids in ``word_ids``.

    ``grow`` adds the words ``word_ids`` lacks; otherwise such a word gets the id
    ``len(word_ids)``, which no question word has. ``headings`` keeps the tokens
    of each heading read so far (a document's chunks share a few).
    """
    words = [w.lower() for w in _WORD.findall(lexical.normalise(chunk.text))]
    figures = np.asarray([i for i, w in enumerate(words) if _FIGURE.match(w) and any(ch.isdigit() for ch in w)],
                         dtype=np.int64)
    if grow:
        ids = [word_ids.setdefault(w, len(word_ids)) for w in words]
    else:
        unknown = len(word_ids)
        ids = [word_ids.get(w, unknown) for w in words]
    heading_text = f"{chunk.section} {chunk.title}"
    heading = headings.get(heading_text)
    if heading is None:
        heading = headings[heading_text] = frozenset(lexical.tokenize(heading_text))
    return ChunkTerms(frozenset(lexical.tokenize(chunk.text)), heading, np.asarray(ids, dtype=np.int64), figures)


def query_terms(query: str) -> set[str]:
    """The question's BM25 tokens (stop words dropped), as a set."""
    return set(lexical.tokenize(query))


def question_words(words_of_question: set[str], views: CorpusViews) -> np.ndarray:
    """A mask over ``views.word_ids`` (one slot more, for words no chunk holds): the question's words."""
    mask = np.zeros(len(views.word_ids) + 1, dtype=bool)
    ids = [views.word_ids[w] for w in words_of_question if w in views.word_ids]
    mask[ids] = True
    return mask


def label_match(words_of_question: set[str], in_question: np.ndarray, terms: ChunkTerms) -> float:
    """The most of the question's words found among the LABEL_WINDOW words before any one figure.

    An accounts page flattens each table row to "Provisions 1,234 5,678": the
    row's label is the words before its figures. A question whose words sit in
    one row's label, right before a figure, asks for that figure.
    ``in_question`` is question_words(words_of_question, views).
    """
    if not words_of_question or not len(terms.figures):
        return 0.0
    running = np.concatenate(([0], np.cumsum(in_question[terms.words], dtype=np.int64)))
    ends = terms.figures
    starts = np.maximum(ends - LABEL_WINDOW, 0)
    return float(min(1.0, (running[ends] - running[starts]).max() / len(words_of_question)))


@dataclass(frozen=True)
class QuestionSignals:
    """What is the same for every candidate of a question: how far to trust each engine."""

    agreement: float  # share of dense's top 10 that BM25's top 10 also lists
    dense_peak: float  # best cosine similarity minus the 10th best (0 with fewer than 2)
    bm25_peak: float  # (best BM25 score - the 10th best) / the best
    unseen: float  # share of the question's terms that no page of the corpus holds


def question_signals(terms: set[str], per_engine: Sequence[Mapping[str, EngineScore]],
                     views: CorpusViews) -> QuestionSignals:
    def top(engine: str) -> list[tuple[int, float]]:
        listed = sorted((v[engine].rank, v[engine].score) for v in per_engine
                        if engine in v and v[engine].rank is not None)
        return listed[:10]

    dense, bm25 = top("dense"), top("bm25")
    dense_top = {i for i, v in enumerate(per_engine) if "dense" in v and v["dense"].rank and v["dense"].rank <= 10}
    bm25_top = {i for i, v in enumerate(per_engine) if "bm25" in v and v["bm25"].rank and v["bm25"].rank <= 10}
    agreement = len(dense_top & bm25_top) / max(len(dense_top), 1) if dense_top else 0.0
    dense_peak = dense[0][1] - dense[-1][1] if len(dense) > 1 else 0.0
    bm25_peak = (bm25[0][1] - bm25[-1][1]) / bm25[0][1] if len(bm25) > 1 and bm25[0][1] > 0 else 0.0
    unseen = len(terms - views.vocabulary) / len(terms) if terms else 0.0
    return QuestionSignals(agreement, dense_peak, bm25_peak, unseen)


def candidate_features(query: str, chunks: Sequence[Chunk], per_engine: Sequence[Mapping[str, EngineScore]],
                       views: CorpusViews, analysis: QA.QueryAnalysis | None = None,
                       periods: Mapping[str, QA.DocumentPeriod] | None = None) -> np.ndarray:
    """A (candidates x FEATURES) float matrix for one question's candidates.

    The same inputs always give the same rows, so ``views`` keeps them (by question,
    candidates and engine views) for the replays of a tuning sweep.
    """
    key = (query, analysis, id(periods),
           tuple((c.chunk_id, tuple(sorted((e, v.rank, v.score) for e, v in engines.items())))
                 for c, engines in zip(chunks, per_engine)))
    kept_periods, rows = views.rows.get(
        key, lambda: (periods, _candidate_features(query, chunks, per_engine, views, analysis, periods)))
    # The periods themselves are kept and compared: an id can be reused once they are gone.
    if kept_periods is not periods:
        rows = _candidate_features(query, chunks, per_engine, views, analysis, periods)
    return rows.copy()


def _relative_bm25(tokens: list[str], chunks: Sequence[Chunk], views: CorpusViews) -> tuple[list, list]:
    """Each candidate's whole-page and whole-section BM25, each over the best among the candidates.

    Only the candidates' pages and sections are scored (LexicalIndex.scores_of: the same values
    as scoring every page of the corpus, which grew with it)."""
    pages = _scores_of(views.units, tokens, [views.unit_row.get(c.unit) for c in chunks])
    sections = _scores_of(views.sections, tokens, [views.section_row.get((c.doc_id, c.section)) for c in chunks])
    best_page, best_section = max(pages, default=0.0), max(sections, default=0.0)
    return ([v / best_page if best_page > 0 else 0.0 for v in pages],
            [v / best_section if best_section > 0 else 0.0 for v in sections])


def _scores_of(index: lexical.LexicalIndex, tokens: list[str], rows: list[int | None]) -> list[float]:
    """The BM25 score of each row of ``index`` (0.0 where the row is None: not in the views)."""
    held = sorted({row for row in rows if row is not None})
    scored = dict(zip(held, index.scores_of(tokens, held).tolist()))
    return [scored[row] if row is not None else 0.0 for row in rows]


def _share(part: set, whole: frozenset) -> float:
    return len(part & whole) / len(part) if part else 0.0


def _candidate_features(query: str, chunks: Sequence[Chunk], per_engine: Sequence[Mapping[str, EngineScore]],
                        views: CorpusViews, analysis: QA.QueryAnalysis | None,
                        periods: Mapping[str, QA.DocumentPeriod] | None) -> np.ndarray:
    terms = query_terms(query)
    numbers = {t for t in terms if _NUMBER.match(t)}
    words = {t for t in terms if t.isalpha()}
    best_sim = max((v["dense"].score for v in per_engine if "dense" in v and v["dense"].rank is not None),
                   default=None)
    best_bm25 = max((v["bm25"].score for v in per_engine if "bm25" in v and v["bm25"].rank is not None),
                    default=None)
    page_rel, section_rel = _relative_bm25(lexical.tokenize(query), chunks, views)
    signals = question_signals(terms, per_engine, views)
    in_question = question_words(words, views)
    rows = np.zeros((len(chunks), len(FEATURES)))
    for i, (chunk, engines) in enumerate(zip(chunks, per_engine)):
        dense, bm25 = engines.get("dense"), engines.get("bm25")
        found = views.terms(chunk)
        page_tokens = views.unit_tokens.get(chunk.unit, found.tokens)
        dense_rr = 1.0 / dense.rank if dense and dense.rank else 0.0
        bm25_rr = 1.0 / bm25.rank if bm25 and bm25.rank else 0.0
        row = {
            "dense_rr": dense_rr,
            "dense_gap": (dense.score - best_sim) if dense and dense.rank and best_sim is not None else 0.0,
            "dense_missing": 0.0 if dense and dense.rank else 1.0,
            "bm25_rr": bm25_rr,
            "bm25_rel": (bm25.score / best_bm25) if bm25 and bm25.rank and best_bm25 else 0.0,
            "bm25_missing": 0.0 if bm25 and bm25.rank else 1.0,
            "page_bm25_rel": page_rel[i], "section_bm25_rel": section_rel[i],
            "heading_match": _share(terms, found.heading), "term_share": _share(terms, found.tokens),
            "page_term_share": _share(terms, page_tokens),
            "number_match": _share(numbers, found.tokens), "page_number_match": _share(numbers, page_tokens),
            "label_match": label_match(words, in_question, found),
            "caps_heading_match": _share(words, views.unit_headings.get(chunk.unit, frozenset())),
            **_analysis_matches(analysis, chunk, periods, views),
            "is_table": 1.0 if getattr(chunk, "kind", "prose") == "table" else 0.0,
            "first_on_page": 1.0 if chunk.position == 0 else 0.0, "length": chunk.n_tokens / 256.0,
            "dense_rr_x_agree": dense_rr * signals.agreement, "bm25_rr_x_agree": bm25_rr * signals.agreement,
            "dense_rr_x_peak": dense_rr * signals.dense_peak, "bm25_rr_x_peak": bm25_rr * signals.bm25_peak,
            "dense_rr_x_unseen": dense_rr * signals.unseen, "bm25_rr_x_unseen": bm25_rr * signals.unseen,
        }
        rows[i] = [row[name] for name in FEATURES]
    return rows


_ANALYSIS_FEATURES = ("period_in_chunk", "doc_period_match", "amount_match", "code_match")


def _analysis_matches(analysis: QA.QueryAnalysis | None, chunk: Chunk,
                      periods: Mapping[str, QA.DocumentPeriod] | None, views: CorpusViews) -> dict[str, float]:
    if analysis is None or analysis.empty:
        return {name: 0.0 for name in _ANALYSIS_FEATURES}
    doc_period = periods.get(chunk.doc_id) if periods else None
    named = views.periods_in(chunk, analysis.fy_start_month) if analysis.target_period is not None else None
    found = QA.match_features(analysis, chunk, doc_period.period if doc_period else None, chunk_periods=named)
    return {name: float(found[name]) for name in _ANALYSIS_FEATURES}
