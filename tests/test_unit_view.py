"""The unit view: records judged as a whole, not by their best chunk (retrieve/units.py, aggregate.unit_view)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import write_records
from ragloupe.chunking import chunk_document
from ragloupe.config import Settings
from ragloupe.errors import SettingsInvalid
from ragloupe.ingest import load_source
from ragloupe.models import Chunk, EngineScore, PageHit
from ragloupe.retrieve import aggregate, units
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

# A long record that answers the question as a whole: each of its chunks holds
# one part of the answer. The short record shares a few words with the question.
FLOOD_PLAN = (
    "Before the flood arrives, the operator fills every empty storage tank with water so that it cannot "
    "float away. The tank anchoring bolts are checked and tightened. Portable barriers are set up around "
    "the electrical substation and the doors of the pump rooms are sealed. The emergency diesel generators "
    "are moved to the elevated platform above the expected water level. Process units are brought to a safe "
    "shutdown in good time, and the flare system is checked. All staff who are not needed leave the site; a "
    "small ride-out crew stays to watch the plant. Loose drums, pallets and containers are strapped down or "
    "removed, because floating debris can hit pipes. The operator stays in contact with the civil protection "
    "authority and follows the river level forecasts.")
ROWS = [
    ("long", "Preparing the plant for a flood", FLOOD_PLAN),
    ("short", "Tank inspection", "Storage tanks near the river are inspected for corrosion after every flood."),
    ("other", "Lightning protection", "Lightning rods and earthing protect the tank farm from direct strikes, "
     "and the rim seals of floating roofs are kept in good order."),
]
QUESTION = ("What must be done to the storage tanks, generators, staff and loose drums "
            "before a river flood reaches the site?")


@pytest.fixture(scope="module")
def records_index(tmp_path_factory, embedder):
    """Three records, cut into small chunks so the long one spans several; built once per module."""
    from ragloupe.index.pipeline import run_index

    root = tmp_path_factory.mktemp("unit-view")
    small = Settings.from_env(index_dir=root / "index", runs_dir=root / "runs", raw_dir=root / "raw",
                              logs_dir=root / "logs", chroma_host="", chunk_tokens=48, chunk_overlap=8)
    summary = run_index([write_records(root / "plans.csv", ROWS)], small)
    assert not summary.errors
    return small


def _units(ranking) -> list[str]:
    return [p.unit for p in ranking.pages]


def test_long_record_answering_as_a_whole_outranks_short_one_sharing_words(records_index):
    chunk_view = search(QUESTION, mode="hybrid", unit_view="none", workspace=Workspace.open(records_index))
    unit_view = search(QUESTION, mode="hybrid", unit_view="records", workspace=Workspace.open(records_index))

    # The chunk view lets the short record win: no single chunk of the long one holds enough.
    assert _units(chunk_view)[:2] == ["plans#short", "plans#long"]
    assert _units(unit_view)[:2] == ["plans#long", "plans#short"]


def test_unit_view_shows_each_signal_per_record(records_index):
    ranking = search(QUESTION, mode="hybrid", unit_view="records", workspace=Workspace.open(records_index))
    top = ranking.pages[0]

    assert set(top.signals) == {"chunks", "unit_bm25", "unit_dense"}
    assert top.signals["unit_bm25"].rank == 1 and top.signals["unit_bm25"].score > 0
    assert -1.0 <= top.signals["unit_dense"].score <= 1.0
    assert "units" in ranking.timings


def test_unit_signals_follow_the_modes_engines(records_index):
    dense = search(QUESTION, mode="dense", unit_view="records", workspace=Workspace.open(records_index))
    bm25 = search(QUESTION, mode="bm25", unit_view="records", workspace=Workspace.open(records_index))

    assert set(dense.pages[0].signals) == {"chunks", "unit_dense"}
    assert set(bm25.pages[0].signals) == {"chunks", "unit_bm25"}


def test_unit_view_off_leaves_signals_empty(records_index):
    ranking = search(QUESTION, mode="hybrid", workspace=Workspace.open(records_index))

    assert all(p.signals == {} for p in ranking.pages)


def test_unknown_unit_view_is_refused_in_one_line(records_index):
    with pytest.raises(SettingsInvalid, match="unit_view='pages'.*wants one of none, records, all"):
        search(QUESTION, unit_view="pages", workspace=Workspace.open(records_index))


def test_joined_chunks_give_back_the_record_text(tmp_path, settings, embedder):
    doc = load_source(write_records(tmp_path / "plans.csv", ROWS), settings)
    chunks = chunk_document(doc, embedder.tokenizer, settings.replace(chunk_tokens=48, chunk_overlap=8))
    long_chunks = [c for c in chunks if c.record_id == "long"]

    assert len(long_chunks) > 3
    assert units.joined_text(long_chunks) == FLOOD_PLAN


def _chunk(unit_doc: str, record: str, position: int, text: str) -> Chunk:
    return Chunk(chunk_id=f"{record}-{position}", doc_id=unit_doc, page=1, position=position, text=text,
                 n_tokens=5, quality="clean", record_id=record, title=f"{record} title")


def test_dense_rules_score_units_from_their_chunk_embeddings():
    chunks = [_chunk("d", "a", 0, "pump"), _chunk("d", "a", 1, "valve"), _chunk("d", "b", 0, "tank")]
    embeddings = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    index = units.build_unit_index(chunks, embeddings)
    query = np.array([1.0, 0.0], dtype=np.float32)

    assert index.units == ["d#a", "d#b"]
    np.testing.assert_allclose(units.dense_unit_scores(index, query, "max"), [1.0, 0.6])
    np.testing.assert_allclose(units.dense_unit_scores(index, query, "mean"), [0.5, 0.6])
    np.testing.assert_allclose(units.dense_unit_scores(index, query, "top2"), [0.5, 0.6])
    np.testing.assert_allclose(units.dense_unit_scores(index, query, "centroid"), [2 ** -0.5, 0.6], rtol=1e-6)


def _page(unit: str, rank: int, score: float) -> PageHit:
    doc, _, part = unit.partition("#")
    return PageHit(unit=unit, doc_id=doc, page=int(part[1:]) if part.startswith("p") else 1,
                   record_id="" if part.startswith("p") else part, rank=rank, score=score,
                   chunk_ids=(f"{unit}-c",), best_chunk_rank=rank)


def test_pages_without_unit_signals_keep_their_chunk_view_scale():
    chunk_view = [_page("report#p3", 1, 0.9), _page("notes#r1", 2, 0.5), _page("notes#r2", 3, 0.1)]
    unit_lists = {"unit_bm25": [("notes#r2", 7.0), ("notes#r1", 1.0)]}
    fused = aggregate.unit_view(chunk_view, unit_lists, {"chunks": 1.0, "unit_bm25": 1.0},
                                has_unit_signals=lambda unit: unit.startswith("notes"), locate={})
    by_unit = {p.unit: p for p in fused}

    # The page is judged on the chunk view alone (1.0 there), the records on the mean of both signals.
    assert by_unit["report#p3"].score == pytest.approx(1.0)
    assert by_unit["notes#r2"].score == pytest.approx(0.5)
    assert by_unit["notes#r1"].score == pytest.approx(0.5 * (0.5 + 0.0))
    assert by_unit["report#p3"].signals["unit_bm25"] == EngineScore(None, None)
    assert [p.rank for p in fused] == [1, 2, 3]


def test_unit_found_only_by_a_whole_unit_signal_is_located():
    fused = aggregate.unit_view([_page("notes#r1", 1, 0.5)], {"unit_bm25": [("notes#r9", 3.0)]},
                                {"chunks": 1.0, "unit_bm25": 1.0}, has_unit_signals=lambda unit: True,
                                locate={"notes#r9": ("notes", 9, "r9")})
    found = next(p for p in fused if p.unit == "notes#r9")

    assert (found.doc_id, found.page, found.record_id, found.chunk_ids, found.best_chunk_rank) == (
        "notes", 9, "r9", (), None)


def test_search_table_lists_each_units_signals(records_index):
    from ragloupe.cli.search_cmd import format_ranking

    # the question's own embedding: which record a mapped question's centroid meets first is the
    # adapter's (tests/test_query_adapter.py), not the table's
    table = format_ranking(search(QUESTION, mode="hybrid", unit_view="records", query_adapter="off",
                                  workspace=Workspace.open(records_index)))
    line = next(line for line in table.splitlines() if line.startswith("  plans#long:"))

    assert "chunks 2/" in line and "unit_bm25 1/" in line and "unit_dense 1/" in line
