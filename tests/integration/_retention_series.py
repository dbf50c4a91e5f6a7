"""A monitoring series written through the real store code, for the retention tests and bench:
cycles recorded in ``runs`` as the generator records them, judgements saved by
:class:`AnalyticsStore` as analytics saves them, on a fake clock (a cycle a minute)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.runs import record_cycle
from groundwatch.adapters.db.tables import AnswerVersionRow
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import AnswerType, Expected, Verdict

#: the fake clock's first cycle (epoch seconds)
T0 = 1_780_000_000.0


@pytest.fixture(params=["sqlite", "postgresql", "mysql"], name="db_url")
def backend_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store on each backend the retention tests run on: a SQLite file, and a
    PostgreSQL or MariaDB database of its own (the shared servers' other databases are left
    alone)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/gw.db"
    factory: Callable[[], str] = request.getfixturevalue(
        "fresh_pg_url" if request.param == "postgresql" else "fresh_mysql_url"
    )
    return factory()


def write_cycle(
    store: AnalyticsStore,
    *,
    series: str,
    cycle: int,
    groups: int,
    forms: int = 3,
    flip: float = 0.1,
    seed: int = 0,
    interval_s: float = 60.0,
    versioned: bool = False,
    answer_version: int | None = None,
) -> int:
    """One cycle of ``groups`` groups × ``forms`` forms × 2 cohorts; a group's verdicts are
    those of its seed, and each cycle a share ``flip`` of groups changes its wrong form.
    ``versioned``: every group's expected answer is a new version each cycle (version =
    cycle), recorded in ``answer_versions`` as the answer refresher records it.
    ``answer_version``: every group's expected answer is the one a versioned cycle of that
    number had (an answer referenced again; not recorded again)."""
    at = T0 + cycle * interval_s
    run_id = f"{series}-c{cycle}"
    record_cycle(
        store.engine,
        run_id=run_id,
        series=series,
        cycle=cycle,
        dataset_id="ds",
        targets=["prod"],
        started_at=at,
    )
    rng = random.Random(seed * 1_000_003 + cycle)
    created = datetime.fromtimestamp(at, UTC)
    judgements = []
    versions: list[dict[str, object]] = []
    for g in range(groups):
        again = answer_version is not None
        version = (cycle if versioned else 1) if answer_version is None else answer_version
        value = f"answer {g} v{version}" if versioned or again else f"answer {g}"
        expected = Expected(values=[value], types=[AnswerType.TEXT], version=version)
        if versioned and not again:
            versions.append(
                {"dataset_id": "ds", "group_id": f"g{g:05d}", "version": version, "answer": value}
            )
        wrong = g % (forms + 2) if rng.random() < flip else (g * 7) % (forms + 2)
        for cohort in ("short", "long"):
            for f in range(forms):
                probe = Probe(
                    probe_id=uuid.uuid4(),
                    run_id=run_id,
                    series=series,
                    cycle=cycle,
                    dataset_id="ds",
                    group_id=f"g{g:05d}",
                    form_id=f"g{g:05d}-{cohort}-{f}",
                    cohort=cohort,
                    target="prod",
                    query=f"What is the value of item {g} asked as form {f} in {cohort}?",
                    expected=expected,
                    group_forms=forms,
                    probe_created_at=created,
                )
                ok = f != wrong
                response = RagResponse.for_probe(
                    probe,
                    status=TargetStatus.OK,
                    answer=value if ok else "something else",
                    retrieved_ids=["d1"],
                )
                judgements.append(
                    Judgement.for_response(
                        response,
                        verdict=Verdict.CORRECT if ok else Verdict.INCORRECT,
                        tier="exact",
                        judged_at=created,
                    )
                )
    store.save(judgements, [])
    if versions:
        with store.engine.begin() as conn:
            conn.execute(
                AnswerVersionRow.__table__.insert(),
                [
                    {**v, "answer": {"values": [v["answer"]]}, "observed_at": created}
                    for v in versions
                ],
            )
    return len(judgements)


def write_series(
    engine: Engine, *, series: str = "s", cycles: int, groups: int, start: int = 1, **kw: object
) -> int:
    store = AnalyticsStore(engine)
    return sum(
        write_cycle(store, series=series, cycle=c, groups=groups, **kw)  # type: ignore[arg-type]
        for c in range(start, start + cycles)
    )
