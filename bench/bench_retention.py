"""Retention benchmark: 30 days of a minute monitor in compressed time, with the real store code.

Thirty days of minute cycles at 10k probes is 43,200 cycles, 432M judgements: days of writing
on a small machine. So time is compressed (a fake clock, a minute a cycle, cycles written back
to back) and the cycles between the two ends of the month are smaller; every cycle still goes
through the real store code:

* **Every cycle run.** Each of the ``--days`` × 1,440 cycles is recorded in ``runs`` as the
  generator records it, its judgements written by :class:`AnalyticsStore` (analytics' save
  path), and summarised and removed by ``Retention.prune`` with the defaults of
  ``GW_RETAIN_*``. Every group's answer version is renewed each day (so past day 20 the
  answer-version bound prunes), at full size, and the judgements from then on carry the new
  expected answer (so the expected answers of pruned cycles are swept).
* **Full size at both ends.** The first and the last cycles (the raw window, PostgreSQL a
  partition hour more, and ``--beyond``; ``--full-cycles``) have ``--probes`` judgements and a
  pruning run after each: the first pruning boundaries at full size, and at the end the store's
  raw part at its real size. The store's peak over the last stretch is what is measured.
* **Fewer probes between.** The other cycles have ``--ff-probes`` judgements (the first
  groups), pruning every ``--ff-prune-every`` cycles. A group's summaries depend on its own
  verdicts only, so the summary rows the other groups would have had there are counted as the
  probed groups' there, times the other groups over them (bytes per row as measured).
* ``--pg-days`` (PostgreSQL) fewer than ``--project-days``: the growth with time (ledger,
  summaries scaled so) is carried on at the rate of the stretch between the ends, from three
  hours past the first end to the last snapshot before the final one.

The projected store is compared with the size docs/retention.md ("What the defaults bound")
states for the workload (:func:`stated_bytes`): ≤ 1 is met.

**Ingest while pruning** (real, full size, a store of its own): the writer writes cycles back
to back while the pruner — analytics' paced loop in a thread of the same process, the default
``GW_PRUNE_DUTY`` — works off a backlog that never runs out, in blocks of ``--block-cycles``
with the pruner on and off in turn (ABBA, so a trend of load or store size cancels): cycles a
second with it over without, the median of ``--pairs`` pairs with its spread. ≥ 0.9 is met.
Beside it, the cycles the pruner got through a minute at its duty (≥ 1 keeps up).

Usage: ``python bench/bench_retention.py [--dialects sqlite,postgresql] [--days 30]
[--pg-days 7] [--pairs 6] [--out FILE]``. PostgreSQL: a database of this benchmark's own on
``GW_BENCH_PG_URL``/``GW_TEST_DATABASE_URL``, made and dropped by it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import emit, figure, machine
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.retention import Retention, RetentionPolicy
from groundwatch.adapters.db.runs import record_cycle
from groundwatch.adapters.db.tables import AnswerVersionRow, JudgementSummaryRow
from groundwatch.app.settings import RetentionSettings
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import AnswerType, Expected, Verdict

T0 = 1_780_000_000.0
FORMS = 5  # forms per group and cohort: groups = probes / (2 x FORMS)
#: bytes a judgement row takes, indexes included, as the defaults' statement counts it
ROW_BYTES = 1200
#: bytes a summary row takes (a group-cohort's run of cycles), and a cycle's ledger (runs +
#: pruned_cycles rows with their indexes)
SUMMARY_BYTES = 1000
CYCLE_BYTES = 600
LEDGER = ("runs", "pruned_cycles")


def stated_bytes(
    policy: RetentionPolicy, probes: int, cycles: int, changes: float, pg: bool
) -> float:
    """What the defaults state the store stays under for ``cycles`` minute cycles of
    ``probes`` judgements whose group-cohorts change status or verdicts ``changes`` times in
    all (docs/retention.md, "What the defaults bound"): the raw window (PostgreSQL: plus one
    partition's cycles, dropped whole), one summary row per group-cohort and per change, a
    ledger row per cycle, and a 20 % slack for the database's own pages (free pages, WAL
    checkpoints, catalogue)."""
    raw_cycles = min(cycles, policy.cycles + 1 + (policy.partition_hours * 60 if pg else 0))
    group_cohorts = probes // FORMS
    summaries = group_cohorts + changes
    return 1.2 * (
        raw_cycles * probes * ROW_BYTES + summaries * SUMMARY_BYTES + cycles * CYCLE_BYTES
    )


class Writer:
    """One cycle's judgements built once (pydantic validation is the judge's cost, not the
    store's), copied per cycle with fresh ids and times, a share ``flip`` of groups changing
    one form's verdict for one cycle each cycle."""

    def __init__(self, engine: Any, probes: int, flip: float, series: str = "bench") -> None:
        self.store = AnalyticsStore(engine)
        self.series = series
        self.flip = flip
        self.templates: list[Judgement] = []
        groups = max(1, probes // (2 * FORMS))
        for g in range(groups):
            expected = Expected(values=[f"answer {g}"], types=[AnswerType.TEXT])
            for cohort in ("short", "long"):
                for f in range(FORMS):
                    probe = Probe(
                        probe_id=uuid.uuid4(),
                        run_id="template",
                        series=series,
                        cycle=1,
                        dataset_id="bench",
                        group_id=f"g{g:06d}",
                        form_id=f"g{g:06d}-{cohort}-{f}",
                        cohort=cohort,
                        target="prod",
                        query=f"What is the registered value of item number {g} ({cohort},"
                        f" form {f}) in the catalogue?",
                        expected=expected,
                        group_forms=FORMS,
                    )
                    response = RagResponse.for_probe(
                        probe,
                        status=TargetStatus.OK,
                        answer=f"The registered value of item {g} is answer {g}.",
                        retrieved_ids=["doc-1", "doc-2", "doc-3"],
                    )
                    self.templates.append(
                        Judgement.for_response(
                            response, verdict=Verdict.CORRECT, tier="exact", scores={"f1": 1.0}
                        )
                    )
        self.groups = groups
        self.changes = 0

    def cycle(self, cycle: int, interval_s: float, probes: int | None = None) -> int:
        """One cycle of every judgement, or of the first ``probes`` (the first groups)."""
        at = T0 + cycle * interval_s
        run_id = f"{self.series}-c{cycle}"
        record_cycle(
            self.store.engine,
            run_id=run_id,
            series=self.series,
            cycle=cycle,
            dataset_id="bench",
            targets=["prod"],
            started_at=at,
        )
        when = datetime.fromtimestamp(at, UTC)
        period = max(1, round(1 / self.flip)) if self.flip else 0
        out = []
        for i, j in enumerate(self.templates[:probes]):
            g = i // (2 * FORMS)
            f = i % FORMS
            # a group flips one form's verdict for one cycle in every `period`
            wrong = period and (g + cycle) % period == 0 and f == 0
            out.append(
                j.model_copy(
                    update={
                        "probe_id": uuid.uuid4(),
                        "run_id": run_id,
                        "cycle": cycle,
                        "probe_created_at": when,
                        "judged_at": when,
                        "verdict": Verdict.INCORRECT if wrong else Verdict.CORRECT,
                    }
                )
            )
        if period:
            # each flipped group-cohort starts a summary row and ends it the cycle after
            groups = self.groups if probes is None else -(-probes // (2 * FORMS))
            self.changes += 2 * 2 * len(range((-cycle) % period, groups, period))
        self.store.save(out, [])
        return len(out)

    def answer_versions(self, version: int) -> None:
        """A new SQL answer for every group, recorded as the answer refresher records it, and
        the expected answer every later judgement of the group carries."""
        per_group = 2 * FORMS
        for g in range(self.groups):
            expected = Expected(
                values=[f"answer {g} v{version}"], types=[AnswerType.TEXT], version=version
            )
            for i in range(g * per_group, (g + 1) * per_group):
                self.templates[i] = self.templates[i].model_copy(update={"expected": expected})
        with Session(self.store.engine) as s, s.begin():
            for g in range(self.groups):
                s.merge(
                    AnswerVersionRow(
                        dataset_id="bench",
                        group_id=f"g{g:06d}",
                        version=version,
                        answer={"values": [f"answer {g} v{version}"], "types": ["text"]},
                    )
                )


def table_bytes(engine: Any) -> dict[str, int]:
    """Bytes per table, its indexes (PostgreSQL: its partitions and TOAST) included."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            rows = conn.exec_driver_sql(
                "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d JOIN sqlite_master m"
                " ON m.name = d.name GROUP BY m.tbl_name"
            ).all()
            return {str(t): int(b) for t, b in rows}
        rows = conn.exec_driver_sql(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
            " AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
        ).all()
        out = {str(t): int(b) for t, b in rows}
        out["judgements"] = int(
            conn.exec_driver_sql(
                "SELECT coalesce(sum(pg_total_relation_size(relid)), 0)"
                " FROM pg_partition_tree('judgements')"
            ).scalar()
            or 0
        )
        return out


def size_of(retention: Retention) -> int:
    """The store's bytes as ``Retention.stats`` counts them, without its rows per table (a
    count of every judgement, taken after every full cycle, would be the bench's own cost)."""
    with retention.engine.connect() as conn:
        if retention.dialect == "sqlite":
            page = int(conn.exec_driver_sql("PRAGMA page_size").scalar() or 0)
            return page * int(conn.exec_driver_sql("PRAGMA page_count").scalar() or 0)
        return int(
            conn.exec_driver_sql(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
            ).scalar()
            or 0
        )


def unpaced() -> RetentionPolicy:
    """The defaults without the pruner's pauses: in compressed time a run's pauses would only
    stretch the wall clock (what is kept does not depend on them)."""
    return dataclasses.replace(RetentionSettings().policy(), duty=1.0)


def full_cycles(policy: RetentionPolicy, pg: bool, beyond: int) -> int:
    """Full-size cycles at each end of the month: until pruning removes a cycle for each one
    written (PostgreSQL: a partition hour's cycles go together, an hour after the window),
    and ``beyond`` more."""
    return policy.cycles + 1 + (2 * policy.partition_hours * 60 if pg else 0) + beyond


def run_month(engine: Any, args: argparse.Namespace, days: float) -> dict[str, Any]:
    """Every minute cycle of ``days`` through the real store code on a fake clock: full-size
    cycles (``--probes``) at both ends, ``--ff-probes`` (the first groups) in between; the
    answer versions of every group daily; the store's size at every full cycle and every six
    hours."""
    pg = engine.dialect.name == "postgresql"
    policy = unpaced()
    cycles = int(days * 86400 / args.interval_s)
    per_day = int(86400 / args.interval_s)
    edge = args.full_cycles or full_cycles(policy, pg, args.beyond)
    head = min(edge, cycles // 2)
    tail_from = max(head, cycles - edge) + 1  # cycles from here on are full
    now = [T0]
    retention = Retention(engine, policy, clock=lambda: now[0])
    writer = Writer(engine, args.probes, args.flip)
    light = min(args.ff_probes, len(writer.templates))
    if pg:  # analytics' pruner makes them at start-up, before the first cycle is written
        retention.ensure_partitions()
    made: set[str] = set()
    dropped = 0
    written = 0
    tail_sizes: list[int] = []
    snapshots: list[dict[str, Any]] = []
    #: every 6 hours, and at least 8 times in a short run (the rate carried on is the light
    #: stretch's between them)
    snap_every = max(1, min(per_day // 4, cycles // 8))
    t0, cpu0 = time.perf_counter(), time.process_time()
    seconds = {"full": 0.0, "light": 0.0}
    counted = {"full": 0, "light": 0}
    for c in range(1, cycles + 1):
        t_c = time.perf_counter()
        full = c <= head or c >= tail_from
        now[0] = T0 + c * args.interval_s
        if (c - 1) % per_day == 0:
            writer.answer_versions(1 + (c - 1) // per_day)
        written += writer.cycle(c, args.interval_s, None if full else light)
        if full or c % args.ff_prune_every == 0 or c == cycles:
            now[0] += args.interval_s * 0.5
            report = retention.prune()
            dropped += len(report.partitions)
            if pg:
                made.update(retention.partitions())
        kind = "full" if full else "light"
        seconds[kind] += time.perf_counter() - t_c
        counted[kind] += 1
        if c >= tail_from:
            tail_sizes.append(size_of(retention))
        if c % snap_every == 0 or c == cycles:
            snapshots.append(
                {
                    "cycle": c,
                    "day": round(c / per_day, 3),
                    "bytes": size_of(retention),
                    "light_summaries": light_summaries(engine, writer, light, head, tail_from),
                    "ledger_bytes": sum(table_bytes(engine).get(n, 0) for n in LEDGER),
                }
            )
            print(
                f"  {engine.dialect.name}: day {c / per_day:.2f}, {time.perf_counter() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    stats = retention.stats()
    tables = table_bytes(engine)
    steady = tail_sizes[max(0, edge - args.beyond) :]
    return {
        "days": days,
        "cycles": cycles,
        "probes": args.probes,
        "light_probes": light,
        "groups": writer.groups,
        "light_groups": -(-light // (2 * FORMS)),
        "full_cycles": [[1, head], [tail_from, cycles]],
        "full_cycles_run": counted["full"],
        "light_cycles_run": counted["light"],
        "judgements_written": written,
        "seconds": round(time.perf_counter() - t0, 1),
        # the process's CPU (SQLite: the store's work too): the wall time an idle machine needs
        "cpu_seconds": round(time.process_time() - cpu0, 1),
        "seconds_per_full_cycle": round(seconds["full"] / max(1, counted["full"]), 3),
        "seconds_per_light_cycle": round(seconds["light"] / max(1, counted["light"]), 4),
        "tail_peak_bytes": max(tail_sizes) if tail_sizes else 0,
        "tail_steady_min_bytes": min(steady) if steady else 0,
        "tail_steady_max_bytes": max(steady) if steady else 0,
        "final_bytes": stats.size_bytes,
        "rows": stats.rows,
        "summary_row_bytes": summary_row_bytes(engine, tables, stats.rows),
        "light_summaries": light_summaries(engine, writer, light, head, tail_from),
        "partitions_made": len(made),
        "partitions_dropped": dropped,
        "partitions_left": stats.partitions,
        "tables_bytes": tables,
        "snapshots": snapshots,
    }


def summary_row_bytes(engine: Any, tables: dict[str, int], rows: dict[str, int]) -> float:
    """Bytes a live summary row takes, its indexes' share included. SQLite: the table's pages
    over its rows (a freed page is reused). PostgreSQL: the table holds the dead versions every
    extended row leaves until autovacuum (the store's real size counts them, at the end's full
    size), so a row is its tuple (header and line pointer included) times the relation's
    bytes over its heap's."""
    n = max(1, rows.get("judgement_summaries", 0))
    if engine.dialect.name != "postgresql":
        return round(tables.get("judgement_summaries", 0) / n, 1)
    with engine.connect() as conn:
        tuple_bytes = float(
            conn.exec_driver_sql(
                "SELECT coalesce(avg(pg_column_size(t.*)), 0) + 28 FROM judgement_summaries t"
            ).scalar()
            or 0
        )
        total, heap = conn.exec_driver_sql(
            "SELECT pg_total_relation_size('judgement_summaries'),"
            " greatest(pg_relation_size('judgement_summaries'), 1)"
        ).one()
    return round(tuple_bytes * float(total) / float(heap), 1)


def light_summaries(engine: Any, writer: Writer, light: int, head: int, tail_from: int) -> int:
    """Summary rows of the groups every cycle probes that start in the light stretch: what the
    other groups would have had there at full size (a group's summaries depend on its own
    verdicts alone)."""
    groups = [f"g{g:06d}" for g in range(-(-light // (2 * FORMS)))]
    with engine.connect() as conn:
        return int(
            conn.scalar(
                select(func.count())
                .select_from(JudgementSummaryRow)
                .where(
                    JudgementSummaryRow.series == writer.series,
                    JudgementSummaryRow.group_id.in_(groups),
                    JudgementSummaryRow.first_cycle > head,
                    JudgementSummaryRow.first_cycle < tail_from,
                )
            )
            or 0
        )


def full_changes(groups: int, cycles: int, flip: float, per_day: int) -> int:
    """Summary rows the workload opens and closes at full size over ``cycles``: each flipped
    group-cohort starts a row and ends it the cycle after (as :meth:`Writer.cycle` counts),
    and each group-cohort starts one at each daily answer version after the first (its
    forms' truth version changes)."""
    renewals = 2 * groups * max(0, -(-cycles // per_day) - 1)
    period = max(1, round(1 / flip)) if flip else 0
    if not period:
        return renewals
    flips = sum(4 * len(range((-c) % period, groups, period)) for c in range(1, cycles + 1))
    return renewals + flips


class PrunerThread:
    """Analytics' pruner (paced runs in a worker thread), switched on and off by the bench."""

    def __init__(self, retention: Retention) -> None:
        self.retention = retention
        self.on = threading.Event()
        self.quit = threading.Event()
        #: set by the writer after each cycle: in compressed time, analytics' "next interval"
        #: (GW_PRUNE_INTERVAL_S, a minute: a cycle)
        self.tick = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _stopped(self) -> bool:
        return self.quit.is_set() or not self.on.is_set()

    def _loop(self) -> None:
        while not self.quit.is_set():
            if not self.on.wait(0.05):
                continue
            report = self.retention.prune(stop=self._stopped)
            if report.finished and not report.cycles:  # nothing to do: the next interval
                while not self.tick.wait(0.1) and not self.quit.is_set():
                    pass
                self.tick.clear()

    def close(self) -> None:
        self.quit.set()
        self.thread.join()


def ingest(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Cycles a second with the pruner on over off, blocks in ABBA order on one store; the
    pruner's window is 5 cycles, so with cycles written back to back it always has a backlog
    to work off (the most it can take from the writer: its duty all the time)."""
    settings = RetentionSettings()
    policy = dataclasses.replace(settings.policy(), cycles=5, days=0)
    now = [T0]
    retention = Retention(engine, policy, clock=lambda: now[0])
    writer = Writer(engine, args.ingest_probes, args.flip)
    if engine.dialect.name == "postgresql":
        retention.ensure_partitions()
    for c in range(1, policy.cycles + 4):
        now[0] = T0 + c * args.interval_s
        writer.cycle(c, args.interval_s)
    pruner = PrunerThread(retention)
    cycle = int((now[0] - T0) // args.interval_s)
    rates: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    pruned_on = 0
    seconds_on = 0.0
    order = [False, True, True, False] * ((args.pairs + 1) // 2)
    try:
        for on in order[: 2 * args.pairs]:
            if on:
                pruner.on.set()
            else:
                pruner.on.clear()
            done0 = pruned_count(engine)
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.block_cycles):
                cycle += 1
                now[0] = T0 + cycle * args.interval_s
                writer.cycle(cycle, args.interval_s)
                pruner.tick.set()
            took = time.perf_counter() - t0
            rates[on].append(args.block_cycles / took)
            if on:
                pruned_on += pruned_count(engine) - done0
                seconds_on += took
            cpu[on].append(time.process_time() - c0)
    finally:
        pruner.close()
    pruned = pruned_count(engine)
    ratios = [b / a for a, b in zip(rates[False], rates[True], strict=True)]
    return {
        "probes": args.ingest_probes,
        "duty": policy.duty,
        "batch": policy.batch,
        "block_cycles": args.block_cycles,
        "cycles_per_s_without": [round(x, 3) for x in rates[False]],
        "cycles_per_s_with": [round(x, 3) for x in rates[True]],
        "ratios": [round(x, 3) for x in ratios],
        # every block's cycles over every block's seconds, on over off
        "overall_ratio": round(
            statistics.harmonic_mean(rates[True]) / statistics.harmonic_mean(rates[False]), 3
        ),
        "process_cpu_s_without": [round(x, 2) for x in cpu[False]],
        "process_cpu_s_with": [round(x, 2) for x in cpu[True]],
        "cycles_pruned_meanwhile": pruned,
        # what the pruner gets through at its duty, beside a writer that never pauses: at
        # least one cycle a minute keeps up with a minute monitor
        "pruned_cycles_per_minute": round(60 * pruned_on / seconds_on, 1) if seconds_on else 0,
        # the writer's work is the same in every block: the pruner's share of the process's
        # CPU, the ratio a CPU-bound writer sees on a machine it has to itself
        "cpu_ratio": round(sum(cpu[False]) / sum(cpu[True]), 3),
    }


def pruned_count(engine: Any) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT count(*) FROM pruned_cycles").scalar() or 0)


def pg_database(base: str, name: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(base).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(base: str, name: str) -> None:
    from sqlalchemy import create_engine, text

    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def project(month: dict[str, Any], to_days: float) -> dict[str, Any]:
    """The store after ``to_days`` at full size everywhere: the month's store at its tail's
    peak, plus the summaries the groups not probed in the light stretch would have had there
    (the light groups' there, times the other groups over them). A month shorter than
    ``to_days`` (PostgreSQL at fewer days): its growth with time (the ledger, the summaries
    scaled so) carried on at the light stretch's rate, from its first snapshot three hours
    past the head to its last."""
    others = (month["groups"] - month["light_groups"]) / max(1, month["light_groups"])
    row = month["summary_row_bytes"] or SUMMARY_BYTES
    extra = others * month["light_summaries"] * row
    more = max(0.0, to_days - month["days"])
    carried = 0.0
    (_, head), (tail_from, _) = month["full_cycles"]
    snaps = [s for s in month["snapshots"] if head < s["cycle"] < tail_from]
    # from the first snapshot past the head's cycles pruned (and on PostgreSQL their
    # partitions dropped): one store's start is no part of the rate, and a long span averages
    # over the groups' turns to change (the probed groups change in bursts, 10 cycles in 100)
    settled = [s for s in snaps if s["cycle"] >= head + 3 * 60] or snaps[-2:]
    if more and len(snaps) >= 2:
        a, b = (settled[0], settled[-1]) if len(settled) >= 2 else (snaps[-2], snaps[-1])
        span = b["day"] - a["day"]
        per_day = (
            (b["ledger_bytes"] - a["ledger_bytes"])
            + (1 + others) * (b["light_summaries"] - a["light_summaries"]) * row
        ) / span
        carried = per_day * more
    return {
        "days": to_days,
        "days_run": month["days"],
        "carried_days": more,
        "other_groups_over_light": round(others, 2),
        "scaled_summary_bytes": round(extra),
        "carried_bytes": round(carried),
        "bytes": round(month["tail_peak_bytes"] + extra + carried),
    }


def run_dialect(
    url: Any, dialect: str, args: argparse.Namespace, earlier: dict[str, Any]
) -> dict[str, Any]:
    """The phases ``--phases`` names; the others' results taken from ``earlier`` (a previous
    run's output for the dialect, ``--reuse``), so a long phase is run once."""
    pg = dialect == "postgresql"
    phases = args.phases.split(",")
    out: dict[str, Any] = {k: earlier[k] for k in ("month", "ingest") if k in earlier}
    if "ingest" in phases:
        engine = make_engine(url("ingest"))
        create_schema(engine)
        out["ingest"] = ingest(engine, args)
        engine.dispose()
    if "month" in phases:
        engine = make_engine(url("month"))
        create_schema(engine)
        days = args.pg_days if pg and args.pg_days is not None else args.days
        out["month"] = run_month(engine, args, days)
        engine.dispose()
    if "month" not in out:
        return out
    policy = RetentionSettings().policy()
    month = out["month"]
    proj = project(month, args.project_days)
    cycles = int(args.project_days * 86400 / args.interval_s)
    changes = full_changes(month["groups"], cycles, args.flip, int(86400 / args.interval_s))
    stated = stated_bytes(policy, month["probes"], cycles, changes, pg)
    out["projected"] = {**proj, "changes": changes, "stated_bytes": round(stated)}
    return out


SIMULATED = (
    "month: every minute cycle of --days (PostgreSQL: --pg-days) written, recorded, summarised"
    " and removed through the real store code (AnalyticsStore.save, record_cycle,"
    " Retention.prune with the defaults of GW_RETAIN_*) on a fake clock a minute a cycle;"
    " cycles at full size (--probes) at both ends (the raw window, PostgreSQL a partition hour"
    " more, and --beyond: the store's raw part at its real size, measured at the end), at"
    " --ff-probes (the first groups) between, pruning there every --ff-prune-every cycles"
    " (every cycle at full size); every group's answer version renewed daily, the judgements"
    " carrying it from then on; the summaries the"
    " other groups would have had between the ends counted as the probed groups' there, scaled"
    " by groups; past the days run, growth carried on to --project-days at the light stretch's"
    " rate (from three hours past the first end); ingest: its own store, the pruner on and off"
    " in ABBA blocks"
)


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialects", default="sqlite,postgresql")
    ap.add_argument("--probes", type=int, default=10_000, help="judgements a full cycle")
    ap.add_argument("--days", type=float, default=30.0, help="days of minute cycles run")
    ap.add_argument(
        "--pg-days", type=float, help="PostgreSQL's days run, when fewer (default: --days)"
    )
    ap.add_argument("--interval-s", type=float, default=60.0)
    ap.add_argument(
        "--beyond", type=int, default=30, help="full cycles past the raw part's steady state"
    )
    ap.add_argument(
        "--full-cycles",
        type=int,
        default=0,
        help="full cycles at each end (0: the raw window, a PostgreSQL partition hour more,"
        " and --beyond)",
    )
    ap.add_argument(
        "--ff-probes", type=int, default=100, help="judgements a cycle between the full ends"
    )
    ap.add_argument(
        "--ff-prune-every", type=int, default=10, help="cycles between pruning runs there"
    )
    ap.add_argument("--flip", type=float, default=0.01, help="share of groups changing a cycle")
    ap.add_argument(
        "--ingest-probes",
        type=int,
        default=10_000,
        help="judgements a cycle while ingest is timed (the target's 10k, whatever --probes)",
    )
    ap.add_argument("--pairs", type=int, default=6, help="ingest: with/without pairs")
    ap.add_argument("--block-cycles", type=int, default=4, help="ingest: cycles a block")
    ap.add_argument(
        "--project-days",
        type=float,
        default=30.0,
        help="the days the size figure is for (past the days run: growth carried on at the"
        " light stretch's rate)",
    )
    ap.add_argument("--phases", default="ingest,month", help="the phases run")
    ap.add_argument("--reuse", type=Path, help="an earlier --out: the phases not run")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    pg_base = os.environ.get("GW_BENCH_PG_URL") or os.environ.get("GW_TEST_DATABASE_URL")
    result: dict[str, Any] = {
        "machine": machine(),
        "args": {**vars(args), "out": None, "reuse": str(args.reuse) if args.reuse else None},
        "simulated": SIMULATED,
    }
    figures: dict[str, Any] = {}
    made: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for dialect in args.dialects.split(","):
            if dialect == "postgresql" and not pg_base:
                result[dialect] = "skipped: no GW_BENCH_PG_URL or GW_TEST_DATABASE_URL"
                continue

            def url(tag: str, dialect: str = dialect) -> str:
                if dialect == "sqlite":
                    return f"sqlite:///{Path(tmp) / tag}.db"
                made.append(f"gw_bench_retention_{os.getpid()}_{tag}")
                return pg_database(pg_base or "", made[-1])

            earlier = json.loads(args.reuse.read_text()).get(dialect, {}) if args.reuse else {}
            try:
                r = result[dialect] = run_dialect(url, dialect, args, earlier)
            finally:
                for name in made:  # this run's own databases, never another's
                    drop_pg_database(pg_base or "", name)
            if "projected" in r:
                proj = r["projected"]
                month = r["month"]
                figures[f"size_{dialect}"] = figure(
                    f"retention: {dialect} store after {proj['days']:g} days of minute cycles of"
                    f" {month['probes']:,} probes, share of the size the defaults state (every"
                    f" cycle of {proj['days_run']:g} days through the store code:"
                    f" {month['full_cycles_run']} at full size, the window at the start and the"
                    f" end; {month['light_cycles_run']:,} between at"
                    f" {month['light_probes']} probes, the other groups' summaries there scaled"
                    + (
                        f"; {proj['carried_days']:g} days more carried on at the light"
                        " stretch's rate)"
                        if proj["carried_days"]
                        else ")"
                    ),
                    round(proj["bytes"] / proj["stated_bytes"], 3),
                    target=1.0,
                    goal="<=",
                    measured=proj["bytes"],
                    baseline=proj["stated_bytes"],
                    baseline_name="bytes stated (docs/retention.md)",
                    absolute_unit="bytes",
                    bound="the raw window (GW_RETAIN_CYCLES; PostgreSQL a partition hour more)"
                    " and the summaries (one row per change)",
                )
            ing = r.get("ingest")
            if ing is None:
                continue
            figures[f"ingest_{dialect}"] = figure(
                f"retention: {dialect} ingest of {ing.get('probes', 10_000):,} probes a cycle"
                f" while pruning over without (GW_PRUNE_DUTY={ing['duty']:g}, median of"
                f" {len(ing['ratios'])} ABBA pairs)",
                round(statistics.median(ing["ratios"]), 3),
                target=0.9,
                measured=round(statistics.median(ing["cycles_per_s_with"]), 3),
                baseline=round(statistics.median(ing["cycles_per_s_without"]), 3),
                baseline_name="cycles/s without",
                absolute_unit="cycles/s with the pruner",
                bound="the store's writes; the pruner holds it GW_PRUNE_DUTY of the time",
            )
    result["figures"] = figures
    emit(result, args.out)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
