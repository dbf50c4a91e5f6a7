"""The Wilcoxon signed-rank test of a cohort comparison, in numpy alone.

Every report of two cohorts runs it, and ``scipy.stats`` was imported for it alone: ~46 MB of a
run's peak resident memory (and a second of the CLI's start) for one test on one vector. This is
the test ``scipy.stats.wilcoxon(d, zero_method="wilcox", method=…)`` computes for nonzero
differences, branch for branch as scipy 1.17 takes them (``tests/unit/test_signed_rank.py``
compares the two):

* ``method="auto"`` with at most 50 differences and no tied magnitudes: the **exact** null
  distribution of W+ (each of the 2^n sign patterns equally likely), the statistic rounded
  conservatively (up for the lower tail, down for the upper);
* ``"auto"`` with ties and at most 13 differences: a **permutation** test over every one of the
  2^n sign flips (exact: 2^13 < scipy's 9,999 resamples);
* otherwise (``"asymptotic"``, or ties above 13): the **normal approximation** with the tie
  correction and no continuity correction.

The statistic is min(W+, W−), the p-value two-sided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

Method = Literal["auto", "asymptotic"]

#: Above this many differences "auto" is the normal approximation (scipy's threshold).
EXACT_MAX = 50
#: With tied magnitudes, "auto" enumerates the sign flips up to this many (2^13 < 9,999).
PERMUTATION_MAX = 13
#: scipy's relative tolerance when it counts null statistics as extreme as the observed one.
_GAMMA = 1e-14


@dataclass(frozen=True, slots=True)
class SignedRank:
    statistic: float
    pvalue: float


def average_ranks(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n of ``a`` (ties share their average rank) and the size of each tie block."""
    order = np.argsort(a, kind="mergesort")
    s = a[order]
    first = np.concatenate(([True], s[1:] != s[:-1]))
    block = np.cumsum(first) - 1  # each sorted value's tie block
    edges = np.concatenate((np.flatnonzero(first), [a.size]))
    average = (edges[:-1] + 1 + edges[1:]) / 2.0  # ranks start+1 … end, averaged
    ranks = np.empty(a.size, dtype=float)
    ranks[order] = average[block]
    return ranks, np.diff(edges)


def _exact_distribution(n: int) -> np.ndarray:
    """P(W+ = k) for k = 0 … n(n+1)/2 under H0 (scipy's recurrence, in the same order)."""
    c = np.ones(1, dtype=np.float64)
    for k in range(1, n + 1):
        prev = c
        c = np.zeros(k * (k + 1) // 2 + 1, dtype=np.float64)
        m = len(prev)
        c[:m] = prev * 0.5
        c[-m:] += prev * 0.5
    return c


def _exact_p(r_plus: float, n: int) -> float:
    pmf = _exact_distribution(n)
    mean = n * (n + 1) / 4

    def cdf(k: int) -> float:
        return float(pmf[: k + 1].sum()) if k <= mean else 1.0 - float(pmf[k + 1 :].sum())

    def sf(k: int) -> float:
        return float(pmf[k:].sum()) if k <= mean else 1.0 - float(pmf[:k].sum())

    p = 2.0 * min(sf(math.floor(r_plus)), cdf(math.ceil(r_plus)))
    return min(max(p, 0.0), 1.0)


def _permutation_p(d: np.ndarray, ranks: np.ndarray) -> float:
    """Two-sided p of W+ over all 2^n sign flips of ``d`` (the ranks of |d| never change)."""
    n = d.size
    observed = float(ranks[d > 0].sum())
    signs = (np.arange(2**n)[:, None] >> np.arange(n)) & 1  # 1: the difference stays positive
    null = signs @ ranks
    gamma = abs(_GAMMA * observed)
    less = np.count_nonzero(null <= observed + gamma) / 2**n
    greater = np.count_nonzero(null >= observed - gamma) / 2**n
    return float(min(max(2.0 * min(less, greater), 0.0), 1.0))


def signed_rank(d: np.ndarray, method: Method = "auto") -> SignedRank:
    """The test on nonzero paired differences ``d`` (zeros already dropped: Wilcoxon's method)."""
    d = np.asarray(d, dtype=float)
    n = d.size
    if n == 0:
        return SignedRank(math.nan, math.nan)
    if np.any(d == 0):
        raise ValueError("signed_rank takes the nonzero differences only")
    ranks, ties = average_ranks(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    statistic = min(r_plus, r_minus)
    tied = bool(np.any(ties > 1))
    if method == "auto" and n <= EXACT_MAX and not tied:
        return SignedRank(statistic, _exact_p(r_plus, n))
    if method == "auto" and n <= PERMUTATION_MAX:
        return SignedRank(statistic, _permutation_p(d, ranks))
    mean = n * (n + 1) * 0.25
    var = n * (n + 1.0) * (2.0 * n + 1.0)
    se = math.sqrt((var - float(np.sum(ties.astype(float) ** 3 - ties)) / 2) / 24)
    if se == 0:
        return SignedRank(statistic, math.nan)
    z = (r_plus - mean) / se
    return SignedRank(statistic, min(math.erfc(abs(z) / math.sqrt(2.0)), 1.0))


__all__ = ["SignedRank", "average_ranks", "signed_rank"]
