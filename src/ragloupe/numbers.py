"""Numbers, currency and answers: normalising them so that equal things match.

Annual reports write one figure many ways: "£1,278,771 (£000)" in a gold set,
"1,278,771" in the table it came from, "£0.769m" in the prose next to it. The
evaluation (FP3, the gold-set audit, FP4-FP7) and the groundedness screen all
need "is this figure in that text?", so the answer lives here, once.

A quantity is read with its scale ("million", "m" after a currency, "(£000)")
and compared by value: "£769 (£000)" is 769 thousand pounds and matches both
"769" in a £000 table and "£0.769m" in prose. Everything here is pure.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from ragloupe.textrules import ANSWER_STOPWORDS

# A figure: digits with comma thousands separators, or plain digits, with an
# optional decimal part. The look-behind keeps digits glued to a word or code
# ("COVID-19", "ISO-310002", "Q4", "A4") from being read as a figure.
_NUMBER = r"(?P<number>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
_QUANTITY_RE = re.compile(
    r"(?<![\w.,/])(?<![A-Za-z]-)"
    r"(?P<sign>[-−–])?"
    r"(?P<currency>[£$€])?\s?"
    + _NUMBER
    + r"(?P<percent>\s?%)?"
    r"(?:\s?(?P<scale_word>million|billion|thousand|bn|m|k)(?![A-Za-z]))?"
    r"(?:\s?\(\s?(?P<paren_scale>[£$€]?\s?000'?s?)\s?\))?"
    r"(?![\w])",
    re.IGNORECASE,
)

# A year, as every stage reads one: four digits from 1900 to 2099. is_year() applies it
# to a figure already read; YEAR_PATTERN is the fragment for bigger patterns (query
# analysis's "2020/21" and "31 March 2021", a table's year header, an EU act's
# "2012/18"), so no stage keeps a year rule of its own.
YEAR_PATTERN = r"(?:19|20)\d{2}"
_YEAR_RE = re.compile(YEAR_PATTERN)

_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9}

# Words that carry no meaning for "is this answer in that text?" (ragloupe.textrules).
STOPWORDS = ANSWER_STOPWORDS


@dataclass(frozen=True)
class Quantity:
    """A figure found in text, with its span and how it was written."""

    raw: str  # the characters matched, e.g. "£1,278,771 (£000)"
    start: int
    end: int
    value: float  # the number as written, separators removed: 1278771.0
    scale: float  # 1.0, or 1e3 for "(£000)", 1e6 for "million"/"m"
    currency: str  # "£", "$", "€" or ""
    percent: bool

    @property
    def scaled(self) -> float:
        return self.value * self.scale

    @property
    def distinctive(self) -> bool:
        """True when the figure is unlikely to match by chance: currency, percent,
        decimals, separators or three digits and more. "11" or "14" are not."""
        return bool(self.currency or self.percent or self.scale != 1.0
                    or "." in self.raw or "," in self.raw or self.value >= 100)

    @property
    def candidates(self) -> frozenset[float]:
        """Values this figure may stand for: as written, and times its scale.

        Both are kept because a table under a "£000" column header writes
        769 for what prose calls £0.769m: the header is not next to the figure.
        """
        return frozenset({_canonical(self.value), _canonical(self.scaled)})


def normalise_text(text: str) -> str:
    """Unicode-normalised, lower-cased text with one kind of dash, quote and space."""
    text = unicodedata.normalize("NFKC", text)
    text = (text.replace("\u2019", "'").replace("\u2018", "'")
            .replace("\u201c", '"').replace("\u201d", '"')
            .replace("\u2013", "-").replace("\u2014", "-").replace("\u2212", "-")
            .replace("\u00a0", " "))
    return re.sub(r"\s+", " ", text).strip().lower()


def extract_quantities(text: str) -> list[Quantity]:
    """Every figure in ``text``, left to right, with value, scale and span."""
    found: list[Quantity] = []
    for match in _QUANTITY_RE.finditer(text):
        number = match.group("number")
        if set(number) == {"0"} and len(number) == 3 and match.group("currency"):
            continue  # "£000" is a column header (thousands of pounds), not a figure
        currency = match.group("currency") or ""
        scale_word = (match.group("scale_word") or "").lower()
        # "m" and "k" only mean million/thousand after a currency sign:
        # "10 m" is ten metres, "£10m" is ten million pounds.
        if scale_word in {"m", "k"} and not currency:
            scale_word = ""
        scale = _SCALES.get(scale_word, 1.0)
        if match.group("paren_scale"):
            scale *= 1e3
        end = match.end() if (scale_word or match.group("paren_scale") or match.group("percent")) \
            else match.start("number") + len(number)
        found.append(Quantity(
            raw=text[match.start():end].strip(), start=match.start(), end=end,
            value=float(number.replace(",", "")), scale=scale, currency=currency,
            percent=bool(match.group("percent")),
        ))
    return found


def same_quantity(a: Quantity, b: Quantity) -> bool:
    """True when two figures can stand for the same amount.

    Percentages only match percentages. Otherwise any reading of one (as
    written or scaled) equal to any reading of the other is a match, after
    rounding away float noise so 0.769 * 1e6 equals 769 * 1e3, while
    1,278,773 stays different from 1,278,771.
    """
    if a.percent != b.percent:
        return False
    return bool(a.candidates & b.candidates)


def quantity_in_text(quantity: Quantity, text: str) -> Quantity | None:
    """The first figure in ``text`` that matches ``quantity``, or None."""
    for other in extract_quantities(text):
        if same_quantity(quantity, other):
            return other
    return None


def key_quantities(answer: str, keep_years: bool = False) -> list[Quantity]:
    """The figures of an answer worth checking, in order, without repeats.

    Years standing alone (2020, 2021/22) are usually context in a number
    answer ("£54 million in 2021/22") and are left out unless ``keep_years``.
    """
    keys: list[Quantity] = []
    for q in extract_quantities(answer):
        if not keep_years and is_year(q):
            continue
        if any(same_quantity(q, k) for k in keys):
            continue
        keys.append(q)
    return keys


def content_tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` without stopwords or figures, lightly stemmed."""
    # Hyphens split words: "April-May" and "half-million" match "April to May"
    # and "half a million" word by word.
    tokens = re.findall(r"[a-z][a-z']*[a-z]|[a-z]", normalise_text(text))
    return [_stem(t) for t in tokens if t not in STOPWORDS]


MatchStatus = Literal["found", "partial", "absent"]


@dataclass(frozen=True)
class AnswerMatch:
    """How much of an expected answer a text contains, and the evidence."""

    status: MatchStatus
    share: float  # share of the answer's checkable parts found in the text
    found: tuple[str, ...]  # the parts found (figures as written in the text, or words)
    missing: tuple[str, ...]  # the answer's parts not found


def match_answer(expected: str, text: str, answer_type: str = "text",
                 found_share: float = 0.8, partial_share: float = 0.5) -> AnswerMatch:
    """Whether ``text`` contains the expected answer, with numbers normalised.

    A number answer is judged by its figures: found when all of them are in
    the text, partial when some are, absent when none is.
    A text answer is judged by its figures and content words together: found
    when at least ``found_share`` of them occur, partial from ``partial_share``.
    A number answer without any figure is judged as text.
    """
    keys = key_quantities(expected, keep_years=answer_type != "number")
    if answer_type == "number" and keys:
        hits = [quantity_in_text(k, text) for k in keys]
        found = tuple(h.raw for h in hits if h is not None)
        missing = tuple(k.raw for k, h in zip(keys, hits) if h is None)
        share = len(found) / len(keys)
        if not missing:
            status: MatchStatus = "found"
        elif found:
            status = "partial"
        else:
            status = "absent"
        return AnswerMatch(status, round(share, 4), found, missing)
    text_quantities = extract_quantities(text)
    text_tokens = set(content_tokens(text))
    found_parts, missing_parts = [], []
    for k in keys:
        hit = next((q for q in text_quantities if same_quantity(k, q)), None)
        (found_parts if hit else missing_parts).append(hit.raw if hit else k.raw)
    for token in dict.fromkeys(content_tokens(expected)):
        (found_parts if token in text_tokens else missing_parts).append(token)
    total = len(found_parts) + len(missing_parts)
    if total == 0:
        return AnswerMatch("absent", 0.0, (), ())
    share = len(found_parts) / total
    if share >= found_share:
        status = "found"
    elif share >= partial_share:
        status = "partial"
    else:
        status = "absent"
    return AnswerMatch(status, round(share, 4), tuple(found_parts), tuple(missing_parts))


def _canonical(value: float) -> float:
    """Round to twelve significant digits: enough to absorb the float noise of
    scaling (0.769 * 1e6), far too few to merge two figures that differ in
    their last written digit, as the six digits used at first did."""
    if value == 0:
        return 0.0
    digits = 12 - int(math.floor(math.log10(abs(value)))) - 1
    return round(value, digits)


def is_year(q: Quantity) -> bool:
    """A bare four-digit figure that YEAR_PATTERN accepts ("2021" of "2021/22"): a date, not an amount.
    The one year rule of the package (answer matching, the groundedness screen, query analysis)."""
    if q.currency or q.percent or q.scale != 1.0 or "," in q.raw or "." in q.raw:
        return False
    return _YEAR_RE.fullmatch(f"{q.value:.0f}") is not None


def _stem(token: str) -> str:
    """A very light stemmer: plural and -ed/-ing endings, enough for answer overlap."""
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token
