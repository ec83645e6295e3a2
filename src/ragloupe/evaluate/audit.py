"""Gold-set label audit: is the gold answer on the page the gold set names?

A gold set is data and has errors. For each query with an expected answer,
the answer is looked for (numbers normalised, see ragloupe.numbers) on the
expected units and on every other unit of the same document. When it is
absent from all expected units but found on another one, the query is a
suspected label error, reported with the unit where the answer was found, so
that a "miss" there is not blamed on retrieval. The gold set itself is never
changed: the report shows figures with and without the flagged queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ragloupe.evaluate.goldset import GoldQuery
from ragloupe.numbers import key_quantities, match_answer


@dataclass(frozen=True)
class LabelAudit:
    query_id: str
    goldset: str
    status_on_expected: str  # found | partial | absent | unchecked
    flagged: bool  # suspected label error
    found_on: tuple[str, ...] = ()  # other units of the document holding the full answer
    note: str = ""

    def as_dict(self) -> dict:
        return {"query_id": self.query_id, "goldset": self.goldset, "flagged": self.flagged,
                "status_on_expected": self.status_on_expected, "found_on": list(self.found_on),
                "note": self.note}


def audit_query(query: GoldQuery, unit_texts: Mapping[str, str]) -> LabelAudit:
    """Audit one query against the texts of the units of its document.

    ``unit_texts`` maps unit ids ('doc#p12') to their indexed text; units of
    other documents in it are ignored. A number answer found elsewhere only
    through small plain integers ("11 days") is not flagged: such figures
    turn up on many pages by chance.
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
    if status != "absent":
        return LabelAudit(query.query_id, query.goldset, status, False)
    distinctive_answer = query.answer_type != "number" or any(
        q.distinctive for q in key_quantities(query.expected_answer))
    others = [u for u in own_units if u not in expected]
    found_on = tuple(u for u in others if distinctive_answer and
                     match_answer(query.expected_answer, unit_texts[u], query.answer_type).status == "found")
    if not found_on and query.answer_type == "number":
        # Small figures alone prove nothing ("11 days" is on many pages); the
        # figures and the answer's words together do.
        as_text = lambda u: match_answer(query.expected_answer, unit_texts[u], "text").status  # noqa: E731
        if not any(as_text(u) == "found" for u in own_units if u in expected):
            found_on = tuple(u for u in others if as_text(u) == "found")
            distinctive_answer = bool(found_on)
    if found_on and distinctive_answer:
        return LabelAudit(query.query_id, query.goldset, status, True, found_on,
                          note=f"the answer is not on {', '.join(sorted(expected))} but is on "
                               f"{', '.join(found_on[:5])}")
    return LabelAudit(query.query_id, query.goldset, status, False,
                      note="the answer is on no page as written (derived, summarised or paraphrased)")


def audit_queries(queries: Sequence[GoldQuery], unit_texts: Mapping[str, str]) -> list[LabelAudit]:
    return [audit_query(q, unit_texts) for q in queries]
