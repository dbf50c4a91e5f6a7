"""Statistics for GRAMMAR-Eval: intervals, the paired cohort/target tests, effect sizes, the
reliability of reference-free evaluators (GRAMMAR §3) and agreement with human ratings (Oro et al.).

Results are small frozen dataclasses whose fields are JSON-ready floats, ints or ``None`` (never
NaN, which JSON cannot carry): an undefined quantity — a proportion of nothing, a correlation with
a constant — is ``None`` rather than a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy are imported where a test needs them: a report of one cohort needs neither,
# and importing scipy.stats costs about a second of every CLI call (bench/bench_cli.py).
_NORMAL = NormalDist()
Z95 = _NORMAL.inv_cdf(0.975)


def _z(confidence: float) -> float:
    return Z95 if confidence == 0.95 else _NORMAL.inv_cdf(0.5 + confidence / 2)


def _norm_sf(x: float) -> float:
    """The standard normal's upper tail, exact far into it (erfc, not 1 - cdf)."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _f(x: Any) -> float | None:
    """A finite float, or None."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def proportion(k: int, n: int) -> float | None:
    return k / n if n else None


def wilson_ci(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval: honest near 0 and 1, where accuracy and R of a RAG system often sit
    (R = 0.96 on Aurp), unlike the Wald interval that would cross 1."""
    if n <= 0:
        return None
    # The closed form scipy's ``binomtest(k, n).proportion_ci(method="wilson")`` evaluates
    # (tests/unit compares the two): no scipy import on the report's path.
    z = _z(confidence)
    z2 = z * z
    p = k / n
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, center - half)  # exactly 0 and 1 at the edges
    return (low, 1.0 if k == n else min(1.0, center + half))


def z_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The normal-approximation (Wald) z-interval, clipped to [0, 1] — what GRAMMAR-style
    precision/recall tables quote."""
    if n <= 0:
        return None
    p = k / n
    half = _z(confidence) * math.sqrt(p * (1 - p) / n)
    return (max(0.0, p - half), min(1.0, p + half))


#: Interval for a proportion: ``"wilson"`` (score interval, the default everywhere) or ``"wald"``
#: (the normal-approximation z-interval, clipped to [0, 1]).
IntervalMethod = Literal["wilson", "wald"]


def proportion_ci(
    k: int, n: int, confidence: float = 0.95, method: IntervalMethod = "wilson"
) -> tuple[float, float] | None:
    """The ``confidence`` interval of k/n by ``method``; None when n is 0."""
    if method == "wilson":
        return wilson_ci(k, n, confidence)
    if method == "wald":
        return z_interval(k, n, confidence)
    raise ValueError(f"unknown interval method {method!r}")


@dataclass(frozen=True, slots=True)
class ZTest:
    """Two-proportion z-test (pooled), two-sided."""

    z: float | None
    p_value: float | None
    difference: float | None
    difference_ci: tuple[float, float] | None
    cohens_h: float | None


def two_proportion_z_test(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> ZTest:
    """Compare p1 = k1/n1 with p2 = k2/n2 as independent proportions.

    The difference CI is Newcombe's hybrid score interval (from the two Wilson intervals), which
    keeps its coverage at the extremes; Cohen's h is the effect size on the arcsine scale.
    """
    if n1 <= 0 or n2 <= 0:
        return ZTest(None, None, None, None, None)
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        z, p = (0.0, 1.0) if p1 == p2 else (None, None)
    else:
        z = (p1 - p2) / se
        p = float(2 * _norm_sf(abs(z)))
    w1 = wilson_ci(k1, n1, confidence)
    w2 = wilson_ci(k2, n2, confidence)
    assert w1 is not None and w2 is not None
    d = p1 - p2
    lo = d - math.sqrt((p1 - w1[0]) ** 2 + (w2[1] - p2) ** 2)
    hi = d + math.sqrt((w1[1] - p1) ** 2 + (p2 - w2[0]) ** 2)
    return ZTest(_f(z), _f(p), d, (lo, hi), cohens_h(p1, p2))


def cohens_h(p1: float, p2: float) -> float:
    """Effect size of a difference of proportions: 0.2 small, 0.5 medium, 0.8 large."""
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Paired comparison of per-group scores x (first) and y (second), over the same groups.

    ``p_value`` is the paired permutation (sign-flip) test on the mean difference — exact while
    2^(non-tied pairs) <= ``n_resamples`` (13 pairs by default), seeded resamples beyond;
    ``wilcoxon_p`` is Wilcoxon's signed-rank test (zero differences dropped); ``rank_biserial``
    is the matched-pairs rank-biserial correlation (+1: every non-tied group is higher in x).
    """

    n_pairs: int
    n_nonzero: int
    mean_x: float | None
    mean_y: float | None
    mean_difference: float | None
    p_value: float | None
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None
    rank_biserial: float | None
    x_higher: int
    y_higher: int
    ties: int


def paired_test(
    x: Sequence[float], y: Sequence[float], *, n_resamples: int = 9_999, seed: int = 0
) -> PairedTest:
    import numpy as np

    from groundwatch.core.signed_rank import average_ranks, signed_rank

    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape:
        raise ValueError("paired samples must have the same length")
    n = int(xa.size)
    d = xa - ya
    nz = d[d != 0]
    n_nonzero = int(nz.size)
    x_higher = int((d > 0).sum())
    y_higher = int((d < 0).sum())
    if n == 0:
        return PairedTest(0, 0, None, None, None, None, None, None, None, 0, 0, 0)
    mean_d = float(d.mean())
    if n_nonzero == 0:
        # no group differs: nothing to test, the data are exactly what H0 predicts
        return PairedTest(
            n, 0, float(xa.mean()), float(ya.mean()), 0.0, 1.0, None, 1.0, 0.0, 0, 0, n
        )
    p_perm = sign_flip_p(nz, n_resamples=n_resamples, seed=seed)
    # scipy.stats.wilcoxon's test without importing scipy.stats (46 MB): core/signed_rank
    w = signed_rank(nz, "asymptotic" if n_nonzero > 50 else "auto")
    ranks = average_ranks(np.abs(nz))[0]
    r_plus = float(ranks[nz > 0].sum())
    r_minus = float(ranks[nz < 0].sum())
    rbc = (r_plus - r_minus) / (r_plus + r_minus)
    return PairedTest(
        n_pairs=n,
        n_nonzero=n_nonzero,
        mean_x=float(xa.mean()),
        mean_y=float(ya.mean()),
        mean_difference=mean_d,
        p_value=p_perm,
        wilcoxon_statistic=_f(w.statistic),
        wilcoxon_p=_f(w.pvalue),
        rank_biserial=rbc,
        x_higher=x_higher,
        y_higher=y_higher,
        ties=n - n_nonzero,
    )


#: Flipped values (float64) materialised at once by :func:`sign_flip_p` (1 MB).
_FLIP_BLOCK = 131_072


def sign_flip_p(d: np.ndarray, *, n_resamples: int = 9_999, seed: int = 0) -> float:
    """Two-sided p-value of the paired permutation test on the mean of differences ``d``.

    Under H0 (no cohort/target effect) each pair's difference is as likely negative as positive,
    so the null distribution flips signs. Exact over all 2^n sign vectors when that is at most
    ``n_resamples``; otherwise seeded Monte Carlo with the +1 correction (Phipson & Smyth), so a
    p-value is never 0. Hand-written because scipy's ``permutation_test`` materialises every
    resample at once (gigabytes for 10 000 groups).
    """
    import numpy as np

    d = np.asarray(d, dtype=float)
    n = d.size
    if n == 0:
        return 1.0
    observed = abs(float(d.mean()))
    tol = 1e-12 * max(1.0, observed)
    if 2**n <= n_resamples:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        means = np.abs(((1 - 2 * bits) * d).mean(axis=1))
        return float(np.count_nonzero(means >= observed - tol) / 2**n)
    rng = np.random.default_rng(seed)
    hits = 0
    batch = max(1, min(n_resamples, 2_000_000 // n))
    done = 0
    # the flipped samples in float64 a block of rows at a time: the whole batch at once was a
    # 16 MB temporary that the allocator kept (a report's resident memory rose by as much);
    # the same random stream and the same per-row means
    rows = max(1, _FLIP_BLOCK // n)
    while done < n_resamples:
        m = min(batch, n_resamples - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        for r in range(0, m, rows):
            means = np.abs((signs[r : r + rows] * d).mean(axis=1))
            hits += int(np.count_nonzero(means >= observed - tol))
        done += m
    return (hits + 1) / (n_resamples + 1)


@dataclass(frozen=True, slots=True)
class McNemar:
    """Exact McNemar test on paired binary outcomes (the same text form asked to two targets)."""

    both_correct: int
    only_first: int
    only_second: int
    both_wrong: int
    p_value: float | None


def mcnemar_exact(pairs: Sequence[tuple[bool, bool]]) -> McNemar:
    both = sum(1 for a, b in pairs if a and b)
    first = sum(1 for a, b in pairs if a and not b)
    second = sum(1 for a, b in pairs if b and not a)
    neither = len(pairs) - both - first - second
    return McNemar(both, first, second, neither, sign_test_p(first, second))


def sign_test_p(first: int, second: int) -> float:
    """The exact two-sided sign test of ``first`` pairs going one way against ``second`` going
    the other (ties left out): McNemar's exact test on the discordant pairs. 1.0 with none."""
    disc = first + second
    if disc == 0:
        return 1.0
    # scipy.stats.binomtest(first, disc, 0.5)'s two-sided p: for p = 1/2 the outcomes as
    # unlikely as the observed one are the two tails beyond it, so twice the smaller tail
    # (bdtr is the binomial CDF binomtest evaluates; scipy.special, not scipy.stats' 46 MB)
    from scipy.special import bdtr

    return min(1.0, 2.0 * float(bdtr(min(first, second), disc, 0.5)))


@dataclass(frozen=True, slots=True)
class Reliability:
    """An evaluator's verdicts against the ground truth (GRAMMAR §3, Table 1) — the one type for
    every evaluator-reliability number in groundwatch.

    As in the paper the positive class is "the RAG answer is correct": precision = of the answers
    the evaluator calls right, the share that are; recall = of the right answers, the share it
    calls right. Low precision = optimistic (wrong answers judged right: inflated scores); low
    recall = cynical (right answers judged wrong). ``error_*`` are the same for the evaluator's
    "wrong" calls (how well it catches wrong answers). Every ratio is ``None`` when its
    denominator is 0 and its interval then too; ``interval`` names the interval method used.

    ``n`` counts the items the evaluator decided; ``abstained`` those it could not (a ``None``
    verdict), which are left out of every ratio.
    """

    n: int
    abstained: int
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int
    precision: float | None
    precision_ci: tuple[float, float] | None
    recall: float | None
    recall_ci: tuple[float, float] | None
    error_precision: float | None
    error_precision_ci: tuple[float, float] | None
    error_recall: float | None
    error_recall_ci: tuple[float, float] | None
    agreement: float | None
    agreement_ci: tuple[float, float] | None
    interval: IntervalMethod
    confidence: float


def evaluator_reliability(
    truth: Sequence[bool],
    predicted: Sequence[bool | None],
    confidence: float = 0.95,
    *,
    interval: IntervalMethod = "wilson",
) -> Reliability:
    """Precision and recall of ``predicted`` (True = judged right, None = abstained) against
    ``truth`` (the reference-based verdicts), with ``confidence`` intervals.

    Wilson intervals by default: the Wald interval of 5 right calls out of 5 is [1, 1], claiming
    certainty from five items. ``interval="wald"`` gives the z-interval GRAMMAR's Table 1 quotes,
    for comparing with it.
    """
    if len(truth) != len(predicted):
        raise ValueError("truth and predicted must have the same length")
    tp = fp = fn = tn = abstained = 0
    for t, p in zip(truth, predicted, strict=True):
        if p is None:
            abstained += 1
        elif p and t:
            tp += 1
        elif p:
            fp += 1
        elif t:
            fn += 1
        else:
            tn += 1
    return reliability_from_counts(tp, fp, fn, tn, abstained, confidence, interval=interval)


def reliability_from_counts(
    tp: int,
    fp: int,
    fn: int,
    tn: int,
    abstained: int = 0,
    confidence: float = 0.95,
    *,
    interval: IntervalMethod = "wilson",
) -> Reliability:
    """:func:`evaluator_reliability` from its confusion counts (positive = judged right), for
    a live panel that keeps counts instead of every verdict."""
    n = tp + fp + fn + tn

    def ratio(k: int, m: int) -> tuple[float | None, tuple[float, float] | None]:
        return proportion(k, m), proportion_ci(k, m, confidence, interval)

    precision, precision_ci = ratio(tp, tp + fp)
    recall, recall_ci = ratio(tp, tp + fn)
    error_precision, error_precision_ci = ratio(tn, tn + fn)
    error_recall, error_recall_ci = ratio(tn, tn + fp)
    agreement, agreement_ci = ratio(tp + tn, n)
    return Reliability(
        n=n,
        abstained=abstained,
        true_positive=tp,
        false_positive=fp,
        false_negative=fn,
        true_negative=tn,
        precision=precision,
        precision_ci=precision_ci,
        recall=recall,
        recall_ci=recall_ci,
        error_precision=error_precision,
        error_precision_ci=error_precision_ci,
        error_recall=error_recall,
        error_recall_ci=error_recall_ci,
        agreement=agreement,
        agreement_ci=agreement_ci,
        interval=interval,
        confidence=confidence,
    )


@dataclass(frozen=True, slots=True)
class Correlation:
    """Spearman's rank correlation (Oro et al. compare metrics with human Likert ratings)."""

    n: int
    rho: float | None
    p_value: float | None


def spearman(x: Sequence[float], y: Sequence[float]) -> Correlation:
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    n = len(x)
    if n < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return Correlation(n, None, None)  # undefined for a constant or tiny sample
    import numpy as np
    from scipy.special import stdtr

    from groundwatch.core.signed_rank import average_ranks

    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.isnan(xa).any() or np.isnan(ya).any():
        return Correlation(n, None, None)  # scipy.stats.spearmanr propagates a NaN
    # scipy.stats.spearmanr's statistic and two-sided p (Pearson's r of the average ranks,
    # Student's t with n - 2 degrees of freedom) without importing scipy.stats (46 MB)
    r = np.corrcoef(average_ranks(xa)[0], average_ranks(ya)[0])[0, 1]
    dof = n - 2
    with np.errstate(divide="ignore"):
        t = r * np.sqrt((dof / ((r + 1.0) * (1.0 - r))).clip(0))
    return Correlation(n, _f(r), _f(2.0 * stdtr(dof, -abs(t))))


def as_dict(result: Any) -> dict[str, Any]:
    """A stats result as a JSON-ready dict (tuples become lists)."""
    out: dict[str, Any] = asdict(result)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
