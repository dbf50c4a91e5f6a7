"""The series clock (issue 34): cycles are ordered by the series, not trusted from the message."""

from __future__ import annotations

import pytest

from groundwatch.core.cycles import MAX_CYCLE, MAX_CYCLE_JUMP, Epoch, SeriesClock

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


def test_the_default_bound_refuses_a_plausible_looking_jump() -> None:
    clock = SeriesClock()
    for c in range(1, 8):
        assert clock.place("s", c, NOW + 60 * c, NOW + 60 * c).cycle == c
    jump = clock.place("s", 7 + 1000, NOW + 60 * 8, NOW + 60 * 8)
    assert jump.cycle is None
    assert "1000 cycles ahead of its newest cycle 7" in jump.reason
    assert f"at most {MAX_CYCLE_JUMP}" in jump.reason and "GW_MAX_CYCLE_JUMP" in jump.reason
    assert clock.place("s", 7 + MAX_CYCLE_JUMP, NOW + 60 * 8, NOW + 60 * 8).cycle == 107
    tight = SeriesClock(max_ahead=3)
    tight.place("s", 1, NOW, NOW)
    assert tight.place("s", 5, NOW + 1, NOW + 1).cycle is None
    assert tight.place("s", 4, NOW + 1, NOW + 1).cycle == 4


def test_with_the_generators_epoch_one_message_cannot_fake_a_restart() -> None:
    """Before: one judgement at newest + k made the next real cycle read as a restart (stored
    as cycle newest + k + 1 with an epoch offset). With the generator's epoch on every message,
    the real cycle is of the same epoch: placed as numbered, no epoch opened."""
    epoch = NOW + 60
    clock = SeriesClock()
    for c in range(1, 6):
        assert clock.place("s", c, NOW + 60 * c, NOW + 60 * c, epoch).cycle == c
    forged = clock.place("s", 5 + 50, NOW + 60 * 6, NOW + 60 * 6, epoch)
    assert forged.cycle == 55 and forged.epoch is None  # within the bound: it counts, alone
    real = clock.place("s", 6, NOW + 60 * 7, NOW + 60 * 7, epoch)
    assert real.cycle == 6 and real.epoch is None
    assert [e.offset for e in clock.epochs("s")] == [0]
    # the same without epochs (messages of schema version < 5): the start times decide
    legacy = SeriesClock()
    for c in range(1, 6):
        legacy.place("s", c, NOW + 60 * c, NOW + 60 * c)
    legacy.place("s", 55, NOW + 60 * 6, NOW + 60 * 6)
    assert legacy.place("s", 6, NOW + 60 * 7, NOW + 60 * 7).epoch is not None


def test_a_new_generator_epoch_is_a_restart_and_old_ones_keep_their_place() -> None:
    first, second = NOW + 60, NOW + 3600
    clock = SeriesClock()
    for c in (1, 2, 3):
        clock.place("s", c, NOW + 60 * c, NOW + 60 * c, first)
    opened = clock.place("s", 1, second, second, second)
    assert opened.cycle == 4 and opened.epoch == Epoch("s", second, 3, 1)
    assert clock.place("s", 2, second + 60, second + 60, second).cycle == 5
    # a late judgement of the first numbering, placed by its own epoch
    assert clock.place("s", 3, NOW + 180, second + 120, first).cycle == 3
    # an unstamped message that looks like a restart does not open one on a stamped series
    assert clock.place("s", 1, second + 600, second + 600).epoch is None
    # restored from the store (only restarts are stored): the first numbering is still there
    restored = SeriesClock()
    restored.restore(clock.epochs("s")[1:], clock.newest_placed())
    assert restored.place("s", 2, NOW + 120, second + 200, first).cycle == 2
    assert restored.place("s", 3, second + 120, second + 200, second).cycle == 6


def test_a_later_epoch_whose_numbers_go_on_is_the_same_numbering() -> None:
    """A generator whose store lost its oldest cycles' records (retention) stamps a later epoch
    but numbers on: that is no restart."""
    clock = SeriesClock()
    for c in (1, 2, 3):
        clock.place("s", c, NOW + 60 * c, NOW + 60 * c, NOW + 60)
    moved = clock.place("s", 4, NOW + 240, NOW + 240, NOW + 180)
    assert moved.cycle == 4 and moved.epoch is None
    assert [e.offset for e in clock.epochs("s")] == [0]
