"""Statistics against hand computations and textbook values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from groundwatch.core.stats import (
    as_dict,
    cohens_h,
    evaluator_reliability,
    mcnemar_exact,
    paired_test,
    sign_flip_p,
    spearman,
    two_proportion_z_test,
    wilson_ci,
    z_interval,
)

pytestmark = pytest.mark.unit


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(129, 135), (0, 10), (10, 10), (3, 7)])
def test_wilson_matches_formula(k: int, n: int) -> None:
    ci = wilson_ci(k, n)
    assert ci is not None
    assert ci == pytest.approx(wilson_by_hand(k, n), abs=1e-9)
    assert 0.0 <= ci[0] <= k / n <= ci[1] <= 1.0


def test_undefined_intervals_are_none() -> None:
    assert wilson_ci(0, 0) is None and z_interval(0, 0) is None


def test_z_interval_is_wald_clipped() -> None:
    ci = z_interval(19, 100)
    assert ci is not None
    half = 1.959963984540054 * math.sqrt(0.19 * 0.81 / 100)
    assert ci == pytest.approx((0.19 - half, 0.19 + half))
    assert z_interval(10, 10) == (1.0, 1.0)


def test_two_proportion_z_test() -> None:
    r = two_proportion_z_test(60, 100, 40, 100)
    pooled = 0.5
    z = 0.2 / math.sqrt(pooled * pooled * 2 / 100)
    assert r.z == pytest.approx(z)
    assert r.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert r.difference == pytest.approx(0.2)
    assert r.difference_ci is not None and r.difference_ci[0] < 0.2 < r.difference_ci[1]
    assert r.difference_ci[0] > 0  # significant at 5 %: the interval excludes 0
    assert r.cohens_h == pytest.approx(cohens_h(0.6, 0.4))
    same = two_proportion_z_test(5, 5, 7, 7)
    assert (same.z, same.p_value) == (0.0, 1.0)
    assert two_proportion_z_test(1, 0, 1, 1).p_value is None


def test_sign_flip_exact_and_monte_carlo() -> None:
    assert sign_flip_p(np.array([1.0, 1.0, 1.0])) == pytest.approx(2 / 8)
    assert sign_flip_p(np.array([1.0, -1.0])) == 1.0
    d = np.array([0.5, 0.3, 0.2, -0.1, 0.4, 0.6, 0.1, 0.2, -0.3, 0.5, 0.7, 0.2, 0.1, 0.3])
    exact = sign_flip_p(d, n_resamples=2**14)
    mc = sign_flip_p(d, n_resamples=20_000, seed=3)
    assert mc == pytest.approx(exact, abs=0.004)
    assert 0 < mc < 0.01


def test_paired_test_counts_and_direction() -> None:
    x = [1.0, 1.0, 0.5, 1.0, 0.0, 1.0]
    y = [0.0, 0.5, 0.5, 0.0, 0.5, 0.0]
    r = paired_test(x, y)
    assert (r.n_pairs, r.n_nonzero, r.ties, r.x_higher, r.y_higher) == (6, 5, 1, 4, 1)
    assert r.mean_difference == pytest.approx(np.mean(np.subtract(x, y)))
    # |d| = [1, .5, 1, .5, 1] ranks 4, 1.5, 4, 1.5, 4 (sum 15); the negative one has rank 1.5
    assert r.rank_biserial == pytest.approx((13.5 - 1.5) / 15)
    assert r.p_value is not None and 0 < r.p_value < 1
    none = paired_test([0.5, 1.0], [0.5, 1.0])
    assert none.p_value == 1.0 and none.ties == 2
    assert paired_test([], []).p_value is None
    with pytest.raises(ValueError):
        paired_test([1.0], [1.0, 2.0])


def test_mcnemar_exact() -> None:
    pairs = [(True, False)] * 8 + [(False, True)] + [(True, True)] * 5 + [(False, False)] * 2
    r = mcnemar_exact(pairs)
    assert (r.both_correct, r.only_first, r.only_second, r.both_wrong) == (5, 8, 1, 2)
    assert r.p_value == pytest.approx(2 * (1 + 9) / 2**9)
    assert mcnemar_exact([(True, True)]).p_value == 1.0


def test_evaluator_reliability_matches_paper_convention() -> None:
    # positive class = the RAG answer is correct (GRAMMAR first version, Table 2)
    truth = [True, True, False, False, False, True]
    said = [True, False, True, True, False, True]
    r = evaluator_reliability(truth, said)
    assert (r.true_positive, r.false_positive, r.false_negative, r.true_negative) == (2, 2, 1, 1)
    assert r.precision == pytest.approx(0.5) and r.recall == pytest.approx(2 / 3)
    assert r.error_precision == pytest.approx(0.5) and r.error_recall == pytest.approx(1 / 3)
    assert r.agreement == pytest.approx(0.5)
    assert (r.n, r.abstained, r.interval, r.confidence) == (6, 0, "wilson", 0.95)
    assert r.precision_ci == wilson_ci(2, 4) and r.error_recall_ci == wilson_ci(1, 3)
    assert r.agreement_ci == wilson_ci(3, 6)
    wald = evaluator_reliability(truth, said, interval="wald")
    assert wald.precision_ci == z_interval(2, 4) and wald.interval == "wald"
    d = as_dict(r)
    assert isinstance(d["precision_ci"], list)


def test_evaluator_reliability_wilson_by_default_not_wald() -> None:
    # issue 18: with Wald, 5 right calls out of 5 gave the interval [1, 1]
    r = evaluator_reliability([True] * 5, [True] * 5)
    assert r.precision == 1.0 and r.precision_ci is not None
    assert r.precision_ci[0] == pytest.approx(wilson_by_hand(5, 5)[0]) and r.precision_ci[0] < 0.6
    assert evaluator_reliability([True] * 5, [True] * 5, interval="wald").precision_ci == (1.0, 1.0)
    with pytest.raises(ValueError, match="interval"):
        evaluator_reliability([True], [True], interval="exact")  # type: ignore[arg-type]


def test_evaluator_reliability_abstentions_and_undefined_ratios() -> None:
    truth = [True, True, False, False, True]
    predicted = [True, False, True, None, True]
    r = evaluator_reliability(truth, predicted)
    assert r.precision == pytest.approx(2 / 3)  # one wrong answer judged correct: optimistic
    assert r.recall == pytest.approx(2 / 3)  # one right answer judged wrong: cynical
    assert (r.n, r.abstained) == (4, 1)
    # nothing called wrong, no wrong answer: the "wrong"-call ratios are undefined, not 0
    r = evaluator_reliability([True, True], [True, None])
    assert r.error_precision is None and r.error_precision_ci is None
    assert r.error_recall is None and r.error_recall_ci is None
    none = evaluator_reliability([True], [None])
    assert none.n == 0 and none.precision is None and none.agreement is None
    assert none.agreement_ci is None
    with pytest.raises(ValueError):
        evaluator_reliability([True], [])


def test_spearman() -> None:
    r = spearman([1, 2, 3, 4, 5], [2, 4, 6, 8, 11])
    assert r.rho == pytest.approx(1.0) and r.n == 5
    r2 = spearman([1, 2, 3, 4, 5], [5, 3, 4, 1, 2])
    assert r2.rho == pytest.approx(-0.8)
    assert spearman([1, 1, 1], [1, 2, 3]).rho is None  # constant: undefined, no warning
    assert spearman([1, 2], [1, 2]).rho is None
