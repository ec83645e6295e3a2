"""Why a query missed: the failure taxonomy, assigned per query at a chosen k.

After Barnett et al. (2024), "Seven failure points when engineering a
retrieval augmented generation system". The retrieval codes (FP1-FP3) are
judged from the ranking and what the index holds; the generation codes
(FP4-FP7) from a generated answer, its context and the gold answer. Both
classifiers are pure: the evidence comes in as plain values and goes out as
a Failure with a sentence a person can check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ragloupe.numbers import content_tokens, key_quantities, match_answer, same_quantity

TAXONOMY: dict[str, str] = {
    "FP1": "missing content: no chunk of the expected unit is in the index",
    "FP2": "missed top rank: indexed, but not in the top k",
    "FP3": "not in context: the expected unit is retrieved, its answer text is not in the retrieved chunks",
    "FP4": "not extracted: the answer is in the context but not in the generated answer",
    "FP5": "wrong format: the answer is of another type than the gold answer (text for a number)",
    "FP6": "incorrect specificity: a different value of the right type",
    "FP7": "incomplete: only part of a multi-part answer",
    "HIT": "found (retrieval) or answered (generation)",
}
RETRIEVAL_CODES = ("FP1", "FP2", "FP3", "HIT")
GENERATION_CODES = ("FP4", "FP5", "FP6", "FP7", "HIT")
# A generated answer is not judged when its context never held the gold
# answer and it does not give a figure: that miss is retrieval's.
NOT_ASSESSED = "NOT_ASSESSED"

# Ways a model says it cannot answer from the context.
_REFUSAL = re.compile(
    r"\b(?:does not|doesn't|do not|don't|did not|cannot|can't|unable to|not able to)\s+"
    r"(?:contain|include|mention|provide|say|state|specify|find|answer|know|determine)"
    r"|\bno (?:information|mention|data|answer)\b|\bnot (?:mentioned|provided|stated|specified|available|found)\b"
    r"|\binsufficient (?:information|context)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Failure:
    """A failure code with the evidence for it."""

    code: str
    evidence: str  # one plain sentence
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"code": self.code, "evidence": self.evidence, "details": self.details}


@dataclass(frozen=True)
class RankingView:
    """What a retriever returned for one query, unit by unit."""

    ranked_units: tuple[str, ...]  # units in rank order, best first
    engine_ranks: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    # unit -> engine -> the best (1-based, chunk-level) rank that engine gave any chunk of the unit
    retrieved_text: Mapping[str, str] = field(default_factory=dict)  # unit -> its retrieved chunks' text


@dataclass(frozen=True)
class IndexView:
    """What the index holds about the expected units of one query."""

    indexed_units: frozenset[str]  # units with at least one chunk in the index
    unit_notes: Mapping[str, str] = field(default_factory=dict)  # unit -> why it is not indexed
    page_text: Mapping[str, str] = field(default_factory=dict)  # unit -> all its indexed text


def classify_retrieval(expected_units: Sequence[str], k: int, ranking: RankingView, index: IndexView,
                       expected_answer: str = "", answer_type: str = "") -> Failure:
    """FP1, FP2, FP3 or HIT for one query at cutoff k.

    FP3 is only judged when the expected answer can be found in the expected
    unit's indexed text at all: a derived or paraphrased gold answer that is
    on no page cannot show a chunking failure, and the query stays a HIT.
    """
    indexed = [u for u in expected_units if u in index.indexed_units]
    if not indexed:
        notes = [index.unit_notes.get(u) or f"{_label(u)} has no chunk in the index" for u in expected_units]
        return Failure("FP1", "; ".join(notes), {"units": list(expected_units)})

    ranks = {u: ranking.ranked_units.index(u) + 1 for u in indexed if u in ranking.ranked_units}
    in_top = sorted((r, u) for u, r in ranks.items() if r <= k)
    if not in_top:
        return _missed_top_rank(indexed, ranks, k, ranking)

    first_rank, first_unit = in_top[0]
    if not expected_answer:
        return Failure("HIT", f"{_label(first_unit)} at rank {first_rank}", {"rank": first_rank, "unit": first_unit})
    # Compare what the unit holds with what retrieval handed over from it.
    on_page = {u: match_answer(expected_answer, index.page_text.get(u, ""), answer_type) for u in indexed}
    checkable = {u for u, m in on_page.items() if m.status != "absent"}
    retrieved_units = [u for _, u in in_top]
    retrieved_text = "\n".join(ranking.retrieved_text.get(u, "") for u in retrieved_units)
    in_context = match_answer(expected_answer, retrieved_text, answer_type)
    details = {"rank": first_rank, "unit": first_unit, "answer_in_context": in_context.status}
    if not checkable:
        return Failure("HIT", f"{_label(first_unit)} at rank {first_rank} (the gold answer is not "
                              "verbatim on the expected page, so the chunks cannot be checked for it)", details)
    best_on_page = max((on_page[u] for u in checkable), key=lambda m: m.share)
    if in_context.share + 1e-9 < best_on_page.share:
        missing = [p for p in best_on_page.found if p not in in_context.found] or list(in_context.missing)
        return Failure(
            "FP3",
            f"{_label(first_unit)} at rank {first_rank}, but its retrieved chunks lack "
            f"{', '.join(missing[:3])} which the page holds",
            {**details, "missing": missing})
    return Failure("HIT", f"{_label(first_unit)} at rank {first_rank} with the answer in its chunks", details)


def classify_answer(expected_answer: str, answer_type: str, context_text: str, generated: str) -> Failure:
    """FP4, FP5, FP6, FP7 or HIT for a generated answer against the gold answer.

    Order of the checks: a complete answer is a HIT; part of it is FP7; a
    refusal or an answer without the gold content is FP4 when the context held
    the answer; a figure-less reply to a number question (or a bare figure for
    a text question) is FP5; a different figure for a number question is FP6.
    Anything else where the context never held the answer is NOT_ASSESSED:
    that miss belongs to retrieval.
    """
    generated = generated or ""
    verdict = match_answer(expected_answer, generated, answer_type)
    if verdict.status == "found":
        return Failure("HIT", f"the answer gives {', '.join(verdict.found[:3]) or 'the gold answer'}",
                       {"found": list(verdict.found)})
    if verdict.status == "partial":
        return Failure("FP7", f"the answer gives {', '.join(verdict.found[:3])} but not "
                              f"{', '.join(verdict.missing[:3])}",
                       {"found": list(verdict.found), "missing": list(verdict.missing)})

    in_context = match_answer(expected_answer, context_text, answer_type).status != "absent"
    gold_figures = key_quantities(expected_answer)
    answer_figures = key_quantities(generated)
    refused = not generated.strip() or bool(_REFUSAL.search(generated))
    details = {"answer_in_context": in_context, "refused": refused}

    if refused:
        if in_context:
            return Failure("FP4", "the context holds the gold answer but the model said it could not answer",
                           details)
        return Failure(NOT_ASSESSED, "the model declined and the context lacks the gold answer "
                                     "(a retrieval miss)", details)
    if answer_type == "number" and gold_figures and not answer_figures:
        return Failure("FP5", "a number was asked for and the answer gives no figure", details)
    if answer_type == "text" and answer_figures and not content_tokens(_without_figures(generated)):
        return Failure("FP5", "a text answer was asked for and the answer is a bare figure", details)
    if answer_type == "number" and gold_figures and answer_figures:
        headline = gold_figures[0]
        if not any(same_quantity(headline, f) for f in answer_figures):
            return Failure("FP6", f"the answer gives {answer_figures[0].raw} where the gold answer is "
                                  f"{headline.raw}",
                           {**details, "given": [f.raw for f in answer_figures], "expected": headline.raw})
    if in_context:
        return Failure("FP4", "the context holds the gold answer but the generated answer does not carry it",
                       {**details, "missing": list(verdict.missing)})
    return Failure(NOT_ASSESSED, "the context lacks the gold answer (a retrieval miss)", details)


def _missed_top_rank(indexed: Sequence[str], ranks: Mapping[str, int], k: int, ranking: RankingView) -> Failure:
    """FP2 with the unit's actual rank and the engine that ranked it best."""
    best_engine, best_engine_rank, best_engine_unit = None, None, None
    for unit in indexed:
        for engine, rank in sorted(ranking.engine_ranks.get(unit, {}).items()):
            if rank is not None and (best_engine_rank is None or rank < best_engine_rank):
                best_engine, best_engine_rank, best_engine_unit = engine, rank, unit
    if ranks:
        rank, unit = min((r, u) for u, r in ranks.items())
        where = f"{_label(unit)} is indexed but ranked {rank}, below the top {k}"
    else:
        rank, unit = None, indexed[0]
        where = f"{_label(unit)} is indexed but not among the {len(ranking.ranked_units)} units retrieved"
    if best_engine:
        where += f"; {best_engine} ranked a chunk of {_label(best_engine_unit)} best, at {best_engine_rank}"
    else:
        where += "; no engine listed any chunk of it in its candidate window"
    return Failure("FP2", where, {"rank": rank, "unit": unit, "best_engine": best_engine,
                                  "best_engine_rank": best_engine_rank})


def _label(unit: str) -> str:
    """'Grampian-2020-2021#p28' -> 'page 28 of Grampian-2020-2021'; records -> 'record 4.6.1 of guidance'."""
    doc, _, part = unit.rpartition("#")
    if re.fullmatch(r"p\d+", part):
        return f"page {part[1:]} of {doc}"
    return f"record {part} of {doc}"


def _without_figures(text: str) -> str:
    return re.sub(r"[£$€]?\d[\d,.]*\s*(?:%|million|billion|m\b|bn\b)?", " ", text)
