"""For each citation of an answer, the part of the cited passage that backs its sentence.

This is what the Answer page highlights when a citation is clicked. The
sentence (without its citation marks) is located in the cited passage with
spans.find_span at a looser threshold than for verbatim quotes, since
answers paraphrase; failing that, the first of the sentence's checkable
tokens (figures, standards, acts) that the passage holds is highlighted;
failing both, there is no span and the page shows the passage unmarked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragloupe.generate.groundedness import Screen, screen_answer, split_sentences
from ragloupe.generate.spans import Span, find_span

SENTENCE_MIN_SCORE = 60.0
_CITATION_MARKS = re.compile(r"\[[^\]]{0,40}\]")


@dataclass(frozen=True)
class CitationEvidence:
    citation: int  # index into answer.citations
    passage: int  # the cited passage's number
    sentence: str  # the answer's sentence, citation marks removed
    span: Span | None  # in the passage's chunk text


def citation_evidence(answer: Any, screen: Screen | None = None,
                      min_score: float = SENTENCE_MIN_SCORE) -> list[CitationEvidence]:
    """One entry per resolved citation of a generate.answer.Answer, in order."""
    screen = screen or screen_answer(answer)
    sentences = split_sentences(answer.text)
    found: list[CitationEvidence] = []
    for index, citation in enumerate(answer.citations):
        if citation.passage is None:
            continue
        sentence_no = next((i for i, (s, e) in enumerate(sentences) if s <= citation.start < e), None)
        if sentence_no is None:
            continue
        start, end = sentences[sentence_no]
        sentence = " ".join(_CITATION_MARKS.sub(" ", answer.text[start:end]).split())
        passage_text = answer.passages[citation.passage - 1].chunk.text
        span = find_span(sentence, passage_text, min_score=min_score) if sentence else None
        if span is None:
            span = _token_span(screen, sentence_no, citation.passage)
        found.append(CitationEvidence(index, citation.passage, sentence, span))
    return found


def _token_span(screen: Screen, sentence: int, passage: int) -> Span | None:
    for token in screen.tokens:
        if token.sentence != sentence:
            continue
        for number, start, end in token.passage_spans:
            if number == passage:
                return Span(start, end, "token")
    return None
