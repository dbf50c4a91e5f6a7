"""Three judge processes in one consumer group on real Kafka share the work, and no probe is
judged or counted twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from groundwatch.contracts import Topics
from tests.e2e.procs import metric_samples, running_pipeline, wait_published, wait_tallied
from tests.e2e.test_pipeline_kafka import read_topic

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]


def test_three_judges_split_the_work(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    # Six partitions, three members: two each. The generator paces itself a little so that a
    # rebalance, if one happens, meets probes in flight (redelivery must still not double count).
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=fresh_pg_url(),
        log_dir=tmp_path,
        judges=3,
        generator_env={"GW_RATE": "400"},
    ) as procs:
        published = wait_published(procs["generator"], runs=1)
        judged = wait_tallied(procs["analytics"], published)
        assert judged == published, procs["analytics"].tail()
        per_judge = {}
        for name in ("judge", "judge-2", "judge-3"):
            samples = metric_samples(procs[name].get("/metrics").text, "groundwatch_messages_total")
            per_judge[name] = sum(v for k, v in samples.items() if ("outcome", "ok") in k)

    topics = Topics(unique_prefix)
    raw = asyncio.run(read_topic(kafka_bootstrap, topics.judgements.name, published))
    per_probe = Counter(str(topics.judgements.decode(r).probe_id) for r in raw)
    assert len(per_probe) == published and max(per_probe.values()) == 1, "a probe was judged twice"
    assert all(n > 0 for n in per_judge.values()), f"a judge got no work: {per_judge}"
    assert sum(per_judge.values()) == published, per_judge
