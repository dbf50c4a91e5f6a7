"""Retention: the store bounded in size while monitoring runs for months.

A monitoring cycle's raw judgements are kept while the cycle is among its series' newest
``cycles`` and younger than ``days``; then the cycle is rolled up into per-group summaries
(:class:`JudgementSummaryRow`: status, counts, each form's verdict, the answers of the forms whose
verdict changed) and its rows go. A stable group costs one summary row however many cycles it
stays stable, so a year of minute cycles is bounded by how often groups change, not by time.

How rows go, per dialect:

* PostgreSQL: ``judgements`` is partitioned by probe time (one partition per ``partition_hours``,
  made ahead of time here; a DEFAULT partition takes what no partition covers). A partition is
  dropped once every row in it belongs to a summarised cycle: no row-by-row delete on the hot
  table, no bloat left to vacuum.
* SQLite (and MySQL): the summarised cycle's rows are deleted ``batch`` at a time, one short
  transaction each (the consume loop's writes wait at most one batch), then SQLite's free pages
  are returned with ``PRAGMA incremental_vacuum``.

A run killed at any point leaves a store the next run continues: a cycle's summaries and its
ledger row (:class:`PrunedCycleRow`) are one transaction, so a cycle is summarised exactly once;
deletes of a ledgered cycle resume where they stopped, and a partition drop is one statement.
Pinned runs (:class:`PinnedRunRow`: a baseline ``diff`` compares against) are never pruned.

Dead letters and the LLM cache are bounded by age, old answer versions by count per group, the
summaries themselves by ``summary_days``. Expected answers that no judgement references any more
(their cycles pruned) are swept every ``expected_sweep_s`` (:mod:`groundwatch.adapters.db.expected`
says why that is safe beside writers that remember what they stored).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, delete, func, insert, select, text, tuple_, update

from groundwatch.adapters.db.expected import GENERATION, GENERATION_LOCK
from groundwatch.adapters.db.migrate import DEFAULT_PARTITION, PARTITION_PREFIX
from groundwatch.adapters.db.tables import (
    AnswerVersionRow,
    DeadLetterRow,
    ExpectedAnswerRow,
    JudgementRow,
    JudgementSummaryRow,
    LlmCacheRow,
    PinnedRunRow,
    PrunedCycleRow,
    RunRow,
    StoreCounterRow,
    TallyRow,
)
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import STALE_REASON, Observation, Tagger, Window

#: The tables ``store stats`` and ``/metrics`` count (the ones that grow).
COUNTED_TABLES = (
    "judgements",
    "judgement_summaries",
    "pruned_cycles",
    "group_tallies",
    "group_transitions",
    "runs",
    "answer_versions",
    "expected_answers",
    "dead_letters",
    "llm_cache",
)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How much the store keeps (``GW_RETAIN_*``, :class:`groundwatch.app.settings.
    RetentionSettings`). ``days`` 0: no age limit on raw judgements (``cycles`` alone);
    the other ages 0: kept for ever."""

    cycles: int = 60
    days: float = 1.0
    summary_days: float = 400.0
    dead_letter_days: float = 30.0
    llm_cache_days: float = 30.0
    answer_versions: int = 20
    #: seconds between sweeps of the expected answers no judgement references (each sweep
    #: reads every stored judgement's reference, one cycle a step; answers change by the day)
    expected_sweep_s: float = 3600.0
    batch: int = 1000
    partition_hours: int = 1
    #: partitions made ahead of the clock (PostgreSQL)
    partitions_ahead: int = 3
    #: the share of wall time a pruning run may hold the store: after each of its
    #: transactions it pauses (1 - duty) / duty times as long, so the consume loop's writes
    #: never wait behind it for long (1.0: no pauses — an operator's ``store prune``)
    duty: float = 1.0


@dataclass(frozen=True, slots=True)
class PrunableCycle:
    run_id: str
    series: str
    cycle: int


@dataclass
class PruneReport:
    """What a pruning run did (or, dry, would do)."""

    dry_run: bool = False
    cycles: list[PrunableCycle] = field(default_factory=list)
    judgements: int = 0
    summaries_written: int = 0
    summaries_extended: int = 0
    partitions: list[str] = field(default_factory=list)
    summaries_expired: int = 0
    dead_letters: int = 0
    llm_cache: int = 0
    answer_versions: int = 0
    #: expected answers no judgement references, removed (dry: that a sweep now would remove)
    expected_answers: int = 0
    vacuumed_pages: int = 0
    #: False when a ``stop`` request ended the run early (the next run continues)
    finished: bool = True


@dataclass(frozen=True, slots=True)
class StoreStats:
    """The store's size in bytes (``None``: the dialect does not tell) and rows per table."""

    dialect: str
    size_bytes: int | None
    rows: dict[str, int]
    partitions: int = 0
    #: SQLite: bytes in free pages (what ``incremental_vacuum`` can return)
    free_bytes: int = 0


class Retention:
    """Pruning and the store's numbers for one engine; ``clock``: epoch seconds (a fake one
    in tests and the benchmark's compressed time)."""

    def __init__(
        self,
        engine: Engine,
        policy: RetentionPolicy | None = None,
        *,
        window: Window | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.engine = engine
        self.sleep = sleep
        self.policy = policy or RetentionPolicy()
        #: the status a summary records is the tagger's over the cycle alone (window of 1)
        self.window = Window(runs=1, evidence=window.evidence) if window else Window(runs=1)
        self.clock = clock
        self.dialect = engine.dialect.name

    def _paced(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, then a pause that keeps this run's share of the store at ``duty``."""
        started = time.monotonic()
        out = fn(*args)
        duty = self.policy.duty
        if 0 < duty < 1:
            self.sleep((time.monotonic() - started) * (1 - duty) / duty)
        return out

    # ---- what is prunable -------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def prunable(self, limit: int | None = None) -> list[PrunableCycle]:
        """The cycles past the window, oldest first, not yet summarised and not pinned. A
        cycle stays while it is among its series' newest ``cycles``, and (``days`` > 0) while
        younger than ``days``; the newest cycle always stays, and so does every cycle a tally
        without a stored state still replays from (its ``history_from_cycle``)."""
        p = self.policy
        cutoff = self._now() - timedelta(days=p.days) if p.days > 0 else None
        out: list[PrunableCycle] = []
        with self.engine.connect() as conn:
            newest = dict(
                conn.execute(
                    select(RunRow.series, func.max(RunRow.cycle))
                    .where(RunRow.series != "")
                    .group_by(RunRow.series)
                ).all()
            )
            replayed = dict(
                conn.execute(
                    select(TallyRow.series, func.min(TallyRow.history_from_cycle))
                    .where(TallyRow.state.is_(None), TallyRow.series != "")
                    .group_by(TallyRow.series)
                ).all()
            )
            for series, top in sorted(newest.items()):
                by_count = int(top) - p.cycles
                keep_from = int(replayed.get(series, top))
                old = RunRow.cycle <= by_count
                if cutoff is not None:
                    old = old | (and_(RunRow.started_at < cutoff, RunRow.cycle < top))
                stmt = (
                    select(RunRow.run_id, RunRow.cycle)
                    .where(
                        RunRow.series == series,
                        old,
                        RunRow.cycle < keep_from,
                        ~select(PrunedCycleRow.run_id)
                        .where(PrunedCycleRow.run_id == RunRow.run_id)
                        .exists(),
                        ~select(PinnedRunRow.run_id)
                        .where(PinnedRunRow.run_id == RunRow.run_id)
                        .exists(),
                    )
                    .order_by(RunRow.cycle)
                )
                if limit is not None:
                    stmt = stmt.limit(limit - len(out))
                out += [PrunableCycle(r, series, int(c)) for r, c in conn.execute(stmt)]
                if limit is not None and len(out) >= limit:
                    break
        return out

    # ---- the run ------------------------------------------------------------------------------

    def prune(
        self, *, dry_run: bool = False, stop: Callable[[], bool] | None = None
    ) -> PruneReport:
        """One pruning run: partitions made ahead (PostgreSQL), cycles past the window
        summarised and their rows removed, the other tables bounded. ``dry_run``: only count
        what would go. ``stop`` (asked between steps): end early, the next run continues."""
        report = PruneReport(dry_run=dry_run)
        stopped = stop or (lambda: False)
        if not dry_run and self.dialect == "postgresql":
            self._paced(self.ensure_partitions)
        # every step paced, the reads too: a run that finds little to do still holds the
        # store (and, in process, the interpreter) no more than its duty
        report.cycles = self._paced(self.prunable) if not dry_run else self.prunable()
        if dry_run:
            report.judgements = self._count_rows(report.cycles)
            report.partitions = self._droppable_partitions(extra=report.cycles)
            self._bound_others(report, dry_run=True)
            report.expected_answers = self._unreferenced_expected(dry_run=True, stop=stopped)
            return report
        for cycle in report.cycles:
            if stopped():
                report.finished = False
                return report
            written, extended = self._paced(self.summarise, cycle)
            report.summaries_written += written
            report.summaries_extended += extended
        # rows of summarised cycles: what this run ledgered and what a killed run left behind
        if self.dialect == "postgresql":
            for name in self._droppable_partitions():
                if stopped():
                    report.finished = False
                    return report
                report.judgements += self._paced(self._drop_partition, name)
                report.partitions.append(name)
        report.judgements += self._delete_ledgered(stopped, report)
        if not report.finished:
            return report
        self._paced(lambda: self._bound_others(report, dry_run=False))
        report.expected_answers = self._unreferenced_expected(dry_run=False, stop=stopped)
        if stopped():
            report.finished = False
            return report
        if self.dialect == "sqlite":
            report.vacuumed_pages = self._incremental_vacuum()
        return report

    # ---- summaries ----------------------------------------------------------------------------

    def summarise(self, cycle: PrunableCycle) -> tuple[int, int]:
        """Roll ``cycle`` up into its groups' summaries and ledger it, in one transaction (a
        cycle is summarised once, whatever kills the process when). Returns (summary rows
        written, rows extended to this cycle)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(*_SUMMARY_COLUMNS).where(
                    JudgementRow.run_id == cycle.run_id,
                    JudgementRow.series == cycle.series,
                    JudgementRow.cycle == cycle.cycle,
                )
            ).all()
        groups = _cycle_groups(rows, self.window)
        written = extended = 0
        with self.engine.begin() as conn:
            # a ledger row first: a concurrent pruner (another instance) that ledgered the
            # cycle meanwhile makes this insert conflict, and this transaction rolls back
            conn.execute(
                insert(PrunedCycleRow).values(
                    run_id=cycle.run_id,
                    series=cycle.series,
                    cycle=cycle.cycle,
                    judgements=len(rows),
                    done=False,
                    pruned_at=self._now(),
                )
            )
            heads = _heads(conn, cycle.series, cycle.cycle, list(groups))
            new_rows: list[dict[str, Any]] = []
            extend: list[int] = []
            for key, g in groups.items():
                head = heads.get(key)
                if (
                    head is not None
                    and head["last_cycle"] == cycle.cycle - 1
                    and head["status"] == g["status"]
                    and head["counts"] == g["counts"]
                    and head["verdicts"] == g["verdicts"]
                ):
                    extend.append(head["id"])
                    continue
                before = head["verdicts"] if head is not None else {}
                changed = {
                    form: {
                        "from": before[form][0] if form in before else None,
                        "to": v[0],
                        "answer": g["answers"].get(form),
                    }
                    for form, v in g["verdicts"].items()
                    if form not in before or before[form][0] != v[0]
                }
                correct, incorrect, error, undecided = g["counts"]
                new_rows.append(
                    {
                        "series": cycle.series,
                        "target": key[0],
                        "cohort": key[1],
                        "group_id": key[2],
                        "dataset_id": g["dataset_id"],
                        "scenario": g["scenario"],
                        "group_forms": g["group_forms"],
                        "first_cycle": cycle.cycle,
                        "last_cycle": cycle.cycle,
                        "status": g["status"],
                        "correct": correct,
                        "incorrect": incorrect,
                        "error": error,
                        "undecided": undecided,
                        "verdicts": g["verdicts"],
                        "changed": changed,
                    }
                )
            for i in range(0, len(extend), 500):
                conn.execute(
                    update(JudgementSummaryRow)
                    .where(JudgementSummaryRow.id.in_(extend[i : i + 500]))
                    .values(last_cycle=cycle.cycle)
                )
            if new_rows:
                conn.execute(insert(JudgementSummaryRow), new_rows)
            written, extended = len(new_rows), len(extend)
        return written, extended

    # ---- removing rows ------------------------------------------------------------------------

    def _count_rows(self, cycles: Sequence[PrunableCycle]) -> int:
        total = 0
        with self.engine.connect() as conn:
            for i in range(0, len(cycles), 500):
                ids = [c.run_id for c in cycles[i : i + 500]]
                total += int(
                    conn.scalar(
                        select(func.count())
                        .select_from(JudgementRow)
                        .where(JudgementRow.run_id.in_(ids))
                    )
                    or 0
                )
        return total

    def _delete_ledgered(self, stopped: Callable[[], bool], report: PruneReport) -> int:
        """Delete the rows of ledgered cycles not yet done, ``batch`` rows per transaction
        (PostgreSQL: only from the DEFAULT partition — time partitions are dropped whole)."""
        deleted = 0
        with self.engine.connect() as conn:
            pending = [
                r
                for (r,) in conn.execute(
                    select(PrunedCycleRow.run_id)
                    .where(PrunedCycleRow.done.is_(False))
                    .order_by(PrunedCycleRow.series, PrunedCycleRow.cycle)
                )
            ]
        for run_id in pending:
            while True:
                if stopped():
                    report.finished = False
                    return deleted
                n = self._paced(self._delete_batch, run_id)
                deleted += n
                if n < self.policy.batch:
                    break
            with self.engine.begin() as conn:
                if self.dialect == "postgresql" and conn.scalar(
                    select(JudgementRow.probe_id).where(JudgementRow.run_id == run_id).limit(1)
                ):
                    continue  # rows in a time partition not yet droppable
                conn.execute(
                    update(PrunedCycleRow).where(PrunedCycleRow.run_id == run_id).values(done=True)
                )
        return deleted

    def _delete_batch(self, run_id: str) -> int:
        n = self.policy.batch
        with self.engine.begin() as conn:
            if self.dialect == "sqlite":
                sql = (
                    "DELETE FROM judgements WHERE rowid IN (SELECT rowid FROM judgements"
                    " WHERE run_id = :r LIMIT :n)"
                )
            elif self.dialect == "postgresql":
                sql = (
                    f"DELETE FROM {DEFAULT_PARTITION} WHERE ctid IN (SELECT ctid FROM"
                    f" {DEFAULT_PARTITION} WHERE run_id = :r LIMIT :n)"
                )
            else:
                sql = "DELETE FROM judgements WHERE run_id = :r LIMIT :n"
            deleted = int(conn.execute(text(sql), {"r": run_id, "n": n}).rowcount or 0)
        if self.dialect == "sqlite" and deleted:
            # the batch's pages copied from the WAL into the file here, by the pruner (paced
            # with the batch), not by whichever commit next crosses SQLite's auto-checkpoint
            # threshold: that would be the consume loop's; PASSIVE waits for no one
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        return deleted

    def _incremental_vacuum(self) -> int:
        """Return SQLite's free pages to the file system (a store made with auto_vacuum
        INCREMENTAL: every store since this schema; an older file needs one ``VACUUM``),
        ``VACUUM_PAGES`` a step, each step paced: moving pages is a write transaction, and
        one cycle's rows free thousands."""
        with self.engine.connect() as conn:
            mode = int(conn.exec_driver_sql("PRAGMA auto_vacuum").scalar() or 0)
            free = int(conn.exec_driver_sql("PRAGMA freelist_count").scalar() or 0)
        if mode != 2 or not free:
            return 0
        for _ in range(-(-free // VACUUM_PAGES)):
            self._paced(self._vacuum_step)
        return free

    def _vacuum_step(self) -> None:
        with self.engine.connect() as conn:
            # SQLite frees one page per step of the statement and the driver's execute steps
            # a statement without result columns once: executescript runs it to the end
            cursor = conn.connection.cursor()
            cursor.executescript(f"PRAGMA incremental_vacuum({VACUUM_PAGES});")
            cursor.close()

    # ---- partitions (PostgreSQL) ----------------------------------------------------------

    def _partition_bounds(self, at: float) -> tuple[datetime, datetime]:
        width = self.policy.partition_hours * 3600
        lo = int(at // width) * width
        return datetime.fromtimestamp(lo, UTC), datetime.fromtimestamp(lo + width, UTC)

    def ensure_partitions(self) -> list[str]:
        """The time partitions of the current and the next ``partitions_ahead`` periods, made
        if missing. A period whose rows already sit in the DEFAULT partition is left to it
        (PostgreSQL refuses the partition then): those rows are deleted in batches instead."""
        made: list[str] = []
        width = self.policy.partition_hours * 3600
        now = self.clock()
        existing = set(self.partitions())
        for k in range(self.policy.partitions_ahead + 1):
            lo, hi = self._partition_bounds(now + k * width)
            name = f"{PARTITION_PREFIX}{lo:%Y%m%d%H}"
            if name in existing:
                continue
            try:
                with self.engine.begin() as conn:
                    conn.exec_driver_sql("SET LOCAL lock_timeout = '2s'")
                    conn.exec_driver_sql(
                        f"CREATE TABLE {name} PARTITION OF judgements FOR VALUES FROM"
                        f" ('{lo.isoformat()}') TO ('{hi.isoformat()}')"
                    )
                made.append(name)
            except Exception:  # rows of the period in DEFAULT, or a lock not granted: next run
                continue
        return made

    def partitions(self) -> list[str]:
        """The time partitions of ``judgements``, oldest first (PostgreSQL; else none)."""
        if self.dialect != "postgresql":
            return []
        with self.engine.connect() as conn:
            names = conn.execute(
                text(
                    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                    " JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'judgements'"
                )
            ).scalars()
            return sorted(n for n in names if n.startswith(PARTITION_PREFIX))

    def _droppable_partitions(self, extra: Sequence[PrunableCycle] = ()) -> list[str]:
        """Time partitions that end before the current period and hold no row of a cycle
        that is not summarised (``extra``: cycles counted as summarised, for a dry run)."""
        if self.dialect != "postgresql":
            return []
        current = f"{PARTITION_PREFIX}{self._partition_bounds(self.clock())[0]:%Y%m%d%H}"
        ids = [c.run_id for c in extra]
        out = []
        with self.engine.connect() as conn:
            for name in self.partitions():
                if name >= current:
                    break
                kept = conn.execute(text(_UNSUMMARISED.format(name=name)), {"ids": ids}).first()
                if kept is None:
                    out.append(name)
        return out

    def _drop_partition(self, name: str) -> int:
        """Drop one time partition (a catalogue change: no row is deleted one by one); returns
        the rows it held (the planner's estimate is enough for the report)."""
        with self.engine.begin() as conn:
            conn.exec_driver_sql("SET LOCAL lock_timeout = '5s'")
            # locked, then checked again: a late judgement of a cycle not summarised, written
            # between the check and the drop, would go with the partition
            conn.exec_driver_sql(f"LOCK TABLE {name} IN ACCESS EXCLUSIVE MODE")
            unsummarised = text(_UNSUMMARISED.format(name=name))
            if conn.execute(unsummarised, {"ids": []}).first():
                return 0
            rows = conn.exec_driver_sql(
                f"SELECT reltuples::bigint FROM pg_class WHERE relname = '{name}'"
            ).scalar()
            conn.exec_driver_sql(f"DROP TABLE {name}")
        return max(0, int(rows or 0))

    # ---- the other tables --------------------------------------------------------------------

    def _bound_others(self, report: PruneReport, *, dry_run: bool) -> None:
        p = self.policy
        now = self._now()
        if p.dead_letter_days > 0:
            report.dead_letters = self._expire(
                DeadLetterRow.__table__,
                DeadLetterRow.id,
                DeadLetterRow.stored_at < now - timedelta(days=p.dead_letter_days),
                dry_run,
            )
        if p.llm_cache_days > 0:
            report.llm_cache = self._expire(
                LlmCacheRow.__table__,
                LlmCacheRow.key,
                LlmCacheRow.created_at < now - timedelta(days=p.llm_cache_days),
                dry_run,
            )
        if p.summary_days > 0:
            report.summaries_expired = self._expire_summaries(
                now - timedelta(days=p.summary_days), dry_run
            )
        if p.answer_versions > 0:
            report.answer_versions = self._expire_answer_versions(dry_run)

    def _expire(self, table: Any, key: Any, old: Any, dry_run: bool) -> int:
        """Delete the rows matching ``old``, ``batch`` keys per transaction."""
        if dry_run:
            with self.engine.connect() as conn:
                return int(conn.scalar(select(func.count()).select_from(table).where(old)) or 0)
        total = 0
        while True:
            with self.engine.begin() as conn:
                keys = list(conn.scalars(select(key).where(old).limit(self.policy.batch)))
                if keys:
                    conn.execute(delete(table).where(key.in_(keys)))
            total += len(keys)
            if len(keys) < self.policy.batch:
                return total

    def _expire_summaries(self, cutoff: datetime, dry_run: bool) -> int:
        """Summaries whose last cycle started before ``cutoff``."""
        total = 0
        with self.engine.connect() as conn:
            horizons = conn.execute(
                select(RunRow.series, func.max(RunRow.cycle))
                .where(RunRow.started_at < cutoff, RunRow.series != "")
                .group_by(RunRow.series)
            ).all()
        for series, horizon in horizons:
            old = and_(
                JudgementSummaryRow.series == series, JudgementSummaryRow.last_cycle <= horizon
            )
            total += self._expire(
                JudgementSummaryRow.__table__, JudgementSummaryRow.id, old, dry_run
            )
        return total

    def _expire_answer_versions(self, dry_run: bool) -> int:
        """Every group's answer versions but its newest ``answer_versions``."""
        a = AnswerVersionRow
        with self.engine.connect() as conn:
            newest = conn.execute(
                select(a.dataset_id, a.group_id, func.max(a.version))
                .group_by(a.dataset_id, a.group_id)
                .having(func.min(a.version) <= func.max(a.version) - self.policy.answer_versions)
            ).all()
        total = 0
        for dataset_id, group_id, top in newest:
            old = and_(
                a.dataset_id == dataset_id,
                a.group_id == group_id,
                a.version <= int(top) - self.policy.answer_versions,
            )
            key = tuple_(a.dataset_id, a.group_id, a.version)
            if dry_run:
                with self.engine.connect() as conn:
                    total += int(conn.scalar(select(func.count()).select_from(a).where(old)) or 0)
                continue
            with self.engine.begin() as conn:
                keys = [
                    tuple(r)
                    for r in conn.execute(select(a.dataset_id, a.group_id, a.version).where(old))
                ]
                if keys:
                    conn.execute(delete(a).where(key.in_(keys)))
                total += len(keys)
        return total

    # ---- expected answers ------------------------------------------------------------------

    def _unreferenced_expected(self, *, dry_run: bool, stop: Callable[[], bool]) -> int:
        """Delete (``dry_run``: count) the expected answers no stored judgement references,
        when a sweep is due. The generation is raised first (waiting for every writer in
        flight), the references are read after, and only rows of older generations go: an
        answer a writer references meanwhile is written with the new generation and stays."""
        if dry_run:
            older = None
        else:
            older = self._paced(self._raise_generation)
            if older is None:
                return 0
        referenced: set[str] = set()
        after: str | None = None
        while True:
            if stop():
                return 0
            step = (
                self._paced(self._references_after, after)
                if older is not None
                else (self._references_after(after))
            )
            if step is None:
                break
            after, refs = step
            referenced |= refs
        e = ExpectedAnswerRow
        with self.engine.connect() as conn:
            stmt = select(e.ref)
            if older is not None:
                stmt = stmt.where(e.gen <= older)
            doomed = sorted(set(conn.scalars(stmt)) - referenced)
        if older is None:
            return len(doomed)
        deleted = 0
        for i in range(0, len(doomed), self.policy.batch):
            if stop():
                break
            deleted += self._paced(self._delete_expected, doomed[i : i + self.policy.batch], older)
        return deleted

    def _raise_generation(self) -> int | None:
        """The expected answers' generation raised, if a sweep is due: returns the one before
        (the rows a sweep may remove are of it or older), ``None`` when not due."""
        c = StoreCounterRow
        now = self.clock()
        with self.engine.connect() as conn:
            at = conn.execute(select(c.at).where(c.name == GENERATION)).first()
        if (
            at is not None
            and at[0] is not None
            and now - float(at[0]) < self.policy.expected_sweep_s
        ):
            return None
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": GENERATION_LOCK})
            if at is None:  # a schema made without its migration
                conn.execute(insert(c).values(name=GENERATION, value=0, at=None))
            # waits for every writer that holds the generation (shared) to commit (PostgreSQL:
            # the advisory lock above did)
            conn.execute(update(c).where(c.name == GENERATION).values(value=c.value + 1, at=now))
            raised = int(conn.scalar(select(c.value).where(c.name == GENERATION)) or 0)
        return raised - 1

    def _references_after(self, after: str | None) -> tuple[str, set[str]] | None:
        """The next run (by id) after ``after`` that has stored judgements, and the expected
        answers they reference; ``None`` past the last."""
        j = JudgementRow
        with self.engine.connect() as conn:
            nxt = select(func.min(j.run_id))
            if after is not None:
                nxt = nxt.where(j.run_id > after)
            run_id = conn.scalar(nxt)
            if run_id is None:
                return None
            refs = conn.scalars(
                select(j.expected_ref)
                .where(j.run_id == run_id, j.expected_ref.is_not(None))
                .distinct()
            )
            return str(run_id), {str(r) for r in refs}

    def _delete_expected(self, refs: Sequence[str], older: int) -> int:
        e = ExpectedAnswerRow
        with self.engine.begin() as conn:
            return int(
                conn.execute(delete(e).where(e.ref.in_(list(refs)), e.gen <= older)).rowcount or 0
            )

    # ---- pins -----------------------------------------------------------------------------

    def pin(self, run_id: str, reason: str = "") -> None:
        """Keep ``run_id``'s raw judgements whatever the window (a baseline)."""
        with self.engine.begin() as conn:
            if conn.scalar(select(PinnedRunRow.run_id).where(PinnedRunRow.run_id == run_id)):
                return
            conn.execute(
                insert(PinnedRunRow).values(
                    run_id=run_id, reason=reason[:200], pinned_at=self._now()
                )
            )

    def unpin(self, run_id: str) -> bool:
        with self.engine.begin() as conn:
            return bool(
                conn.execute(delete(PinnedRunRow).where(PinnedRunRow.run_id == run_id)).rowcount
            )

    def pinned(self) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.scalars(select(PinnedRunRow.run_id).order_by(PinnedRunRow.run_id)))

    # ---- numbers ---------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        """Rows per table and the store's size (SQLite: the file's pages; PostgreSQL: every
        table's relations, partitions included; MySQL: data and index length)."""
        rows: dict[str, int] = {}
        size: int | None = None
        free = 0
        with self.engine.connect() as conn:
            for name in COUNTED_TABLES:
                rows[name] = int(conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar() or 0)
            if self.dialect == "sqlite":
                page = int(conn.exec_driver_sql("PRAGMA page_size").scalar() or 0)
                pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar() or 0)
                free = page * int(conn.exec_driver_sql("PRAGMA freelist_count").scalar() or 0)
                size = page * pages
            elif self.dialect == "postgresql":
                size = int(
                    conn.exec_driver_sql(
                        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                        " JOIN pg_namespace n ON n.oid = c.relnamespace"
                        " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
                    ).scalar()
                    or 0
                )
            elif self.dialect in ("mysql", "mariadb"):
                size = int(
                    conn.exec_driver_sql(
                        "SELECT coalesce(sum(data_length + index_length), 0) FROM"
                        " information_schema.tables WHERE table_schema = database()"
                    ).scalar()
                    or 0
                )
        return StoreStats(self.dialect, size, rows, len(self.partitions()), free)

    def bytes_per_judgement(self) -> float | None:
        """The judgements table's bytes per row as stored (indexes included), for the size
        estimates; ``None`` when it holds too few rows to tell."""
        with self.engine.connect() as conn:
            n = int(conn.scalar(select(func.count()).select_from(JudgementRow)) or 0)
            if n < 1000:
                return None
            if self.dialect == "sqlite":
                try:
                    used = conn.exec_driver_sql(
                        "SELECT sum(pgsize) FROM dbstat WHERE name = 'judgements'"
                        " OR tbl_name = 'judgements'"
                    ).scalar()
                except Exception:  # dbstat not compiled in: the whole file over its rows
                    page = int(conn.exec_driver_sql("PRAGMA page_size").scalar() or 0)
                    used = page * int(conn.exec_driver_sql("PRAGMA page_count").scalar() or 0)
            elif self.dialect == "postgresql":
                used = conn.exec_driver_sql(
                    "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM"
                    " pg_partition_tree('judgements')"
                ).scalar()
            else:
                return None
        return float(used or 0) / n


#: SQLite pages one paced step of ``incremental_vacuum`` returns (2 MB at the default page
#: size: about a sixth of a 10k-probe cycle's rows)
VACUUM_PAGES = 500

#: A row of partition ``{name}`` of a cycle neither summarised nor among ``:ids``.
_UNSUMMARISED = (
    "SELECT 1 FROM {name} j WHERE NOT EXISTS (SELECT 1 FROM pruned_cycles p"
    " WHERE p.run_id = j.run_id) AND NOT (j.run_id = ANY(:ids)) LIMIT 1"
)


#: What a summary is made of: the columns the tagger's status reads, and the answer. Not the
#: retrieved ids, scores or times: JSON and dates to decode (most of the cost of summarising a
#: cycle when read), which neither a status nor a summary holds.
_SUMMARY_COLUMNS = (
    JudgementRow.probe_id,
    JudgementRow.target,
    JudgementRow.cohort,
    JudgementRow.group_id,
    JudgementRow.form_id,
    JudgementRow.verdict,
    JudgementRow.run_id,
    JudgementRow.dataset_id,
    JudgementRow.scenario,
    JudgementRow.group_forms,
    JudgementRow.reason,
    JudgementRow.series,
    JudgementRow.cycle,
    JudgementRow.truth_version,
    JudgementRow.error_kind,
    JudgementRow.context_has_answer,
    JudgementRow.answer,
)
#: a summary's counts, in this order
_COUNTED = {
    v: i
    for i, v in enumerate((Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR, Verdict.UNDECIDED))
}


def _cycle_groups(
    rows: Iterable[Any], window: Window
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """A cycle's rows per group (target, cohort, group): the tagger's status over the cycle,
    the counts, each form's (verdict, truth version, stale) and each form's answer."""
    tagger = Tagger(window)
    meta: dict[tuple[str, str, str], Observation] = {}
    verdicts: dict[tuple[str, str, str], dict[str, list[Any]]] = {}
    answers: dict[tuple[str, str, str], dict[str, str | None]] = {}
    observations = []
    for r in rows:
        verdict = Verdict(r.verdict)
        stale = (r.reason or "").startswith(STALE_REASON)
        obs = Observation(
            probe_id=r.probe_id,
            target=r.target,
            cohort=r.cohort,
            group_id=r.group_id,
            form_id=r.form_id,
            verdict=verdict,
            run_id=r.run_id,
            dataset_id=r.dataset_id,
            scenario=r.scenario,
            group_forms=r.group_forms,
            stale=stale,
            series=r.series,
            cycle=r.cycle,
            truth_version=r.truth_version,
            error_kind=r.error_kind,
            context_has_answer=r.context_has_answer,
        )
        observations.append(obs)
        key = (obs.target, obs.cohort, obs.group_id)
        if key not in meta:
            meta[key] = obs
            verdicts[key] = {}
            answers[key] = {}
        verdicts[key][obs.form_id] = [verdict.value, obs.truth_version, stale]
        answers[key][obs.form_id] = r.answer
    tagger.apply_many(observations)
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, obs in meta.items():
        tally = tagger.tally(*key)
        forms = verdicts[key]
        counts = [0, 0, 0, 0]
        for v in forms.values():
            counts[_COUNTED[Verdict(v[0])]] += 1
        out[key] = {
            "status": tally.status.value if tally is not None else "pending",
            "counts": counts,
            "verdicts": dict(sorted(forms.items())),
            "answers": answers[key],
            "dataset_id": obs.dataset_id,
            "scenario": obs.scenario,
            "group_forms": obs.group_forms,
        }
    return out


def _heads(
    conn: Any, series: str, cycle: int, keys: Sequence[tuple[str, str, str]]
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Each group's newest summary before ``cycle``: the rows ending at the previous cycle in
    one indexed read, the groups not found there one by one chunk."""
    s = JudgementSummaryRow
    cols = (
        s.id,
        s.target,
        s.cohort,
        s.group_id,
        s.last_cycle,
        s.status,
        s.correct,
        s.incorrect,
        s.error,
        s.undecided,
        s.verdicts,
    )

    def head(r: Any) -> dict[str, Any]:
        return {
            "id": r.id,
            "last_cycle": r.last_cycle,
            "status": r.status,
            "counts": [r.correct, r.incorrect, r.error, r.undecided],
            "verdicts": r.verdicts or {},
        }

    wanted = set(keys)
    out = {
        (r.target, r.cohort, r.group_id): head(r)
        for r in conn.execute(select(*cols).where(s.series == series, s.last_cycle == cycle - 1))
        if (r.target, r.cohort, r.group_id) in wanted
    }
    missing = [k for k in keys if k not in out]
    key = tuple_(s.target, s.cohort, s.group_id)
    for i in range(0, len(missing), 200):
        chunk = missing[i : i + 200]
        stmt = (
            select(*cols)
            .where(s.series == series, s.last_cycle < cycle, key.in_(chunk))
            .order_by(s.last_cycle)
        )
        for r in conn.execute(stmt):
            out[(r.target, r.cohort, r.group_id)] = head(r)  # the newest wins (ordered)
    return out


def pruned_cycles(engine: Engine, series: str) -> dict[int, str]:
    """The summarised cycles of ``series`` (cycle → run id): their raw rows, where some are
    left (a partition not yet dropped, a delete not finished), are read from the summaries."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(PrunedCycleRow.cycle, PrunedCycleRow.run_id).where(
                PrunedCycleRow.series == series
            )
        ).all()
    return {int(c): str(r) for c, r in rows}


def summary_observations(
    engine: Engine, series: str, cycles: dict[int, str], from_cycle: int = 0
) -> list[Observation]:
    """The observations the summaries of ``series`` hold for its summarised ``cycles`` (from
    ``from_cycle`` on): one per form per cycle, with its verdict, truth version and staleness —
    what the tagger's statuses, counts, flakiness and transitions are made of. What they do
    not hold (retrieved ids, scores, latency) is empty."""
    s = JudgementSummaryRow
    out: list[Observation] = []
    with engine.connect() as conn:
        stmt = (
            select(s)
            .where(s.series == series, s.last_cycle >= from_cycle)
            .order_by(s.first_cycle, s.id)
        )
        for r in conn.execute(stmt):
            for cycle in range(max(r.first_cycle, from_cycle), r.last_cycle + 1):
                run_id = cycles.get(cycle)
                if run_id is None:
                    continue
                for form, (verdict, truth_version, stale) in (r.verdicts or {}).items():
                    out.append(
                        Observation(
                            probe_id=f"summary:{r.id}:{cycle}:{form}",
                            target=r.target,
                            cohort=r.cohort,
                            group_id=r.group_id,
                            form_id=form,
                            verdict=Verdict(verdict),
                            run_id=run_id,
                            dataset_id=r.dataset_id,
                            scenario=r.scenario,
                            group_forms=r.group_forms,
                            stale=bool(stale),
                            series=series,
                            cycle=cycle,
                            truth_version=int(truth_version),
                        )
                    )
    out.sort(key=lambda o: o.cycle)
    return out
