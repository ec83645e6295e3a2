"""Claim checks without a model, on the same contract as the LLM's (claims.ClaimCheck).

Used when no LLM is configured or reachable (RAGLOUPE_CHECK_VERIFIER=auto) or when asked
for (model-free), so /check and /halloumi/generate answer without a model server.

- claims are the answer's sentences, and each body row of a markdown table in it (a row
  states its own facts; its header says what they are);
- a claim holding checkable tokens (figures, standards, legal acts: groundedness.screen)
  is "supported" when every one of them is in a source or derived from the sources'
  figures, and "unverified" when one is not (the rationale names it);
- a claim with no checkable token is "supported" when its own words are found in a source
  (spans.find_span, at least MIN_TEXT_SCORE), else "unverified";
- nothing is ever "contradicted": only a reading of meaning could say a source states
  otherwise, and no model read it. Every rationale starts by saying so.

The evidence span is where the matched figure (or the claim's words) sits in its source,
so Halloumi's segments point at it. The score is claims.score_parts over these verdicts.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from ragloupe.generate.claims import Claim, ClaimCheck
from ragloupe.generate.groundedness import Screen, TokenCheck, split_sentences
from ragloupe.generate.spans import Span, find_span

LABEL = "model-free (figures, standards and words matched; no model judged meaning)"
NO_MODEL = "No model judged meaning: "
MIN_TEXT_SCORE = 90.0  # a claim without figures counts as found only from this fuzzy score up
_PASSING = {"NOT_CONTRADICTED", "DERIVED"}
_CITATION = re.compile(r"\s*\[[^\]]{0,40}\]")
_SEPARATOR = re.compile(r"\s*\|?[\s:|-]+\|?\s*")


def answer_claims(answer: str, is_cited: Callable[[int, int], bool]) -> list[Claim]:
    """The answer's sentences and table body rows, in order, with their spans in the answer."""
    claims: list[Claim] = []
    for start, end, kind in _regions(answer):
        if kind == "row":
            claims.append(_claim(answer, start, end, is_cited))
        elif kind == "prose":
            claims += [_claim(answer, start + s, start + e, is_cited)
                       for s, e in split_sentences(answer[start:end])]
    return claims


def verify_without_model(claims: Sequence[Claim], screened: Screen, sources: Sequence[str]) -> list[ClaimCheck]:
    """One check per claim, as described in the module docstring."""
    return [_verify(claim, screened, sources) for claim in claims]


def _verify(claim: Claim, screened: Screen, sources: Sequence[str]) -> ClaimCheck:
    span = claim.span
    assert span is not None  # answer_claims always locates its claims
    tokens = [t for t in screened.tokens if span.start <= t.start < span.end]
    if not tokens:
        return _by_words(claim, sources)
    failing = [t for t in tokens if t.verdict not in _PASSING]
    if failing:
        reasons = "; ".join(_why_not(t) for t in failing)
        return ClaimCheck(claim, "unverified", None, "", None, rationale=NO_MODEL + reasons)
    located = next((t for t in tokens if t.passage_spans), None)
    found = "; ".join(f"'{t.token}': {t.evidence}" for t in tokens)
    if located is None:  # every token derived: there is no one place to point at
        return ClaimCheck(claim, "supported", None, "", None, rationale=NO_MODEL + found)
    number, start, end = _best_span(located)
    quote = sources[number - 1][start:end]
    return ClaimCheck(claim, "supported", number, quote, Span(start, end, "exact"),
                      rationale=NO_MODEL + "every figure, standard or act in it is in the sources (" + found + ")")


def _by_words(claim: Claim, sources: Sequence[str]) -> ClaimCheck:
    words = _CITATION.sub("", claim.span_text).strip()
    for number, text in enumerate(sources, start=1):
        found = find_span(words, text, min_score=MIN_TEXT_SCORE)
        if found is not None:
            return ClaimCheck(claim, "supported", number, text[found.start:found.end], found,
                              rationale=NO_MODEL + f"its words are in source {number} ({found.method} match, "
                                                   f"score {found.score:.0f})")
    return ClaimCheck(claim, "unverified", None, "", None,
                      rationale=NO_MODEL + "it has no figure, standard or legal act to match and its words are "
                                           "not in the sources; only a model reading it could say more")


def _why_not(token: TokenCheck) -> str:
    if token.verdict == "MISATTRIBUTED":
        return f"'{token.token}' is {token.evidence}"
    return f"'{token.token}' is in none of the sources"


def _best_span(token: TokenCheck) -> tuple[int, int, int]:
    """The token's span in a passage its sentence cites, else in the first passage holding it."""
    cited = [s for s in token.passage_spans if s[0] in token.cited]
    return (cited or list(token.passage_spans))[0]


def _claim(answer: str, start: int, end: int, is_cited: Callable[[int, int], bool]) -> Claim:
    written = answer[start:end]
    text = " ".join(_CITATION.sub("", written).split()).strip(" |")
    return Claim(text or written, written, Span(start, end, "exact"), is_cited(start, end))


def _regions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) over the text: 'prose' stretches, and each table line as 'row'
    (body rows) or 'header' (a table's first line and its separator, not claims)."""
    regions: list[tuple[int, int, str]] = []
    prose_start = 0
    position = 0
    previous_row = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        end = position + len(line.rstrip("\r\n"))
        if stripped.startswith("|"):
            if prose_start < position:
                regions.append((prose_start, position, "prose"))
            header = not previous_row or bool(_SEPARATOR.fullmatch(stripped))
            regions.append((position, end, "header" if header else "row"))
            prose_start, previous_row = position + len(line), True
        else:
            previous_row = False
        position += len(line)
    if prose_start < len(text):
        regions.append((prose_start, len(text), "prose"))
    return regions


def claim_is_cited(citations: Sequence[Any]) -> Callable[[int, int], bool]:
    """A predicate: does the answer's span [start, end) carry one of ``citations``?"""
    return lambda start, end: any(start <= c.start < end for c in citations)
