"""The analytics store (PostgreSQL) restarted twice during a multi-cycle Kafka run: nothing lost,
nothing counted twice, no valid judgement dead-lettered.

The store is a PostgreSQL cluster of the test's own on a free port (``scripts/postgres.sh`` with
``GW_PG_HOME``/``GW_PG_PORT``), so the shared server and the other tests are untouched; the other
services keep their run store on the shared one. Each outage lasts several seconds — longer than
a batch, so writes, the reload after a failed write (the driver's own connection) and the
"already stored?" reads all meet it. Before the store faults were classified in one place, one
20 s outage dead-lettered 1,208 of 2,208 valid judgements. The run ends with one line,
``probes N, judged N, stored N, lost 0, double-counted 0, dead letters 0``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from pathlib import Path

import pytest

from tests.e2e.procs import metric_samples, running_pipeline, wait_published
from tests.e2e.test_faults_kafka import (
    PROBES_PER_CYCLE,
    check_exact,
    published,
    report,
    stored_count,
    wait_settled,
    wait_until,
)
from tests.own_postgres import own_postgres

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.timeout(900),
]

RUNS = 3  # cycles
RATE = 80  # probes/s: ~80 s of publishing, so both outages land while probes still flow
OUTAGE_S = 6.0


def _stored_at_least(url: str, n: int) -> bool:
    return stored_count(url) >= n


def test_store_restarted_twice_loses_nothing_and_dead_letters_nothing(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    total = RUNS * PROBES_PER_CYCLE
    started = time.monotonic()
    outages: list[dict[str, int]] = []
    with (
        own_postgres() as store,
        running_pipeline(
            bootstrap=kafka_bootstrap,
            prefix=unique_prefix,
            database_url=fresh_pg_url(),
            log_dir=tmp_path,
            runs=RUNS,
            generator_env={"GW_RATE": str(RATE)},
            service_env={"analytics": {"GW_DATABASE_URL": store.url}},
        ) as procs,
    ):
        gen, analytics = procs["generator"], procs["analytics"]
        for share in (4, 2):  # at a quarter and at half of the judgements stored
            wait_until(
                f"1/{share} stored", partial(_stored_at_least, store.url, total // share), 240
            )
            at = {"stored": stored_count(store.url), "published": published(gen)}
            store.halt()
            time.sleep(OUTAGE_S)  # judgements pile up; analytics meets the outage
            store.start()
            outages.append(at)
        n = wait_published(gen, RUNS, timeout=300)
        drain_s = wait_settled(store.url, analytics, n, timeout=300)
        counted = int(
            sum(
                metric_samples(
                    analytics.get("/metrics").text, "groundwatch_judgements_total"
                ).values()
            )
        )
        assert analytics.proc is not None and analytics.proc.poll() is None, "analytics died"
        ex, _ = check_exact(kafka_bootstrap, unique_prefix, store.url, analytics)
    assert all(o["stored"] < total for o in outages), f"an outage came after the run: {outages}"
    lost = ex.probes - ex.stored
    # check_exact asserted one stored row per probe and every tally equal to the core's over the
    # deduplicated topic; what is left to count twice is the exported judgement counter
    double = max(0, counted - n)
    line = (
        f"probes {ex.probes}, judged {ex.judged}, stored {ex.stored}, lost {lost}, "
        f"double-counted {double}, dead letters {ex.dead_letters}"
    )
    report(
        "test_store_restarted_twice_loses_nothing_and_dead_letters_nothing",
        outages=outages,
        outage_s=OUTAGE_S,
        counted=counted,
        drain_after_publish_s=round(drain_s, 1),
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
    )
    print(f"\n{line}")
    assert n == total == ex.probes == ex.judged == ex.stored, line
    assert lost == 0 and double == 0 and counted == n, line
    assert ex.dead_letters == 0, line
