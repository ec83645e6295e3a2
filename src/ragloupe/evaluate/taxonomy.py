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

# Barnett et al.'s meanings, each with how ragloupe decides it.
TAXONOMY: dict[str, str] = {
    "FP1": "missing content: the answer is not in the documents; here, no chunk of the expected unit "
           "is in the index",
    "FP2": "missed the top ranked documents: the answer is in a document that did not rank high enough; "
           "here, indexed but not in the top k",
    "FP3": "not in context: the document with the answer was retrieved but the answer did not make it "
           "into the context; here, the expected unit is retrieved but its answer text is not in the "
           "retrieved chunks",
    "FP4": "not extracted: the answer is in the context but the model did not extract it (a refusal, "
           "another figure or other content picked from noise or contradicting text)",
    "FP5": "wrong format: the answer ignores the format the question asked for (a number, a percentage "
           "or a list asked for and not given; a bare figure where a text answer was asked for)",
    "FP6": "incorrect specificity: the answer is too general or too specific for the question (the gold "
           "figure given at a coarser precision, e.g. about £49 million for £48.6 million, or at a finer "
           "one than asked)",
    "FP7": "incomplete: the answer is not wrong but misses part of what was asked that the context held",
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


def classify_answer(expected_answer: str, answer_type: str, context_text: str, generated: str,
                    question: str = "") -> Failure:
    """FP4, FP5, FP6, FP7 or HIT for a generated answer against the gold answer (see TAXONOMY).

    Order of the checks: a complete answer is a HIT; part of it, the rest being
    in the context, is FP7; a refusal is FP4 when the context held the answer;
    an answer that ignores the format asked for (by ``question`` or the gold
    answer's type) is FP5; the gold figure at another precision is FP6; any
    other answer without the gold content is FP4 when the context held it.
    Anything else is NOT_ASSESSED: with the answer absent from the context,
    the miss belongs to retrieval.
    """
    generated = generated or ""
    verdict = match_answer(expected_answer, generated, answer_type)
    if verdict.status == "found":
        return Failure("HIT", f"the answer gives {', '.join(verdict.found[:3]) or 'the gold answer'}",
                       {"found": list(verdict.found)})
    context_match = match_answer(expected_answer, context_text, answer_type)
    in_context = context_match.status != "absent"
    if verdict.status == "partial":
        missing_in_context = [part for part in verdict.missing if part not in context_match.missing]
        details = {"found": list(verdict.found), "missing": list(verdict.missing)}
        if missing_in_context:
            return Failure("FP7", f"the answer gives {', '.join(verdict.found[:3])} but not "
                                  f"{', '.join(missing_in_context[:3])}, which the context holds", details)
        return Failure(NOT_ASSESSED, f"the answer gives {', '.join(verdict.found[:3])}; the rest, "
                                     f"{', '.join(verdict.missing[:3])}, is not in the context (a retrieval "
                                     "miss)", details)

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
    ignored = _format_ignored(question, expected_answer, answer_type, generated, gold_figures, answer_figures)
    if ignored:
        return Failure("FP5", ignored, {**details, "format": _format_asked(question, answer_type, gold_figures)})
    if gold_figures and answer_figures:
        specificity = _specificity(gold_figures[0], answer_figures)
        if specificity:
            return Failure("FP6", specificity[0], {**details, "given": specificity[1],
                                                   "expected": gold_figures[0].raw})
    if in_context:
        given = f" (it gives {answer_figures[0].raw})" if answer_figures else ""
        return Failure("FP4", f"the context holds the gold answer but the generated answer does not carry "
                              f"it{given}", {**details, "missing": list(verdict.missing),
                                             "given": [f.raw for f in answer_figures]})
    return Failure(NOT_ASSESSED, "the context lacks the gold answer (a retrieval miss)", details)


_ASKS_PERCENT = re.compile(r"\bpercent(?:age)?s?\b|\bper ?cent\b|%", re.IGNORECASE)
_ASKS_LIST = re.compile(r"^\s*(?:list|name|enumerate)\b|\bwhich (?:\w+ ){0,3}(?:were|are)\b", re.IGNORECASE)


def _format_asked(question: str, answer_type: str, gold_figures: Sequence) -> str:
    """'percentage', 'list', 'number' or 'text': the form the question asks the answer to take."""
    if _ASKS_PERCENT.search(question) or (answer_type == "number" and gold_figures and gold_figures[0].percent):
        return "percentage"
    if _ASKS_LIST.search(question):
        return "list"
    return "number" if answer_type == "number" and gold_figures else "text"


def _format_ignored(question: str, expected_answer: str, answer_type: str, generated: str,
                    gold_figures: Sequence, answer_figures: Sequence) -> str:
    """Why the answer ignores the format asked for, or "" when it does not."""
    asked = _format_asked(question, answer_type, gold_figures)
    if asked == "percentage" and not any(f.percent for f in answer_figures):
        given = f"{answer_figures[0].raw}" if answer_figures else "no figure"
        return f"a percentage was asked for and the answer gives {given}"
    if asked in ("number", "percentage") and not answer_figures:
        return "a number was asked for and the answer gives no figure"
    if asked == "list" and len(_items(expected_answer)) > 1 and len(_items(generated)) < 2:
        return "a list was asked for and the answer gives a single item"
    if answer_type == "text" and answer_figures and not content_tokens(_without_figures(generated)):
        return "a text answer was asked for and the answer is a bare figure"
    return ""


def _items(text: str) -> list[str]:
    return [part for part in re.split(r",|;|\band\b|\n|•", text) if part.strip()]


def _specificity(gold, answer_figures: Sequence) -> tuple[str, list[str]] | None:
    """(why, given) when an answer figure is the gold figure at another precision:
    coarser (too general: £49 million for £48.6 million) or finer than the gold
    answer gives (too specific: £48,612 thousand for £48.6 million)."""
    gold_step = _step(gold)
    for figure in answer_figures:
        if figure.percent != gold.percent or same_quantity(gold, figure):
            continue
        step = _step(figure)
        gap = abs(figure.scaled - gold.scaled)
        if step > gold_step and gap <= step / 2:
            return (f"too general: the answer gives {figure.raw} where the gold answer is {gold.raw}",
                    [figure.raw])
        if step < gold_step and gap <= gold_step / 2:
            return (f"too specific: the answer gives {figure.raw} where the gold answer is {gold.raw}",
                    [figure.raw])
    return None


def _step(q) -> float:
    """What the last written digit of a figure stands for: £48.6 million -> 100,000; 18,000 -> 1,000."""
    number = re.search(r"\d[\d,]*(?:\.\d+)?", q.raw).group(0).replace(",", "")
    if "." in number:
        unit = 10 ** -len(number.split(".")[1])
    else:
        unit = 10 ** (len(number) - len(number.rstrip("0"))) if number.strip("0") else 1
    return unit * q.scale


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
