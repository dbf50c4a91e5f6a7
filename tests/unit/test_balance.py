"""λ-balancing (GRAMMAR 002 Table 3, "balance gap examples"): equal forms per shared group."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundwatch.core.balance import GroupSample, balance, draw

pytestmark = pytest.mark.unit


def test_draw_keeps_every_form_once_before_repeating() -> None:
    rng = random.Random(0)
    assert sorted(draw(rng, [1, 2, 3], 3)) == [1, 2, 3]
    assert len(draw(rng, [1, 2, 3, 4, 5], 2)) == 2
    short = draw(rng, ["a", "b"], 5)
    assert len(short) == 5 and short[:2] == ["a", "b"]
    assert draw(rng, [], 3) == [] and draw(rng, [1], 0) == []


def gap(n: int) -> GroupSample:
    return GroupSample(verdicts=(False,) * n, retrieval=(False,) * n, decided=True, gap=True)


def robust(n: int) -> GroupSample:
    return GroupSample(verdicts=(True,) * n, retrieval=(True,) * n, decided=True)


def test_balance_equalises_lambda_over_mutual_gap_groups() -> None:
    # short has 1 form per gap group and 3 per answered group, long the opposite: λ differs a lot
    samples = {
        "short": {"g1": gap(1), "g2": gap(1), "r1": robust(3), "r2": robust(3)},
        "long": {"g1": gap(3), "g2": gap(3), "r1": robust(1), "r2": robust(1)},
    }
    b = balance(samples, seed=7)
    assert (b.forms_per_group, b.groups, b.mutual_gap_groups) == (3, 4, 2)
    s, lg = b.sides["short"], b.sides["long"]
    assert s.lambda_ == lg.lambda_ == 0.5  # unbalanced: 2/8 vs 6/8
    assert s.accuracy == lg.accuracy == 0.5  # the same knowledge, the same accuracy
    assert s.refined_accuracy == lg.refined_accuracy == 1.0
    assert (s.examples, s.refined_n, s.retrieval_judged) == (12, 6, 12)


def test_balance_is_seeded_and_reports_k() -> None:
    mixed = GroupSample(verdicts=(True, False, True, False, True), decided=True)
    samples = {"a": {"g": mixed, "h": robust(2)}, "b": {"g": mixed, "h": robust(2)}}
    one = balance(samples, seed=3, forms_per_group=2)
    assert one == balance(samples, seed=3, forms_per_group=2)
    assert one.seed == 3 and one.forms_per_group == 2
    assert {balance(samples, seed=s, forms_per_group=2).sides["a"].correct for s in range(30)} > {4}


def test_only_shared_groups_and_undecided_ones_count_for_retrieval_only() -> None:
    unjudged = GroupSample(verdicts=(), retrieval=(True, False), decided=False)
    samples = {
        "short": {"g": unjudged, "only_short": robust(3)},
        "long": {"g": GroupSample(retrieval=(True,)), "only_long": robust(3)},
    }
    b = balance(samples)
    assert (b.groups, b.retrieval_groups, b.forms_per_group) == (0, 1, 2)
    assert b.sides["short"].accuracy is None and b.sides["short"].retrieval_judged == 2
    assert b.sides["long"].retrieval_accuracy == 1.0  # one form, drawn twice


@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 4), st.booleans(), st.booleans()),
        min_size=1,
        max_size=20,
    ),
    st.integers(0, 1000),
)
def test_balanced_lambda_is_always_equal(
    groups: list[tuple[int, int, bool, bool]], seed: int
) -> None:
    samples: dict[str, dict[str, GroupSample]] = {"a": {}, "b": {}}
    for i, (na, nb, gap_a, gap_b) in enumerate(groups):
        samples["a"][f"g{i}"] = gap(na) if gap_a else robust(na)
        samples["b"][f"g{i}"] = gap(nb) if gap_b else robust(nb)
    b = balance(samples, seed=seed)
    assert b.sides["a"].lambda_ == b.sides["b"].lambda_
    assert b.sides["a"].examples == b.sides["b"].examples == len(groups) * b.forms_per_group
