"""Generator worker: publishes probe cycles for a dataset on the bus."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from groundwatch.adapters.bus.base import Bus
from groundwatch.adapters.bus.encode import to_outgoing
from groundwatch.contracts import Probe, Topics
from groundwatch.core.model import SemanticGroup
from groundwatch.stages.generator.planner import (
    FormFields,
    WithFresh,
    new_run_id,
    probes_for,
    sample_groups,
)

log = logging.getLogger(__name__)

BATCH = 500


#: Re-reads the SQL truth of the sampled groups; returns them with new answer versions and the
#: ids of the groups whose answer changed.
Refresher = Callable[[list[SemanticGroup]], Awaitable[tuple[list[SemanticGroup], list[str]]]]


@dataclass
class RunSummary:
    """One probing cycle: its place in the series and what it published."""

    run_id: str
    groups: int
    probes: int
    started_at: float
    finished_at: float = 0.0
    answers_changed: int = 0
    series: str = ""
    cycle: int = 0
    dataset_id: str = ""
    targets: list[str] = field(default_factory=list)


@dataclass
class GeneratorState:
    runs: list[RunSummary] = field(default_factory=list)
    published: int = 0
    running: bool = False


class GeneratorStage:
    """Runs probing cycles; each cycle asks every sampled group in all its forms."""

    def __init__(
        self,
        bus: Bus,
        topics: Topics,
        groups: Sequence[SemanticGroup],
        targets: Sequence[str],
        *,
        sample: int = 0,
        rate: float = 0.0,
        seed: int = 7,
        refresh: Refresher | None = None,
        on_publish: Callable[[list[Probe]], None] | None = None,
        series: str = "",
        first_cycle: int = 1,
        on_cycle: Callable[[RunSummary], Awaitable[None]] | None = None,
        epoch: float | None = None,
    ) -> None:
        """``series`` names the monitoring series (default: the first group's dataset) and
        ``first_cycle`` the number of the next cycle — the caller reads it from its store, so
        repeated runs against one database continue the series. ``on_cycle`` records each cycle
        (the runs table) when it starts. ``epoch``: when this numbering of the series began
        (its first cycle's start, read from the caller's store; None: it begins with the next
        cycle) — stamped on every probe, so analytics tells a restarted numbering by it."""
        self.refresh = refresh
        self.series = series or (groups[0].dataset_id if groups else "")
        self.next_cycle = max(1, first_cycle)
        self.epoch = epoch
        if self.next_cycle == 1:
            # A store without the series' cycles: a new series, or a generator restarted on a
            # fresh store. Analytics tells the two apart by the cycles' start times and continues
            # the series (an epoch); said here so the operator can match the two log lines.
            log.info(
                "series %r: no earlier cycle in this store; numbering starts at cycle 1"
                " (analytics continues an existing series after its newest cycle)",
                self.series,
            )
        else:
            log.info("series %r continues at cycle %d", self.series, self.next_cycle)
        self.on_cycle = on_cycle
        self.on_publish = on_publish
        self.bus = bus
        self.topics = topics
        # a list given is copied (the caller's to change); a dataset read from its file is
        # kept as it is, on disk
        self.groups: Sequence[SemanticGroup] = (
            list(groups) if isinstance(groups, list | tuple) else groups
        )
        #: the groups whose answer changed in the source, in their newest version
        self._fresh: dict[str, SemanticGroup] = {}
        self.targets = list(targets)
        self.sample = sample
        self.rate = rate
        self.rng = random.Random(seed)
        self.state = GeneratorState()
        self._stop = asyncio.Event()
        self._continuous: asyncio.Task[None] | None = None
        #: one cycle at a time, whoever asks (start-up runs, the continuous loop, POST /runs):
        #: two cycles at once interleaved their probes and their cycle numbers
        self._cycle_lock = asyncio.Lock()
        self._in_flight: RunSummary | None = None
        #: the forms' fields validated once, kept between cycles (see ``probes_for``)
        self._validated: FormFields = {}
        #: liveness: cycles being published and the monotonic time of the last sign of life
        self._publishing = 0
        self._beat = time.monotonic()

    @property
    def name(self) -> str:
        return "generator:cycles"

    def _heartbeat(self) -> None:
        self._beat = time.monotonic()

    def heartbeat_age(self) -> float | None:
        """Seconds since the cycle loop last showed it is alive — a batch published, a slice of
        the wait between continuous cycles; None while there is nothing to watch (no cycle in
        flight, continuous probing off)."""
        if not self._publishing and not self.state.running:
            return None
        return time.monotonic() - self._beat

    def failure(self) -> BaseException | None:
        """The error continuous probing ended with (it cannot go on: the service exits)."""
        task = self._continuous
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    @property
    def busy(self) -> bool:
        """A cycle is in flight (or waiting to start behind one)."""
        return self._cycle_lock.locked()

    @property
    def in_flight(self) -> RunSummary | None:
        """The cycle being published now, if any."""
        return self._in_flight

    async def run_cycle(self, run_id: str | None = None) -> RunSummary:
        """Publish one cycle; a cycle asked for while another is in flight starts after it."""
        self._publishing += 1
        self._heartbeat()
        try:
            async with self._cycle_lock:
                return await self._run_cycle(run_id)
        finally:
            self._publishing -= 1
            self._heartbeat()

    async def _run_cycle(self, run_id: str | None) -> RunSummary:
        run_id = run_id or new_run_id()
        current = WithFresh(self.groups, self._fresh) if self._fresh else self.groups
        chosen = sample_groups(current, self.sample, self.rng)
        cycle, self.next_cycle = self.next_cycle, self.next_cycle + 1
        summary = RunSummary(
            run_id,
            len(chosen),
            0,
            time.time(),
            series=self.series,
            cycle=cycle,
            dataset_id=chosen[0].dataset_id if chosen else "",
            targets=list(self.targets),
        )
        self._in_flight = summary
        try:
            return await self._publish_cycle(summary, chosen)
        finally:
            self._in_flight = None

    async def _publish_cycle(
        self, summary: RunSummary, chosen: Sequence[SemanticGroup]
    ) -> RunSummary:
        run_id, cycle = summary.run_id, summary.cycle
        if self.on_cycle is not None:
            await self.on_cycle(summary)
        if self.refresh is not None:
            # Ground truth that stays current: re-read the answers asked in this cycle.
            # (every asked group at once: a source re-read holds the cycle's groups)
            chosen, changed = await self.refresh(list(chosen))
            summary.answers_changed = len(changed)
            if changed:
                wanted = set(changed)
                self._fresh.update((g.group_id, g) for g in chosen if g.group_id in wanted)
        batch = []
        started = time.monotonic()
        stamp = datetime.fromtimestamp(summary.started_at, UTC)
        if self.epoch is None:
            self.epoch = summary.started_at  # the numbering begins with this cycle
        epoch = datetime.fromtimestamp(self.epoch, UTC)
        for probe in probes_for(
            chosen,
            self.targets,
            run_id,
            series=self.series,
            cycle=cycle,
            started_at=stamp,
            validated=self._validated,
            series_epoch=epoch,
        ):
            batch.append(probe)
            if len(batch) >= BATCH:
                await self._publish(batch, summary, started)
                batch = []
        if batch:
            await self._publish(batch, summary, started)
        summary.finished_at = time.time()
        self.state.runs.append(summary)
        log.info(
            "series %s cycle %d (run %s): %d groups, %d probes",
            self.series,
            cycle,
            run_id,
            summary.groups,
            summary.probes,
        )
        return summary

    async def _publish(self, batch: list[Probe], summary: RunSummary, started: float) -> None:
        await self.bus.publish_many(to_outgoing(batch, self.topics))
        self._heartbeat()
        if self.on_publish is not None:
            self.on_publish(batch)
        summary.probes += len(batch)
        self.state.published += len(batch)
        if self.rate > 0:
            ahead = summary.probes / self.rate - (time.monotonic() - started)
            if ahead > 0:
                await asyncio.sleep(ahead)

    async def run_forever(self, interval_s: float) -> None:
        """Continuous probing: a cycle every ``interval_s`` until stopped."""
        self._stop.clear()
        self.state.running = True
        try:
            while not self._stop.is_set():
                cycle_start = time.monotonic()
                await self.run_cycle()
                next_start = cycle_start + interval_s
                # the wait in slices, each a heartbeat: an hour between cycles is alive
                while not self._stop.is_set() and (left := next_start - time.monotonic()) > 0:
                    self._heartbeat()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), min(left, 5.0))
        finally:
            self.state.running = False

    def start_continuous(self, interval_s: float) -> bool:
        if self._continuous is not None and not self._continuous.done():
            return False
        self._continuous = asyncio.create_task(self.run_forever(interval_s))
        return True

    async def stop_continuous(self, wait_s: float | None = None) -> bool:
        """Stop continuous probing after the cycle in flight; False when it was not on. Waits
        for that cycle to end, at most ``wait_s`` (None: until it has): a cycle publishing
        thousands of probes at a set rate can take minutes, and a caller (an HTTP stop) must
        get its answer within a deadline — the loop ends on its own after the cycle."""
        task = self._continuous
        if task is None or task.done():
            return False
        self._stop.set()
        if wait_s is None:
            await task
        else:
            await asyncio.wait({task}, timeout=wait_s)
        return True

    @property
    def continuous_in_flight(self) -> bool:
        """Continuous probing is asked to stop but its last cycle is still being published."""
        task = self._continuous
        return task is not None and not task.done() and self._stop.is_set()
