"""The groundedness screen: are the answer's checkable tokens in the passages it cites?

No model is needed. The screen reads the tokens of an answer that can be
checked by string and number matching alone:

- quantities with a unit or currency: 90%, 10 mm, £1,559,285, 3.5 m/s,
  £0.769m, "£769 (£000)", and bare figures written with thousands
  separators or decimals (1,278,771; 0.25). Bare small integers and years
  are not checkable (too likely to match by chance);
- named standards: ISO 31000, EN 14015, API 650, IEC 61511, BS EN ISO 9001;
- EU legal acts: Directive 2012/18/EU, Regulation (EU) 2016/679.

Each token gets a verdict, and the answer the worst of them:

- NOT_CONTRADICTED: in a passage cited for its sentence. Deliberately not
  "supported": the figure being there does not mean the passage entails the
  sentence;
- MISATTRIBUTED: in a retrieved passage, but not in one cited for it (an
  uncited sentence takes the citations of the next cited sentence of its
  paragraph, else of the previous one);
- DERIVED: in no passage, but equal, at the precision it is written with, to
  a sum, difference, ratio or percentage of two other figures of the same
  sentence that are themselves in a passage it cites, in the same unit
  ("exceeded by £4.8 million (£10.2 million against a target of £5.4
  million)"); or of two figures of one cited passage ("Zone A extends 300 m
  and zone B extends 200 m" -> "500 m in total"), only where that passage is
  sparse enough that a random figure of the same precision would equal some
  arithmetic of its figures at most 2% of the time. A page of accounts holds
  a hundred figures, so ten thousand pairs, and a made-up figure equals one of
  their sums by chance: there it is refused (derivation.py has the rule,
  benchmarks/screen_adversarial.py measures it);
- UNSUPPORTED: none of the above;
- UNVERIFIABLE (answer level only): the answer has no checkable token, so
  the screen has no opinion. It is never a pass.

checkable_share is the share of the answer's sentences holding at least one
checkable token, so a quiet screen is not mistaken for a clean one.

Known limits, by design: the screen checks tokens, not meaning. A negated
or otherwise wrong sentence whose figures are all in the cited passage
passes ("the Board did not receive £47.3m"), and so does a right figure
attached to the wrong line item of the same passage. A figure matches only
a figure of the same unit (money never "1.3 mm" or "47.3 years"). Rounded
figures match only when written with a scale ("£1,278.8m" against 1,278,771 in a
£000 table), and only when the passage is sparse enough at that precision
that a random figure would match it at most MAX_ROUNDING_CHANCE of the time.
Number matching is ragloupe.numbers': thousands separators, currency,
"m"/"million" and "(£000)" scale notes are normalised.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Literal, Sequence

from ragloupe.numbers import YEAR_PATTERN, Quantity, extract_quantities, is_year, same_quantity
from ragloupe.generate.derivation import (close as _close, decimals as _decimals, passage_derivation,
                                         same_unit as _same_unit, sentence_derivation)
from ragloupe.textrules import STANDARD_BODIES, UNITS, one_of

Verdict = Literal["NOT_CONTRADICTED", "UNSUPPORTED", "MISATTRIBUTED", "DERIVED", "UNVERIFIABLE"]
# Worst first: the answer's verdict is its worst token's.
_SEVERITY: tuple[Verdict, ...] = ("UNSUPPORTED", "MISATTRIBUTED", "DERIVED", "NOT_CONTRADICTED")
# A rounded reading ("£1,278.8m" for 1,278,771 in a £000 table) is accepted only from a passage
# where a random figure written at the same precision and magnitude would find a
# match at most this often. Chosen on benchmarks/screen_adversarial.py --seed 1;
# the README reports --seed 2.
MAX_ROUNDING_CHANCE = 0.05

LIMITS = ("The screen matches figures, standards and legal acts, not meaning: a negated or "
          "misread sentence whose figures are in the cited passage passes.")

# Units a figure may carry: the shared list (ragloupe.textrules.UNITS), the spelled-out
# words this screen reads as them, durations ("3 days" is "3 day") and "%". A synonym is
# mapped to its unit, so "10 millimetres" and "10 mm" are one quantity.
_UNIT_SYNONYMS = {
    "per cent": "%", "percent": "%", "millimetres": "mm", "millimeters": "mm", "millimetre": "mm",
    "centimetres": "cm", "centimeters": "cm", "kilometres": "km", "kilometers": "km",
    "metres": "m", "meters": "m", "metre": "m", "meter": "m", "tonnes": "t", "tons": "t",
    "tonne": "t", "kilograms": "kg", "litres": "l", "liters": "l", "m²": "m2", "m³": "m3",
    "degrees c": "°c", "° c": "°c", "hours": "h", "hrs": "h", "hr": "h", "seconds": "s",
    "minutes": "min", "days": "day", "years": "year",
}
_READ_UNITS = UNITS | set(_UNIT_SYNONYMS) | {"day", "year", "year(s)", "%"}
_UNIT_RE = re.compile(rf"\s?({one_of(_READ_UNITS)})(?![\w/²³])", re.IGNORECASE)

# "ISO 31000", "BS EN ISO 13849-1", "ISO/IEC 27001", "API RP 752", "CEN/TS 16555": the shared
# bodies (textrules.STANDARD_BODIES), upper case as answers write them, joined by a space or
# a slash, with an optional qualifier.
_BODY = one_of(b.upper() for b in STANDARD_BODIES)
_STANDARD_RE = re.compile(
    rf"\b(?P<body>{_BODY}(?:(?:\s+|/){_BODY})*(?:(?:\s+|/)(?:RP|Std|Standard|Spec|TR|TS))?)"
    r"\s?(?P<number>\d{2,6}(?:[-.]\d+)*)(?::(?P<year>\d{4}))?\b")
_EU_ACT_RE = re.compile(
    r"(?:\b(?P<kind>Directive|Regulation|Decision)\s+(?:\((?:EU|EC|EEC|Euratom)\)\s*)?(?:No\.?\s*)?)?"
    rf"\b(?P<number>{YEAR_PATTERN}/\d{{1,4}}|\d{{1,4}}/{YEAR_PATTERN})"
    r"(?:/(?P<suffix>EU|EC|EEC|Euratom))?\b")
# Citations and page references in the answer are not claims about the documents.
_REFERENCE_RE = re.compile(r"\[[^\]]{0,40}\]|\b(?:pages?|pp?\.)\s*\d+|\brecord\s+[\w.]+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\[(\"'“A-Z0-9£$€*-])|\n+")
_LEADING_CITES = re.compile(r"(?:\s*\[[^\]]{0,40}\])+")
_THOUSANDS_NOTE = re.compile(r"£\s?'?000|\(£000|£000'?s|£k\b", re.IGNORECASE)


@dataclass(frozen=True)
class Checkable:
    """A token of the answer the screen can check."""

    raw: str
    start: int
    end: int
    kind: Literal["quantity", "standard", "eu_act"]
    key: str  # normalised form: '10 mm', 'ISO 31000', '2012/18'
    quantity: Quantity | None = None
    unit: str = ""


@dataclass(frozen=True)
class TokenCheck:
    """One checkable token and what the screen found for it."""

    token: str
    kind: str
    start: int
    end: int
    sentence: int  # 0-based sentence index in the answer
    verdict: Verdict
    cited: tuple[int, ...]  # passage numbers cited for its sentence
    found_in: tuple[int, ...]  # passage numbers holding it
    evidence: str  # a sentence a person can check
    # (passage number, start, end) of the token as written in each passage holding it,
    # so a page can highlight it in the passage text.
    passage_spans: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class Screen:
    verdict: Verdict
    tokens: tuple[TokenCheck, ...]
    n_sentences: int
    n_checkable_sentences: int
    limits: str = LIMITS

    @property
    def checkable_share(self) -> float:
        return round(self.n_checkable_sentences / self.n_sentences, 4) if self.n_sentences else 0.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["checkable_share"] = self.checkable_share
        return data

    def summary(self) -> str:
        lines = [f"groundedness screen: {self.verdict}  (checkable sentences "
                 f"{self.n_checkable_sentences}/{self.n_sentences} = {self.checkable_share:.0%})"]
        lines += [f"  {t.verdict:<16} {t.token}: {t.evidence}" for t in self.tokens]
        if self.verdict == "UNVERIFIABLE":
            lines.append("  no figure, standard or legal act to check: the screen has no opinion")
        return "\n".join(lines)


# ----------------------------------------------------------------------------
# Extraction


def extract_checkables(text: str) -> list[Checkable]:
    """The answer's checkable tokens, left to right."""
    found: list[Checkable] = []
    for match in _STANDARD_RE.finditer(text):
        body = " ".join(match.group("body").upper().split())
        found.append(Checkable(match.group(0), match.start(), match.end(), "standard",
                               f"{_standard_family(body)} {match.group('number')}"))
    for match in _EU_ACT_RE.finditer(text):
        if not (match.group("kind") or match.group("suffix")):
            continue  # "2020/21" is a financial year, not an act
        if _overlaps(match.start(), match.end(), found):
            continue
        found.append(Checkable(match.group(0), match.start(), match.end(), "eu_act",
                               match.group("number")))
    references = [(m.start(), m.end()) for m in _REFERENCE_RE.finditer(text)]
    for q in extract_quantities(text):
        if _overlaps(q.start, q.end, found) or any(s <= q.start < e for s, e in references):
            continue
        unit = _unit_after(text, q.end) if not q.percent else "%"
        if not _is_checkable(q, unit):
            continue
        end = q.end if q.percent or not unit else q.end + len(_UNIT_RE.match(text, q.end).group(0))
        key = f"{q.raw} {unit}".strip() if unit and not q.percent else q.raw
        start = q.start + len(text[q.start:end]) - len(text[q.start:end].lstrip())
        found.append(Checkable(text[start:end], start, end, "quantity", key, q, unit))
    return sorted(found, key=lambda c: c.start)


def _standard_family(body: str) -> str:
    """'BS EN ISO' -> 'ISO', 'API RP' -> 'API': the number is what identifies a standard."""
    words = body.replace("/", " ").split()
    qualifiers = {"RP", "STD", "STANDARD", "SPEC", "TR", "TS"}
    words = [w for w in words if w not in qualifiers]
    return words[-1] if words else body


def _unit_after(text: str, end: int) -> str:
    match = _UNIT_RE.match(text, end)
    if not match:
        return ""
    unit = match.group(1).lower()
    return _UNIT_SYNONYMS.get(unit, unit)


def _is_checkable(q: Quantity, unit: str) -> bool:
    if q.currency or q.percent or q.scale != 1.0 or unit:
        return not (unit in {"year", "day", "h", "s", "min"} and q.value < 10 and "." not in q.raw)
    if is_year(q):
        return False
    return "," in q.raw or "." in q.raw


def _overlaps(start: int, end: int, tokens: Iterable[Checkable]) -> bool:
    return any(t.start < end and start < t.end for t in tokens)


# ----------------------------------------------------------------------------
# Matching a token against one passage


@dataclass(frozen=True)
class _PassageFacts:
    """What the screen needs from one passage, computed once."""

    number: int
    quantities: tuple[Quantity, ...]
    units: tuple[str, ...]  # the unit after each quantity ("" when none)
    standards: dict[str, tuple[str, int, int]]  # key -> (as written, start, end)
    acts: dict[str, tuple[str, int, int]]
    thousands: bool  # the passage has a "£000" column note: bare figures may be thousands


def _facts(number: int, text: str) -> _PassageFacts:
    quantities = tuple(extract_quantities(text))
    units = tuple(_unit_after(text, q.end) if not q.percent else "%" for q in quantities)
    standards: dict[str, tuple[str, int, int]] = {}
    for c in extract_checkables(text):
        if c.kind == "standard":
            standards.setdefault(c.key, (c.raw, c.start, c.end))
    acts: dict[str, tuple[str, int, int]] = {}
    for m in _EU_ACT_RE.finditer(text):
        acts.setdefault(m.group("number"), (m.group(0), m.start(), m.end()))
    return _PassageFacts(number, quantities, units, standards, acts, bool(_THOUSANDS_NOTE.search(text)))


def _contains(facts: _PassageFacts, token: Checkable) -> tuple[str, int, int] | None:
    """How and where the passage writes the token, or None when it does not hold it."""
    if token.kind == "standard":
        return facts.standards.get(token.key)
    if token.kind == "eu_act":
        return facts.acts.get(token.key)
    claim = token.quantity
    assert claim is not None
    candidates = [other for other, unit in zip(facts.quantities, facts.units)
                  if _same_unit(claim, token.unit, other, unit)]
    # Exact readings first, so '£0.769m' is shown as the prose '£0.769m', not a table's 769.
    for matches in (_same_as_written, _same_in_thousands, _rounded_match):
        for other in candidates:
            if matches(claim, other, facts):
                return other.raw, other.start, other.end
    return None


def _same_as_written(claim: Quantity, other: Quantity, facts: _PassageFacts) -> bool:
    """numbers.same_quantity, except that "£13 million" is not any bare 13 of a page:
    a figure without currency or scale stands for an amount only when it is
    distinctive (separators, decimals, three digits or more)."""
    if (claim.currency or claim.scale != 1.0) and not (other.currency or other.scale != 1.0) \
            and not other.distinctive:
        return False
    return same_quantity(claim, other)


def _same_in_thousands(claim: Quantity, other: Quantity, facts: _PassageFacts) -> bool:
    """'£0.769m' against a bare 769 in a table whose header says £000."""
    if not facts.thousands or other.percent or claim.percent or other.scale != 1.0:
        return False
    return _close(claim.scaled, other.value * 1e3, 1e-9)


def _rounded_match(claim: Quantity, other: Quantity, facts: _PassageFacts) -> bool:
    """'£1,278.8m' or '£47m' matches 1,278,771 (£000) or £47.3m at the precision written,
    when the passage is sparse enough that this is unlikely by chance.

    Only a scale word ("m", "million", "bn") says a figure may be rounded; a
    "(£000)" note does not, so "£1,278,773 (£000)" does not match 1,278,771.
    """
    written_scale = claim.scale / 1e3 if "(" in claim.raw else claim.scale
    if written_scale == 1.0 or claim.percent or other.percent:
        return False
    if not _rounds_to(claim, other, facts):
        return False
    return rounding_chance(claim.scaled, _step(claim), facts) <= MAX_ROUNDING_CHANCE


def _rounds_to(claim: Quantity, other: Quantity, facts: _PassageFacts) -> bool:
    return any(abs(r - claim.scaled) <= _step(claim) / 2 for r in _amount_readings(other, facts))


def _step(claim: Quantity) -> float:
    """The amount the claim's last written digit stands for: £1.3m -> £0.1m."""
    return 10 ** -_decimals(claim.raw) * claim.scale


def _amount_readings(q: Quantity, facts: _PassageFacts) -> set[float]:
    """The amounts a passage figure may stand for: as scaled, and in thousands under a £000 note."""
    readings = {q.value * q.scale}
    if facts.thousands and q.scale == 1.0:
        readings.add(q.value * 1e3)
    return readings


def rounding_chance(value: float, step: float, facts: _PassageFacts) -> float:
    """The share of the figures written at ``step`` in ``value``'s decade (for £12.3m:
    £10.0m ... £99.9m) that some amount of the passage rounds to: how likely a
    made-up figure at that precision and magnitude is to match the passage by
    rounding. Measured per passage, because a £000 table matches far more
    than a page of prose."""
    if value <= 0 or step <= 0:
        return 1.0
    low = 10 ** math.floor(math.log10(value))
    high = low * 10
    grid = {round(r / step) for q, unit in zip(facts.quantities, facts.units)
            if not q.percent and not unit for r in _amount_readings(q, facts) if low <= r < high}
    return len(grid) / max(1.0, (high - low) / step)


# ----------------------------------------------------------------------------
# Sentences and the citations that belong to them


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; a citation written after the full stop stays with its sentence."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    merged: list[tuple[int, int]] = []
    for s, e in bounds:
        lead = _LEADING_CITES.match(text, s)
        if merged and lead and lead.end() > s:
            merged[-1] = (merged[-1][0], lead.end())
            s = lead.end()
        if text[s:e].strip(" \t-*•|"):
            merged.append((s, e))
    return [_trim(text, s, e) for s, e in merged]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _sentence_citations(text: str, sentences: list[tuple[int, int]],
                        citations: Sequence[Any]) -> list[tuple[int, ...]]:
    """Passage numbers cited for each sentence, with uncited sentences inheriting (see docstring)."""
    own = [tuple(sorted({c.passage for c in citations if c.passage is not None and s <= c.start < e}))
           for s, e in sentences]
    # A sentence citing only what does not exist ("[7]" of five passages) cited
    # something: it does not borrow its neighbours' citations.
    marked = [any(s <= c.start < e for c in citations) for s, e in sentences]
    paragraph = _paragraph_ids(text, sentences)
    result = []
    for i, cited in enumerate(own):
        if not cited and not marked[i]:
            after = [own[j] for j in range(i + 1, len(own)) if paragraph[j] == paragraph[i] and own[j]]
            before = [own[j] for j in range(i - 1, -1, -1) if paragraph[j] == paragraph[i] and own[j]]
            cited = (after or before or [()])[0]
        result.append(cited)
    return result


def _paragraph_ids(text: str, sentences: list[tuple[int, int]]) -> list[int]:
    ids, current, last_end = [], 0, 0
    for s, _ in sentences:
        if "\n\n" in text[last_end:s]:
            current += 1
        ids.append(current)
        last_end = s
    return ids


# ----------------------------------------------------------------------------
# The screen


def screen(answer_text: str, citations: Sequence[Any], passages: Sequence[Any]) -> Screen:
    """Screen ``answer_text`` against ``passages`` (numbered from 1, as in the prompt).

    ``citations`` are objects with .start, .end and .passage (generate.citations.Citation);
    ``passages`` are texts, or objects with .text or .chunk.text.
    """
    texts = [_passage_text(p) for p in passages]
    facts = [_facts(number, text) for number, text in enumerate(texts, start=1)]
    sentences = split_sentences(answer_text)
    cited_by_sentence = _sentence_citations(answer_text, sentences, citations)
    tokens = extract_checkables(answer_text)
    sentence_of = [next((i for i, (s, e) in enumerate(sentences) if s <= t.start < e), len(sentences) - 1)
                   for t in tokens]
    cited_for = [cited_by_sentence[i] if sentences else () for i in sentence_of]
    found = [{f.number: written for f in facts if (written := _contains(f, t)) is not None} for t in tokens]
    checks: list[TokenCheck] = []
    for i, token in enumerate(tokens):
        operands = [other for j, other in enumerate(tokens)
                    if j != i and other.quantity is not None and sentence_of[j] == sentence_of[i]
                    and any(n in found[j] for n in cited_for[i])]
        checks.append(_check(token, sentence_of[i], cited_for[i], found[i], facts, operands))
    checkable_sentences = set(sentence_of)
    return Screen(worst_verdict(c.verdict for c in checks), tuple(checks), len(sentences),
                  len(checkable_sentences))


def worst_verdict(verdicts: Iterable[str]) -> Verdict:
    """The verdict of an answer or a sentence: its worst token's; UNVERIFIABLE without tokens."""
    given = set(verdicts)
    return next((v for v in _SEVERITY if v in given), "UNVERIFIABLE")


def screen_answer(answer: Any) -> Screen:
    """screen() over a generate.answer.Answer, with the citations the model wrote: one
    picked afterwards by constrained decoding is a guess, not evidence, so it never
    changes a verdict (MISATTRIBUTED stays MISATTRIBUTED)."""
    written = [c for c in answer.citations if not getattr(c, "picked", False)]
    return screen(answer.text, written, answer.passages)


def _check(token: Checkable, sentence: int, cited: tuple[int, ...], found: dict[int, tuple[str, int, int]],
           facts: Sequence[_PassageFacts], operands: Sequence[Checkable]) -> TokenCheck:
    in_cited = [n for n in cited if n in found]

    def make(verdict: Verdict, evidence: str) -> TokenCheck:
        spans = tuple((n, found[n][1], found[n][2]) for n in sorted(found))
        return TokenCheck(token.raw, token.kind, token.start, token.end, sentence, verdict,
                          cited, tuple(sorted(found)), evidence, spans)

    if in_cited:
        n = in_cited[0]
        return make("NOT_CONTRADICTED", f"written '{found[n][0]}' in cited passage [{n}]")
    cited_note = f"cited {_numbers(cited)}" if cited else "no citation"
    if found:
        return make("MISATTRIBUTED", f"in passage {_numbers(found)}, but {cited_note}")
    derived = sentence_derivation(token, operands) or next(
        (d for f in facts if f.number in cited and (d := passage_derivation(token, f))), None)
    if derived:
        return make("DERIVED", derived)
    return make("UNSUPPORTED", f"in none of the {len(facts)} passages ({cited_note})"
                + _rounding_note(token, [f for f in facts if f.number in cited]))


def _rounding_note(token: Checkable, cited: Sequence[_PassageFacts]) -> str:
    """Why a figure that rounds to one of a cited passage's was not accepted."""
    claim = token.quantity
    if claim is None or claim.percent or claim.scale == 1.0 or "(" in claim.raw:
        return ""
    for facts in cited:
        for other, unit in zip(facts.quantities, facts.units):
            if not unit and not other.percent and _rounds_to(claim, other, facts):
                chance = rounding_chance(claim.scaled, _step(claim), facts)
                return (f"; it rounds to '{other.raw}' in passage [{facts.number}], but "
                        f"{chance:.0%} of figures written this precisely would match that passage by chance")
    return ""


def _numbers(numbers: Iterable[int]) -> str:
    return ", ".join(f"[{n}]" for n in sorted(numbers))


def _passage_text(passage: Any) -> str:
    if isinstance(passage, str):
        return passage
    if hasattr(passage, "chunk"):
        return passage.chunk.text
    return passage.text
