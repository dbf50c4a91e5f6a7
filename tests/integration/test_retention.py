"""Retention on SQLite, PostgreSQL and MariaDB (where the store code differs by dialect): pruned cycles read back from their summaries with the
answers they had (groups, show, the report's trends, diff), a pruning run killed with SIGKILL continued by the next, partitions dropped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.retention import Retention, RetentionPolicy
from groundwatch.adapters.db.tables import JudgementRow, JudgementSummaryRow, PrunedCycleRow
from groundwatch.app.compare import diff
from groundwatch.app.reports import ReportRequest, stored_report
from groundwatch.app.store import Store, list_groups
from groundwatch.core.tagging import Tagger, Window
from groundwatch.runtime.evidence_settings import evidence_rule
from tests.integration._retention_series import (
    T0,
    backend_db_url,  # noqa: F401 (the db_url fixture)
    write_series,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _answers(store: Store, window: int) -> list[dict[str, Any]]:
    """What ``groups`` and ``show`` say of every group: status per cohort, counts, history."""
    listing = list_groups(store, series="s", window_runs=window, scenario=None)
    return [
        {
            "key": (g.target, g.group_id),
            "status": g.status,
            "cohorts": g.cohort_status,
            "counts": (g.correct, g.incorrect, g.errors, g.undecided, g.forms_judged),
            "history": [(h.cohort, h.cycle, h.status) for h in g.history],
            "cycle": g.cycle,
        }
        for g in listing.rows
    ]


def _forms(store: Store, window: int) -> list[Any]:
    """``show``'s form rows (question, answer, verdict) for the latest cycle."""
    listing = list_groups(store, series="s", window_runs=window, scenario=None)
    return [
        [(f.cohort, f.verdict, f.question, f.answer, f.reason) for f in g.forms]
        for g in listing.rows
    ]


def test_pruned_cycles_answer_as_before(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    write_series(engine, cycles=12, groups=30, flip=0.3)
    store = Store(db_url, "--database-url", engine)
    before = {w: _answers(store, w) for w in (0, 1, 5)}
    shown = _forms(store, 1)

    clock = T0 + 13 * 60
    report = Retention(engine, RetentionPolicy(cycles=3, days=0), clock=lambda: clock).prune()
    assert [c.cycle for c in report.cycles] == list(range(1, 10))
    with engine.connect() as conn:
        cycles_left = conn.scalars(select(JudgementRow.cycle).distinct()).all()
    if engine.dialect.name != "postgresql":  # there the rows go with their partition
        assert sorted(cycles_left) == [10, 11, 12]

    assert {w: _answers(store, w) for w in (0, 1, 5)} == before
    assert _forms(store, 1) == shown
    # a second run finds nothing more to do and changes nothing
    again = Retention(engine, RetentionPolicy(cycles=3, days=0), clock=lambda: clock).prune()
    assert again.cycles == [] and again.summaries_written == 0
    assert {w: _answers(store, w) for w in (0, 1, 5)} == before
    engine.dispose()


def _trends(store: Store, window: int) -> dict[str, Any]:
    """What the report says of the series: each target · cohort's regressions, recoveries, held
    and unknown groups, and the trend of status changes per cycle — each group's net change
    over a cycle (within one cycle the store applies forms in the order of their random probe
    ids, so a status a group passes through mid-cycle is no part of what a cycle says)."""
    report, _ = stored_report(ReportRequest(series="s", window_runs=window), store)
    _, observations = store.latest_series("s")
    tagger = Tagger(Window(runs=window or None), evidence=evidence_rule())
    net: dict[tuple[str, str, str, int], list[str]] = {}
    for o in observations:
        tagger.apply(o)
        for t in tagger.drain_transitions():
            step = net.setdefault((t.target, t.cohort, t.group_id, t.cycle), [t.from_status, ""])
            step[1] = t.to_status
    return {
        "trend": sorted((*k, a.value, b.value) for k, (a, b) in net.items() if a != b),
        "cohorts": {
            (target, cohort): (n.regressions, n.recoveries, n.held_groups, n.unknown_groups)
            for target, tr in report.targets.items()
            for cohort, n in tr.cohorts.items()
        },
        "latest": report.latest_cycle,
    }


def _diff(store: Store, a: str, b: str) -> dict[str, Any]:
    """What ``diff`` says of two runs: per-target and paired figures, each changed group with
    its cohorts and the verdicts of its changed forms."""
    c = diff(a, b, store)
    return {
        "counts": c.counts,
        "paired": c.paired,
        "targets": c.targets,
        "changes": [
            (
                g.target,
                g.group_id,
                g.before,
                g.after,
                g.kind,
                g.cohorts,
                [(f.cohort, f.form_id, f.before, f.after) for f in g.forms],
            )
            for g in c.changes
        ],
    }


#: diffs within the pruned cycles, across the pruned and the raw, and within the raw
DIFFS = (("s-c2", "s-c5"), ("s-c4", "s-c11"), ("s-c10", "s-c12"))


def test_pruned_cycles_give_the_same_trends_and_diff(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    write_series(engine, cycles=12, groups=30, flip=0.3)
    store = Store(db_url, "--database-url", engine)
    trends = {w: _trends(store, w) for w in (0, 1, 5)}
    diffs = {pair: _diff(store, *pair) for pair in DIFFS}
    assert all(t["trend"] for t in trends.values())
    assert all(d["changes"] for d in diffs.values())  # the comparisons have something to say

    clock = T0 + 13 * 60
    report = Retention(engine, RetentionPolicy(cycles=3, days=0), clock=lambda: clock).prune()
    assert [c.cycle for c in report.cycles] == list(range(1, 10))
    with engine.connect() as conn:
        pruned_rows = conn.scalar(
            select(func.count()).select_from(JudgementRow).where(JudgementRow.cycle <= 9)
        )
    if engine.dialect.name != "postgresql":  # there the rows go with their partition
        assert pruned_rows == 0

    assert {w: _trends(store, w) for w in (0, 1, 5)} == trends
    assert {pair: _diff(store, *pair) for pair in DIFFS} == diffs
    engine.dispose()


def test_stable_groups_cost_one_summary_row(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/gw.db")
    create_schema(engine)
    write_series(engine, cycles=20, groups=10, flip=0.0)
    Retention(engine, RetentionPolicy(cycles=1, days=0), clock=lambda: T0).prune()
    with engine.connect() as conn:
        rows = conn.scalar(select(func.count()).select_from(JudgementSummaryRow))
        spans = conn.execute(
            select(JudgementSummaryRow.first_cycle, JudgementSummaryRow.last_cycle).distinct()
        ).all()
    assert rows == 10 * 2  # one per group and cohort
    assert spans == [(1, 19)]
    engine.dispose()


def test_pinned_run_is_never_pruned(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/gw.db")
    create_schema(engine)
    write_series(engine, cycles=6, groups=5)
    retention = Retention(engine, RetentionPolicy(cycles=1, days=0), clock=lambda: T0)
    retention.pin("s-c2", "baseline")
    retention.prune()
    with engine.connect() as conn:
        left = sorted(set(conn.scalars(select(JudgementRow.run_id))))
    assert left == ["s-c2", "s-c6"]
    engine.dispose()


_KILLED = """
import os, signal, sys
from groundwatch.adapters.db import make_engine
from groundwatch.adapters.db import retention as r
engine = make_engine(sys.argv[1])
ret = r.Retention(engine, r.RetentionPolicy(cycles=2, days=0, batch=50), clock=lambda: 0.0)
batches = [0]
real = ret._delete_batch
def delete_then_die(run_id):
    n = real(run_id)
    batches[0] += 1
    if batches[0] == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return n
ret._delete_batch = delete_then_die
real_sum = ret.summarise
def summarise_then_die(cycle):
    out = real_sum(cycle)
    if cycle.cycle == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    return out
ret.summarise = summarise_then_die
ret.prune()
"""


@pytest.mark.parametrize(("die_at_batch", "die_after_cycle"), [(3, 0), (0, 2)])
def test_killed_pruning_is_continued_nothing_counted_twice(
    tmp_path: Path, die_at_batch: int, die_after_cycle: int
) -> None:
    url = f"sqlite:///{tmp_path}/gw.db"
    engine = make_engine(url)
    create_schema(engine)
    write_series(engine, cycles=6, groups=20, flip=0.3)
    # what an uninterrupted run makes of the same store (the last connection closed: the
    # write-ahead log is in the file)
    engine.dispose()
    whole = tmp_path / "whole.db"
    whole.write_bytes((tmp_path / "gw.db").read_bytes())
    ref = make_engine(f"sqlite:///{whole}")
    Retention(ref, RetentionPolicy(cycles=2, days=0), clock=lambda: 0.0).prune()

    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, url, str(die_at_batch), str(die_after_cycle)],
        env=env,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL
    with engine.connect() as conn:
        ledgered = conn.scalar(select(func.count()).select_from(PrunedCycleRow))
    assert ledgered and ledgered >= 1  # killed half-way: something done, not all
    Retention(engine, RetentionPolicy(cycles=2, days=0), clock=lambda: 0.0).prune()

    def contents(e: Any) -> Any:
        s = JudgementSummaryRow
        with e.connect() as conn:
            summaries = conn.execute(
                select(
                    s.target,
                    s.cohort,
                    s.group_id,
                    s.first_cycle,
                    s.last_cycle,
                    s.status,
                    s.correct,
                    s.incorrect,
                    s.error,
                    s.undecided,
                    s.verdicts,
                    s.changed,
                ).order_by(s.target, s.cohort, s.group_id, s.first_cycle)
            ).all()
            ledger = conn.execute(
                select(
                    PrunedCycleRow.run_id, PrunedCycleRow.judgements, PrunedCycleRow.done
                ).order_by(PrunedCycleRow.run_id)
            ).all()
            rows = conn.scalar(select(func.count()).select_from(JudgementRow))
        return summaries, ledger, rows

    assert contents(engine) == contents(ref)
    engine.dispose()
    ref.dispose()


def test_postgresql_drops_whole_partitions(fresh_pg_url: Callable[[], str]) -> None:
    engine = make_engine(fresh_pg_url())
    create_schema(engine)
    hours = 3600.0
    # the clock at the first cycle's hour: partitions for it and the hours after exist
    early = Retention(
        engine, RetentionPolicy(cycles=2, days=0, partitions_ahead=4), clock=lambda: T0
    )
    made = early.ensure_partitions()
    assert len(made) == 5
    write_series(engine, cycles=4, groups=10, interval_s=hours)  # a cycle an hour
    late = Retention(engine, RetentionPolicy(cycles=2, days=0), clock=lambda: T0 + 5 * hours)
    plan = late.prune(dry_run=True)
    report = late.prune()
    assert report.partitions == plan.partitions and len(report.partitions) >= 2
    with engine.connect() as conn:
        cycles = sorted(set(conn.scalars(select(JudgementRow.cycle))))
        default_rows = conn.exec_driver_sql("SELECT count(*) FROM judgements_default").scalar()
        done = conn.scalars(select(PrunedCycleRow.done)).all()
    assert cycles == [3, 4] and default_rows == 0 and all(done)
    engine.dispose()


def test_metrics_cli_and_size_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prometheus_client import CollectorRegistry, generate_latest
    from typer.testing import CliRunner

    from groundwatch.app.retention import Pruner, retention_for, warn_if_large
    from groundwatch.app.settings import RetentionSettings
    from groundwatch.cli.main import app

    url = f"sqlite:///{tmp_path}/gw.db"
    engine = make_engine(url)
    create_schema(engine)
    write_series(engine, cycles=5, groups=40)
    monkeypatch.setenv("GW_RETAIN_CYCLES", "2")
    settings = RetentionSettings(store_warn_mb_per_day=1)
    with caplog.at_level("WARNING", logger="groundwatch.retention"):
        est = warn_if_large(engine, settings)
    assert est is not None and est.per_cycle == 240 and est.cycles_per_day == 1440
    assert "more than GW_STORE_WARN_MB_PER_DAY=1" in caplog.text

    runner = CliRunner()
    dry = runner.invoke(app, ["store", "prune", "--dry-run", "--database-url", url])
    assert dry.exit_code == 0, dry.output
    assert "4 cycles past the window (cycles 1…4): would remove 960 judgements" in dry.output

    registry = CollectorRegistry()
    pruner = Pruner(retention_for(engine, settings), settings)
    pruner.register(registry)
    pruner.run_once()
    text = generate_latest(registry).decode()
    assert 'groundwatch_store_rows{table="judgements"} 240.0' in text
    assert "groundwatch_store_bytes " in text

    out = runner.invoke(app, ["store", "stats", "--database-url", url])
    assert out.exit_code == 0, out.output
    assert "judgements" in out.output and "240 rows" in out.output
    engine.dispose()


def test_dead_letters_llm_cache_and_answer_versions_are_bounded(db_url: str) -> None:
    from datetime import UTC, datetime, timedelta

    from groundwatch.adapters.db.tables import AnswerVersionRow, DeadLetterRow, LlmCacheRow

    engine = make_engine(db_url)
    create_schema(engine)
    now = datetime.fromtimestamp(T0, UTC)
    with engine.begin() as conn:
        for i, age in enumerate((1, 10, 40, 90)):
            at = now - timedelta(days=age)
            conn.execute(
                DeadLetterRow.__table__.insert().values(
                    letter_key=f"k{i}",
                    service="judge",
                    source_topic="t",
                    partition=0,
                    offset=i,
                    error="e",
                    raw_b64="",
                    failed_at=at,
                    stored_at=at,
                )
            )
            conn.execute(
                LlmCacheRow.__table__.insert().values(
                    key=f"c{i}",
                    model="m",
                    prompt_version="1",
                    verdict="correct",
                    raw="",
                    prompt_tokens=0,
                    completion_tokens=0,
                    latency_s=0.0,
                    created_at=at,
                )
            )
        for v in range(1, 8):
            conn.execute(
                AnswerVersionRow.__table__.insert().values(
                    dataset_id="ds",
                    group_id="g",
                    version=v,
                    answer={"values": [v]},
                    observed_at=now,
                )
            )
    policy = RetentionPolicy(dead_letter_days=30, llm_cache_days=5, answer_versions=3, batch=10)
    retention = Retention(engine, policy, clock=lambda: T0)
    dry = retention.prune(dry_run=True)
    assert (dry.dead_letters, dry.llm_cache, dry.answer_versions) == (2, 3, 4)
    report = retention.prune()
    assert (report.dead_letters, report.llm_cache, report.answer_versions) == (2, 3, 4)
    with engine.connect() as conn:
        assert sorted(conn.scalars(select(DeadLetterRow.letter_key))) == ["k0", "k1"]
        assert list(conn.scalars(select(LlmCacheRow.key))) == ["c0"]
        assert sorted(conn.scalars(select(AnswerVersionRow.version))) == [5, 6, 7]
    engine.dispose()


def test_a_group_past_its_answer_versions_bound_answers_as_before(db_url: str) -> None:
    """Every group's expected answer changes every cycle for 26 cycles: its newest 20 answer
    versions (the default bound) stay, the older go, and groups and show still say what they
    said before pruning, each form with its truth version."""
    from groundwatch.adapters.db.tables import AnswerVersionRow

    engine = make_engine(db_url)
    create_schema(engine)
    write_series(engine, cycles=26, groups=4, flip=0.3, versioned=True)
    store = Store(db_url, "--database-url", engine)
    before = {w: _answers(store, w) for w in (0, 1, 5)}
    shown = _forms(store, 1)
    with engine.connect() as conn:
        truth = sorted(conn.execute(select(JudgementRow.cycle, JudgementRow.truth_version)).all())
    assert {v for _, v in truth} == set(range(1, 27))

    clock = T0 + 27 * 60
    policy = RetentionPolicy(cycles=3, days=0)
    assert policy.answer_versions == 20
    report = Retention(engine, policy, clock=lambda: clock).prune()
    assert [c.cycle for c in report.cycles] == list(range(1, 24))
    assert report.answer_versions == 4 * 6
    with engine.connect() as conn:
        kept = conn.execute(
            select(AnswerVersionRow.group_id, func.min(AnswerVersionRow.version), func.count())
            .group_by(AnswerVersionRow.group_id)
            .order_by(AnswerVersionRow.group_id)
        ).all()
        summary_versions = {
            v[1]
            for (verdicts,) in conn.execute(select(JudgementSummaryRow.verdicts))
            for v in verdicts.values()
        }
    assert [tuple(r) for r in kept] == [(f"g{g:05d}", 7, 20) for g in range(4)]
    assert summary_versions == set(range(1, 24))  # every pruned cycle's truth version kept
    assert {w: _answers(store, w) for w in (0, 1, 5)} == before
    assert _forms(store, 1) == shown
    again = Retention(engine, policy, clock=lambda: clock).prune()
    assert again.cycles == [] and again.answer_versions == 0
    assert {w: _answers(store, w) for w in (0, 1, 5)} == before
    engine.dispose()
