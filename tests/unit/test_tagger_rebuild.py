"""A rebuild (start-up, rebalance) reaches exactly the state of applying the same observations
one by one, with the numbers derived once per group at the end."""

from __future__ import annotations

import random

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window

pytestmark = pytest.mark.unit


def observations(seed: int) -> list[Observation]:
    rng = random.Random(seed)
    verdicts = [Verdict.CORRECT] * 5 + [Verdict.INCORRECT] * 3 + [Verdict.ERROR, Verdict.UNDECIDED]
    out = []
    for cycle in range(1, 10):
        for g in range(40):
            forms = 1 + g % 3
            for cohort in ("short", "long"):
                for f in range(forms):
                    if rng.random() < 0.1:
                        continue  # a form missing from a cycle
                    out.append(
                        Observation(
                            f"c{cycle}-{g}-{cohort}-{f}",
                            "t1" if g % 5 else "base",
                            cohort,
                            f"g{g}",
                            f"{cohort}{f}",
                            rng.choice(verdicts),
                            run_id=f"r{cycle}",
                            group_forms=forms,
                            series="s",
                            cycle=cycle,
                            truth_version=1 + (cycle > 6 and g % 7 == 0),
                        )
                    )
    # stored order is by cycle; a few late verdicts and repeats on top
    late = rng.sample(out, 30)
    return out + late


def state(t: Tagger) -> tuple[object, ...]:
    return (
        sorted(t.tallies(), key=lambda x: (x.target, x.cohort, x.group_id)),
        sorted(t.status_counts().items()),
        sorted(t.verdict_counts().items()),
        t.cohort_numbers(),
        len(t),
        sorted(t.knowledge_gaps("t1")),
    )


@pytest.mark.parametrize("window", [None, 1, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_rebuild_equals_applying_one_by_one(window: int | None, seed: int) -> None:
    obs = observations(seed)
    one_by_one = Tagger(Window(runs=window), open_domain_baseline="base")
    n1 = one_by_one.apply_many(obs)
    rebuilt = Tagger(Window(runs=window), open_domain_baseline="base")
    n2 = rebuilt.rebuild(obs)
    assert n1 == n2
    assert state(rebuilt) == state(one_by_one)
    # and it goes on the same way
    more = [
        Observation("new", "t1", "short", "g1", "short0", Verdict.INCORRECT, series="s", cycle=10)
    ]
    one_by_one.apply_many(more)
    rebuilt.apply_many(more)
    assert state(rebuilt) == state(one_by_one)
