"""Word lists that several stages use, defined once so their differences are deliberate and visible.

Every stage drops the same function words (FUNCTION_WORDS). Each then adds
the few its job needs, and the additions are spelled out here rather than
in three separate lists:

- BM25_STOPWORDS (index.lexical, the reranker): also question words and
  auxiliaries, which carry no retrieval signal (BM25's idf discounts the rest);
- ANSWER_STOPWORDS (numbers: "is this answer in that text?"): also "no",
  "not", "yes" and a few connectives, so an answer is matched on its content;
- HIGHLIGHT_STOPWORDS (the app's query-term highlighting): also question
  words, so "what" is never marked in a passage.

The same goes for two lists of technical words, read after normalising
(lower case): the bodies whose standards are cited "<BODY> <number>"
(STANDARD_BODIES: the BM25 tokenizer, query analysis and the groundedness
screen) and the units written after a number (UNITS: the BM25 tokenizer and
the groundedness screen, which adds its spelled-out synonyms and durations).

Changing a list changes what BM25 indexes or what matches: measure it
(benchmarks/, and `ragloupe eval` on the gold sets) before and after.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

FUNCTION_WORDS = frozenset("""
a an and are as at be by for from has have in is it its of on or that the their there this
to was were which with
""".split())

QUESTION_WORDS = frozenset("did do does had how what when where who why will".split())

BM25_STOPWORDS = FUNCTION_WORDS | QUESTION_WORDS | frozenset("""
about been being can could during into over than them these they those whom would
""".split())

ANSWER_STOPWORDS = FUNCTION_WORDS | frozenset("into over than within no not yes our we per".split())

HIGHLIGHT_STOPWORDS = FUNCTION_WORDS | QUESTION_WORDS | frozenset({"within"})


# Bodies whose standards are cited "<BODY> <number>": "ISO 31000", "EN 1473", "API 650".
# Joint ones are these joined by a space or a slash: "EN ISO 13849-1", "BS EN 1473",
# "ISO/IEC 27001". Each is here because process-safety and engineering texts cite it.
STANDARD_BODIES = (
    "iso",      # International Organization for Standardization: ISO 31000 (risk management)
    "iec",      # International Electrotechnical Commission: IEC 61511 (functional safety)
    "en",       # European Norm: EN 1473 (LNG installations); also in "BS EN", "EN ISO"
    "bs",       # British Standards: BS 5908, BS EN ...
    "din",      # German standards: DIN EN ...
    "api",      # American Petroleum Institute: API 650 (storage tanks), API RP 752
    "astm",     # ASTM International: test methods
    "nfpa",     # National Fire Protection Association: NFPA 30 (flammable liquids)
    "ansi",     # American National Standards Institute: ANSI/API ...
    "asme",     # American Society of Mechanical Engineers: pressure vessels and piping
    "ieee",     # electrical and electronic standards
    "cen",      # European Committee for Standardization: CEN/TS technical specifications
    "cenelec",  # its electrotechnical counterpart
    "norsok",   # Norwegian offshore standards
)
# Left out: bodies whose name is a common word or unit ("UL" is also a word piece, "SI"
# a statutory instrument's prefix), and guidance series such as HSE's HSG, whose codes
# are not standards a question names as "<BODY> <number>".

# Units written after a number ("10 mm", "3.5 m/s", "45 ppm"), as they are written after
# lower-casing. A figure followed by one of these is one quantity: BM25 keeps "10 mm"
# as one token and the groundedness screen only matches "10 mm" with "10 mm", never
# with "10 m" or a bare "10".
UNITS = frozenset({
    # length, area, volume (m2/m3 also as m² and m³, before NFKC makes them m2/m3)
    "mm", "cm", "m", "km", "m2", "m3", "m²", "m³",
    # mass
    "mg", "g", "kg", "t", "tonnes",
    # pressure
    "pa", "kpa", "mpa", "mbar", "bar", "barg", "psi",
    # temperature
    "°c", "°f",
    # power and energy
    "kw", "mw", "gw", "kwh", "mwh", "gwh",
    # volume of liquid
    "ml", "l",
    # time and frequency
    "ms", "s", "min", "h", "hz", "khz",
    # electrical, concentration, sound
    "v", "kv", "ppm", "ppb", "db",
    # rates
    "m/s", "m/s2", "km/h", "mm/h", "mm/day", "g/s", "kg/s", "l/s", "m3/h", "m3/s",
    # staff: whole-time equivalents, as NHS reports count staff ("48.7 WTE")
    "wte",
})
# Left out: single letters that are common English words ("a" for amperes, "k"), which
# would glue a number to the next word ("10 a day"); "%" (a figure's sign, read by
# numbers.extract_quantities); and spelled-out words ("metres", "days"), which the
# groundedness screen maps to these as synonyms and BM25 keeps as words.


def one_of(words: Iterable[str]) -> str:
    """A regex group matching any of ``words``, longest first, special characters escaped.

    Longest first so that a unit with a slash ("m/s") is tried before its prefix ("m").
    """
    return "(?:" + "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w))) + ")"
