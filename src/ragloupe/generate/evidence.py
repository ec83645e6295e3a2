"""For each citation of an answer, the part of the cited passage that backs its sentence.

This is what the Answer page highlights when a citation is clicked. The
sentence (without its citation marks) is located in the cited passage with
spans.find_span at a looser threshold than for verbatim quotes, since
answers paraphrase; failing that, the first of the sentence's checkable
tokens (figures, standards, acts) that the passage holds is highlighted;
failing both, there is no span and the page shows the passage unmarked.

A citation also carries its sentence's screen verdict (the worst of the
sentence's checkable tokens), and the evidence follows it: a sentence with a
figure in none of the passages (UNSUPPORTED) or not in the one it cites
(MISATTRIBUTED) gets no span at all, since words near the sentence in the
passage are not evidence for a figure that is not there; its ``finding`` says
which figures the screen could not place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragloupe.generate.groundedness import Screen, TokenCheck, screen_answer, split_sentences, worst_verdict
from ragloupe.generate.spans import Span, find_span
from ragloupe.generate.verdicts import look_of

SENTENCE_MIN_SCORE = 60.0
_CITATION_MARKS = re.compile(r"\[[^\]]{0,40}\]")


@dataclass(frozen=True)
class CitationEvidence:
    citation: int  # index into answer.citations
    passage: int  # the cited passage's number
    sentence: str  # the answer's sentence, citation marks removed
    span: Span | None  # in the passage's chunk text; None when the sentence's verdict rules it out
    verdict: str = "UNVERIFIABLE"  # the screen's verdict of the sentence (its worst token's)
    finding: str = ""  # what the span is, or why there is none, in a person's words


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
        tokens = [t for t in screen.tokens if t.sentence == sentence_no]
        verdict = worst_verdict(t.verdict for t in tokens)
        if not look_of(verdict).backs_the_sentence and tokens:
            found.append(CitationEvidence(index, citation.passage, sentence, None, verdict,
                                          _unplaced(tokens, verdict)))
            continue
        passage_text = answer.passages[citation.passage - 1].chunk.text
        span = find_span(sentence, passage_text, min_score=min_score) if sentence else None
        if span is None:
            span = _token_span(screen, sentence_no, citation.passage)
        found.append(CitationEvidence(index, citation.passage, sentence, span, verdict,
                                      _finding(span, checked=bool(tokens))))
    return found


def _finding(span: Span | None, checked: bool) -> str:
    """What the marked text is: evidence for a checked sentence, only close wording otherwise."""
    if span is None:
        return "no matching span found: the passage is shown unmarked"
    if checked:
        return f"evidence located ({span.method})"
    return (f"closest wording marked ({span.method}); the sentence has no figure, standard or "
            "act for the screen to check")


def _unplaced(tokens: list[TokenCheck], verdict: str) -> str:
    """'£1,000,000 is in none of the passages: nothing here is marked as evidence'."""
    named = list(dict.fromkeys(t.token for t in tokens if t.verdict == verdict))
    verb = "is" if len(named) == 1 else "are"
    return f"{' and '.join(named)} {verb} {look_of(verdict).meaning}: nothing in this passage is marked as evidence"


def _token_span(screen: Screen, sentence: int, passage: int) -> Span | None:
    for token in screen.tokens:
        if token.sentence != sentence:
            continue
        for number, start, end in token.passage_spans:
            if number == passage:
                return Span(start, end, "token")
    return None
