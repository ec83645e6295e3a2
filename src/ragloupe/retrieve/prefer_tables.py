"""The "prefer tables" preference: table chunks move up for questions that ask for a figure.

A question like "How much did the board spend against its core revenue
limit?" is usually answered by a cell of a table, and a table chunk holds
the figure next to its row and column names. With Settings.prefer_tables on,
such a question multiplies each table chunk's score by (1 + boost). Off by
default: it is a measured option (README, Ingestion), not a rule. With
Settings.prefer_tables_sections set, only tables in the sections that
pattern finds are boosted (EvidenceRAG's TABLE_BOOST_ALLOWED_SECTION_PATTERNS):
a figure question about the accounts should not lift the staffing tables.
"""

from __future__ import annotations

import re
from typing import Sequence

# Words that ask for a figure, and figures or currencies named in the question.
_ASKS_FOR_FIGURE = re.compile(
    r"\b(?:how\s+(?:much|many)|total|amount|figure|value|cost|costs|spend|spent|spending|"
    r"expenditure|income|budget|limit|deficit|surplus|saving|savings|variance|percentage|"
    r"rate|number\s+of|sum)\b|[£$€%]|\d", re.IGNORECASE)


def asks_for_figure(question: str) -> bool:
    """True when the question asks for a number (or names one)."""
    return bool(_ASKS_FOR_FIGURE.search(question))


def boosted(scores: Sequence[float], kinds: Sequence[str], boost: float) -> list[float]:
    """Scores with each table chunk's multiplied by (1 + boost); a score <= 0 is left as it is
    (multiplying a negative cosine would push it down)."""
    return [s * (1 + boost) if kind == "table" and s > 0 else s for s, kind in zip(scores, kinds)]


def in_allowed_section(section: str, pattern: str) -> bool:
    """True when ``pattern`` (a regular expression, case-insensitive) finds ``section``; "" allows all."""
    return not pattern or re.search(pattern, section or "", re.IGNORECASE) is not None
