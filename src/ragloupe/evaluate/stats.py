"""Confidence intervals and paired significance tests, on scipy.stats.

Resampling is scipy's (bootstrap, permutation_test), never hand-rolled, and
always seeded, so a run report is byte-identical when run again.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import stats

N_RESAMPLES = 2000
SMALLEST_P_SHOWN = 0.001


def p_value_text(p: float) -> str:
    """A p-value as a reader expects it, for a column headed p: '< 0.001' below a thousandth, else
    '0.012'. Never '0.000': a permutation test's p is never zero, only below what its resamples resolve."""
    return f"< {SMALLEST_P_SHOWN:g}" if p < SMALLEST_P_SHOWN else f"{p:.3f}"


def p_text(p: float) -> str:
    """'p < 0.001' or 'p = 0.012': the one way the package writes a p-value in a sentence."""
    shown = p_value_text(p)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"
CONFIDENCE = 0.95


def bootstrap_ci(values: Sequence[float], seed: int = 0, n_resamples: int = N_RESAMPLES,
                 confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of the mean; None, None below two values.

    Percentile rather than BCa: BCa is undefined when every value is equal
    (a Hit@10 of 1.0 on a small group), and these are means of 0/1 values.
    A constant sample has the degenerate interval (value, value).
    """
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return None, None
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    result = stats.bootstrap((data,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                             method="percentile", vectorized=True,
                             rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_permutation_p(a: Sequence[float], b: Sequence[float], seed: int = 0,
                         n_resamples: int = N_RESAMPLES * 5) -> float:
    """Two-sided p-value that paired scores a and b have the same mean.

    Paired randomisation test (scipy permutation_test, permutation_type
    'samples'): under the null the two runs are exchangeable per query, so each
    query's pair is swapped at random. With identical runs the p-value is 1.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError("paired samples must have the same length")
    if x.size == 0 or np.all(x == y):
        return 1.0

    def mean_difference(u, v, axis):
        return np.mean(u - v, axis=axis)

    result = stats.permutation_test((x, y), mean_difference, permutation_type="samples",
                                    alternative="two-sided", n_resamples=n_resamples,
                                    vectorized=True, rng=np.random.default_rng(seed))
    return float(result.pvalue)


def paired_bootstrap_ci(a: Sequence[float], b: Sequence[float], seed: int = 0,
                        n_resamples: int = N_RESAMPLES) -> tuple[float | None, float | None]:
    """CI of the mean paired difference a - b (a bootstrap over queries)."""
    return bootstrap_ci(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), seed=seed,
                        n_resamples=n_resamples)
