"""Weighted RRF and min-max fusion: 1-based ranks, absent means nothing, duplicates once."""

from __future__ import annotations

import pytest

from ragloupe.retrieve.fusion import fuse, minmax, rrf


def by_id(fused):
    return {f.id: f for f in fused}


def test_rrf_uses_one_based_ranks():
    fused = by_id(rrf({"dense": ["a", "b"]}, k=60))
    assert fused["a"].score == pytest.approx(1 / 61)
    assert fused["b"].score == pytest.approx(1 / 62)
    assert fused["a"].ranks == {"dense": 1}


def test_rrf_item_missing_from_a_list_gets_nothing_from_it_and_rank_none():
    fused = by_id(rrf({"dense": ["a", "b"], "bm25": ["b"]}, k=60))
    assert fused["a"].score == pytest.approx(1 / 61)
    assert fused["a"].ranks == {"dense": 1, "bm25": None}
    assert fused["b"].score == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_agreement_beats_a_single_first_place():
    fused = rrf({"dense": ["solo", "both"], "bm25": ["x", "both"]}, k=60)
    assert fused[0].id == "both"


def test_rrf_counts_a_duplicate_in_one_list_once_at_its_best_rank():
    fused = by_id(rrf({"dense": ["a", "b", "a", "a"]}, k=60))
    assert fused["a"].score == pytest.approx(1 / 61)
    assert fused["a"].ranks["dense"] == 1
    assert fused["b"].ranks["dense"] == 2


def test_rrf_weights_scale_each_engine():
    fused = by_id(rrf({"dense": ["a"], "bm25": ["b"]}, weights={"dense": 1.0, "bm25": 3.0}, k=10))
    assert fused["a"].score == pytest.approx(1 / 11)
    assert fused["b"].score == pytest.approx(3 / 11)
    assert rrf({"dense": ["a"], "bm25": ["b"]}, weights={"bm25": 3.0}, k=10)[0].id == "b"


def test_rrf_k_changes_how_much_top_ranks_dominate():
    lists = {"dense": ["top", "mid"], "bm25": ["other", "x1", "x2", "x3", "x4", "mid"]}
    # With a small k a lone first place beats an item both engines rank lower;
    # with a large k the agreed-on item wins.
    small = by_id(rrf(lists, k=1))
    assert small["top"].score > small["mid"].score
    assert rrf(lists, k=100)[0].id == "mid"


def test_rrf_fuses_deep_window_items_agreed_by_both_engines():
    dense = [f"d{i}" for i in range(39)] + ["deep"]
    bm25 = [f"b{i}" for i in range(39)] + ["deep"]
    fused = rrf({"dense": dense, "bm25": bm25}, k=60)
    # Rank 40 in both lists: 2/100 = 0.02 beats a lone first place, 1/61 = 0.0164.
    assert fused[0].id == "deep"
    assert fused[0].ranks == {"dense": 40, "bm25": 40}


def test_rrf_order_is_deterministic_on_ties():
    lists = {"dense": ["a", "b"], "bm25": ["b", "a"]}
    assert [f.id for f in rrf(lists)] == [f.id for f in rrf(dict(reversed(lists.items())))]


def test_minmax_scales_each_engine_to_unit_range():
    fused = by_id(minmax({"dense": [("a", 0.9), ("b", 0.5), ("c", 0.1)]}))
    assert fused["a"].score == pytest.approx(1.0)
    assert fused["b"].score == pytest.approx(0.5)
    assert fused["c"].score == pytest.approx(0.0)


def test_minmax_absent_item_adds_nothing_and_rank_none():
    fused = by_id(minmax({"dense": [("a", 0.8), ("b", 0.2)], "bm25": [("b", 12.0), ("c", 3.0)]},
                         weights={"dense": 1.0, "bm25": 2.0}))
    assert fused["a"].score == pytest.approx(1.0)
    assert fused["a"].ranks == {"dense": 1, "bm25": None}
    assert fused["b"].score == pytest.approx(0.0 + 2.0)
    assert fused["c"].score == pytest.approx(0.0)


def test_minmax_list_of_equal_scores_counts_as_top():
    fused = by_id(minmax({"bm25": [("a", 4.0), ("b", 4.0)]}))
    assert fused["a"].score == fused["b"].score == pytest.approx(1.0)


def test_minmax_duplicate_keeps_its_first_score():
    fused = by_id(minmax({"dense": [("a", 0.9), ("b", 0.1), ("a", 0.05)]}))
    assert fused["a"].score == pytest.approx(1.0)
    assert fused["a"].ranks["dense"] == 1


def test_fuse_dispatches_and_rejects_unknown_method():
    scored = {"dense": [("a", 0.9), ("b", 0.1)], "bm25": [("b", 5.0)]}
    assert [f.id for f in fuse("rrf", scored)] == ["b", "a"]
    with pytest.raises(ValueError, match="unknown fusion method"):
        fuse("borda", scored)
