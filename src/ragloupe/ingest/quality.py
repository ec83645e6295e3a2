"""Page quality: is this extracted text worth indexing, and if not, why.

One pure function, ``assess_page``, grades a page's text (boilerplate
already stripped) as

- ``empty``: fewer than ``quality_min_chars`` non-space characters. The
  reason says "no text layer: needs OCR" when the page carries an image (a
  scan), that its only text was running header/footer lines when those were
  stripped from it, otherwise how little text there was.
- ``rejected``: text is there but is not the page's content: at least
  ``quality_reject_garbage`` of its characters are glyphs with no Unicode
  meaning (private-use code points, U+FFFD, control characters), as when a
  font has no usable character map; or that share of it is glyph names
  ("/g18/g152", "(cid:12)") written in place of the characters; or it is
  the "Please wait..." placeholder a viewer shows for an XFA form, whose
  content is not in the text layer at all.
- ``figures``: a page of figures, as a financial statement or a table of
  statistics is: more than ``quality_max_nonalpha`` of its characters are not
  letters, and digits are most of those. Nothing is wrong with such a page;
  the reason says how much of it is digits ("a page of figures (38% digits)").
- ``degraded``: indexable but damaged; each problem found adds a reason:
  more than ``quality_max_nonalpha`` non-alphabetic characters that are not
  mostly digits (symbols, leaders, broken text), any private-use or
  replacement glyph, or ligature/hyphenation damage (see
  ``ligature_hyphenation_damage``). A page of figures with such damage is
  degraded, its reason naming both.
- ``clean``: none of the above; the reason is "".

Empty and rejected pages are recorded but not indexed; figures and degraded
pages are indexed like clean ones and carry their reason to the chunks, so a
weak hit can be explained.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import NamedTuple

from ragloupe.config import Settings

# Words PDF-to-text breaks when a ligature glyph (fi, fl, ff, ffi, ffl) has no
# Unicode mapping: the ligature vanishes, leaving a gap or nothing
# ("signi cant", "signicant", "the rst"). Common words of technical and
# annual reports, chosen so that no damaged form is itself a word ("fire"
# would leave "re", "profile" would leave "prole", so they are not listed).
_LIGATURE_WORDS = """
    affect affected affecting benefit benefits certificate certified classification
    classified confidential confirm confirmed defined definition difference differences
    different effect effective effectively effects efficiency efficient field fields final
    finally financial first flood flooding floor identification identified identify
    influence justified modification modified office officer official qualified
    reflect reflected significant significantly specific specifically specified
    sufficient traffic verification verified workflow
""".split()


def _damaged_forms(word: str) -> set[str]:
    """'office' -> {'o ce', 'oce'}: the word with its first ligature gone."""
    for ligature in ("ffi", "ffl", "ff", "fi", "fl"):
        head, found, tail = word.partition(ligature)
        if found:
            forms = {f"{head} {tail}".strip(), head + tail}
            return forms | {form[0].upper() + form[1:] for form in forms}
    return set()


_DROPPED_LIGATURE = re.compile(r"\b(?:" + "|".join(sorted(
    {re.escape(form) for word in _LIGATURE_WORDS for form in _damaged_forms(word)},
    key=len, reverse=True)) + r")\b")
# A word split at a line end by a hyphen: "manage-\nment". Real compounds
# ("well-\nknown") look the same, so only the count matters, not each hit.
_LINE_END_HYPHEN = re.compile(r"[a-z]-\n[a-z]")
# Ligature code points that survived extraction (ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ): tokenizers
# and BM25 do not match them with "fi", "fl".
_LIGATURE_GLYPHS = re.compile("[\ufb00-\ufb06]")
# From this many line-end hyphenations on, lexical matching on the page
# suffers enough to say so.
_MIN_HYPHEN_SPLITS = 3
# A page with too few letters is a page of figures when digits are at least this share of
# its non-alphabetic characters; the rest of a statement's non-letters are the commas,
# points, brackets and signs around its numbers (the Grampian statements: 68-80% digits).
_FIGURES_MIN_DIGIT_SHARE = 0.5


# Glyph names written out instead of characters, as some PDF producers and
# extractors do for fonts without a character map: "/g18", "/gid00012",
# "/uni0041", "/C0_12", pdfminer's "(cid:12)". A name must carry digits, so
# paths and URLs ("/about/board") are not taken for glyph names.
_GLYPH_NAME = re.compile(r"/(?:[A-Za-z]{1,6}\d+(?:_\d+)?|uni[0-9A-Fa-f]{4,6})(?=[/\s(]|$)"
                         r"|\(cid:\d+\)")
# The text XFA forms carry for viewers that cannot render them; the form's
# real content lives in XML, not in the text layer.
_XFA_PLACEHOLDER = re.compile(
    r"if\s+this\s+message\s+is\s+not\s+eventually\s+replaced\s+by\s+the\s+proper\s+contents",
    re.IGNORECASE)
XFA_REASON = "XFA form: content not in the text layer"
RUNNING_LINES_REASON = "only running header/footer lines, which were stripped"


class PageQuality(NamedTuple):
    quality: str  # clean | figures | degraded | empty | rejected
    reason: str


def _is_garbage(char: str) -> bool:
    """A glyph that carries no text: private use, U+FFFD, or a control character."""
    if char == "\ufffd":
        return True
    category = unicodedata.category(char)
    return category in ("Co", "Cc") and char not in "\n\r\t"


def _glyph_reasons(chars: list[str]) -> list[str]:
    """'private-use glyphs (U+F0D8) x12', naming the most frequent code point."""
    reasons = []
    private = Counter(c for c in chars if unicodedata.category(c) == "Co")
    if private:
        top, _ = private.most_common(1)[0]
        reasons.append(f"private-use glyphs (U+{ord(top):04X}) x{sum(private.values())}")
    replacement = sum(1 for c in chars if c == "\ufffd")
    if replacement:
        reasons.append(f"unreadable glyphs (U+FFFD) x{replacement}")
    control = sum(1 for c in chars if unicodedata.category(c) == "Cc")
    if control:
        reasons.append(f"control characters x{control}")
    return reasons


def ligature_hyphenation_damage(text: str) -> int:
    """How many signs of ligature or line-end hyphenation damage the text shows.

    Dropped ligatures and surviving ligature glyphs count one each; line-end
    hyphenations count only from ``_MIN_HYPHEN_SPLITS`` on, since one or two
    are ordinary typesetting.
    """
    ligatures = len(_DROPPED_LIGATURE.findall(text)) + len(_LIGATURE_GLYPHS.findall(text))
    hyphens = len(_LINE_END_HYPHEN.findall(text))
    return ligatures + (hyphens if hyphens >= _MIN_HYPHEN_SPLITS else 0)


def glyph_name_share(text: str) -> tuple[float, list[str]]:
    """Share of the text's non-space characters that are glyph names, and the first few."""
    names = _GLYPH_NAME.findall(text)
    total = sum(1 for c in text if not c.isspace())
    if not names or not total:
        return 0.0, []
    return sum(len(name) for name in names) / total, names[:3]


def assess_page(text: str, settings: Settings, has_images: bool = False,
                stripped: bool = False) -> PageQuality:
    """Grade one page's text; see the module docstring for the rules.

    ``stripped``: running header/footer lines were removed from this page's
    text, so a page left without text says that rather than "no text".
    """
    chars = [c for c in text if not c.isspace()]
    if len(chars) < settings.quality_min_chars:
        if has_images:
            return PageQuality("empty", "no text layer: needs OCR")
        if stripped and not chars:
            return PageQuality("empty", RUNNING_LINES_REASON)
        if not chars:
            return PageQuality("empty", "no text on the page")
        return PageQuality("empty", f"only {len(chars)} characters of text")
    if _XFA_PLACEHOLDER.search(text):
        return PageQuality("rejected", XFA_REASON)
    names_share, names = glyph_name_share(text)
    if names_share >= settings.quality_reject_garbage:
        return PageQuality("rejected", f"{names_share:.0%} of the text is glyph names, not "
                                       f"characters ({''.join(names)}...)")

    letters = sum(1 for c in chars if c.isalpha())
    nonalpha_share = 1 - letters / len(chars)
    garbage_share = sum(1 for c in chars if _is_garbage(c)) / len(chars)
    glyphs = _glyph_reasons(chars)

    if garbage_share >= settings.quality_reject_garbage:
        return PageQuality("rejected", "; ".join(
            [f"{garbage_share:.0%} of characters are unreadable glyphs"] + glyphs))

    figures = ""  # the reason of a page of figures, else ""
    reasons = []
    if nonalpha_share > settings.quality_max_nonalpha:
        digits = sum(1 for c in chars if c.isdigit())
        if digits >= _FIGURES_MIN_DIGIT_SHARE * (len(chars) - letters):
            figures = f"a page of figures ({digits / len(chars):.0%} digits)"
        else:
            reasons.append(f"{nonalpha_share:.0%} non-alphabetic characters")
    reasons.extend(glyphs)
    damage = ligature_hyphenation_damage(text)
    if damage:
        reasons.append(f"ligature or hyphenation damage x{damage}")
    if reasons:
        return PageQuality("degraded", "; ".join(filter(None, [figures, *reasons])))
    if figures:
        return PageQuality("figures", figures)
    return PageQuality("clean", "")
