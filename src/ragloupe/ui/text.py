"""Showing document text and scores safely. Pure functions, no Streamlit.

Document text is data. A PDF can contain "<script>", "**bold**" or
"[a link](http://...)", and none of it may become markup on the page. So
highlighting escapes the text first and then wraps query-term matches in
<mark>; the result goes to st.html, which does no markdown processing.
Scores and ranks that an engine did not give are shown as "—", never 0.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from ragloupe.models import Ranking
from ragloupe.textrules import HIGHLIGHT_STOPWORDS

ABSENT = "—"

# Words too common to be worth highlighting (ragloupe.textrules).
_STOPWORDS = HIGHLIGHT_STOPWORDS

# A query term: letters/digits joined by the separators technical text uses
# inside one token ("1,559,285", "2012/18/EU", "ISO-31000", "3.5").
_TERM = re.compile(r"[^\W_](?:[\w]|[.,/%£$€-](?=\w))*", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The words of a query worth highlighting, longest first, without duplicates."""
    seen: dict[str, str] = {}
    for match in _TERM.finditer(query):
        term = match.group(0)
        key = term.casefold()
        if key in _STOPWORDS or (len(term) < 2 and not term.isdigit()):
            continue
        seen.setdefault(key, term)
    return sorted(seen.values(), key=lambda t: (-len(t), t.casefold()))


def term_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Non-overlapping (start, end) spans where a term occurs as a whole word, case-insensitive."""
    terms = [t for t in terms if t]
    if not terms:
        return []
    ordered = sorted({t.casefold(): t for t in terms}.values(), key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(t) for t in ordered) + r")(?!\w)",
                         re.IGNORECASE)
    return [match.span() for match in pattern.finditer(text)]


def highlight_html(text: str, terms: Iterable[str]) -> str:
    """The text as inert HTML with the terms wrapped in <mark>."""
    return spans_html(text, term_spans(text, terms))


def spans_html(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """The text as inert HTML with the given (start, end) character spans wrapped in <mark>.

    Each piece of the text is escaped on its own, so a mark can never land
    inside an entity and no character of the document reaches the page as markup.
    Overlapping or out-of-range spans are clipped rather than trusted.
    """
    pieces, cursor = [], 0
    for start, end in sorted(spans):
        start, end = max(start, cursor), min(end, len(text))
        if start >= end:
            continue
        pieces.append(html.escape(text[cursor:start]))
        pieces.append(f"<mark>{html.escape(text[start:end])}</mark>")
        cursor = end
    pieces.append(html.escape(text[cursor:]))
    return ('<div class="ragloupe-chunk" style="white-space: pre-wrap; font-size: 0.9rem; '
            'line-height: 1.45">' + "".join(pieces) + "</div>")


def fmt_score(value: float | None, digits: int = 3) -> str:
    return ABSENT if value is None else f"{value:.{digits}f}"


def fmt_rank(rank: int | None) -> str:
    return ABSENT if rank is None else f"#{rank}"


def fmt_engine(rank: int | None, score: float | None) -> str:
    """'#3 · 0.812' for an engine that listed the hit, '—' for one that did not."""
    if rank is None:
        return ABSENT
    return f"#{rank} · {fmt_score(score)}"


def fmt_change(change: int | None) -> str:
    """A rerank change: '▲2' moved up two places, '▼1' down one, '=' unchanged."""
    if change is None:
        return ABSENT
    if change > 0:
        return f"▲{change}"
    if change < 0:
        return f"▼{-change}"
    return "="



def rewrite_line(ranking: Ranking) -> str | None:
    """What a search's LLM rewrite did, as Search & compare says it (plain text: the rewrite is the
    LLM's words): the rewrite used, with any of the question's terms it had dropped and got back, or
    why it was not used. None when the search asked for no rewrite."""
    if ranking.rewrite_used:
        restored = ranking.rewrite_restored
        return (f"Rewrite used: {ranking.rewrite}" + (f" ({', '.join(restored)} put back: the LLM's rewrite "
                                                      f"had dropped {'it' if len(restored) == 1 else 'them'})"
                                                      if restored else ""))
    if ranking.rewrite_not_used_because:
        return f"Rewrite not used: {ranking.rewrite_not_used_because}"
    return None


_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: str) -> str:
    """Text made literal for places Streamlit renders as markdown (labels, captions)."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", str(text))
