"""The BM25 tokenizer keeps technical terms whole; both back ends score alike; filters come first."""

from __future__ import annotations

import json

import pytest

from ragloupe.config import PROJECT_ROOT
from ragloupe.index import lexical
from ragloupe.models import Chunk


@pytest.mark.parametrize("text, token", [
    ("The total was £1,559,285 in the year", "£1,559,285"),
    ("a ratio of 1.5 overall", "1.5"),
    ("based on ISO 31000 guidance", "iso 31000"),
    ("LNG installations follow EN 1473", "en 1473"),
    ("the Seveso III Directive 2012/18/EU", "2012/18/eu"),
    ("a DN50 pipe", "dn50"),
    ("query Q_2025 of the set", "q_2025"),
    ("a wall of 10 mm thickness", "10 mm"),
    ("performance was 90% in March", "90%"),
])
def test_tokenizer_keeps_technical_term_as_one_token(text, token):
    assert token in lexical.tokenize(text)


def test_tokenizer_spells_units_and_percent_one_way():
    assert lexical.tokenize("10mm and 10 mm") == ["10 mm", "10 mm"]
    assert lexical.tokenize("90 % or 90%") == ["90%", "90%"]


def test_tokenizer_lowercases_and_drops_stopwords():
    assert lexical.tokenize("What is THE Revenue Limit of NHS Grampian's board?") == [
        "revenue", "limit", "nhs", "grampian", "board"]


def test_hyphenated_word_is_kept_whole_and_in_parts():
    assert lexical.tokenize("COVID-19 costs") == ["covid-19", "covid", "19", "costs"]


def _chunk(i: int, text: str, doc: str = "d", page: int | None = None, quality: str = "clean") -> Chunk:
    return Chunk(chunk_id=f"c{i:03d}", doc_id=doc, page=page or i + 1, position=0, text=text,
                 n_tokens=len(text.split()), quality=quality)


@pytest.fixture(scope="module")
def grampian_chunks() -> list[Chunk]:
    """The 133 page texts of one shipped report, one chunk per page."""
    path = PROJECT_ROOT / "data/benchmarks/grampian/pages/Grampian-2020-2021.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [_chunk(i, row["text"], row["doc_id"], row["page"]) for i, row in enumerate(rows)]


@pytest.mark.parametrize("query", [
    "core revenue resource limit underspend",
    "COVID-19 vaccination programme costs in 2020/21",
    "Integration Joint Board deficit £000",
    "four hour A&E waiting time standard 95%",
])
def test_bm25s_scores_equal_rank_bm25_on_the_same_corpus(grampian_chunks, query):
    reference = lexical.build_index(grampian_chunks, k1=1.2, b=0.7, backend="rank_bm25")
    fast = lexical.build_index(grampian_chunks, k1=1.2, b=0.7, backend="bm25s")
    tokens = lexical.tokenize(query)
    expected = reference.scores(tokens)
    assert expected.max() > 0
    assert fast.scores(tokens) == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_both_backends_rank_the_same_chunks(grampian_chunks):
    reference = lexical.build_index(grampian_chunks, backend="rank_bm25")
    fast = lexical.build_index(grampian_chunks, backend="bm25s")
    query = "capital expenditure Baird Family Hospital"
    assert ([c.chunk_id for c, _ in lexical.search(reference, query, 10)]
            == [c.chunk_id for c, _ in lexical.search(fast, query, 10)])


def test_filter_applies_before_ranking_not_to_a_short_list():
    # Twenty strong matches in doc "a" would fill any global top 5; doc "b"'s weak
    # matches must still be found when the query is scoped to "b".
    chunks = [_chunk(i, "flood flood flood barrier", doc="a") for i in range(20)]
    chunks += [_chunk(20 + i, f"flood report number {i} with much other text", doc="b") for i in range(3)]
    # Filler without the query's terms keeps "flood" rare enough to have a positive idf.
    chunks += [_chunk(23 + i, f"annual accounts note {i}", doc="c") for i in range(40)]
    index = lexical.build_index(chunks)
    scoped = lexical.search(index, "flood barrier", 5, {"doc_ids": ["b"]})
    assert sorted(c.chunk_id for c, _ in scoped) == ["c020", "c021", "c022"]


def test_page_and_quality_filters_limit_bm25_results():
    chunks = [_chunk(i, f"storage tank failure case {i}", page=i + 1,
                     quality="degraded" if i % 2 else "clean") for i in range(10)]
    chunks += [_chunk(10 + i, f"annual accounts note {i}", page=i + 1) for i in range(20)]
    index = lexical.build_index(chunks)
    found = lexical.search(index, "storage tank", 10, {"pages": (3, 6), "quality": ["clean"]})
    assert sorted(c.page for c, _ in found) == [3, 5]


def test_chunks_sharing_no_term_are_not_listed():
    chunks = [_chunk(0, "lightning struck the tank"), _chunk(1, "annual accounts"),
              _chunk(2, "tank farm layout"), _chunk(3, "board minutes"), _chunk(4, "audit opinion")]
    index = lexical.build_index(chunks)
    found = lexical.search(index, "tank", 10)
    assert sorted(c.chunk_id for c, _ in found) == ["c000", "c002"]
    assert all(score > 0 for _, score in found)


def test_term_in_more_than_half_the_chunks_scores_zero_in_both_backends():
    # Robertson idf is negative there; epsilon 0 floors it at 0 (what bm25s does too).
    chunks = [_chunk(0, "tank one"), _chunk(1, "tank two"), _chunk(2, "pump three")]
    for backend in lexical.BACKENDS:
        index = lexical.build_index(chunks, backend=backend)
        assert lexical.search(index, "tank", 5) == []
        assert [c.chunk_id for c, _ in lexical.search(index, "tank pump", 5)] == ["c002"]


def test_query_of_only_stopwords_finds_nothing():
    index = lexical.build_index([_chunk(0, "the board of the year")])
    assert lexical.search(index, "what is the", 5) == []


def test_empty_corpus_searches_to_nothing():
    for backend in lexical.BACKENDS:
        assert lexical.search(lexical.build_index([], backend=backend), "tank", 5) == []


def test_code_query_ranks_the_chunk_holding_that_code_first():
    chunks = [_chunk(0, "Directive 2012/18/EU on major accidents"),
              _chunk(1, "Directive 96/82/EC, the earlier Seveso II text"),
              _chunk(2, "a general note on directives and accidents")]
    for backend in lexical.BACKENDS:
        index = lexical.build_index(chunks, backend=backend)
        assert lexical.search(index, "what does 2012/18/EU require", 3)[0][0].chunk_id == "c000"


def test_doc_and_quality_filters_keep_exactly_the_named_values():
    # Ids that are prefixes of one another, one the index does not hold, an empty scope.
    docs = ["a", "ab", "b", "a", "abc", "ab"]
    chunks = [_chunk(i, f"tank report {i}", doc=d, quality="degraded" if i % 3 else "clean")
              for i, d in enumerate(docs)]
    index = lexical.build_index(chunks)
    for scope in (["ab"], ["a", "abc"], ["zz"], ["zz", "b"]):
        mask = index.mask({"doc_ids": scope})
        assert [c.doc_id in scope for c in index.chunks] == mask.tolist()
    mask = index.mask({"doc_ids": ["ab", "a"], "quality": ["clean", "unknown"]})
    assert ([c.doc_id in ("ab", "a") and c.quality == "clean" for c in index.chunks] == mask.tolist())
    assert not lexical.build_index([]).mask({"doc_ids": ["a"]}).any()


@pytest.mark.parametrize("backend", lexical.BACKENDS)
def test_scores_of_some_rows_are_those_rows_of_every_score(grampian_chunks, backend):
    index = lexical.build_index(grampian_chunks, backend=backend)
    rows = [0, 7, 7, 40, 3, len(grampian_chunks) - 1, 99]  # unsorted, one twice
    for query in ("core revenue resource limit underspend", "COVID-19 covid vaccination 2020/21 covid",
                  "Integration Joint Board deficit £000", "zzzunknown"):
        tokens = lexical.tokenize(query) + ["zzzunknown"]
        every = index.scores(tokens)
        assert index.scores_of(tokens, rows).tolist() == every[rows].tolist()  # equal, not approximately
    assert index.scores_of(lexical.tokenize("covid"), []).tolist() == []
