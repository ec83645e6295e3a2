"""BM25 over chunk texts: a tokenizer for technical text and one search API over two back ends.

The tokenizer keeps what technical questions hinge on as single tokens:
amounts with separators and currency ("£1,559,285"), decimals ("1.5"),
standards ("ISO 31000", "EN 1473"), directive and year codes ("2012/18/EU",
"2020/21"), identifiers ("DN50", "Q_2025"), and quantities with units
("10 mm", "90%"). Everything is lower-cased and NFKC-normalised.

Two back ends score the same tokens with the same formula (Okapi BM25,
Robertson idf, negative idf floored at 0):

- ``bm25s`` (method "atire", idf "robertson"), the default: a sparse-matrix
  scorer, ~1 ms a query at 10k chunks and ~2 ms at 100k
  (benchmarks/search_latency.py).
- ``rank_bm25`` (rank-bm25's BM25Okapi with epsilon 0): the product card's
  choice and the reference the tests hold bm25s to (equal scores). Pure
  Python, one pass over every chunk per query term: ~90 ms a query at 10k
  chunks, too slow for the 50 ms hybrid target above a few thousand.

Pure: building and searching touch no disk; index.lexical_saved saves and
loads a built index, and the caller (retrieve.engines) decides when to rebuild.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ragloupe.models import Chunk
from ragloupe.textrules import BM25_STOPWORDS, STANDARD_BODIES, UNITS, one_of

BACKENDS = ("rank_bm25", "bm25s")

# Standard bodies ("ISO 31000", "EN ISO 13849-1") and units after a number ("10 mm",
# "3.5 m/s"): the shared lists of ragloupe.textrules, which say why each entry is there.
_STANDARD_BODY = one_of(STANDARD_BODIES)
_UNIT = one_of(UNITS)
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"

# The leading lookahead lets the scanner skip spaces and punctuation after one
# character test instead of trying every alternative there (~25% faster).
_TOKEN_RE = re.compile(
    r"(?=[\w£$€])(?:" + "|".join([
        # ISO 31000, EN 1473, EN ISO 13849-1, ISO-31000
        rf"(?P<standard>\b{_STANDARD_BODY}(?:[ /]{_STANDARD_BODY})*[ -]?\d+(?:-\d+)*(?!\w))",
        # 2012/18/EU, 2020/21
        r"(?P<slashcode>\b\d+(?:/\d+)+(?:/[a-z]+)?(?![\w/]))",
        # £1,559,285, £1.5m, € 300
        rf"(?P<money>[£$€]\s?{_NUMBER}(?:bn|m|k)?(?!\w))",
        # 90%, 90 %, 10 mm, 10mm
        rf"(?P<quantity>\b{_NUMBER}\s?(?:%|{_UNIT}(?!\w)))",
        # 1.5, 1,559,285, 2023
        rf"(?P<number>\b{_NUMBER}(?!\w))",
        # words and identifiers: dn50, q_2025, covid-19, risk-based
        r"(?P<word>\w+(?:-\w+)*)",
    ]) + ")",
)

# Function words that carry no retrieval signal (the list and why: ragloupe.textrules).
STOPWORDS = BM25_STOPWORDS

# Replaced one by one, not with str.translate: a table with non-ASCII keys sends translate down
# its per-character path, ~35x slower than these six replaces (it was a fifth of tokenize()).
_UNIFY = (("’", "'"), ("‘", "'"), ("–", "-"), ("—", "-"), ("‑", "-"), ("\u00a0", " "))


def normalise(text: str) -> str:
    """NFKC, lower-case, unify dashes and quotes, drop possessive 's."""
    text = unicodedata.normalize("NFKC", text)
    for char, unified in _UNIFY:
        if char in text:
            text = text.replace(char, unified)
    return re.sub(r"'s\b", "", text.lower())


def tokenize(text: str) -> list[str]:
    """Split text into BM25 tokens, keeping technical terms whole.

    Hyphenated words are emitted whole and as their parts ("covid-19",
    "covid", "19"), so a query for "COVID" still meets "COVID-19".
    """
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(normalise(text)):
        kind, value = match.lastgroup, match.group()
        if kind == "standard":
            body_and_number = re.split(r"[ -](?=\d)", value, maxsplit=1)
            tokens.append(" ".join(body_and_number))
        elif kind == "money":
            tokens.append(re.sub(r"\s", "", value))
        elif kind == "quantity":
            tokens.append(_quantity_token(value))
        elif kind == "word":
            tokens.extend(_word_tokens(value))
        else:
            tokens.append(value)
    return tokens


def _quantity_token(value: str) -> str:
    """'10mm' and '10 mm' -> '10 mm'; '90 %' and '90%' -> '90%'."""
    number = re.match(_NUMBER, value).group()
    unit = value[len(number):].strip()
    return f"{number}%" if unit == "%" else f"{number} {unit}"


def _word_tokens(value: str) -> list[str]:
    parts = value.split("-")
    whole = [value] if _keep(value) else []
    if len(parts) == 1:
        return whole
    return whole + [part for part in parts if _keep(part)]


def _keep(word: str) -> bool:
    # A lone letter ("e" from "31000:2009(E)", "s") matches everything and nothing.
    if word in STOPWORDS:
        return False
    return not (len(word) == 1 and not word.isdigit())


@dataclass(frozen=True)
class Codes:
    """One string per chunk (its document, its quality) as an integer code into the distinct values.

    A filter on them is a look-up table over the few distinct values indexed by every chunk's
    code: np.isin over the strings themselves sorts them, per question (at 300k chunks 119 ms
    for a period scope of 29 documents; the table costs about a millisecond).
    """

    names: dict[str, int]  # each distinct value -> its code
    codes: np.ndarray  # int32, one per chunk

    @classmethod
    def of(cls, values: Sequence[str]) -> "Codes":
        names: dict[str, int] = {}
        codes = np.fromiter((names.setdefault(v, len(names)) for v in values), dtype=np.int32, count=len(values))
        return cls(names, codes)

    def isin(self, wanted: Iterable[str]) -> np.ndarray:
        """A mask over the chunks: True where the chunk's value is one of ``wanted``."""
        table = np.zeros(len(self.names), dtype=bool)
        table[[self.names[v] for v in wanted if v in self.names]] = True
        return table[self.codes]


@dataclass
class LexicalIndex:
    """BM25 over a fixed list of chunks, with column arrays for fast filter masks."""

    chunks: list[Chunk]
    backend: str
    k1: float
    b: float
    model: Any  # rank_bm25.BM25Okapi | bm25s.BM25 | None (empty corpus)
    doc_codes: Codes  # each chunk's document
    pages: np.ndarray
    quality_codes: Codes  # each chunk's extraction quality
    tokens: list[list[str]] | None = None  # rank_bm25 only: what lexical_saved writes for it

    def __len__(self) -> int:
        return len(self.chunks)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for the query tokens (float64, one per chunk)."""
        if self.model is None or not query_tokens:
            return np.zeros(len(self.chunks))
        if self.backend == "bm25s":
            known = [t for t in query_tokens if t in self.model.vocab_dict]
            if not known:
                return np.zeros(len(self.chunks))
            return np.asarray(self.model.get_scores(known), dtype=np.float64)
        return np.asarray(self.model.get_scores(list(query_tokens)), dtype=np.float64)

    def scores_of(self, query_tokens: Sequence[str], rows: Sequence[int]) -> np.ndarray:
        """``scores(query_tokens)[rows]``, the same values, reading only those rows.

        bm25s: each query token's postings (rows ascending) are searched for the rows, and
        the row's scores summed in float32 in the query's token order, as get_scores sums
        them; rank_bm25: its get_batch_scores, the same formula over those rows.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if self.model is None or not query_tokens or not rows.size:
            return np.zeros(len(rows))
        if self.backend != "bm25s":
            return np.asarray(self.model.get_batch_scores(list(query_tokens), rows.tolist()), dtype=np.float64)
        known = [self.model.vocab_dict[t] for t in query_tokens if t in self.model.vocab_dict]
        if not known:
            return np.zeros(len(rows))
        if getattr(self.model, "nonoccurrence_array", None) is not None or not self._postings_ascending():
            return self.scores(query_tokens)[rows]
        matrix = self.model.scores
        data, indices, indptr = matrix["data"], matrix["indices"], matrix["indptr"]
        found = np.zeros(len(rows), dtype=data.dtype)
        for token in known:
            start, end = int(indptr[token]), int(indptr[token + 1])
            if start == end:
                continue
            at = np.minimum(np.searchsorted(indices[start:end], rows), end - start - 1)
            held = indices[start:end][at] == rows
            found[held] += data[start:end][at[held]]
        return found.astype(np.float64)

    def _postings_ascending(self) -> bool:
        """Whether every token's postings list its rows in ascending order (bm25s builds them so),
        checked once per index."""
        checked = self.__dict__.get("_ascending")
        if checked is None:
            matrix = self.model.scores
            steps = np.diff(np.asarray(matrix["indices"], dtype=np.int64))
            starts = np.asarray(matrix["indptr"], dtype=np.int64)[1:-1] - 1  # a token's first row after the last's
            inside = np.ones(len(steps), dtype=bool)
            inside[starts[(starts >= 0) & (starts < len(steps))]] = False
            checked = self.__dict__["_ascending"] = bool(np.all(steps[inside] > 0))
        return checked

    def mask(self, filters: dict | None) -> np.ndarray | None:
        """Boolean mask of the chunks a filter keeps (None: keep all).

        Filters: {"doc_ids": [...], "pages": (lo, hi), "quality": [...]}.
        """
        if not filters:
            return None
        keep = np.ones(len(self.chunks), dtype=bool)
        if filters.get("doc_ids"):
            keep &= self.doc_codes.isin(filters["doc_ids"])
        if filters.get("pages"):
            lo, hi = filters["pages"]
            if lo is not None:
                keep &= self.pages >= int(lo)
            if hi is not None:
                keep &= self.pages <= int(hi)
        if filters.get("quality"):
            keep &= self.quality_codes.isin(filters["quality"])
        return keep


def build_index(chunks: Iterable[Chunk], k1: float = 1.5, b: float = 0.75,
                backend: str = "bm25s") -> LexicalIndex:
    """Tokenize the chunks and build the chosen back end over them.

    Chunks are ordered by id so the same content always yields the same index
    (and the same tie order), whatever order the store returned them in.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown BM25 backend {backend!r}; use one of {', '.join(BACKENDS)}")
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    corpus = [tokenize(c.search_text) for c in ordered]  # with the context line under chunk_context
    model = _build_model(corpus, k1, b, backend) if ordered else None
    index = from_parts(ordered, model, k1, b, backend)
    if backend == "rank_bm25":
        index.tokens = corpus
    return index


def from_parts(ordered: list[Chunk], model: Any, k1: float, b: float, backend: str) -> LexicalIndex:
    """The index over chunks already ordered by id, with a back end built (or loaded) over them."""
    return LexicalIndex(
        chunks=ordered, backend=backend, k1=k1, b=b, model=model,
        doc_codes=Codes.of([c.doc_id for c in ordered]),
        pages=np.array([c.page for c in ordered], dtype=np.int64),
        quality_codes=Codes.of([c.quality for c in ordered]),
    )


def _build_model(corpus: list[list[str]], k1: float, b: float, backend: str) -> Any:
    if backend == "bm25s":
        import bm25s

        model = bm25s.BM25(method="atire", idf_method="robertson", k1=k1, b=b)
        model.index(corpus, show_progress=False)
        return model
    return rank_bm25_model(corpus, k1, b)


def rank_bm25_model(corpus: list[list[str]], k1: float, b: float) -> Any:
    """rank-bm25's BM25Okapi over token lists (also how a saved rank_bm25 index is read back)."""
    from rank_bm25 import BM25Okapi

    # epsilon 0: a term in more than half the chunks scores 0 instead of a
    # made-up positive floor, which is also what bm25s "robertson" does.
    return BM25Okapi(corpus, k1=k1, b=b, epsilon=0.0)


def search(index: LexicalIndex, query: str, n: int, filters: dict | None = None,
           extra_tokens: Sequence[str] = ()) -> list[tuple[Chunk, float]]:
    """The n best chunks for the query, best first, with their BM25 scores.

    Filters are applied to the whole corpus before ranking, so a scoped
    query gets its own top n, not the survivors of a global top n. Chunks
    sharing no term with the query (score 0) are not listed: BM25 did not
    find them, and listing them would invent ranks. ``extra_tokens`` are
    index tokens added to the query's own (query analysis's variants).
    """
    return ranked(index, index.scores(tokenize(query) + list(extra_tokens)), n, filters)


def ranked(index: LexicalIndex, scores: np.ndarray, n: int, filters: dict | None = None) -> list[tuple[Chunk, float]]:
    """The n best-scoring chunks within the filters, best first; chunks scoring 0 are not listed."""
    eligible = scores > 0
    keep = index.mask(filters)
    if keep is not None:
        eligible &= keep
    candidates = np.flatnonzero(eligible)
    if n <= 0 or candidates.size == 0:
        return []
    if candidates.size > n:
        # Partition first (O(N)), then sort only the survivors; ties at the
        # boundary are resolved by chunk order so results are deterministic.
        top = candidates[np.argpartition(-scores[candidates], n - 1)[:n]]
        threshold = scores[top].min()
        top = candidates[scores[candidates] >= threshold]
    else:
        top = candidates
    order = np.lexsort((top, -scores[top]))
    return [(index.chunks[i], float(scores[i])) for i in top[order][:n]]
