"""The shared lists of ragloupe.textrules are what every stage reads: a standards body or
a unit listed there is known to BM25, query analysis and the groundedness screen alike."""

from __future__ import annotations

import pytest

from ragloupe.generate.groundedness import extract_checkables
from ragloupe.index import lexical
from ragloupe.retrieve.query_analysis import analyze
from ragloupe.textrules import STANDARD_BODIES, UNITS

# The screen reads a few spellings as the unit it compares by (NFKC does the same for BM25).
SCREEN_SPELLING = {"tonnes": "t", "m²": "m2", "m³": "m3"}


@pytest.mark.parametrize("body", STANDARD_BODIES)
def test_every_stage_reads_a_standard_of_each_shared_body(body):
    written = f"{body.upper()} 1234"
    assert f"{body} 1234" in lexical.tokenize(f"Tanks follow {written} here")
    assert [c.code for c in analyze(f"What does {written} require?").codes] == [f"{body} 1234"]
    standards = [c.key for c in extract_checkables(f"Tanks follow {written} [1].") if c.kind == "standard"]
    assert standards == [written]


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_bm25_and_the_screen_read_each_shared_unit_after_a_number(unit):
    assert f"12.5 {lexical.normalise(unit)}" in lexical.tokenize(f"a limit of 12.5 {unit} here")
    units = [c.unit for c in extract_checkables(f"The limit is 12.5 {unit} [1].") if c.kind == "quantity"]
    assert units == [SCREEN_SPELLING.get(unit, unit)]


def test_a_unit_with_a_slash_is_read_whole_not_as_its_prefix():
    assert lexical.tokenize("winds of 3.5 m/s") == ["winds", "3.5 m/s"]
    assert [c.unit for c in extract_checkables("Winds reached 3.5 m/s [1].")] == ["m/s"]
