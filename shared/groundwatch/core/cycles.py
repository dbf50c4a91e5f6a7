"""Where a judgement's cycle stands in its monitoring series: the series orders cycles, the
message only claims a number.

A group's window keeps its newest cycles by number, so a number that is wrong does real harm:
a generator restarted on a fresh store numbers its cycles from 1 again, and every judgement of
the new cycles was older than the windows — stored, and never counted; one judgement claiming
cycle 2^31−1 became every window's newest and froze its group. The clock places each cycle
before the tagger sees it:

* a restart of the numbering is told by the **generator's own epoch**, stamped on every message
  (``series_epoch``: when its numbering began, its first cycle's start, kept in its store): an
  epoch later than every known one, on a cycle number the series has passed, opens a new
  **epoch** of the series, whose cycles continue it
  after the newest one (cycle 1 of the new epoch counts as newest + 1) — said in a log line and
  kept in the store, so every analytics instance and every rebuild places them alike. A message
  of a known epoch is placed by that epoch whatever its number, so no single message — a forged
  or corrupted cycle number — can make the next real cycle look like a restart;
* messages without an epoch (schema versions before 5) fall back to the cycles' start times: a
  cycle that **started later** than the series' newest cycle but has a number **not above it**
  is a restart (never for a series whose messages carry epochs);
* a cycle number more than ``max_ahead`` above the series' newest (``GW_MAX_CYCLE_JUMP``), or
  a start (or an epoch) more than ``max_future_s`` ahead of the clock, is impossible: refused
  with the reason (the caller dead-letters it), never applied;
* a late judgement of an older cycle keeps its place (its epoch's offset), and the tagger
  decides whether the group's window still holds that cycle.

Cycle 0 (an imported batch result) and messages without a series or a start time are placed
as they come: there is nothing to order them by. The first cycle the clock ever sees of a
series is taken as it comes too (nothing to compare it with).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: The largest cycle a store's integer columns hold.
MAX_CYCLE = 2**31 - 1
#: Epoch stamps this close are one epoch (a stored float read back through a timestamp column).
_SAME_EPOCH_S = 0.001


@dataclass(frozen=True, slots=True)
class Epoch:
    """A run of a series' numbering: its cycles count as ``cycle + offset`` in the series."""

    series: str
    started_at: float  # epoch seconds: when the epoch's first cycle started
    offset: int
    first_cycle: int


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one judgement counts: ``cycle`` in the series, or ``None`` with the ``reason``."""

    cycle: int | None
    reason: str = ""
    #: The epoch this judgement opened (the caller stores it and says so), if it opened one.
    epoch: Epoch | None = None


@dataclass(slots=True)
class _Series:
    epochs: list[Epoch]  # ascending by start
    newest: int  # the newest cycle number of the last epoch
    newest_started: float | None
    #: the series' messages carry the generator's epoch: no restart is guessed from start times
    stamped: bool = False


#: Default of ``GW_MAX_CYCLE_JUMP``: cycles a judgement may claim above its series' newest.
#: Consecutive cycles are one apart; a consumer reading partitions unevenly (a replay, a backlog)
#: sees a few more; a hundred is far beyond both and far below a number that freezes windows.
MAX_CYCLE_JUMP = 100


class SeriesClock:
    """Places each judgement's cycle in its series (see the module). One per analytics
    instance, owned by its consume loop; restored from the stored epochs on start-up."""

    def __init__(self, *, max_ahead: int = MAX_CYCLE_JUMP, max_future_s: float = 3600.0) -> None:
        self.max_ahead = max_ahead
        self.max_future_s = max_future_s
        self._series: dict[str, _Series] = {}

    def restore(self, epochs: Iterable[Epoch], newest: dict[str, tuple[int, float | None]]) -> None:
        """Start from stored state: every epoch of every series, and per series its newest
        cycle *as the series counts it* with (a lower bound of) that cycle's start."""
        by: dict[str, list[Epoch]] = {}
        for e in epochs:
            by.setdefault(e.series, []).append(e)
        self._series = {}
        for series, (placed, started) in newest.items():
            eps = sorted(by.get(series, ()), key=lambda e: e.started_at)
            if not eps:
                eps = [Epoch(series, started or 0.0, 0, placed)]
            elif eps[0].offset != 0:
                # the first numbering is never stored (only restarts are): it is there all
                # the same, before every stored epoch, for a late message of it
                eps.insert(0, Epoch(series, 0.0, 0, 1))
            self._series[series] = _Series(eps, placed - eps[-1].offset, started)

    def newest_placed(self) -> dict[str, tuple[int, float | None]]:
        """Per series: its newest cycle as the series counts it, and that cycle's start (what
        :meth:`restore` takes back)."""
        return {
            name: (s.newest + s.epochs[-1].offset, s.newest_started)
            for name, s in self._series.items()
        }

    def epochs(self, series: str) -> list[Epoch]:
        s = self._series.get(series)
        return list(s.epochs) if s is not None else []

    def place(
        self,
        series: str,
        cycle: int,
        started_at: float | None,
        now: float,
        stamp: float | None = None,
    ) -> Placement:
        """Where cycle ``cycle`` (started at ``started_at``) of ``series`` counts; ``stamp``: the
        generator's epoch the message carries (None: an older message without one)."""
        if not series or cycle == 0:
            return Placement(cycle)
        if stamp is not None and stamp > now + self.max_future_s:
            return Placement(
                None,
                f"cycle {cycle} of series {series!r} has its epoch {stamp - now:.0f} s in the"
                f" future (more than {self.max_future_s:.0f} s): a wrong clock or a forged epoch",
            )
        if started_at is not None and started_at > now + self.max_future_s:
            return Placement(
                None,
                f"cycle {cycle} of series {series!r} starts {started_at - now:.0f} s in the"
                f" future (more than {self.max_future_s:.0f} s): a wrong clock or a forged cycle",
            )
        s = self._series.get(series)
        if s is None:
            start = stamp if stamp is not None else started_at or 0.0
            self._series[series] = _Series(
                [Epoch(series, start, 0, cycle)], cycle, started_at, stamped=stamp is not None
            )
            return Placement(cycle)
        if stamp is not None:
            return self._place_stamped(s, series, cycle, started_at, stamp)
        last = s.epochs[-1]
        if started_at is not None and started_at < last.started_at:
            # a late judgement of a cycle of an earlier epoch: its own epoch's offset
            epoch = s.epochs[0]
            for e in s.epochs:
                if e.started_at <= started_at:
                    epoch = e
            return self._within(series, cycle, cycle + epoch.offset)
        if (
            not s.stamped
            and started_at is not None
            and s.newest_started is not None
            and started_at > s.newest_started
            and cycle <= s.newest
        ):
            # started after the newest cycle, numbered as if before it: the numbering restarted
            newest = s.newest + last.offset
            epoch = Epoch(series, started_at, newest + 1 - cycle, cycle)
            placed = self._within(series, cycle, cycle + epoch.offset)
            if placed.cycle is None:
                return placed
            s.epochs.append(epoch)
            s.newest, s.newest_started = cycle, started_at
            return Placement(placed.cycle, epoch=epoch)
        return self._advance(s, series, cycle, started_at)

    def _advance(self, s: _Series, series: str, cycle: int, started_at: float | None) -> Placement:
        """A cycle of the series' last epoch: within the bound of its newest, or refused."""
        last = s.epochs[-1]
        if cycle > s.newest + self.max_ahead:
            return Placement(
                None,
                f"cycle {cycle} of series {series!r} is {cycle - s.newest} cycles ahead of its"
                f" newest cycle {s.newest + last.offset} (at most {self.max_ahead},"
                " GW_MAX_CYCLE_JUMP): impossible for the series",
            )
        if cycle > s.newest:
            s.newest, s.newest_started = cycle, started_at
        elif cycle == s.newest and s.newest_started is None:
            s.newest_started = started_at
        return self._within(series, cycle, cycle + last.offset)

    def _place_stamped(
        self, s: _Series, series: str, cycle: int, started_at: float | None, epoch: float
    ) -> Placement:
        """A message that carries its generator's epoch: placed by that epoch."""
        s.stamped = True
        last = s.epochs[-1]
        if epoch > last.started_at + _SAME_EPOCH_S and cycle <= s.newest:
            # the generator began a new numbering after every known one, from a number already
            # passed: a restart (a later epoch whose numbers go on upwards is the same numbering
            # read from a store that lost its oldest cycles: placed as numbered, below)
            newest = s.newest + last.offset
            opened = Epoch(series, epoch, newest + 1 - cycle, cycle)
            placed = self._within(series, cycle, cycle + opened.offset)
            if placed.cycle is None:
                return placed
            s.epochs.append(opened)
            s.newest, s.newest_started = cycle, started_at
            return Placement(placed.cycle, epoch=opened)
        if epoch >= last.started_at - _SAME_EPOCH_S or len(s.epochs) == 1:
            return self._advance(s, series, cycle, started_at)
        # an earlier epoch's late message: that epoch's offset (the first known when older)
        own = s.epochs[0]
        for e in s.epochs:
            if e.started_at <= epoch + _SAME_EPOCH_S:
                own = e
        return self._within(series, cycle, cycle + own.offset)

    def adopt(self, epoch: Epoch) -> None:
        """Take ``epoch`` as stored (another instance opened it first, with its own offset) in
        place of the one :meth:`place` proposed at the same start."""
        s = self._series.get(epoch.series)
        if s is None:
            return
        s.epochs = sorted(
            [e for e in s.epochs if e.started_at != epoch.started_at] + [epoch],
            key=lambda e: e.started_at,
        )

    @staticmethod
    def _within(series: str, cycle: int, placed: int) -> Placement:
        if placed > MAX_CYCLE:
            return Placement(
                None, f"cycle {cycle} of series {series!r} would count as {placed}: past the end"
            )
        return Placement(placed)
