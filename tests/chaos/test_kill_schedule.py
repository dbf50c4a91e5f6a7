"""A randomized kill schedule over a 20,000-probe run, reconciled exactly (issue 17).

While the generator publishes whole cycles of the demo dataset (at least 20,000 probes) through
the five services on a broker of the test's own, a seeded schedule SIGKILLs a random victim every
few seconds — the rag-runner, one of two judges, analytics, or the broker itself — and restarts it
(a service after a short pause, as a supervisor would; the broker on its own data). After at
least ``MIN_KILLS`` kills and the last probe published, the run must reconcile exactly: every
probe judged and stored once, every stored tally and exported gauge equal to the core's from the
deduplicated judgements topic, no process dead on its own, nothing valid in the dead letters.

The seed is printed (``CHAOS-SEED``) and in every failure message; ``GW_CHAOS_SEED=<seed>
make chaos`` replays the same schedule (the kill instants relative to the traffic vary with the
machine's speed; the victims, gaps and downtimes do not). It needs several minutes, so it runs in ``make chaos``
(CI runs it after ``make test``), not in ``make test``.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn

import pytest

from groundwatch.contracts import Topics
from groundwatch.errors import PoisonMessage
from tests.conftest import IN_CI
from tests.e2e.procs import ServiceProc, running_pipeline, wait_published
from tests.e2e.test_faults_broker import Broker, own_broker  # noqa: F401  (the fixture)
from tests.e2e.test_faults_kafka import (
    PROBES_PER_CYCLE,
    check_exact,
    published,
    read_all,
    report,
    stored_count,
    wait_settled,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.timeout(1500),
]

RUNS = -(-20_000 // PROBES_PER_CYCLE)  # whole demo cycles, at least 20,000 probes
RATE = 150  # probes/s: ~2 min of publishing, room for the kills
MIN_KILLS = 10
MAX_KILLS = 40
GAP_S = (2.0, 5.0)  # between kills
SERVICE_DOWN_S = (0.5, 2.0)  # a killed service stays down this long before its restart
BROKER_DOWN_S = (2.0, 6.0)
#: Under CI the schedule is the same on every run (the commit is judged, not the draw, as with the
#: property tests); a developer's run draws a new one. GW_CHAOS_SEED overrides both.
CI_SEED = 17
#: Victims and their weights: the broker is killed less often (its restart takes 10-20 s).
VICTIMS = {"rag-runner": 3, "judge": 2, "judge-2": 2, "analytics": 3, "broker": 1}


def test_randomized_kill_schedule_reconciles_exactly(
    own_broker: Broker,  # noqa: F811
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
) -> None:
    seed = int(os.environ.get("GW_CHAOS_SEED") or (CI_SEED if IN_CI else 0))
    seed = seed or random.SystemRandom().randrange(1, 2**32)
    print(f"\nCHAOS-SEED {seed} (replay: GW_CHAOS_SEED={seed} make chaos)")
    rng = random.Random(seed)
    db_url = fresh_pg_url()
    total = RUNS * PROBES_PER_CYCLE
    schedule: list[tuple[float, str, int, int]] = []  # (t, victim, published, stored)
    started = time.monotonic()
    with running_pipeline(
        bootstrap=own_broker.bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        judges=2,
        runs=RUNS,
        generator_env={"GW_RATE": str(RATE)},
    ) as procs:
        gen, analytics = procs["generator"], procs["analytics"]

        def fail(why: str) -> NoReturn:
            raise AssertionError(f"seed {seed}: {why}; schedule {schedule}")

        def check_none_died_on_its_own() -> None:
            for name, p in procs.items():
                assert p.proc is not None
                code = p.proc.poll()
                if code is not None and code != -signal.SIGKILL:
                    fail(f"{name} exited {code} on its own:\n{p.tail()}")

        names, weights = list(VICTIMS), list(VICTIMS.values())
        while len(schedule) < MAX_KILLS:
            time.sleep(rng.uniform(*GAP_S))
            check_none_died_on_its_own()
            done = published(gen) >= total
            if done and len(schedule) >= MIN_KILLS:
                break
            victim = rng.choices(names, weights)[0]
            schedule.append(
                (round(time.monotonic() - started, 1), victim, published(gen), stored_count(db_url))
            )
            if victim == "broker":
                argv = own_broker.kill(signal.SIGKILL)
                time.sleep(rng.uniform(*BROKER_DOWN_S))
                own_broker.restart(argv)
            else:
                proc: ServiceProc = procs[victim]
                proc.kill(signal.SIGKILL)
                time.sleep(rng.uniform(*SERVICE_DOWN_S))
                proc.start()
        check_none_died_on_its_own()
        for p in procs.values():
            p.wait_ready(120)
        try:
            n = wait_published(gen, RUNS, timeout=600)
            drain_s = wait_settled(db_url, analytics, n, timeout=600)
        except AssertionError as exc:
            fail(f"{exc}; stored {stored_count(db_url)} of {total}")
        for name, p in procs.items():
            assert p.get("/readyz").status_code == 200, f"seed {seed}: {name} not ready"
        try:
            ex, _ = check_exact(own_broker.bootstrap, unique_prefix, db_url, analytics)
        except AssertionError as exc:
            fail(f"not exact: {exc}")
        topics = Topics(unique_prefix)
        valid_letters = 0
        for raw in read_all(own_broker.bootstrap, topics.dead_letter.name):
            letter = topics.dead_letter.decode(raw)
            source = next(t for t in (topics.probes, topics.responses, topics.judgements)
                          if t.name == letter.source_topic)  # fmt: skip
            try:
                source.decode(letter.raw)
                valid_letters += 1
            except PoisonMessage:
                pass
    kills = Counter(victim for _, victim, _, _ in schedule)
    assert n == total == ex.probes == ex.stored >= 20_000, f"seed {seed}"
    assert len(schedule) >= MIN_KILLS, f"seed {seed}: only {len(schedule)} kills"
    assert valid_letters == 0, f"seed {seed}: {valid_letters} valid messages dead-lettered"
    assert schedule[0][2] < total, f"seed {seed}: the first kill came after the last probe"
    report(
        "test_randomized_kill_schedule_reconciles_exactly",
        seed=seed,
        kills=len(schedule),
        kills_by_victim=dict(kills),
        schedule=schedule,
        drain_after_publish_s=round(drain_s, 1),
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
        duplicate_judgements=ex.duplicate_judgements,
    )
