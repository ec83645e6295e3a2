"""Which gold question a typed question is, so the app can mark its gold pages.

A person pasting a question from a gold set into the search box should see
the expected pages marked in every column. Matching is exact after light
normalisation (case, whitespace, trailing punctuation): a near miss is a
different question and is not marked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError

GOLD_PATTERNS = ("*.eval.json", "*.gold.json")


def find_goldsets(settings: Settings) -> list[Path]:
    """Gold set files under the benchmarks directory, sorted, then the user's own (usersets)."""
    from ragloupe.evaluate.usersets import list_user_goldsets

    root = settings.path("benchmarks_dir")
    found = {path for pattern in GOLD_PATTERNS for path in root.rglob(pattern)}
    return sorted(found) + [p for p in list_user_goldsets(settings) if p not in found]


def goldset_choices(settings: Settings) -> dict[str, Path]:
    """Every gold set by the name a picker shows: the shipped file's name, or "yours: NAME"."""
    from ragloupe.evaluate.usersets import goldsets_dir

    own = goldsets_dir(settings)
    return {(f"yours: {path.stem}" if path.parent == own else path.name): path for path in find_goldsets(settings)}


def load_goldsets(paths: Iterable[Path]) -> tuple[list, list[str]]:
    """Load each gold set; a file that cannot be read is a one-line problem, not a stop."""
    from ragloupe.evaluate.goldset import load_goldset

    goldsets, problems = [], []
    for path in paths:
        try:
            goldsets.append(load_goldset(path))
        except RagloupeError as exc:
            problems.append(str(exc))
    return goldsets, problems


def normalise_question(text: str) -> str:
    text = re.sub(r"\s+", " ", text.casefold()).strip()
    return text.rstrip(" ?.!").strip()


def match_question(question: str, goldsets: Iterable) -> list:
    """The gold queries whose question is this one (several sets may share a wording)."""
    wanted = normalise_question(question)
    if not wanted:
        return []
    return [query for goldset in goldsets for query in goldset.queries
            if normalise_question(query.question) == wanted]


def gold_units(queries: Iterable) -> set[str]:
    """The unit ids ('doc#p28', 'guidance#4.6.1') the matched gold queries expect."""
    return {unit for query in queries for unit in query.expected_units}


def gold_chunk_ids(store, queries: Iterable) -> list[str]:
    """Ids of the indexed chunks that belong to the matched queries' expected units."""
    ids: set[str] = set()
    for query in queries:
        if query.expected_records:
            unit = {"record_id": {"$in": list(query.expected_records)}}
        else:
            unit = {"page": {"$in": [int(p) for p in query.expected_pages]}}
        ids.update(store.ids({"$and": [{"doc_id": query.doc_id}, unit]}))
    return sorted(ids)


def similar_questions(question: str, goldsets: Iterable, limit: int = 3,
                      min_score: float = 70.0) -> list:
    """Gold queries worded close to ``question`` ("did you mean"), closest first.

    Only asked when there is no exact match: gold pages are marked for the
    gold question itself, since a reworded question may ask something else.
    The score is rapidfuzz's token_set_ratio (0-100) on normalised wordings.
    """
    from rapidfuzz import fuzz

    wanted = normalise_question(question)
    if not wanted:
        return []
    scored = []
    for goldset in goldsets:
        for query in goldset.queries:
            score = fuzz.token_set_ratio(wanted, normalise_question(query.question))
            if score >= min_score:
                scored.append((score, query.query_id, query))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [query for _score, _id, query in scored[:limit]]


def gold_questions_by_document(goldsets: Iterable) -> dict[str, list]:
    """Every gold query, grouped by the document it is about (documents sorted)."""
    grouped: dict[str, list] = {}
    for goldset in goldsets:
        for query in goldset.queries:
            grouped.setdefault(query.doc_id, []).append(query)
    return dict(sorted(grouped.items()))
