"""The cycles of a monitoring series in the store: where the next cycle's number comes from.

Repeated ``groundwatch run --once`` calls against one database, and a restarted generator, are
consecutive cycles of the same series: the next number is one past the highest stored for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from groundwatch.adapters.db.tables import JudgementRow, RunRow, TallyRow
from groundwatch.contracts import TRAFFIC_WINDOW_STATUS


def next_cycle(engine: Engine, series: str) -> int:
    """One past the highest cycle of ``series`` in the runs table or among stored judgements."""
    with Session(engine) as s:
        runs = s.scalar(select(func.max(RunRow.cycle)).where(RunRow.series == series))
        judged = s.scalar(select(func.max(JudgementRow.cycle)).where(JudgementRow.series == series))
    return max(runs or 0, judged or 0) + 1


def series_epoch(engine: Engine, series: str) -> float | None:
    """When this store's numbering of ``series`` began: its earliest recorded cycle's start
    (None: no cycle recorded, the numbering begins with the next one)."""
    with Session(engine) as s:
        first = s.scalar(select(func.min(RunRow.started_at)).where(RunRow.series == series))
    if first is None:
        return None
    if first.tzinfo is None:  # SQLite keeps no zone: stored as UTC
        first = first.replace(tzinfo=UTC)
    return float(first.timestamp())


def series_group_ids(engine: Engine, series: str) -> set[str]:
    """The semantic groups the store tallies for ``series`` (any target, any cohort)."""
    with Session(engine) as s:
        return set(s.scalars(select(TallyRow.group_id).where(TallyRow.series == series).distinct()))


def record_cycle(
    engine: Engine,
    *,
    run_id: str,
    series: str,
    cycle: int,
    dataset_id: str,
    targets: list[str],
    started_at: float,
) -> None:
    """The cycle in the runs table (``groundwatch runs`` lists them)."""
    with Session(engine) as s, s.begin():
        s.merge(
            RunRow(
                run_id=run_id,
                dataset_id=dataset_id[:64],
                series=series[:128],
                cycle=cycle,
                targets=list(targets),
                status="running",
                started_at=datetime.fromtimestamp(started_at, UTC),
            )
        )


def latest_cycle(engine: Engine, series: str | None = None) -> tuple[str, int] | None:
    """(series, cycle) of the most recent stored cycle — of ``series``, or of any probed series
    (a window of users' traffic is a cycle of its own series, asked for by name)."""
    with Session(engine) as s:
        q = select(RunRow.series, RunRow.cycle).order_by(RunRow.started_at.desc()).limit(1)
        if series is not None:
            q = q.where(RunRow.series == series)
        else:
            q = q.where(RunRow.status != TRAFFIC_WINDOW_STATUS)
        row = s.execute(q).first()
    return (row[0], row[1]) if row is not None else None


def finish_cycle(engine: Engine, run_id: str, *, probes: int, status: str = "finished") -> None:
    """Mark a cycle done with its probe count (``groundwatch runs`` shows it)."""
    with Session(engine) as s, s.begin():
        row = s.get(RunRow, run_id)
        if row is not None:
            row.probes = probes
            row.status = status
            row.finished_at = datetime.now(UTC)


def list_runs(engine: Engine, *, series: str | None = None, limit: int = 50) -> list[RunSummaryRow]:
    """The latest stored runs, newest first, each with its judgements counted by verdict."""
    with Session(engine) as s:
        q = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.cycle.desc()).limit(limit)
        if series is not None:
            q = q.where(RunRow.series == series)
        runs = list(s.scalars(q))
        counts: dict[str, dict[str, int]] = {}
        if runs:
            rows = s.execute(
                select(JudgementRow.run_id, JudgementRow.verdict, func.count())
                .where(JudgementRow.run_id.in_([r.run_id for r in runs]))
                .group_by(JudgementRow.run_id, JudgementRow.verdict)
            )
            for run_id, verdict, n in rows:
                counts.setdefault(run_id, {})[verdict] = n
    return [
        RunSummaryRow(
            run_id=r.run_id,
            series=r.series,
            cycle=r.cycle,
            dataset_id=r.dataset_id,
            targets=[str(t) for t in r.targets or []],
            status=r.status,
            probes=r.probes,
            started_at=r.started_at,
            finished_at=r.finished_at,
            verdicts=counts.get(r.run_id, {}),
        )
        for r in runs
    ]


@dataclass(frozen=True, slots=True)
class RunSummaryRow:
    """One stored run as ``groundwatch runs`` lists it."""

    run_id: str
    series: str
    cycle: int
    dataset_id: str
    targets: list[str]
    status: str
    probes: int
    started_at: datetime
    finished_at: datetime | None
    verdicts: dict[str, int]
