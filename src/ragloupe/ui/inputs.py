"""Widget values turned into the arguments the pipeline takes. Pure, no Streamlit."""

from __future__ import annotations

from collections.abc import Sequence

# The qualities of indexed pages (models.INDEXABLE), in the order the filters list them.
ALL_QUALITIES = ("clean", "figures", "degraded")


def search_filters(documents: Sequence[str], page_from: int, page_to: int,
                   qualities: Sequence[str]) -> dict:
    """The search() filters dict; a widget left at "everything" adds no filter.

    Page bounds of 0 mean "no bound"; a lone bound is completed with the other
    end of the range so the filter is always (lo, hi).
    """
    filters: dict = {}
    if documents:
        filters["doc_ids"] = list(documents)
    if page_from or page_to:
        lo = int(page_from) if page_from else 1
        hi = int(page_to) if page_to else 10**9
        filters["pages"] = (min(lo, hi), max(lo, hi))
    if qualities and set(qualities) != set(ALL_QUALITIES):
        filters["quality"] = list(qualities)
    return filters


def page_range_problem(page_from: int, page_to: int) -> str | None:
    """Why a page range cannot be used as typed (the first page after the last), or None."""
    if page_from and page_to and page_from > page_to:
        return (f"The page range starts after it ends (from {page_from} to {page_to}): "
                "swap the two numbers.")
    return None
