"""Where a run's misses sit on the Embeddings map: each gold unit's outcome and failure code.

The map colours the chunks of the gold units of a run's questions by what
became of the question: hit at rank 1, in the top k, or missed; or by the
failure code the run gave it. A unit that is gold for several questions
shows its worst outcome, so a miss is never hidden behind a hit.
"""

from __future__ import annotations

from typing import Iterable, Mapping

OUTCOMES = ("hit at 1", "in the top k", "missed")
NOT_IN_RUN = "not a gold unit of the run"
_WORST_FIRST = {"missed": 0, "in the top k": 1, "hit at 1": 2}


def outcome(first_relevant_rank: int | None, k: int) -> str:
    if first_relevant_rank == 1:
        return "hit at 1"
    if first_relevant_rank is not None and first_relevant_rank <= k:
        return "in the top k"
    return "missed"


def unit_outcomes(run_data: Mapping, k: int) -> dict[str, dict[str, str]]:
    """unit -> {outcome, code, query_id} for every gold unit of the run's questions (the worst wins)."""
    out: dict[str, dict[str, str]] = {}
    for query in run_data["queries"]:
        found = outcome(query["first_relevant_rank"], k)
        for unit in query["expected_units"]:
            current = out.get(unit)
            if current is None or _WORST_FIRST[found] < _WORST_FIRST[current["outcome"]]:
                out[unit] = {"outcome": found, "code": query["failure"]["code"], "query_id": query["query_id"]}
    return out


def colour_points(points: Iterable[dict], outcomes: Mapping[str, Mapping[str, str]]) -> list[dict]:
    """The map's points with 'outcome' and 'failure code' fields to colour by."""
    coloured = []
    for point in points:
        found = outcomes.get(point.get("unit", ""))
        coloured.append({**point, "outcome": found["outcome"] if found else NOT_IN_RUN,
                         "failure code": found["code"] if found else NOT_IN_RUN})
    return coloured
