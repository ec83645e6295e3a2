"""The second extractor: pdfminer.six (through pdfplumber) for pages pypdf could not read well.

pypdf is fast and reads almost every page, so it reads every page first. A
page goes to pdfminer only when pypdf failed on it, or gave fewer readable
characters than a page needs, or mostly unreadable glyphs. The two texts
are then compared and the better one kept (``prefer_second``), so the
fallback can only add text, never replace a good pypdf page with a worse
one. Runs inside the extraction child, under its time and memory limits.
"""

from __future__ import annotations

import unicodedata

METHOD = "pdfminer"


def _is_garbage(char: str) -> bool:
    """A glyph that carries no text: private use, U+FFFD or a control character."""
    if char == "\ufffd":
        return True
    return unicodedata.category(char) in ("Co", "Cc") and char not in "\n\r\t"


def readable_chars(text: str) -> int:
    """Non-space characters that carry text (unreadable glyphs not counted)."""
    return sum(1 for c in text if not c.isspace() and not _is_garbage(c))


def garbage_share(text: str) -> float:
    visible = [c for c in text if not c.isspace()]
    return sum(map(_is_garbage, visible)) / len(visible) if visible else 0.0


def needs_second_reading(text: str, failed: bool, min_chars: int, reject_share: float) -> bool:
    """True when pypdf's result for a page is not good enough to keep unchallenged."""
    return failed or readable_chars(text) < min_chars or garbage_share(text) >= reject_share


def prefer_second(first: str, first_failed: bool, second: str, reject_share: float) -> bool:
    """True when the second extractor's text is the better reading of the page.

    Better means: the first one failed and the second has any text; or the
    second has more readable characters and is not itself mostly garbage.
    """
    if not second.strip():
        return False
    if first_failed:
        return True
    if garbage_share(second) >= reject_share > garbage_share(first):
        return False
    return readable_chars(second) > readable_chars(first)


def page_text(plumber_page) -> str:
    """pdfminer's text of one pdfplumber page, lines in reading order."""
    return plumber_page.extract_text() or ""
