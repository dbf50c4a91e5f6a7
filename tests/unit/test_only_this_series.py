"""``run`` reports its own series and targets: the tagger reloads a shared store, and groups of
another series or target are left out of the report (and its CI gate)."""

from __future__ import annotations

import pytest

from groundwatch.app.runs import only_this_series
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window

pytestmark = pytest.mark.unit


def _obs(pid: str, target: str, cohort: str, gid: str, series: str) -> Observation:
    return Observation(
        pid, target, cohort, gid, f"{cohort}0", Verdict.CORRECT, series=series, cycle=1
    )


def test_groups_of_other_series_and_targets_are_left_out() -> None:
    tagger = Tagger(Window(runs=2))
    rows = [
        ("a", "t1", "short", "g1", "mine"),
        ("b", "t1", "long", "g1", "mine"),
        ("c", "t1", "short", "g2", "theirs"),
        ("d", "t1", "long", "g2", "theirs"),
        ("e", "t2", "short", "g1", "mine"),  # a target this run does not probe
        ("f", "t1", "short", "g3", "mine"),
    ]
    for r in rows:
        tagger.apply(_obs(*r))
    only_this_series(tagger, "mine", ["t1"])
    left = sorted((t.target, t.cohort, t.group_id) for t in tagger.tallies())
    assert left == [("t1", "long", "g1"), ("t1", "short", "g1"), ("t1", "short", "g3")]


def test_nothing_is_left_out_when_everything_is_this_runs() -> None:
    tagger = Tagger(Window(runs=2))
    for i in range(5):
        tagger.apply(_obs(f"p{i}", "t", "short", f"g{i}", "s"))
    only_this_series(tagger, "s", ["t"])
    assert len(list(tagger.tallies())) == 5
