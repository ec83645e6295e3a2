"""Label while you inspect: a row of Search & compare made a gold item, and the modes it compares.

The page marks a row (a page, a record, or a chunk, whose unit is its page or
record) as the right answer; this turns that into a gold item of a named gold
set (usersets.add_item: checked against the index, who/what/when kept).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ragloupe.config import Settings
from ragloupe.diagnostics.comparison import ComparisonRow
from ragloupe.models import Ranking


def label_row(settings: Settings, goldset: str, question: str, row: ComparisonRow, answer: str = "",
              by: str = "", *, store) -> tuple[dict, list[str]]:
    """Add ``question`` with the row's unit as its gold to ``goldset``: (the stored item, warnings);
    ``store`` is the index the row came from."""
    from ragloupe.evaluate.runs import index_snapshot
    from ragloupe.evaluate.usersets import NewItem, add_item

    item = NewItem(question, row.doc_id, page=None if row.record_id else row.page, record_id=row.record_id,
                   answer=answer, by=by, via="search & compare")
    snapshot = index_snapshot(settings, [row.doc_id], store)
    return add_item(settings, goldset, item, snapshot.documents, snapshot.unit_texts.get(item.unit))


def rank_modes(question: str, modes: Sequence[str], k: int, filters: dict, overrides: Mapping[str, Any],
               settings: Settings, *, workspace) -> dict[str, Ranking]:
    """Each mode's whole candidate list for the question, every hit with both engines' ranks.

    k is at least the candidate window, so a unit one mode ranks 3rd and another
    37th shows 37, not "—"; explain runs both engines in every mode, so a
    dense-only mode still shows BM25's rank. ``workspace``: the face's (ragloupe.workspace).
    """
    from ragloupe.retrieve.search import search

    depth = max(int(k), int(settings.candidate_window))
    return {mode: search(question, mode=mode, k=depth, filters=filters, explain=True,
                         workspace=workspace.with_settings(settings), **overrides) for mode in modes}
