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
