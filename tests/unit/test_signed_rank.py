"""core/signed_rank against scipy.stats.wilcoxon and rankdata, branch by branch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from groundwatch.core.signed_rank import average_ranks, signed_rank


def _scipy(d: np.ndarray, method: str) -> tuple[float, float]:
    w = sps.wilcoxon(d, zero_method="wilcox", method=method)
    return float(w.statistic), float(w.pvalue)


def _cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    cases: list[tuple[str, np.ndarray]] = []
    for n in (1, 2, 3, 5, 9, 13, 20, 37, 50):
        cases.append((f"exact-{n}", rng.normal(0.2, 1.0, n)))  # continuous: no ties
    for n in (2, 4, 7, 11, 13):
        cases.append((f"perm-ties-{n}", rng.choice([-1.0, -0.5, 0.5, 1.0], n)))
    for n in (14, 30, 50, 51, 400, 5000):
        cases.append((f"asymptotic-ties-{n}", rng.choice([-1.0, -0.5, 0.5, 1.0, 2.0], n)))
    cases.append(("all-positive", np.array([1.0, 2.0, 3.0, 4.0])))
    cases.append(("all-tied", np.array([1.0, -1.0, 1.0, 1.0, -1.0])))
    return cases


@pytest.mark.parametrize(("name", "d"), _cases(), ids=[c[0] for c in _cases()])
def test_auto_matches_scipy(name: str, d: np.ndarray) -> None:
    method = "asymptotic" if d.size > 50 else "auto"
    mine = signed_rank(d, method)  # type: ignore[arg-type]
    stat, p = _scipy(d, "approx" if d.size > 50 else "auto")
    assert mine.statistic == pytest.approx(stat, rel=1e-12)
    assert mine.pvalue == pytest.approx(p, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("n", [5, 20, 60])
def test_asymptotic_matches_scipy_without_ties(n: int) -> None:
    d = np.random.default_rng(n).normal(-0.3, 1.0, n)
    stat, p = _scipy(d, "asymptotic")
    mine = signed_rank(d, "asymptotic")
    assert (mine.statistic, mine.pvalue) == pytest.approx((stat, p), rel=1e-9)


def test_average_ranks_match_rankdata_and_count_ties() -> None:
    a = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 0.5, 2.0])
    ranks, ties = average_ranks(a)
    assert ranks.tolist() == sps.rankdata(a).tolist()
    assert sorted(ties.tolist()) == [1, 1, 2, 3]


def test_zero_differences_are_refused_and_nothing_is_nan() -> None:
    with pytest.raises(ValueError, match="nonzero"):
        signed_rank(np.array([1.0, 0.0]))
    empty = signed_rank(np.array([]))
    assert math.isnan(empty.statistic) and math.isnan(empty.pvalue)
