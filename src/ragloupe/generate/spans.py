"""Where a quoted piece of evidence sits in its source text.

A model quoting a passage rarely copies it byte for byte: it adds quotes or
ellipses, re-flows line breaks, drops a hyphen at a line end, changes a
smart quote into a straight one, or paraphrases a word. find_span tries, in
order, matches that are ever looser and says which one it used:

1. ``exact``: the cleaned quote as is;
2. ``whitespace``: any run of whitespace matches any other (line breaks);
3. ``normalised``: letters and digits only, case-folded and NFKC-normalised,
   so punctuation, dashes, quote styles and end-of-line hyphenation differ freely;
4. ``fuzzy``: rapidfuzz's partial_ratio_alignment over the normalised texts,
   accepted from ``min_score`` (0-100) up; below that there is no span.

A quote with an ellipsis inside ("A … B") is matched piece by piece, in
order, and its span runs from the first piece to the last (method ``elided``).
The offsets are into the original source text, so a page can highlight them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz import fuzz

_QUOTES = "\"'“”‘’«»„‟‚‛`"
_ELLIPSIS = re.compile(r"\s*(?:\.\s?\.\s?\.|…)\s*")
MIN_FUZZY_CHARS = 12  # shorter quotes match anything somewhere: no fuzzy span for them


@dataclass(frozen=True)
class Span:
    start: int  # character offsets into the source text
    end: int
    method: str  # exact | whitespace | normalised | fuzzy | elided
    score: float = 100.0  # 100 unless fuzzy


def clean_quote(quote: str) -> str:
    """The quote without surrounding whitespace, quote marks and leading/trailing ellipses."""
    previous = None
    text = quote
    while text != previous:
        previous = text
        text = text.strip().strip(_QUOTES).strip()
        text = re.sub(r"^(?:\.\s?\.\s?\.|…)|(?:\.\s?\.\s?\.|…)$", "", text)
    return text


def find_span(quote: str, source_text: str, min_score: float = 85.0) -> Span | None:
    """The span of ``quote`` in ``source_text``, or None when no match is strong enough."""
    cleaned = clean_quote(quote)
    if not cleaned or not source_text:
        return None
    pieces = [p for p in _ELLIPSIS.split(cleaned) if p.strip()]
    if len(pieces) > 1:
        return _elided(pieces, source_text, min_score)
    return _find_one(cleaned, source_text, min_score, start=0)


def _elided(pieces: list[str], source: str, min_score: float) -> Span | None:
    spans: list[Span] = []
    position = 0
    for piece in pieces:
        span = _find_one(piece, source, min_score, start=position)
        if span is None:
            return None
        spans.append(span)
        position = span.end
    return Span(spans[0].start, spans[-1].end, "elided", min(s.score for s in spans))


def _find_one(quote: str, source: str, min_score: float, start: int) -> Span | None:
    index = source.find(quote, start)
    if index >= 0:
        return Span(index, index + len(quote), "exact")
    flexible = r"\s+".join(re.escape(word) for word in quote.split())
    match = re.compile(flexible).search(source, start)
    if match:
        return Span(match.start(), match.end(), "whitespace")
    source_norm, offsets = _normalise(source, start)
    quote_norm, _ = _normalise(quote)
    if not quote_norm:
        return None
    index = source_norm.find(quote_norm)
    if index >= 0:
        return Span(offsets[index], offsets[index + len(quote_norm) - 1] + 1, "normalised")
    return _fuzzy(quote, source, min_score, start)


def _normalise(text: str, start: int = 0) -> tuple[str, list[int]]:
    """Letters and digits only, NFKC and case-folded; offsets[i] is the source index of char i."""
    chars: list[str] = []
    offsets: list[int] = []
    for index in range(start, len(text)):
        for char in unicodedata.normalize("NFKC", text[index]).casefold():
            if char.isalnum():
                chars.append(char)
                offsets.append(index)
    return "".join(chars), offsets


def _spaced(text: str, start: int = 0) -> tuple[str, list[int]]:
    """Case-folded text with punctuation as spaces and whitespace collapsed, with offsets.

    Fuzzy matching keeps word boundaries (unlike _normalise) so that the
    alignment scores words, not a run of letters.
    """
    chars: list[str] = []
    offsets: list[int] = []
    for index in range(start, len(text)):
        for char in unicodedata.normalize("NFKC", text[index]).casefold():
            char = char if char.isalnum() else " "
            if char == " " and (not chars or chars[-1] == " "):
                continue
            chars.append(char)
            offsets.append(index)
    return "".join(chars), offsets


def _fuzzy(quote: str, source: str, min_score: float, start: int) -> Span | None:
    """Locate with partial_ratio_alignment, then refine the window's edges word by word.

    partial_ratio compares windows as long as the quote, so one word added or
    dropped by a paraphrase costs it more than it should; re-scoring windows
    whose edges move by up to a quarter of the quote, at word boundaries, with
    fuzz.ratio finds the span the quote actually paraphrases.
    """
    quote_text = _spaced(quote)[0].strip()
    source_text, offsets = _spaced(source, start)
    if len(quote_text) < MIN_FUZZY_CHARS or len(quote_text) > len(source_text):
        return None
    located = fuzz.partial_ratio_alignment(quote_text, source_text, score_cutoff=max(min_score - 20, 0))
    if located is None:
        return None
    slack = max(len(quote_text) // 4, 1)
    starts = _word_starts(source_text, located.dest_start - slack, located.dest_start + slack)
    ends = _word_ends(source_text, located.dest_end - slack, located.dest_end + slack)
    best = (0.0, located.dest_start, located.dest_end)
    for begin in starts:
        for end in ends:
            if end - begin < MIN_FUZZY_CHARS:
                continue
            score = fuzz.ratio(quote_text, source_text[begin:end])
            if score > best[0]:
                best = (score, begin, end)
    score, begin, end = best
    if score < min_score:
        return None
    begin, end = _to_word_edges(source, offsets[begin], offsets[end - 1] + 1)
    return Span(begin, end, "fuzzy", round(score, 1))


def _word_starts(text: str, lo: int, hi: int) -> list[int]:
    return [i for i in range(max(lo, 0), min(hi, len(text) - 1) + 1)
            if text[i] != " " and (i == 0 or text[i - 1] == " ")]


def _word_ends(text: str, lo: int, hi: int) -> list[int]:
    return [i for i in range(max(lo, 1), min(hi, len(text)) + 1)
            if text[i - 1] != " " and (i == len(text) or text[i] == " ")]


def _to_word_edges(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a fuzzy span so it does not begin or end in the middle of a word."""
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    while start < end and text[start].isspace():
        start += 1
    return start, end
