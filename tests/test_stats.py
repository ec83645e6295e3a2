"""Bootstrap CIs and the paired randomisation test (ragloupe.evaluate.stats)."""

import pytest

from ragloupe.evaluate.stats import bootstrap_ci, paired_bootstrap_ci, paired_permutation_p


def test_bootstrap_is_reproducible_with_the_same_seed():
    values = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1] * 3
    assert bootstrap_ci(values, seed=7) == bootstrap_ci(values, seed=7)


def test_bootstrap_interval_contains_the_mean():
    values = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1] * 3
    low, high = bootstrap_ci(values, seed=0)
    assert low < 0.6 < high


def test_constant_sample_has_a_degenerate_interval():
    assert bootstrap_ci([1.0] * 12) == (1.0, 1.0)


def test_single_value_has_no_interval():
    assert bootstrap_ci([0.5]) == (None, None)


def test_identical_runs_have_p_value_one():
    assert paired_permutation_p([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0


def test_consistent_paired_improvement_is_significant():
    better = [1] * 30 + [0] * 10
    worse = [0] * 20 + [1] * 10 + [0] * 10
    assert paired_permutation_p(better, worse, seed=0) < 0.01


def test_one_changed_query_is_not_significant():
    a = [1, 0, 1, 1, 0, 1, 1, 0, 1, 1]
    b = [1, 0, 1, 1, 0, 1, 1, 0, 1, 0]
    assert paired_permutation_p(a, b, seed=0) > 0.5


def test_unequal_lengths_are_refused():
    with pytest.raises(ValueError):
        paired_permutation_p([1, 0], [1])


def test_paired_difference_interval_is_positive_for_a_clear_gain():
    low, high = paired_bootstrap_ci([1] * 25 + [0] * 5, [0] * 20 + [1] * 5 + [0] * 5, seed=0)
    assert low > 0
