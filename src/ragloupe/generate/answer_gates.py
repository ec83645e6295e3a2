"""Gates before generation: the context is checked before an LLM is asked anything.

With Settings.answer_gates on, answer() generates only from a context that
passes both gates; otherwise no LLM call is spent and the Answer says which
gate failed, why, and which passages it saw.

- ``citations``: every passage must be citable, i.e. map back to a unit the
  index manifest holds (a document indexed completely, a page or record of
  it). A passage that maps nowhere (a document deleted since, a store and
  manifest that disagree, a chunk with no page) could be cited but never
  opened, so an answer from it could not be checked.
- ``figures``: a figure stated in two passages of the same source must agree.
  A figure is an amount that says what it is (a currency, a percent, a scale
  or thousands separators; never a year) with a label of at least
  MIN_LABEL_WORDS words: in prose the last LABEL_WORDS content words before it
  in its sentence, in a table chunk the row's first cell and the column's
  header. Two passages of one scope giving one label two values that cannot be
  the same amount (numbers.same_quantity) but are within MAX_RATIO of each
  other are inconsistent: the model would have to pick one, and nothing says
  which. Labels are a heuristic: benchmarks/answer_gates.py measures how often
  the gate fires on the shipped gold questions' real contexts.
  The scope is the document's own fiscal period when search found one (two
  reports of one year must agree), else the document: different years'
  reports legitimately give one line two values.

Everything here is pure: the manifest's units are handed in.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Sequence

from ragloupe.models import Chunk
from ragloupe.numbers import Quantity, content_tokens, extract_quantities, is_year, same_quantity
from ragloupe.table_chunks import parse_markdown_table

GATES = ("citations", "figures")
LABEL_WORDS = 4  # content words before a figure that name it
MIN_LABEL_WORDS = 3  # shorter labels ("total", "revenue limit") name too many figures to compare them
MAX_RATIO = 10.0  # two values further apart than this are two figures, not one stated twice

_SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+|\n+")


@dataclass(frozen=True)
class Gate:
    """One gate's verdict, with one line per problem found."""

    name: str
    passed: bool
    reason: str
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateReport:
    gates: tuple[Gate, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> tuple[Gate, ...]:
        return tuple(g for g in self.gates if not g.passed)

    def summary(self) -> str:
        if self.passed:
            return "gates passed: " + ", ".join(g.name for g in self.gates)
        return "; ".join(f"gate {g.name} failed: {g.reason}" for g in self.failed)

    def as_dict(self) -> dict:
        return {"passed": self.passed, "failed": [g.name for g in self.failed],
                "gates": [asdict(g) for g in self.gates]}


@dataclass(frozen=True)
class Statement:
    """A figure as one passage states it."""

    passage: int
    label: tuple[str, ...]
    quantity: Quantity


def check_gates(chunks: Sequence[Chunk], indexed_units: Iterable[str],
                scopes: Mapping[str, str] | None = None) -> GateReport:
    """Both gates over the context ``chunks`` (passage n is chunks[n - 1]).

    ``indexed_units`` are the units the index manifest holds; ``scopes`` maps a
    chunk id to the scope its figures are compared in (default: its document).
    """
    return GateReport((citation_gate(chunks, set(indexed_units)), figure_gate(chunks, scopes or {})))


def citation_gate(chunks: Sequence[Chunk], indexed_units: set[str]) -> Gate:
    problems = []
    for number, chunk in enumerate(chunks, start=1):
        if not chunk.doc_id or (chunk.page < 1 and not chunk.record_id):
            problems.append(f"[{number}] names no document page or record to cite")
        elif chunk.unit not in indexed_units:
            problems.append(f"[{number}] {chunk.unit} is not a unit the index manifest holds "
                            "(re-index to bring store and manifest together)")
    if problems:
        return Gate("citations", False, f"{len(problems)} of {len(chunks)} passages cannot be mapped "
                                        "to an indexed page or record", tuple(problems))
    return Gate("citations", True, f"all {len(chunks)} passages map to indexed units")


def figure_gate(chunks: Sequence[Chunk], scopes: Mapping[str, str]) -> Gate:
    by_key: dict[tuple[str, tuple[str, ...]], list[Statement]] = {}
    for number, chunk in enumerate(chunks, start=1):
        scope = scopes.get(chunk.chunk_id) or chunk.doc_id
        for statement in statements(chunk, number):
            by_key.setdefault((scope, statement.label), []).append(statement)
    problems = []
    for (scope, label), found in sorted(by_key.items()):
        conflict = _conflict(found)
        if conflict:
            a, b = conflict
            problems.append(f"'{' '.join(label)}' ({scope}) is {a.quantity.raw} in [{a.passage}] "
                            f"but {b.quantity.raw} in [{b.passage}]")
    if problems:
        return Gate("figures", False, f"{len(problems)} figure(s) stated with different values "
                                      "in different passages", tuple(problems))
    compared = sum(1 for found in by_key.values() if len({s.passage for s in found}) > 1)
    return Gate("figures", True, f"{compared} figure(s) stated in more than one passage, all agree")


def _conflict(found: list[Statement]) -> tuple[Statement, Statement] | None:
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            if a.passage != b.passage and a.quantity.percent == b.quantity.percent \
                    and not same_quantity(a.quantity, b.quantity) and _close(a.quantity, b.quantity):
                return a, b
    return None


def statements(chunk: Chunk, number: int) -> list[Statement]:
    """The labelled figures of one chunk (see the module docstring)."""
    if chunk.kind == "table":
        return _table_statements(chunk.text, number)
    found = []
    for sentence in _SENTENCE_END.split(chunk.text):
        previous_end = 0
        for quantity in extract_quantities(sentence):
            if is_year(quantity):  # a year is part of the next figure's label, not a figure
                continue
            label = label_tokens(sentence[previous_end:quantity.start])[-LABEL_WORDS:]
            previous_end = quantity.end
            if _comparable(quantity) and len(label) >= MIN_LABEL_WORDS:
                found.append(Statement(number, label, quantity))
    return found


def _table_statements(text: str, number: int) -> list[Statement]:
    header, rows = parse_markdown_table(text)
    found = []
    for row in rows:
        if not row:
            continue
        row_label = label_tokens(row[0])
        for column, cell in enumerate(row[1:], start=1):
            column_label = label_tokens(header[column]) if column < len(header) else ()
            label = row_label + column_label
            for quantity in extract_quantities(cell):
                if _comparable(quantity) and len(row_label) >= 1 and len(label) >= MIN_LABEL_WORDS:
                    found.append(Statement(number, label, quantity))
    return found


def label_tokens(text: str) -> tuple[str, ...]:
    """Content words of ``text`` and the years it names, in order: "staff costs 2020/21" and
    "staff costs 2021/22" are two figures, not one stated twice."""
    words = [(m.start(), token) for m, token in _words(text)]
    years = [(q.start, q.raw) for q in extract_quantities(text) if is_year(q)]
    return tuple(token for _, token in sorted(words + years))


def _words(text: str):
    for match in re.finditer(r"[^\W\d_][\w'-]*", text):
        for token in content_tokens(match.group(0)):
            yield match, token


def _comparable(quantity: Quantity) -> bool:
    """An amount that says what it is: a currency, a percent, a scale or thousands separators.
    A bare "7.1" or "769" may be a section number or a cell of some other column."""
    marked = quantity.currency or quantity.percent or quantity.scale != 1.0 or "," in quantity.raw
    return bool(marked) and not is_year(quantity)


def _close(a: Quantity, b: Quantity) -> bool:
    """Within MAX_RATIO of each other under some reading of each (a restated figure is off by a
    little; a limit and its underspend, by orders of magnitude)."""
    pairs = [(x, y) for x in a.candidates for y in b.candidates if x > 0 and y > 0]
    return any(max(x, y) / min(x, y) <= MAX_RATIO for x, y in pairs)
