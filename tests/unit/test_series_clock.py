"""The series clock (issue 34): cycles are ordered by the series, not trusted from the message."""

from __future__ import annotations

import pytest

from groundwatch.core.cycles import MAX_CYCLE, Epoch, SeriesClock

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


def test_a_restarted_numbering_continues_the_series() -> None:
    clock = SeriesClock()
    for c in range(1, 58):
        assert clock.place("s", c, NOW + 60 * c, NOW + 60 * c).cycle == c
    # a generator restarted on a fresh store: cycle 1 again, started after cycle 57
    p = clock.place("s", 1, NOW + 60 * 58, NOW + 60 * 58)
    assert p.cycle == 58 and p.epoch == Epoch("s", NOW + 60 * 58, 57, 1)
    assert clock.place("s", 1, NOW + 60 * 58, NOW + 60 * 58).cycle == 58  # its other forms
    assert clock.place("s", 2, NOW + 60 * 59, NOW + 60 * 59).cycle == 59
    # a late judgement of the old numbering keeps its place
    assert clock.place("s", 56, NOW + 60 * 56, NOW + 60 * 60).cycle == 56
    assert [e.offset for e in clock.epochs("s")] == [0, 57]


def test_a_restart_on_the_same_number_is_a_restart() -> None:
    clock = SeriesClock()
    assert clock.place("s", 1, NOW, NOW).cycle == 1
    assert clock.place("s", 1, NOW + 60, NOW + 60).cycle == 2


def test_impossible_cycles_are_refused_with_their_reason() -> None:
    clock = SeriesClock(max_ahead=1000)
    for c in range(1, 6):
        clock.place("s", c, NOW + c, NOW + c)
    far = clock.place("s", MAX_CYCLE, NOW + 6, NOW + 6)
    assert far.cycle is None and "ahead of its newest cycle 5" in far.reason
    future = clock.place("s", 6, NOW + 86_400, NOW + 6)
    assert future.cycle is None and "in the future" in future.reason
    # neither moved the series: the next real cycle is placed as usual
    assert clock.place("s", 6, NOW + 7, NOW + 7).cycle == 6


def test_cycles_without_a_series_or_a_start_are_taken_as_they_come() -> None:
    clock = SeriesClock()
    assert clock.place("", 7, None, NOW).cycle == 7
    assert clock.place("s", 0, None, NOW).cycle == 0
    assert clock.place("s", 3, None, NOW).cycle == 3
    assert clock.place("s", 1, None, NOW).cycle == 1  # no start: no restart can be told


def test_restore_places_as_before() -> None:
    live = SeriesClock()
    for c in (1, 2, 3):
        live.place("s", c, NOW + c, NOW + c)
    live.place("s", 1, NOW + 10, NOW + 10)  # restart: counts as 4
    restored = SeriesClock()
    restored.restore(live.epochs("s"), live.newest_placed())
    assert restored.place("s", 2, NOW + 11, NOW + 11).cycle == 5
    assert restored.place("s", 3, NOW + 3, NOW + 12).cycle == 3  # late, old numbering
    # a restored clock whose newest start is a lower bound (the first probe's time) still
    # tells a restart from a late judgement
    bound = SeriesClock()
    bound.restore([], {"s": (9, NOW + 100)})
    assert bound.place("s", 8, NOW + 90, NOW + 120).cycle == 8
    assert bound.place("s", 1, NOW + 200, NOW + 200).cycle == 10


def test_adopt_takes_the_stored_offset() -> None:
    clock = SeriesClock()
    clock.place("s", 5, NOW, NOW)
    proposed = clock.place("s", 1, NOW + 10, NOW + 10).epoch
    assert proposed is not None and proposed.offset == 5
    clock.adopt(Epoch("s", NOW + 10, 7, 1))  # another instance stored it first, at +7
    assert clock.place("s", 1, NOW + 10, NOW + 10).cycle == 8
