"""Ranking metrics against hand-computed cases (ragloupe.evaluate.metrics)."""

import math

import pytest

from ragloupe.evaluate.metrics import (
    aggregate,
    first_relevant_rank,
    hit_at,
    ndcg_at,
    query_metrics,
    rank_survival,
    recall_at,
    recall_plateau,
    reciprocal_rank,
)

RANKED = ["d#p5", "d#p2", "d#p9", "d#p1", "d#p7"]


def test_first_relevant_rank_is_one_based():
    assert first_relevant_rank(RANKED, {"d#p9"}) == 3


def test_first_relevant_rank_is_none_when_unlisted():
    assert first_relevant_rank(RANKED, {"d#p40"}) is None


def test_hit_at_k_counts_only_the_top_k():
    assert hit_at(RANKED, {"d#p9"}, 2) == 0.0
    assert hit_at(RANKED, {"d#p9"}, 3) == 1.0


def test_recall_is_share_of_expected_units_found():
    assert recall_at(RANKED, {"d#p2", "d#p7", "d#p40"}, 3) == pytest.approx(1 / 3)
    assert recall_at(RANKED, {"d#p2", "d#p7", "d#p40"}, 5) == pytest.approx(2 / 3)


def test_reciprocal_rank_respects_cutoff():
    assert reciprocal_rank(RANKED, {"d#p1"}) == pytest.approx(0.25)
    assert reciprocal_rank(RANKED, {"d#p1"}, cutoff=3) == 0.0


def test_ndcg_single_relevant_at_rank_three():
    # DCG = 1/log2(4) = 0.5; ideal = 1/log2(2) = 1
    assert ndcg_at(RANKED, {"d#p9"}, 5) == pytest.approx(0.5)


def test_ndcg_two_relevant_hand_computed():
    # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at(RANKED, {"d#p2", "d#p1"}, 5) == pytest.approx(expected)


def test_duplicate_units_count_at_their_best_rank():
    metrics = query_metrics(["d#p5", "d#p5", "d#p2"], {"d#p2"}, [2])
    assert metrics["hit@2"] == 1.0
    assert metrics["rr"] == pytest.approx(0.5)


def test_mrr_is_the_mean_reciprocal_rank_over_queries():
    per_query = [query_metrics(RANKED, {"d#p5"}, [1, 3]),   # rr 1
                 query_metrics(RANKED, {"d#p9"}, [1, 3]),   # rr 1/3
                 query_metrics(RANKED, {"d#p40"}, [1, 3])]  # rr 0
    result = aggregate(per_query, [1, 3], seed=1)
    assert result["mrr"].mean == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert result["hit@1"].mean == pytest.approx(1 / 3)
    assert result["hit@3"].mean == pytest.approx(2 / 3)


def test_mrr_is_reported_at_every_k_of_a_sweep():
    per_query = [query_metrics(RANKED, {"d#p5"}, [1, 3, 5]),   # first relevant at rank 1
                 query_metrics(RANKED, {"d#p9"}, [1, 3, 5])]   # first relevant at rank 3
    result = aggregate(per_query, [1, 3, 5], seed=1)
    assert result["mrr@1"].mean == pytest.approx((1 + 0) / 2)
    assert result["mrr@3"].mean == pytest.approx((1 + 1 / 3) / 2)
    assert result["mrr@5"].mean == pytest.approx(result["mrr"].mean)


def test_confidence_interval_brackets_the_mean():
    per_query = [query_metrics(RANKED, {unit}, [1]) for unit in ["d#p5", "d#p2", "d#p5", "d#p40"] * 5]
    hit1 = aggregate(per_query, [1], seed=3)["hit@1"]
    assert hit1.low <= hit1.mean <= hit1.high
    assert hit1.low < hit1.high


def test_rank_survival_rises_with_k():
    curve = rank_survival([1, 3, None, 2], depth=4)
    assert [point["share"] for point in curve] == [0.25, 0.5, 0.75, 0.75]


def test_plateau_found_before_the_edge_of_the_sweep():
    result = recall_plateau({1: 0.6, 3: 0.8, 5: 0.9, 10: 0.9})
    assert result["plateau_k"] == 5
    assert not result["still_climbing"]


def test_still_climbing_at_largest_k_is_not_called_a_plateau():
    result = recall_plateau({1: 0.6, 3: 0.8, 5: 0.9, 10: 0.95})
    assert result["plateau_k"] is None
    assert result["still_climbing"]
    assert "still climbing" in result["text"]
