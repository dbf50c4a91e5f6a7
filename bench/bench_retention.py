"""Retention benchmark: 30 days of a minute monitor in compressed time, with the real store code.

Thirty days of minute cycles at 10k probes is 43,200 cycles, 432M judgements: days of writing
on a small machine. The store's size has two parts, and each is measured where it can be:

1. **Steady (real, full size).** Cycles of ``--probes`` judgements written through
   :class:`AnalyticsStore` (analytics' save path) and recorded in ``runs`` as the generator
   records them, on a fake clock a minute a cycle, retention (the defaults of ``GW_RETAIN_*``)
   run after every cycle as analytics' pruner does once a minute. Run past the raw window
   (PostgreSQL: and past the first dropped partition hour), where pruning removes a cycle for
   each one written, then ``--beyond`` cycles more: the raw part of the store stops growing
   there, and this phase's peak is its size.
2. **Thirty days (real code, fewer groups).** What grows with time — summaries, the ledger
   (``runs``, ``pruned_cycles``), partitions made and dropped every hour, answer versions (a new
   one for every group each day) — is run for every one of the ``--days`` × 1,440 cycles with
   the clock advanced, through the same code, at ``--ff-probes`` judgements a cycle. A group's
   summaries and answer versions depend on its own verdicts only, so their bytes scale with the
   number of groups: they are counted ``probes / ff_probes`` times; the ledger is per cycle and
   counted once.

The projected store after ``--days`` is phase 1's peak plus phase 2's summaries and answer
versions (scaled) and ledger; phase 1's own few summaries and ledger rows are counted twice
(on the safe side). It is compared with the size docs/retention.md ("What the defaults
bound") states for the workload (:func:`stated_bytes`): ≤ 1 is met.

**Ingest while pruning** (real, full size, on phase 1's store): the writer writes cycles back
to back while the pruner — analytics' paced loop in a thread of the same process, the default
``GW_PRUNE_DUTY`` — works off a backlog that never runs out, in blocks of ``--block-cycles``
with the pruner on and off in turn (ABBA, so a trend of load or store size cancels): cycles a
second with it over without, the median of ``--pairs`` pairs with its spread. ≥ 0.9 is met.

Usage: ``python bench/bench_retention.py [--dialects sqlite,postgresql] [--probes 10000]
[--days 30] [--pairs 6] [--out FILE]``. PostgreSQL: a database of this benchmark's own on
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
from sqlalchemy.orm import Session

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.retention import Retention, RetentionPolicy
from groundwatch.adapters.db.runs import record_cycle
from groundwatch.adapters.db.tables import AnswerVersionRow
from groundwatch.app.settings import RetentionSettings
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import AnswerType, Expected, Verdict

T0 = 1_780_000_000.0
FORMS = 5  # forms per group and cohort: groups = probes / (2 x FORMS)
#: bytes a judgement row takes, indexes included, as the defaults' statement counts it
ROW_BYTES = 1200
#: bytes a summary row takes (a group-cohort's run of cycles), and a cycle's ledger (runs +
#: pruned_cycles rows with their indexes)
SUMMARY_BYTES = 600
CYCLE_BYTES = 600
#: tables whose bytes scale with the number of groups (phase 2 → full size)
PER_GROUP = ("judgement_summaries", "answer_versions")
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

    def cycle(self, cycle: int, interval_s: float) -> int:
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
        for i, j in enumerate(self.templates):
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
            self.changes += 2 * 2 * sum(1 for g in range(self.groups) if (g + cycle) % period == 0)
        self.store.save(out, [])
        return len(out)

    def answer_versions(self, version: int) -> None:
        """A new SQL answer for every group, recorded as the answer refresher records it."""
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
    return int(retention.stats().size_bytes or 0)


def unpaced() -> RetentionPolicy:
    """The defaults without the pruner's pauses: in compressed time a run's pauses would only
    stretch the wall clock (what is kept does not depend on them)."""
    return dataclasses.replace(RetentionSettings().policy(), duty=1.0)


def steady_cycles(policy: RetentionPolicy, pg: bool, beyond: int) -> int:
    """Cycles until pruning removes a cycle for each one written (PostgreSQL: a partition
    hour's cycles go together, an hour after the window), and ``beyond`` more."""
    return policy.cycles + 1 + (2 * policy.partition_hours * 60 if pg else 0) + beyond


def run_steady(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 1: full cycles, retention after each; the store's size after every cycle."""
    pg = engine.dialect.name == "postgresql"
    policy = unpaced()
    cycles = steady_cycles(policy, pg, args.beyond)
    now = [T0]
    retention = Retention(engine, policy, clock=lambda: now[0])
    writer = Writer(engine, args.probes, args.flip)
    if pg:  # analytics' pruner makes them at start-up, before the first cycle is written
        retention.ensure_partitions()
    sizes: list[int] = []
    t0 = time.perf_counter()
    written = 0
    for c in range(1, cycles + 1):
        now[0] = T0 + c * args.interval_s
        written += writer.cycle(c, args.interval_s)
        now[0] += args.interval_s * 0.5
        retention.prune()
        sizes.append(size_of(retention))
    steady_from = cycles - args.beyond
    tail = sizes[steady_from:] or sizes[-1:]
    stats = retention.stats()
    return {
        "probes": args.probes,
        "cycles": cycles,
        "steady_from_cycle": steady_from + 1,
        "judgements_written": written,
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_bytes": max(sizes),
        "steady_min_bytes": min(tail),
        "steady_median_bytes": int(statistics.median(tail)),
        "steady_max_bytes": max(tail),
        "final_rows": stats.rows,
        "final_partitions": stats.partitions,
        "tables_bytes": table_bytes(engine),
    }


def run_days(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 2: every cycle of ``--days`` at ``--ff-probes``, through the same code."""
    pg = engine.dialect.name == "postgresql"
    policy = unpaced()
    cycles = int(args.days * 86400 / args.interval_s)
    now = [T0]
    retention = Retention(engine, policy, clock=lambda: now[0])
    writer = Writer(engine, args.ff_probes, args.flip)
    if pg:
        retention.ensure_partitions()
    per_day = int(86400 / args.interval_s)
    made: set[str] = set()
    dropped = 0
    peak = 0
    daily: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for c in range(1, cycles + 1):
        now[0] = T0 + c * args.interval_s
        if (c - 1) % per_day == 0:
            writer.answer_versions(1 + (c - 1) // per_day)
        writer.cycle(c, args.interval_s)
        if c % args.ff_prune_every == 0 or c == cycles:
            now[0] += args.interval_s * 0.5
            report = retention.prune()
            dropped += len(report.partitions)
            if pg:
                made.update(retention.partitions())
        if c % (per_day // 4) == 0 or c == cycles:  # every 6 hours
            peak = max(peak, size_of(retention))
            t = table_bytes(engine)
            daily.append(
                {
                    "day": round(c / per_day, 3),
                    "per_group_bytes": sum(t.get(n, 0) for n in PER_GROUP),
                    "ledger_bytes": sum(t.get(n, 0) for n in LEDGER),
                    "changes": writer.changes,
                    "partitions": len(retention.partitions()),
                }
            )
            print(
                f"  {engine.dialect.name}: day {c / per_day:.2f}, {time.perf_counter() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    stats = retention.stats()
    return {
        "cycles": cycles,
        "probes": args.ff_probes,
        "groups": writer.groups,
        "changes": writer.changes,
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_bytes": peak,
        "final_bytes": stats.size_bytes,
        "rows": stats.rows,
        "partitions_made": len(made),
        "partitions_dropped": dropped,
        "partitions_left": stats.partitions,
        "tables_bytes": table_bytes(engine),
        "snapshots": daily,
    }


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
    order = [False, True, True, False] * ((args.pairs + 1) // 2)
    try:
        for on in order[: 2 * args.pairs]:
            if on:
                pruner.on.set()
            else:
                pruner.on.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.block_cycles):
                cycle += 1
                now[0] = T0 + cycle * args.interval_s
                writer.cycle(cycle, args.interval_s)
                pruner.tick.set()
            rates[on].append(args.block_cycles / (time.perf_counter() - t0))
            cpu[on].append(time.process_time() - c0)
    finally:
        pruner.close()
    with engine.connect() as conn:
        pruned = int(conn.exec_driver_sql("SELECT count(*) FROM pruned_cycles").scalar() or 0)
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
        # the writer's work is the same in every block: the pruner's share of the process's
        # CPU, the ratio a CPU-bound writer sees on a machine it has to itself
        "cpu_ratio": round(sum(cpu[False]) / sum(cpu[True]), 3),
    }


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


def project(
    steady: dict[str, Any], days: dict[str, Any], probes: int, to_days: float
) -> dict[str, Any]:
    """The store after ``to_days`` at ``probes``: phase 1's peak, phase 2's per-group tables
    scaled by groups, its ledger as it is. Phase 2 shorter than ``to_days``: what grows with
    time is carried on at the rate of phase 2's last six hours (the first hours also hold what
    a store has from its start: a summary per group-cohort, the partitions ahead)."""
    scale = max(1, probes // (2 * FORMS)) / days["groups"]
    daily = days["snapshots"]
    last = daily[-1]
    prev = daily[-2] if len(daily) > 1 else {k: 0 for k in last} | {"day": 0.0}
    span = last["day"] - prev["day"]
    more = max(0.0, to_days - last["day"])

    def carried(key: str) -> float:
        rate = (last[key] - prev[key]) / span if span > 0 else 0.0
        return float(last[key]) + rate * more

    per_group = carried("per_group_bytes") * scale
    ledger = carried("ledger_bytes")
    return {
        "days": to_days,
        "days_run": last["day"],
        "carried_days": more,
        "scale": scale,
        "per_group_bytes": round(per_group),
        "ledger_bytes": round(ledger),
        "changes": round(carried("changes") * scale),
        "bytes": round(steady["peak_bytes"] + per_group + ledger),
    }


def run_dialect(
    url: Any, dialect: str, args: argparse.Namespace, earlier: dict[str, Any]
) -> dict[str, Any]:
    """The phases ``--phases`` names; the others' results taken from ``earlier`` (a previous
    run's output for the dialect, ``--reuse``), so a long phase is run once."""
    pg = dialect == "postgresql"
    phases = args.phases.split(",")
    out: dict[str, Any] = {k: earlier[k] for k in ("steady", "ingest", "days") if k in earlier}
    if "steady" in phases:
        engine = make_engine(url("steady"))
        create_schema(engine)
        out["steady"] = run_steady(engine, args)
        engine.dispose()
    if "ingest" in phases:
        engine = make_engine(url("ingest"))
        create_schema(engine)
        out["ingest"] = ingest(engine, args)
        engine.dispose()
    if "days" in phases:
        engine = make_engine(url("days"))
        create_schema(engine)
        out["days"] = run_days(engine, args)
        engine.dispose()
    if not {"steady", "days"} <= set(out):
        return out
    policy = RetentionSettings().policy()
    probes = out["steady"]["probes"]
    proj = project(out["steady"], out["days"], probes, args.project_days)
    cycles = int(args.project_days * 86400 / args.interval_s)
    stated = stated_bytes(policy, probes, cycles, proj["changes"], pg)
    out["projected"] = {**proj, "stated_bytes": round(stated)}
    return out


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialects", default="sqlite,postgresql")
    ap.add_argument("--probes", type=int, default=10_000, help="judgements a cycle (phase 1)")
    ap.add_argument("--days", type=float, default=30.0, help="days of minute cycles (phase 2)")
    ap.add_argument("--interval-s", type=float, default=60.0)
    ap.add_argument("--beyond", type=int, default=30, help="cycles run past the steady state")
    ap.add_argument("--ff-probes", type=int, default=100, help="judgements a cycle (phase 2)")
    ap.add_argument("--ff-prune-every", type=int, default=10, help="cycles between runs (2)")
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
        help="the days the size figure is for (past --days: carried on at phase 2's last rate)",
    )
    ap.add_argument("--phases", default="steady,ingest,days", help="the phases run")
    ap.add_argument("--reuse", type=Path, help="an earlier --out: the phases not run")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    pg_base = os.environ.get("GW_BENCH_PG_URL") or os.environ.get("GW_TEST_DATABASE_URL")
    result: dict[str, Any] = {
        "machine": machine(),
        "args": {**vars(args), "out": None, "reuse": str(args.reuse) if args.reuse else None},
        "simulated": "phase 1 (steady): every judgement of every cycle written, summarised and"
        " removed through the real store code, on a fake clock; phase 2 (the days): every cycle"
        " of --days through the same code at --ff-probes judgements a cycle, pruning every"
        " --ff-prune-every cycles; the per-group tables (summaries, answer versions) scaled by"
        " groups, the ledger as measured; raw judgements of phase 2 not counted (phase 1's"
        " peak stands for them); past --days, what grows with time carried on to"
        " --project-days at the rate of phase 2's last six hours; ingest: its own store, the"
        " pruner on and off in ABBA blocks",
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
            if "projected" not in r:
                continue
            proj = r["projected"]
            figures[f"size_{dialect}"] = figure(
                f"retention: {dialect} store after {proj['days']:g} days of minute cycles of"
                f" {r['steady']['probes']:,} probes, share of the size the defaults state (raw"
                " part run at full size to its steady state; summaries, ledger, partitions and"
                f" answer versions run cycle by cycle for {proj['days_run']:g} days at"
                f" {r['days']['probes']} probes, scaled by groups"
                + (
                    f", {proj['carried_days']:g} days more carried on at the last six hours' rate)"
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
                f" while pruning over without (GW_PRUNE_DUTY={ing['duty']:g}, median of {len(ing['ratios'])} ABBA pairs)",
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
