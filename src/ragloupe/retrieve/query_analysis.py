"""Query analysis: the fiscal periods, amounts and codes a question names, with their variants.

A question says "2020/21"; the report it wants writes "2020-21", "2020/2021",
"year ended 31 March 2021", or only "2021" (the gold sets' ``year_note``:
"2021 refers to financial year 2020-2021"). A question says "£1.2m"; the
table writes "1,200" under a "£000" header. A question says "ISO31000"; the
guidance writes "ISO 31000". This module reads what a question names, in
one canonical form each, and lists the written variants, so that:

- BM25 can be asked for the variants the index tokenizer produces (``expansion.bm25_expansion``);
- each candidate chunk gets match features (``match_features``);
- a document's own fiscal period (``document_period``, from its text) can be
  compared with the question's (``period_match``), as a person picks a year's report.

Conventions, in one place:

- A fiscal year runs April to March (UK public bodies); ``analyze`` takes
  ``fy_start_month`` for other calendars. A date or a month names the fiscal
  year it falls in: "March 2022" and "31 March 2022" are in 2021/22.
- "The year ended <date>" is the twelve months ending then (31 March 2021: 2020/21).
- A bare year counts only after a word that makes it the time asked about
  ("in 2021", "during 2021", "for 2021", "FY2021") and names the fiscal year
  ending in it, as the gold sets' ``year_note`` says. "£2021", "2021 staff",
  "ISO 2021" and boundaries ("from 2012", "since 2019") name no period.
- A question naming two periods ("between 2020/21 and 2021/22") targets the
  latest: a report shows the prior year beside its own.

Everything here is pure: text in, dataclasses out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ragloupe.index.lexical import normalise, tokenize
from ragloupe.models import Chunk
from ragloupe.numbers import YEAR_PATTERN, Quantity, extract_quantities, key_quantities, same_quantity
from ragloupe.textrules import STANDARD_BODIES, one_of

# The features match_features() returns, always all of them, in this order.
FEATURES = (
    "query_periods",      # how many fiscal periods the question names
    "query_amounts",      # how many amounts
    "query_codes",        # how many standards / directive codes
    "period_in_chunk",    # 1 when the chunk's text names the question's target period (any variant)
    "doc_period_match",   # 1: the chunk's document is of the target period; 0.5: of another period
                          # the question names; 0 otherwise or when the document's period is unknown
    "amount_match",       # share of the question's amounts found in the chunk (any notation)
    "code_match",         # share of the question's codes found in the chunk (any spelling)
)

_MONTHS = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for name in names}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"

# "2020/21", "2020-21", "2020 - 2021", "FY2020/21", "financial year 2020-21"; also a range
# "2020-2022". Not "2012/18/EU" (a directive: a third part follows) nor "2020-21-05".
_PAIR_RE = re.compile(
    rf"(?<![\w£$€.,/-])(?:fy\s?)?(?P<y1>{YEAR_PATTERN})\s?[/-]\s?(?P<y2>{YEAR_PATTERN}|\d{{2}})(?![\w%]|[/-]\d|\.\d)")
# "31 March 2021", "March 2022", "31st march 2021", optionally after "year ended/ending".
# The leading lookahead holds every first character a match can have ("year", "period",
# "twelve", "12", a day, a month): the scanner skips any other position after one test instead
# of trying each alternative there (a third of this scan, the dearest of a chunk's periods).
_DATE_RE = re.compile(
    r"(?=[yptjfmasond\d])"
    rf"(?P<ended>(?:year|period|twelve months|12 months) end(?:ed|ing)?\s(?:on\s)?)?"
    rf"(?:(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s)?{_MONTH}\s(?P<year>{YEAR_PATTERN})(?!\d)")
# "FY2021", "FY 21", "FY21".
_FY_RE = re.compile(rf"(?<![\w£$€])fy\s?'?(?P<year>{YEAR_PATTERN}|\d{{2}})(?![\w/%.]|-\d)")
# A bare year after a word that makes it the time asked about. The year must stand
# alone: not "in 2021/22" (that is a pair) nor "in 2021.5". Words naming a boundary
# ("from 2012", "since 2019", "by 2030") are left out: the question is not about that year.
_BARE_RE = re.compile(
    r"(?<![\w£$€])(?:in|during|for|of|throughout|over|within|year|calendar year|"
    r"financial year|fiscal year|end of)\s"
    rf"(?P<year>{YEAR_PATTERN})(?![\w%£$€]|[/-]\d|[.,]\d)")

# A standard written "<BODY> <number>", the bodies the index tokenizer knows (textrules), with
# the number glued, spaced or hyphenated: "ISO 31000", "ISO31000", "ISO-31000", "EN ISO 13849-1".
_BODY = one_of(STANDARD_BODIES)
_STANDARD_RE = re.compile(
    rf"(?<![\w])(?P<body>{_BODY}(?:[ /]{_BODY})*)[ -]?(?P<number>\d+(?:-\d+)*)(?![\w])")
# EU acts: "2012/18/EU", "Directive 2012/18/EU", "96/82/EC".
_ACT_RE = re.compile(r"(?<![\w/])(?P<code>\d{2,4}/\d{1,4}/(?:eu|ec|eec|euratom))(?![\w/])")
# Names people use for an act instead of its number.
_ACT_ALIASES = {"seveso iii": "2012/18/eu", "seveso 3": "2012/18/eu",
                "seveso ii": "96/82/ec", "seveso 2": "96/82/ec"}
_ALIAS_RE = re.compile(r"(?<![\w])(?P<alias>seveso[ -](?:iii|ii|3|2))(?![\w])")


@dataclass(frozen=True, order=True)
class Period:
    """A twelve-month period, named by the years it starts and ends in.

    A fiscal year April 2020 - March 2021 is (2020, 2021); a calendar year
    is (2021, 2021).
    """

    start: int
    end: int

    @property
    def label(self) -> str:
        """'2020/21' for a fiscal year, '2021' for a calendar year."""
        return str(self.end) if self.start == self.end else f"{self.start}/{self.end % 100:02d}"

    def variants(self) -> tuple[str, ...]:
        """How reports write this period, as the index tokenizer sees them."""
        if self.start == self.end:
            return (str(self.end),)
        short = f"{self.end % 100:02d}"
        return (f"{self.start}/{short}", f"{self.start}-{short}",
                f"{self.start}/{self.end}", f"{self.start}-{self.end}")


@dataclass(frozen=True)
class PeriodMention:
    period: Period
    raw: str  # as the question wrote it
    kind: str  # "pair" (2020/21), "date" (31 March 2021), "fy" (FY21), "year" (in 2021), "range"
    start: int  # span in the analysed text
    end: int


@dataclass(frozen=True)
class CodeMention:
    code: str  # canonical: "iso 31000", "en iso 13849-1", "2012/18/eu"
    raw: str
    start: int
    end: int

    def variants(self) -> tuple[str, ...]:
        """Spellings of the code in running text: spaced, glued and hyphenated numbers."""
        match = re.fullmatch(r"(?P<body>[a-z /]+?) (?P<number>\d+(?:-\d+)*)", self.code)
        if not match:
            return (self.code,)
        body, number = match.group("body"), match.group("number")
        return (f"{body} {number}", f"{body}{number}", f"{body}-{number}")


@dataclass(frozen=True)
class QueryAnalysis:
    """What a question names: periods, amounts and codes, each in canonical form."""

    query: str
    periods: tuple[PeriodMention, ...] = ()
    amounts: tuple[Quantity, ...] = ()
    codes: tuple[CodeMention, ...] = ()
    fy_start_month: int = 4  # the month fiscal years start in, as the question was read

    @property
    def target_period(self) -> Period | None:
        """The period the question is about: the latest it names (see the module docstring)."""
        return max((m.period for m in self.periods), default=None)

    @property
    def named_periods(self) -> frozenset[Period]:
        return frozenset(m.period for m in self.periods)

    @property
    def empty(self) -> bool:
        return not (self.periods or self.amounts or self.codes)

    def summary(self) -> dict:
        """A JSON-ready view for rankings and diagnostics."""
        target = self.target_period
        return {
            "periods": [{"period": m.period.label, "raw": m.raw, "kind": m.kind} for m in self.periods],
            "target_period": target.label if target else None,
            "amounts": [{"raw": q.raw, "value": q.scaled, "percent": q.percent} for q in self.amounts],
            "codes": [{"code": c.code, "raw": c.raw} for c in self.codes],
        }


@dataclass(frozen=True)
class DocumentPeriod:
    """The fiscal period a document reports on, learned from its own text."""

    doc_id: str
    period: Period | None
    evidence: str  # what decided it, for a person: "title page: 'YEAR ENDED 31 MARCH 2021'"
    scores: dict[str, float] = field(default_factory=dict, compare=False)  # label -> votes


# --- reading a question ---------------------------------------------------------

def analyze(query: str, fy_start_month: int = 4) -> QueryAnalysis:
    """The periods, amounts and codes ``query`` names, left to right, without repeats."""
    text = normalise(query)
    codes = find_codes(text)
    taken = [(c.start, c.end) for c in codes]
    periods = find_periods(text, fy_start_month, taken)
    taken += [(p.start, p.end) for p in periods]
    amounts: list[Quantity] = []
    for quantity in key_quantities(text):
        if not quantity.distinctive or _overlaps(quantity.start, quantity.end, taken):
            continue
        amounts.append(quantity)
    return QueryAnalysis(query=query, periods=tuple(periods), amounts=tuple(amounts),
                         codes=tuple(codes), fy_start_month=int(fy_start_month))


def find_periods(text: str, fy_start_month: int = 4,
                 taken: Sequence[tuple[int, int]] = (), bare_years: bool = True) -> list[PeriodMention]:
    """Every period named in ``text`` (already normalised), in order of appearance.

    Patterns are tried from the most to the least specific; a match that
    overlaps an earlier one (or a span in ``taken``, e.g. a code) is skipped,
    so "in 2020/21" is one pair, not a pair and a bare year. ``bare_years``
    False leaves the bare years out (tried last, they never hide another kind).
    """
    spans = list(taken)
    found: list[PeriodMention] = []

    def add(start: int, end: int, kind: str, periods: Iterable[Period]) -> None:
        if _overlaps(start, end, spans):
            return
        spans.append((start, end))
        for period in periods:
            found.append(PeriodMention(period, text[start:end], kind, start, end))

    for match in _PAIR_RE.finditer(text):
        y1, y2 = int(match.group("y1")), match.group("y2")
        end_year = int(y2) if len(y2) == 4 else (y1 // 100) * 100 + int(y2)
        if len(y2) == 2 and end_year < y1:  # "1999/00"
            end_year += 100
        if end_year == y1 + 1:
            add(match.start(), match.end(), "pair", [Period(y1, end_year)])
        elif y1 + 1 < end_year <= y1 + 10 and len(y2) == 4:
            # "across 2020-2022": the fiscal years ending within the range.
            add(match.start(), match.end(), "range",
                [Period(year - 1, year) for year in range(y1 + 1, end_year + 1)])
    for match in _DATE_RE.finditer(text):
        month, year = _MONTHS[match.group("month")], int(match.group("year"))
        if match.group("ended"):
            period = Period(year, year) if month == 12 else Period(year - 1, year)
        else:
            period = fiscal_year_of(year, month, fy_start_month)
        add(match.start("month") if match.group("day") is None and not match.group("ended")
            else match.start(), match.end(), "date", [period])
    for match in _FY_RE.finditer(text) if "fy" in text else ():
        year = match.group("year")
        end_year = int(year) if len(year) == 4 else 2000 + int(year)
        add(match.start(), match.end(), "fy", [Period(end_year - 1, end_year)])
    for match in _BARE_RE.finditer(text) if bare_years else ():
        year = int(match.group("year"))
        add(match.start("year"), match.end(), "year", [Period(year - 1, year)])
    found.sort(key=lambda m: (m.start, m.period))
    return found


def fiscal_year_of(year: int, month: int, fy_start_month: int = 4) -> Period:
    """The fiscal year a month falls in: March 2022 -> 2021/22 when years start in April."""
    if fy_start_month == 1:
        return Period(year, year)
    return Period(year, year + 1) if month >= fy_start_month else Period(year - 1, year)


def find_codes(text: str) -> list[CodeMention]:
    """Standards ("iso 31000") and EU acts ("2012/18/eu", "Seveso III") in normalised text."""
    found: list[CodeMention] = []
    for match in _STANDARD_RE.finditer(text):
        body = re.sub(r"\s+", " ", match.group("body"))
        found.append(CodeMention(f"{body} {match.group('number')}", match.group(), match.start(), match.end()))
    for match in _ACT_RE.finditer(text):
        found.append(CodeMention(match.group("code"), match.group(), match.start(), match.end()))
    for match in _ALIAS_RE.finditer(text):
        alias = match.group("alias").replace("-", " ")
        found.append(CodeMention(_ACT_ALIASES[alias], match.group(), match.start(), match.end()))
    unique: dict[str, CodeMention] = {}
    for mention in sorted(found, key=lambda c: c.start):
        unique.setdefault(mention.code, mention)
    return list(unique.values())


def _overlaps(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(start < b and a < end for a, b in spans)


# --- variants for the lexical engine ---------------------------------------------

# --- documents and chunks ---------------------------------------------------------

# How much each kind of evidence counts towards a document's period.
_TITLE_VOTES = 10.0  # a period on the document's first page (the title page)
_NAME_VOTES = 6.0  # a period in the document's name ("Grampian-2020-2021", "report_2020-21")
_TITLE_CHARS = 600  # how much of the first page counts as the title


def document_period(doc_id: str, chunks: Sequence[Chunk], fy_start_month: int = 4) -> DocumentPeriod:
    """The period a document reports on, from its title page, its name and its text.

    Votes: a period named on the title page counts most, then one in the
    document's name, then every mention in the text (one vote each, "year
    ended" dates three). Annual reports print the prior year beside their
    own, so the two lead the text count almost equally; among the periods
    within 80% of the top count the latest wins. A document that names no
    period (guidance, records) gets None.
    """
    ordered = sorted(chunks, key=lambda c: (c.page, c.position))
    votes: dict[Period, float] = {}
    evidence: dict[Period, str] = {}
    if ordered:
        first_page = ordered[0].page
        title = " ".join(c.text for c in ordered if c.page == first_page)[:_TITLE_CHARS]
        for mention in find_periods(normalise(title), fy_start_month):
            if mention.kind in ("pair", "date", "fy"):
                votes[mention.period] = votes.get(mention.period, 0.0) + _TITLE_VOTES
                evidence.setdefault(mention.period, f"title page: {_quote(title, mention)!r}")
    # "Grampian-2020-2021" -> "Grampian 2020-2021": the hyphen after a word is not the period's.
    name = re.sub(r"[_.]|(?<=[^\W\d])-", " ", doc_id)
    for mention in find_periods(normalise(name), fy_start_month):
        if mention.kind == "pair":
            votes[mention.period] = votes.get(mention.period, 0.0) + _NAME_VOTES
            evidence.setdefault(mention.period, f"document name {doc_id!r}")
    counts: dict[Period, float] = {}
    for chunk in ordered:
        for mention in find_periods(normalise(chunk.text), fy_start_month):
            if mention.kind in ("pair", "date"):
                counts[mention.period] = counts.get(mention.period, 0.0) + (
                    3.0 if mention.raw.startswith(("year end", "period end")) else 1.0)
    if counts:
        top = max(counts.values())
        leading = [p for p, n in counts.items() if n >= 0.8 * top]
        latest = max(leading)
        votes[latest] = votes.get(latest, 0.0) + _NAME_VOTES / 2
        evidence.setdefault(latest, f"most named in the text ({counts[latest]:.0f} mentions)")
    if not votes:
        return DocumentPeriod(doc_id, None, "names no period")
    best = max(votes, key=lambda p: (votes[p], p))
    return DocumentPeriod(doc_id, best, evidence[best],
                          {p.label: round(v, 1) for p, v in sorted(votes.items())})


def _quote(text: str, mention: PeriodMention, around: int = 40) -> str:
    """The words around a mention (whole words only), to show why a period was chosen."""
    start, end = max(0, mention.start - around), min(len(text), mention.end + around)
    words = normalise(text)[start:end].split()
    if start > 0 and len(words) > 1:
        words = words[1:]
    return " ".join(words)


def period_match(analysis: QueryAnalysis, doc_period: Period | None) -> float:
    """1.0 when the document is of the question's target period, 0.5 when of another period
    the question names, 0.0 otherwise (and when either side names none)."""
    target = analysis.target_period
    if target is None or doc_period is None:
        return 0.0
    if doc_period == target:
        return 1.0
    return 0.5 if doc_period in analysis.named_periods else 0.0


# Every period pattern needs a year, or "fy" before two digits: text with neither names none.
_MAY_NAME_PERIOD = re.compile(rf"{YEAR_PATTERN}|fy")


def periods_named_in(text: str, fy_start_month: int = 4) -> frozenset:
    """The fiscal periods a chunk's text names (bare years apart)."""
    text = normalise(text)
    if not _MAY_NAME_PERIOD.search(text):
        return frozenset()
    return frozenset(m.period for m in find_periods(text, fy_start_month, bare_years=False))


def match_features(analysis: QueryAnalysis, chunk: Chunk, doc_period: Period | None = None,
                   fy_start_month: int | None = None, chunk_periods: frozenset | None = None) -> dict[str, float]:
    """Per-candidate features, every name in FEATURES, each a float (0.0 when not applicable).

    ``doc_period``: the chunk's document's period, when known. The chunk's periods
    are read with the question's fiscal year (``fy_start_month`` overrides it);
    ``chunk_periods`` is what periods_named_in() said of the chunk's text under that
    month, when the caller keeps it. Cheap: figures are read only when the question
    names an amount.
    """
    month = analysis.fy_start_month if fy_start_month is None else fy_start_month
    target = analysis.target_period
    period_in_chunk = 0.0
    if target is not None:
        named = chunk_periods if chunk_periods is not None else periods_named_in(chunk.text, month)
        period_in_chunk = 1.0 if target in named else 0.0
    text = normalise(chunk.text) if analysis.amounts or analysis.codes else ""
    amount_share = 0.0
    if analysis.amounts:
        figures = extract_quantities(text)
        found = sum(1 for q in analysis.amounts if any(same_quantity(q, f) for f in figures))
        amount_share = found / len(analysis.amounts)
    code_share = 0.0
    if analysis.codes:
        chunk_codes = {c.code for c in find_codes(text)}
        code_share = sum(1 for c in analysis.codes if c.code in chunk_codes) / len(analysis.codes)
    return {
        "query_periods": float(len(analysis.named_periods)),
        "query_amounts": float(len(analysis.amounts)),
        "query_codes": float(len(analysis.codes)),
        "period_in_chunk": period_in_chunk,
        "doc_period_match": period_match(analysis, doc_period),
        "amount_match": amount_share,
        "code_match": code_share,
    }


def period_documents(analysis: QueryAnalysis, periods: dict[str, DocumentPeriod]) -> list[str]:
    """The documents whose own period is one the question names, sorted; [] when none is.

    This is the choice a person makes before reading: the 2020/21 question
    goes to the 2020/21 report. With two periods named, both years'
    documents are kept (the boost then prefers the target's). When no
    document is of a named period, nothing is chosen and the search covers
    every document.
    """
    named = analysis.named_periods
    return sorted(doc_id for doc_id, found in periods.items() if found.period in named)


def prefer_period(analysis: QueryAnalysis, doc_periods: Sequence[Period | None],
                  scores: Sequence[float], boost: float) -> tuple[list[float], list[float]]:
    """New scores that prefer candidates whose document is of the question's period.

    Each score is min-max normalised over the candidates to [0, 1] (so the
    boost means the same for RRF, min-max or cosine scores), then ``boost``
    times period_match() is added. Returns (new scores, matches). When the
    question names no period, or every candidate matches alike (none does,
    or all are of one document), the scores come back unchanged: there is
    nothing to prefer.
    """
    matches = [period_match(analysis, period) for period in doc_periods]
    if boost <= 0 or len(set(matches)) <= 1:
        return list(scores), matches
    low, high = min(scores), max(scores)
    span = high - low
    new = [((s - low) / span if span > 0 else 1.0) + boost * m for s, m in zip(scores, matches)]
    return new, matches


def describe(found: dict) -> str:
    """One line saying what the analysis read and did, from Ranking.query_analysis ('' when it did not run).

    E.g. "period 2020/21 (written '2020/21'); searched only Grampian-2020-2021,
    the report(s) of that period; BM25 also asked for 2020/2021".
    """
    if not found:
        return ""
    parts = []
    periods = found.get("periods") or []
    if periods:
        written = ", ".join(dict.fromkeys(repr(p["raw"]) for p in periods))
        parts.append(f"period {found.get('target_period')} (written {written})")
    else:
        parts.append("no period named")
    if found.get("amounts"):
        parts.append("amounts " + ", ".join(a["raw"] for a in found["amounts"]))
    if found.get("codes"):
        parts.append("codes " + ", ".join(c["code"] for c in found["codes"]))
    if found.get("period_scope"):
        parts.append(f"searched only {', '.join(found['period_scope'])}, the report(s) of that period")
    if found.get("bm25_expansion"):
        parts.append("BM25 also asked for " + ", ".join(found["bm25_expansion"]))
    return "; ".join(parts)
