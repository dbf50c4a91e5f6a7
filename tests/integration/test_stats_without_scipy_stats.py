"""McNemar's exact test and Spearman's correlation against scipy.stats, which the library no
longer imports for them (core/stats: scipy.special's bdtr and stdtr, 46 MB lighter)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

from groundwatch.core.stats import mcnemar_exact, spearman

pytestmark = pytest.mark.integration  # one test starts a Python of its own


@pytest.mark.parametrize(
    ("first", "second"),
    [(0, 1), (1, 0), (3, 3), (2, 7), (7, 2), (0, 25), (10, 11), (11, 10), (40, 60), (499, 530),
     (1200, 1100), (5, 5000)],
)  # fmt: skip
def test_mcnemar_matches_binomtest(first: int, second: int) -> None:
    pairs = [(True, False)] * first + [(False, True)] * second + [(True, True)] * 4
    got = mcnemar_exact(pairs)
    want = sps.binomtest(first, first + second, 0.5).pvalue
    assert got.p_value == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert (got.only_first, got.only_second, got.both_correct) == (first, second, 4)


def _pairs() -> list[tuple[list[float], list[float]]]:
    rng = np.random.default_rng(3)
    out = []
    for n in (3, 4, 7, 20, 150):
        x = rng.normal(size=n)
        out.append((x.tolist(), (x + rng.normal(scale=0.8, size=n)).tolist()))
        out.append((rng.integers(1, 6, n).astype(float).tolist(), rng.random(n).tolist()))
    out.append(([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]))  # r = 1: p = 0
    out.append(([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]))  # r = -1
    return out


@pytest.mark.parametrize(("x", "y"), _pairs())
def test_spearman_matches_spearmanr(x: list[float], y: list[float]) -> None:
    got = spearman(x, y)
    want = sps.spearmanr(x, y)
    assert got.rho == pytest.approx(float(want.statistic), rel=1e-12, abs=1e-15)
    assert got.p_value == pytest.approx(float(want.pvalue), rel=1e-9, abs=1e-300)


def test_spearman_undefined_cases_are_none() -> None:
    assert spearman([1.0, 2.0], [2.0, 1.0]).rho is None  # fewer than three
    assert spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]).rho is None  # constant
    nan = spearman([1.0, float("nan"), 3.0, 4.0], [1.0, 2.0, 3.0, 4.0])
    assert nan.rho is None and nan.p_value is None


def test_the_statistics_do_not_import_scipy_stats() -> None:
    code = (
        "import sys\n"
        "from groundwatch.core.stats import mcnemar_exact, paired_test, spearman\n"
        "paired_test([1.0, 0.0, 1.0, 1.0] * 20, [0.0, 0.0, 1.0, 0.0] * 20)\n"
        "mcnemar_exact([(True, False), (False, True), (True, False)])\n"
        "spearman([1.0, 2.0, 3.0, 5.0], [2.0, 1.0, 4.0, 3.0])\n"
        "assert 'scipy.stats' not in sys.modules, 'scipy.stats imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
