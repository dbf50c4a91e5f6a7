"""Two analytics instances on real Kafka own disjoint partitions; summed over the instances (as
Prometheus does), their exported tallies equal the core's tallies of every judgement."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from groundwatch.contracts import Topics
from groundwatch.core.tagging import Tagger, Window
from groundwatch.stages.analytics.observe import observation_from_judgement
from tests.e2e.procs import metric_samples, running_pipeline, wait_published
from tests.e2e.test_pipeline_kafka import read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]


def summed(procs: list, name: str) -> dict:
    total: dict = {}
    for p in procs:
        for k, v in metric_samples(p.get("/metrics").text, name).items():
            total[k] = total.get(k, 0.0) + v
    return {k: v for k, v in total.items() if v}


def test_two_analytics_instances_sum_to_the_whole(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=fresh_pg_url(),
        log_dir=tmp_path,
        analytics=2,
    ) as procs:
        published = wait_published(procs["generator"], runs=1)
        pool = [procs["analytics"], procs["analytics-2"]]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if sum(summed(pool, "groundwatch_judgements_total").values()) >= published:
                break
            time.sleep(0.5)
        judged = [
            sum(metric_samples(p.get("/metrics").text, "groundwatch_judgements_total").values())
            for p in pool
        ]
        assert sum(judged) == published and all(n > 0 for n in judged), judged
        topics = Topics(unique_prefix)
        raw = asyncio.run(read_topic(kafka_bootstrap, topics.judgements.name, published))
        tagger = Tagger(Window(runs=1))  # the services' default live view
        decoded = sorted(
            (topics.judgements.decode(r) for r in raw), key=lambda j: (j.cycle, j.judged_at)
        )
        tagger.apply_many(observation_from_judgement(j) for j in decoded)
        expected = {
            (("cohort", c), ("status", s.value), ("target", t)): float(n)
            for (t, c, s), n in tagger.status_counts().items()
        }
        assert summed(pool, "groundwatch_groups") == expected


def test_an_instance_frozen_past_its_session_counts_only_what_it_committed(
    kafka_bootstrap: str,
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
) -> None:
    """Issue 30's report as processes: one of two analytics instances SIGSTOPped mid-run for
    longer than the 10 s session timeout (its partitions move to the other), then resumed.
    Summed over the instances, ``groundwatch_judgements_total`` must equal the stored
    judgements (reported before the fix: 4,494 for 4,416). Whether the frozen instance held a
    batch at the instant is up to the schedule; ``tests/integration/test_analytics_fence.py``
    replays that instant deterministically."""
    import signal

    from tests.e2e.test_faults_kafka import published, report, stored_count, wait_until

    db_url = fresh_pg_url()
    runs = 2
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        analytics=2,
        runs=runs,
        generator_env={"GW_RATE": "300"},
    ) as procs:
        gen, pool = procs["generator"], [procs["analytics"], procs["analytics-2"]]
        frozen = pool[1]
        wait_until(
            "the second instance counted some",
            lambda: bool(summed([frozen], "groundwatch_judgements_total")),
            120,
        )
        assert frozen.proc is not None
        at_freeze = stored_count(db_url)
        frozen.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(15)  # > the 10 s session timeout: the group moves its partitions
        finally:
            frozen.proc.send_signal(signal.SIGCONT)
        total = wait_published(gen, runs)
        wait_until("every judgement stored", lambda: stored_count(db_url) >= total, 240)
        # both instances settle (the resumed one rejoins and finishes what it held)
        counted = 0.0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            counted = sum(summed(pool, "groundwatch_judgements_total").values())
            if counted >= total:
                time.sleep(3)  # anything counted late would show now
                counted = sum(summed(pool, "groundwatch_judgements_total").values())
                break
            time.sleep(0.5)
        rebuilt = sum(
            p.log_path.read_text(errors="replace").count("already stored by another instance")
            for p in pool
        )
        stored = stored_count(db_url)
        assert published(gen) == total == stored
        assert counted == stored, f"counted {counted} for {stored} stored"
    report(
        "test_an_instance_frozen_past_its_session_counts_only_what_it_committed",
        probes=total,
        stored_at_freeze=at_freeze,
        counted=int(counted),
        stored=stored,
        batches_found_stored_elsewhere=rebuilt,
    )
