"""Retention benchmark: a minute monitor in compressed time, with the real store code.

Cycles of ``--probes`` judgements are written back to back through :class:`AnalyticsStore`
(the analytics stage's own save path) and recorded in ``runs`` as the generator records them,
on a fake clock that advances ``--interval-s`` a cycle; retention (:class:`Retention`, the
defaults of ``GW_RETAIN_*``) runs after every cycle, as analytics' pruner does once a minute.

Figures, per dialect (SQLite file; PostgreSQL: a database of this benchmark's own on
``GW_BENCH_PG_URL``/``GW_TEST_DATABASE_URL``):

* ``size_<dialect>`` — the store's largest size over the run as a share of the size the
  defaults state for this workload (:func:`stated_bytes`, docs/retention.md): ≤ 1 is met;
* ``ingest_<dialect>`` — cycles written per second while the pruner (its paced loop in a
  thread, ``GW_PRUNE_DUTY``'s default) works off a backlog, over the same without it:
  interleaved repeats, median, ≥ 0.9 is met.

Usage: ``python bench/bench_retention.py [--dialects sqlite,postgresql] [--probes 10000]
[--days 30] [--max-cycles N] [--repeats 3] [--out FILE]``. ``--max-cycles`` caps the simulated
cycles (30 days of minute cycles at 10k probes is 432M judgements: hours of writing on a small
machine); the size figure is then of the cycles run, and the stated size of that many cycles.
"""

from __future__ import annotations

import argparse
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

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.retention import Retention, RetentionPolicy
from groundwatch.adapters.db.runs import record_cycle
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


def stated_bytes(
    policy: RetentionPolicy, probes: int, cycles: int, changes: float, pg: bool
) -> float:
    """What the defaults state the store stays under for ``cycles`` minute cycles of
    ``probes`` judgements whose group-cohorts change status or verdicts ``changes`` times a
    cycle in all: the raw window (PostgreSQL: plus one partition's cycles, dropped whole),
    one summary row per group-cohort and per change, a ledger row per cycle, and a 20 % slack
    for the database's own pages (free pages, WAL checkpoints, catalogue)."""
    raw_cycles = min(cycles, policy.cycles + 1 + (policy.partition_hours * 60 if pg else 0))
    group_cohorts = probes // FORMS
    summaries = group_cohorts + changes * cycles
    return 1.2 * (
        raw_cycles * probes * ROW_BYTES + summaries * SUMMARY_BYTES + cycles * CYCLE_BYTES
    )


class Writer:
    """One cycle's judgements built once (pydantic validation is the judge's cost, not the
    store's), copied per cycle with fresh ids and times, a share ``flip`` of groups changing
    their wrong form each cycle."""

    def __init__(self, engine: Any, probes: int, flip: float, series: str = "bench") -> None:
        self.store = AnalyticsStore(engine)
        self.series = series
        self.flip = flip
        self.templates: list[Judgement] = []
        groups = probes // (2 * FORMS)
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


def size_of(retention: Retention) -> int:
    return int(retention.stats().size_bytes or 0)


def run_size(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The whole run: a cycle written, retention run after it (the clock a cycle on)."""
    engine = make_engine(url)
    create_schema(engine)
    cycles = min(int(args.days * 86400 / args.interval_s), args.max_cycles)
    now = [T0]
    policy = RetentionPolicy()  # the defaults
    retention = Retention(engine, policy, clock=lambda: now[0])
    writer = Writer(engine, args.probes, args.flip)
    peak = 0
    t0 = time.perf_counter()
    written = 0
    for c in range(1, cycles + 1):
        now[0] = T0 + c * args.interval_s
        if engine.dialect.name == "postgresql" and c == 1:
            retention.ensure_partitions()
        written += writer.cycle(c, args.interval_s)
        now[0] += args.interval_s * 0.5
        retention.prune()
        if c % 10 == 0 or c == cycles:
            peak = max(peak, size_of(retention))
    elapsed = time.perf_counter() - t0
    stats = retention.stats()
    pg = engine.dialect.name == "postgresql"
    stated = stated_bytes(policy, args.probes, cycles, writer.changes, pg)
    engine.dispose()
    return {
        "cycles": cycles,
        "judgements_written": written,
        "seconds": round(elapsed, 1),
        "peak_bytes": peak,
        "final_bytes": stats.size_bytes,
        "rows": stats.rows,
        "stated_bytes": round(stated),
        "changes": writer.changes,
    }


def ingest_rate(url: str, args: argparse.Namespace, with_pruner: bool) -> float:
    """Cycles written per second over ``--measure`` cycles, with or without the paced pruner
    working off a backlog of cycles past the window (built first, not timed)."""
    engine = make_engine(url)
    create_schema(engine)
    writer = Writer(engine, args.probes, args.flip)
    policy = RetentionPolicy(cycles=5, days=0, duty=0.1)
    backlog = policy.cycles + args.measure + 5
    for c in range(1, backlog + 1):
        writer.cycle(c, args.interval_s)
    now = [T0 + backlog * args.interval_s]
    retention = Retention(engine, policy, clock=lambda: now[0])
    if engine.dialect.name == "postgresql":
        retention.ensure_partitions()
    stop = threading.Event()

    def prune_loop() -> None:
        while not stop.is_set():
            retention.prune(stop=stop.is_set)
            stop.wait(0.05)

    thread = threading.Thread(target=prune_loop, daemon=True)
    if with_pruner:
        thread.start()
    t0 = time.perf_counter()
    for c in range(backlog + 1, backlog + 1 + args.measure):
        writer.cycle(c, args.interval_s)
    elapsed = time.perf_counter() - t0
    stop.set()
    if with_pruner:
        thread.join()
    engine.dispose()
    return args.measure / elapsed


def pg_database(base: str, name: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(base).set(database=name).render_as_string(hide_password=False)


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialects", default="sqlite,postgresql")
    ap.add_argument("--probes", type=int, default=10_000)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--interval-s", type=float, default=60.0)
    ap.add_argument("--max-cycles", type=int, default=10**9)
    ap.add_argument("--flip", type=float, default=0.01, help="share of groups changing a cycle")
    ap.add_argument("--measure", type=int, default=10, help="cycles timed per ingest repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    pg_base = os.environ.get("GW_BENCH_PG_URL") or os.environ.get("GW_TEST_DATABASE_URL")
    result: dict[str, Any] = {"machine": machine(), "args": {**vars(args), "out": None}}
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for dialect in args.dialects.split(","):
            if dialect == "postgresql" and not pg_base:
                result[dialect] = "skipped: no GW_BENCH_PG_URL or GW_TEST_DATABASE_URL"
                continue

            def url(tag: str, dialect: str = dialect) -> str:
                if dialect == "sqlite":
                    path = Path(tmp) / f"{tag}.db"
                    for p in Path(tmp).glob(f"{tag}.db*"):
                        p.unlink()
                    return f"sqlite:///{path}"
                return pg_database(pg_base or "", f"gw_bench_retention_{tag}")

            size = run_size(url("size"), args)
            ratios, with_p, without_p = [], [], []
            for _ in range(args.repeats):  # interleaved: without, with, without, with…
                a = ingest_rate(url("ingest"), args, with_pruner=False)
                b = ingest_rate(url("ingest"), args, with_pruner=True)
                without_p.append(a)
                with_p.append(b)
                ratios.append(b / a)
            result[dialect] = {
                "size": size,
                "ingest_cycles_per_s_without": [round(x, 3) for x in without_p],
                "ingest_cycles_per_s_with": [round(x, 3) for x in with_p],
                "ratios": [round(x, 3) for x in ratios],
            }
            figures[f"size_{dialect}"] = figure(
                f"retention: {dialect} store's peak over {size['cycles']:,} minute cycles of"
                f" {args.probes:,} probes, share of the size the defaults state",
                round(size["peak_bytes"] / size["stated_bytes"], 3),
                target=1.0,
                goal="<=",
                measured=size["peak_bytes"],
                baseline=size["stated_bytes"],
                baseline_name="bytes stated",
                absolute_unit="bytes",
                bound="the raw window (GW_RETAIN_CYCLES; PostgreSQL a partition hour more)",
            )
            figures[f"ingest_{dialect}"] = figure(
                f"retention: {dialect} ingest while pruning over without",
                round(statistics.median(ratios), 3),
                target=0.9,
                measured=round(statistics.median(with_p), 3),
                baseline=round(statistics.median(without_p), 3),
                baseline_name="cycles/s without",
                absolute_unit="cycles/s with the pruner",
                bound="the store's writes; the pruner holds it GW_PRUNE_DUTY of the time",
            )
            if dialect == "postgresql":
                from sqlalchemy import create_engine, text

                admin = create_engine(pg_base or "", isolation_level="AUTOCOMMIT")
                with admin.connect() as conn:
                    for tag in ("size", "ingest"):
                        conn.execute(
                            text(f'DROP DATABASE IF EXISTS "gw_bench_retention_{tag}" WITH (FORCE)')
                        )
                admin.dispose()
    result["figures"] = figures
    emit(result, args.out)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
