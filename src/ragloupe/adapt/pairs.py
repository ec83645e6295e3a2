"""Training pairs made from the indexed corpus itself: a pseudo-query, the chunk it belongs to,
and a hard negative from the same document.

No question of any gold set is read here: every query is cut from document text.

Kinds of pseudo-query (``KINDS``):

- ``sentence``: inverse cloze. A sentence of a chunk stands for a question about the rest of
  that chunk, and is removed from it, so the pair teaches meaning, not copying.
- ``heading``: a section heading for one of its section's chunks (the heading taken out of
  the text when it opens the chunk).
- ``table``: a table's row label with one of its column headers ("Cash at bank 2021/22") for
  the table chunk (row block) that holds the row.
- ``title``: a record's title for the rest of the record.
- ``drafted``: a question the embedded LLM drafted for the passage (adapt/drafts.py), in a
  reader's words rather than the document's; the drafts are made by the caller and given in.

Hard negatives come from the chunk BM25 over the same document: the best-scoring chunk that
is not on the positive's page (a page is what gold sets judge), does not contain the query's
sentence (overlapping neighbours share text) and, for a heading, is not in the same section.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from ragloupe.index import lexical
from ragloupe.models import Chunk

KINDS = ("sentence", "heading", "table", "title", "drafted")
# Sentence boundaries: an end mark, spaces, then what starts a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
MIN_SENTENCE_WORDS = 6
MAX_SENTENCE_WORDS = 50
MIN_REST_WORDS = 8  # what stays of a chunk once its sentence is taken out
NEGATIVE_DEPTH = 30  # BM25 candidates looked through for a hard negative


@dataclass(frozen=True)
class Pair:
    """One training example: the query, the passage it should find, and a passage it should not."""

    kind: str  # one of KINDS
    query: str
    positive: str
    negative: str  # "" when BM25 found no usable negative in the document
    doc_id: str
    unit: str  # the positive's page (or record): no two pairs of one batch share it
    chunk_id: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairRules:
    """How many pseudo-queries of each kind to cut per chunk, and whether to mine negatives."""

    kinds: tuple[str, ...] = KINDS
    sentences_per_chunk: int = 2
    headings_per_section: int = 2
    labels_per_table_chunk: int = 2
    hard_negatives: bool = True
    bm25_misses_only: bool = False  # keep only the pairs BM25 cannot solve (bm25_finds_it)
    seed: int = 13


def make_pairs(chunks: Sequence[Chunk], index: lexical.LexicalIndex | None, rules: PairRules,
               drafted: Sequence[tuple[Chunk, str]] = ()) -> list[Pair]:
    """Every pair the rules allow over ``chunks`` (reading order), with hard negatives mined from
    ``index`` (the chunk BM25 of the same corpus; None: no negatives). ``drafted``: the (chunk,
    question) drafts of the ``drafted`` kind, made beforehand. Deterministic: the same chunks,
    drafts and rules give the same pairs in the same order."""
    drafts: list[tuple[str, str, str, Chunk]] = []  # kind, query, positive text, chunk
    if "drafted" in rules.kinds:
        drafts += [("drafted", question, chunk.search_text, chunk) for chunk, question in drafted]
    if "sentence" in rules.kinds:
        drafts += _sentence_drafts(chunks, rules)
    if "heading" in rules.kinds:
        drafts += _heading_drafts(chunks, rules)
    if "table" in rules.kinds:
        drafts += _table_drafts(chunks, rules)
    if "title" in rules.kinds:
        drafts += _title_drafts(chunks)
    pairs, seen = [], set()
    for kind, query, positive, chunk in drafts:
        key = _normal(query)
        if key in seen or not positive.strip():  # one query, one answer: a repeat would teach two
            continue
        seen.add(key)
        if rules.bm25_misses_only and index and bm25_finds_it(index, query, chunk):
            continue
        negative = _hard_negative(index, kind, query, chunk) if rules.hard_negatives and index else ""
        pairs.append(Pair(kind, query, positive, negative, chunk.doc_id, chunk.unit, chunk.chunk_id))
    return pairs


def count_by_kind(pairs: Sequence[Pair]) -> dict[str, int]:
    """Pairs per kind, and how many carry a hard negative (the training record's counts)."""
    counts = {kind: sum(1 for p in pairs if p.kind == kind) for kind in KINDS}
    counts["with_hard_negative"] = sum(1 for p in pairs if p.negative)
    return counts


def sentences(text: str) -> list[str]:
    """The text cut at sentence ends, each piece with its spaces collapsed."""
    return [" ".join(part.split()) for part in _SENTENCE_END.split(text) if part.strip()]


# --- the kinds ------------------------------------------------------------------------

def _sentence_drafts(chunks: Sequence[Chunk], rules: PairRules) -> list[tuple[str, str, str, Chunk]]:
    out = []
    for chunk in chunks:
        if chunk.kind != "text":
            continue
        parts = sentences(chunk.text)
        # A chunk starts and ends where the token budget fell: its first and last pieces are
        # whole sentences only when the text starts with a capital and ends with an end mark.
        whole = [(i > 0 or s[:1].isupper()) and (i < len(parts) - 1 or s.rstrip()[-1:] in ".!?")
                 for i, s in enumerate(parts)]
        usable = [i for i, s in enumerate(parts) if whole[i] and _is_question_like(s)]
        chosen = random.Random(f"{rules.seed}|{chunk.chunk_id}").sample(
            usable, min(rules.sentences_per_chunk, len(usable)))
        for i in sorted(chosen):
            rest = " ".join(parts[:i] + parts[i + 1:])
            if len(rest.split()) >= MIN_REST_WORDS:
                out.append(("sentence", parts[i], _with_context(chunk, rest), chunk))
    return out


def _heading_drafts(chunks: Sequence[Chunk], rules: PairRules) -> list[tuple[str, str, str, Chunk]]:
    taken: dict[tuple[str, str], int] = {}
    out = []
    for chunk in chunks:
        heading = " ".join(chunk.section.split())
        if chunk.record_id or len(_WORD.findall(heading)) < 2:
            continue
        key = (chunk.doc_id, heading.lower())
        if taken.get(key, 0) >= rules.headings_per_section:
            continue
        text = chunk.text
        if text.lstrip().lower().startswith(heading.lower()):
            text = text.lstrip()[len(heading):]
        if len(text.split()) < MIN_REST_WORDS:
            continue
        taken[key] = taken.get(key, 0) + 1
        out.append(("heading", heading, text.strip(), chunk))
    return out


def _table_drafts(chunks: Sequence[Chunk], rules: PairRules) -> list[tuple[str, str, str, Chunk]]:
    out = []
    for chunk in chunks:
        if chunk.kind != "table":
            continue
        labels = table_labels(chunk.text)
        pick = random.Random(f"{rules.seed}|{chunk.chunk_id}|table")
        for row, column in pick.sample(labels, min(rules.labels_per_table_chunk, len(labels))):
            out.append(("table", f"{row} {column}".strip(), chunk.search_text, chunk))
    return out


def _title_drafts(chunks: Sequence[Chunk]) -> list[tuple[str, str, str, Chunk]]:
    out = []
    for chunk in chunks:
        title = " ".join(chunk.title.split())
        if not chunk.record_id or len(_WORD.findall(title)) < 2:
            continue
        text = chunk.text.replace(chunk.title, " ", 1) if chunk.title else chunk.text
        if len(text.split()) >= MIN_REST_WORDS:
            out.append(("title", title, " ".join(text.split()), chunk))
    return out


def table_labels(markdown: str) -> list[tuple[str, str]]:
    """(row label, column header) for every non-empty body cell of a markdown table whose row and
    column both have a worded label (a figure alone is no label)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in markdown.splitlines() if line.strip().startswith("|")]
    rows = [r for r in rows if not all(set(cell) <= set("-: ") for cell in r)]  # the |---| rule
    if len(rows) < 2:
        return []
    header, body = rows[0], rows[1:]
    labels = []
    for row in body:
        if not row or len(_WORD.findall(row[0])) < 1:
            continue
        for column, cell in zip(header[1:], row[1:]):
            if cell and column and (_WORD.findall(column) or re.search(r"\d{4}", column)):
                labels.append((row[0], column))
    return labels


def bm25_finds_it(index: lexical.LexicalIndex, query: str, chunk: Chunk) -> bool:
    """Whether BM25 over the chunk's document ranks a chunk of the chunk's page first for the
    query, leaving out the chunks that hold the query itself (its own sentence or title: the
    index has it, the pair's positive does not). A model trained only on the pairs it misses
    learns what the fused ranking lacks rather than what BM25 already finds."""
    wanted = _normal(query)
    for candidate, _score in lexical.search(index, query, NEGATIVE_DEPTH, {"doc_ids": [chunk.doc_id]}):
        if wanted in _normal(candidate.text):
            continue
        return candidate.unit == chunk.unit
    return False


# --- negatives -------------------------------------------------------------------------

def _hard_negative(index: lexical.LexicalIndex, kind: str, query: str, chunk: Chunk) -> str:
    """The best BM25 chunk of the same document that cannot be a right answer to ``query``."""
    wanted = _normal(query)
    for candidate, _score in lexical.search(index, query, NEGATIVE_DEPTH, {"doc_ids": [chunk.doc_id]}):
        if candidate.unit == chunk.unit or wanted in _normal(candidate.text):
            continue
        if kind == "heading" and candidate.section.strip().lower() == chunk.section.strip().lower():
            continue
        return candidate.search_text
    return ""


# --- helpers ---------------------------------------------------------------------------

def _is_question_like(sentence: str) -> bool:
    """Long enough to say something, short enough to be a question's size, and mostly words."""
    words = sentence.split()
    return (MIN_SENTENCE_WORDS <= len(words) <= MAX_SENTENCE_WORDS
            and len(_WORD.findall(sentence)) >= 0.6 * len(words))


def _with_context(chunk: Chunk, text: str) -> str:
    """The passage as the index embeds it: the chunk's context line, then its text."""
    return f"{chunk.context}\n{text}" if chunk.context else text


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
