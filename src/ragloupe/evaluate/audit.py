"""Gold-set label audit: is the gold answer on the page the gold set names?

A gold set is data and has errors. For each query with an expected answer,
the answer is looked for (numbers normalised, see ragloupe.numbers) on the
expected units and on every other unit of the same document. Two kinds of
finding are kept apart (CATEGORIES):

- answer on another page: the gold answer is absent from the expected units
  but written, as it is, on another unit: the page label looks wrong;
- gold answer disagrees with the document: a sentence of the document says
  what the gold answer is about, in its words, but with other figures (the
  gold set says "11 days (2020/21: 14 days)", the report "14 days (2020/21:
  9 days)"): the gold answer itself looks wrong, wherever it points.

A flagged query's "miss" is then not blamed on retrieval. The gold set itself
is never changed: the report shows figures with and without the flagged queries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from ragloupe.evaluate.goldset import GoldQuery
from ragloupe.numbers import Quantity, content_tokens, key_quantities, match_answer, same_quantity

ANSWER_ELSEWHERE = "answer_elsewhere"
DISAGREES = "disagrees_with_document"
CATEGORIES: dict[str, str] = {
    ANSWER_ELSEWHERE: "answer on another page: the gold answer is not on the expected page but is, as "
                      "written, on another page of the same document (the page label looks wrong)",
    DISAGREES: "gold answer disagrees with the document: the document states what the gold answer is "
               "about, in its words, with other figures (the gold answer looks wrong)",
}
# A sentence "says what the answer is about" when it holds this share of the answer's
# words (figures left out), and the answer has at least MIN_WORDS distinct ones.
WORD_SHARE, MIN_WORDS = 0.8, 3
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")


@dataclass(frozen=True)
class LabelAudit:
    query_id: str
    goldset: str
    status_on_expected: str  # found | partial | absent | unchecked
    flagged: bool  # a suspected gold-set error, of the kind ``category`` names
    found_on: tuple[str, ...] = ()  # units holding the answer (elsewhere) or stating other figures (disagrees)
    note: str = ""
    category: str = ""  # a key of CATEGORIES when flagged

    def as_dict(self) -> dict:
        return {"query_id": self.query_id, "goldset": self.goldset, "flagged": self.flagged,
                "category": self.category, "status_on_expected": self.status_on_expected,
                "found_on": list(self.found_on), "note": self.note}


def audit_query(query: GoldQuery, unit_texts: Mapping[str, str]) -> LabelAudit:
    """Audit one query against the texts of the units of its document.

    ``unit_texts`` maps unit ids ('doc#p12') to their indexed text; units of
    other documents in it are ignored. A number answer found elsewhere only
    through small plain integers ("11 days") is not "elsewhere" unless its
    words are there too: such figures turn up on many pages by chance.
    """
    if not query.expected_answer.strip():
        return LabelAudit(query.query_id, query.goldset, "unchecked", False, note="no expected answer")
    expected = set(query.expected_units)
    doc_prefix = query.doc_id + "#"
    own_units = sorted(u for u in unit_texts if u.startswith(doc_prefix))
    if not own_units:
        return LabelAudit(query.query_id, query.goldset, "unchecked", False,
                          note="the document's text is not in the index")
    on_expected = [match_answer(query.expected_answer, unit_texts[u], query.answer_type)
                   for u in own_units if u in expected]
    statuses = {m.status for m in on_expected}
    status = next((s for s in ("found", "partial", "absent") if s in statuses), "absent")
    if status == "found":
        return LabelAudit(query.query_id, query.goldset, status, False)
    others = [u for u in own_units if u not in expected]
    if status == "absent":
        found_on = _found_elsewhere(query, others, unit_texts)
        if found_on:
            return LabelAudit(query.query_id, query.goldset, status, True, found_on,
                              note=f"the answer is not on {', '.join(sorted(expected))} but is on "
                                   f"{', '.join(found_on[:5])}", category=ANSWER_ELSEWHERE)
    disagreement = _disagreement(query, [u for u in own_units if u in expected] + others, unit_texts)
    if disagreement:
        unit, sentence, figures = disagreement
        return LabelAudit(query.query_id, query.goldset, status, True, (unit,),
                          note=f"{unit} says it with other figures ({', '.join(figures)}): "
                               f"\"{sentence[:200]}\"", category=DISAGREES)
    if status != "absent":
        return LabelAudit(query.query_id, query.goldset, status, False)
    return LabelAudit(query.query_id, query.goldset, status, False,
                      note="the answer is on no page as written (derived, summarised or paraphrased)")


def _found_elsewhere(query: GoldQuery, others: Sequence[str], unit_texts: Mapping[str, str]) -> tuple[str, ...]:
    """Other units holding the whole answer as written: its figures, and for figures that
    prove little alone ("11 days" is on many pages) its words too."""
    distinctive = query.answer_type != "number" or any(q.distinctive for q in key_quantities(query.expected_answer))

    def holds(unit: str) -> bool:
        text = unit_texts[unit]
        if match_answer(query.expected_answer, text, query.answer_type).status != "found":
            return False
        return distinctive or match_answer(query.expected_answer, text, "text").status == "found"

    return tuple(u for u in others if holds(u))


def _disagreement(query: GoldQuery, units: Sequence[str],
                  unit_texts: Mapping[str, str]) -> tuple[str, str, tuple[str, ...]] | None:
    """(unit, sentence, its other figures) for the first sentence that holds the answer's
    words and, in place of some of its figures, others of the same kind ("9 days" where the
    gold answer says "11 days"); None when there is none. A sentence that merely lacks a
    figure of the answer (a total the gold set computed) does not disagree with it."""
    gold = _figures_with_kind(query.expected_answer)
    words = set(content_tokens(query.expected_answer))
    if not gold or len(words) < MIN_WORDS:
        return None
    gold_kinds = {kind for _, kind in gold}
    for unit in units:
        for sentence in _SENTENCE.split(unit_texts[unit]):
            if len(words & set(content_tokens(sentence))) < WORD_SHARE * len(words):
                continue
            stated = _figures_with_kind(sentence)
            missing = [g for g, _ in gold if not any(same_quantity(g, q) for q, _ in stated)]
            other = [q for q, kind in stated
                     if kind in gold_kinds and not any(same_quantity(g, q) for g, _ in gold)]
            if missing and other:
                return unit, sentence.strip(), tuple(q.raw for q in other)
    return None


def _figures_with_kind(text: str) -> list[tuple[Quantity, str]]:
    """The text's figures (years left out), each with its kind: its currency, '%', or
    for a bare figure the word after it ('11 days' -> 'day'), so that only like is
    compared with like."""
    out = []
    for q in key_quantities(text):
        if q.currency or q.percent:
            kind = q.currency or "%"
        else:
            after = re.match(r"\s*([A-Za-z]+)", text[q.end:])
            kind = content_tokens(after.group(1))[0] if after and content_tokens(after.group(1)) else ""
        out.append((q, kind))
    return out


def audit_queries(queries: Sequence[GoldQuery], unit_texts: Mapping[str, str]) -> list[LabelAudit]:
    return [audit_query(q, unit_texts) for q in queries]
