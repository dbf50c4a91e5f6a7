"""Retention as the services and the CLI use it: a pruning run, the store's numbers, the
pruner beside analytics' consume loop, its ``/metrics`` and the start-up size warning.

The pruner runs in a worker thread between its own short transactions (a SQLite batch, one
cycle's summaries, one partition drop), so the consume loop's batches interleave with it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily

from groundwatch.app.settings import RetentionSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from sqlalchemy import Engine

    from groundwatch.adapters.db.retention import PruneReport, Retention, StoreStats
    from groundwatch.core.tagging import Window

log = logging.getLogger("groundwatch.retention")


def retention_for(
    engine: Engine, settings: RetentionSettings | None = None, window: Window | None = None
) -> Retention:
    from groundwatch.adapters.db.retention import Retention

    return Retention(engine, (settings or RetentionSettings()).policy(), window=window)


@dataclass(frozen=True, slots=True)
class WriteEstimate:
    """What the store's newest cycles imply: judgements and bytes a cycle, and — when they are a
    continuous run's, a cycle every ``GW_INTERVAL_S`` — cycles and bytes a day; bytes kept raw
    under the retention window either way.

    Separate runs (``run --once`` in CI) have no cadence of their own: two started back to back
    are no rate to multiply by a day (45 s apart made "1,919 cycles a day"), so they are
    projected per run (``cycles_per_day`` and ``per_day_bytes`` None)."""

    per_cycle: int
    cycles_per_day: float | None
    bytes_per_row: float
    per_day_bytes: float | None
    retained_bytes: float
    #: seconds between the newest two cycles' starts, and the configured cadence
    gap_s: float = 0.0
    interval_s: float = 60.0

    @property
    def per_cycle_bytes(self) -> float:
        return self.per_cycle * self.bytes_per_row

    @property
    def continuous(self) -> bool:
        return self.cycles_per_day is not None


def continuous_gap(gap_s: float, previous_s: float | None, interval_s: float) -> bool:
    """Whether two cycles ``gap_s`` apart (start to start; the first took ``previous_s``, None:
    unfinished) are a continuous run's at ``interval_s``: its loop starts a cycle every
    interval, or right after the previous one when that one overran it."""
    slack = max(1.0, 0.05 * interval_s)
    if abs(gap_s - interval_s) <= slack:
        return True
    overran = previous_s is not None and previous_s >= interval_s - slack
    return overran and previous_s is not None and 0 <= gap_s - previous_s <= slack


def write_estimate(
    engine: Engine, settings: RetentionSettings, interval_s: float | None = None
) -> WriteEstimate | None:
    """From the newest two cycles of the most recent series (``None``: fewer stored), at the
    configured cadence ``interval_s`` (default ``GW_INTERVAL_S``) when they are a continuous
    run's, else per run."""
    from sqlalchemy import func, select

    from groundwatch.adapters.db.tables import JudgementRow, RunRow
    from groundwatch.contracts import TRAFFIC_WINDOW_STATUS

    if interval_s is None:
        from groundwatch.app.settings import GeneratorSettings

        interval_s = GeneratorSettings().interval_s
    with engine.connect() as conn:
        runs = conn.execute(
            select(RunRow.run_id, RunRow.series, RunRow.started_at, RunRow.finished_at)
            # probe cycles: a traffic window's size is the users', not a schedule's
            .where(RunRow.series != "", RunRow.status != TRAFFIC_WINDOW_STATUS)
            .order_by(RunRow.started_at.desc())
            .limit(2)
        ).all()
        if len(runs) < 2 or runs[0].series != runs[1].series:
            return None
        per_cycle = int(
            conn.scalar(
                select(func.count())
                .select_from(JudgementRow)
                .where(JudgementRow.run_id == runs[1].run_id)
            )
            or 0
        )
    gap = (runs[0].started_at - runs[1].started_at).total_seconds()
    row = retention_for(engine, settings).bytes_per_judgement() or 1200.0
    if gap <= 0 or per_cycle == 0:
        return None
    took = runs[1].finished_at
    previous = None if took is None else (took - runs[1].started_at).total_seconds()
    if not continuous_gap(gap, previous, interval_s):
        kept = max(1, settings.retain_cycles)  # separate runs: no age to bound them by a day
        return WriteEstimate(per_cycle, None, row, None, kept * per_cycle * row, gap, interval_s)
    per_day = 86400.0 / max(gap, interval_s)  # the cadence, or the overrunning cycles' own
    kept_cycles = min(settings.retain_cycles, per_day * settings.retain_days or 1e18)
    return WriteEstimate(
        per_cycle,
        per_day,
        row,
        per_cycle * per_day * row,
        max(1.0, kept_cycles) * per_cycle * row,
        gap,
        interval_s,
    )


def warn_if_large(engine: Engine, settings: RetentionSettings) -> WriteEstimate | None:
    """Log a warning when the newest cycles imply more than ``store_warn_mb_per_day``."""
    est = write_estimate(engine, settings)
    limit = settings.store_warn_mb_per_day * 1e6
    if est is not None and limit and est.per_day_bytes is not None and est.per_day_bytes > limit:
        kept = (
            f"retention keeps ~{est.retained_bytes / 1e6:,.0f} MB of them raw"
            if settings.prune_interval_s > 0
            else "nothing prunes them (GW_PRUNE_INTERVAL_S=0)"
        )
        log.warning(
            "store: %s judgements a cycle x %.0f cycles a day x %.0f bytes = %.0f MB written a"
            " day, more than GW_STORE_WARN_MB_PER_DAY=%g; %s",
            est.per_cycle,
            est.cycles_per_day,
            est.bytes_per_row,
            est.per_day_bytes / 1e6,
            settings.store_warn_mb_per_day,
            kept,
        )
    return est


class Pruner:
    """Analytics' pruning loop: a run every ``prune_interval_s`` in a worker thread, the
    store's numbers kept for ``/metrics`` (read at scrape time, never computed there)."""

    def __init__(self, retention: Retention, settings: RetentionSettings) -> None:
        self.retention = retention
        self.settings = settings
        self.stats: StoreStats | None = None
        self.last: PruneReport | None = None
        self.runs = 0
        self._stop = threading.Event()

    def run_once(self) -> PruneReport:
        report = self.retention.prune(stop=self._stop.is_set)
        self.last = report
        self.runs += 1
        self.stats = self.retention.stats()
        return report

    async def loop(self) -> None:
        self.stats = await asyncio.to_thread(self.retention.stats)
        if self.settings.prune_interval_s <= 0:
            return
        while not self._stop.is_set():
            try:
                await asyncio.to_thread(self.run_once)
            except Exception as exc:  # a lock not granted, a database restarting: next run
                log.warning("store: pruning run failed (%s); retrying next interval", exc)
            await asyncio.sleep(self.settings.prune_interval_s)

    async def stop(self) -> None:
        self._stop.set()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        stats = self.stats
        if stats is None:
            return
        if stats.size_bytes is not None:
            size = GaugeMetricFamily("groundwatch_store_bytes", "Bytes the store takes on disk.")
            size.add_metric([], stats.size_bytes)
            yield size
        rows = GaugeMetricFamily(
            "groundwatch_store_rows", "Rows per store table.", labels=["table"]
        )
        for table, n in stats.rows.items():
            rows.add_metric([table], n)
        yield rows
        parts = GaugeMetricFamily(
            "groundwatch_store_partitions", "Time partitions of judgements (PostgreSQL)."
        )
        parts.add_metric([], stats.partitions)
        yield parts
        runs = GaugeMetricFamily("groundwatch_store_prune_runs", "Pruning runs since start.")
        runs.add_metric([], self.runs)
        yield runs

    def register(self, registry: CollectorRegistry) -> None:
        registry.register(self)


def prune_store(url: str, name: str, *, dry_run: bool) -> tuple[PruneReport, StoreStats]:
    """One pruning run on the store at ``url`` (``store prune``), and its numbers after."""
    from groundwatch.adapters.db import create_schema
    from groundwatch.adapters.db.engine import open_engine
    from groundwatch.core.tagging import Window
    from groundwatch.runtime.evidence_settings import evidence_rule

    engine = open_engine(url, name, read_only=dry_run)
    try:
        if not dry_run:
            create_schema(engine)
        settings = RetentionSettings(prune_duty=1.0)  # an operator's run: no pauses
        retention = retention_for(engine, settings, Window(runs=1, evidence=evidence_rule()))
        report = retention.prune(dry_run=dry_run)
        return report, retention.stats()
    finally:
        engine.dispose()


def store_stats(url: str, name: str) -> tuple[StoreStats, WriteEstimate | None]:
    from groundwatch.adapters.db.engine import open_engine

    engine = open_engine(url, name, read_only=True)
    try:
        settings = RetentionSettings()
        return retention_for(engine, settings).stats(), write_estimate(engine, settings)
    finally:
        engine.dispose()
