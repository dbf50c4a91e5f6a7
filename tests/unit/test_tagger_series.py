"""Two monitoring series over the same groups in one store (a second `--series` on a store
another series filled): their cycles are numbered on their own, so a judgement of the other
series is no late one. The group starts afresh in the series that probes it, as a tagger that
saw only that series would have it, and its status counts stay whole."""

from __future__ import annotations

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import GroupStatus, Observation, Tagger, Window

pytestmark = pytest.mark.unit

C, W = Verdict.CORRECT, Verdict.INCORRECT


def cycle(series: str, n: int, verdicts: tuple[Verdict, Verdict]) -> list[Observation]:
    return [
        Observation(f"{series}-{n}-{i}", "t", "short", "g", f"f{i}", v, run_id=f"{series}{n}",
                    group_forms=2, series=series, cycle=n, at=float(n))
        for i, v in enumerate(verdicts)
    ]  # fmt: skip


def statuses(t: Tagger) -> dict[GroupStatus, int]:
    return {s: n for (_, _, s), n in t.status_counts().items() if n}


def test_another_series_starts_the_group_afresh_not_as_a_late_cycle() -> None:
    tagger = Tagger(Window(runs=1))
    for n in (3, 4):
        tagger.apply_many(cycle("nightly", n, (C, C)))
    tagger.apply_many(cycle("nightly", 5, (C, C)))  # closes cycle 4: robust
    assert tagger.tally("t", "short", "g").status is GroupStatus.ROBUST
    tagger.drain_transitions()

    applied = tagger.apply_many(cycle("mine", 1, (W, W)) + cycle("mine", 2, (W, W)))
    assert applied == 4  # none of them refused as older than the window
    t = tagger.tally("t", "short", "g")
    alone = Tagger(Window(runs=1))
    alone.apply_many(cycle("mine", 1, (W, W)) + cycle("mine", 2, (W, W)))
    assert (t.series, t.status, t.cycle) == ("mine", GroupStatus.GAP, 2)
    assert t == alone.tally("t", "short", "g")
    assert statuses(tagger) == statuses(alone) == {GroupStatus.GAP: 1}
    # emptying the group for the other series is no change of the group's status
    assert [tr.series for tr in tagger.drain_transitions()] == [
        tr.series for tr in alone.drain_transitions()
    ]

    tagger.apply_many(cycle("nightly", 6, (C, C)) + cycle("nightly", 7, (C, C)))
    back = tagger.tally("t", "short", "g")
    assert (back.series, back.status) == ("nightly", GroupStatus.ROBUST)
    assert statuses(tagger) == {GroupStatus.ROBUST: 1}
