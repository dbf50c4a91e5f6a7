"""Topics get the cluster's replication wherever they are made (issue 30): before, the
replication factor was hard-coded to 1, so on a 3-broker cluster one broker down took its
partitions offline. On the single test broker the defaults resolve to RF 1, min ISR 1; asking for
more replicas than the cluster has is refused in one line naming the setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from groundwatch.contracts import Topics

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

CLI = str(Path(sys.executable).parent / "groundwatch")


def topics_create(
    bootstrap: str, prefix: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "topics-create", "--bootstrap", bootstrap, "--prefix", prefix, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


async def replication(bootstrap: str, names: list[str]) -> dict[str, tuple[int, str]]:
    """Each topic's replicas and its min.insync.replicas, as the broker has them."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(names)
        configs = await admin.describe_configs(
            [
                ConfigResource(ConfigResourceType.TOPIC, n, {"min.insync.replicas": None})
                for n in names
            ]
        )
    finally:
        await admin.close()
    isr: dict[str, str] = {}
    for response in configs:
        for _code, _msg, _type, name, entries in response.resources:
            for entry in entries:
                if entry[0] == "min.insync.replicas":
                    isr[name] = entry[1]
    return {
        t["topic"]: (min(len(p["replicas"]) for p in t["partitions"]), isr.get(t["topic"], "?"))
        for t in described
    }


async def test_topics_create_uses_the_clusters_replication(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    proc = topics_create(kafka_bootstrap, unique_prefix)
    assert proc.returncode == 0, proc.stderr
    names = Topics(unique_prefix).all()
    assert await replication(kafka_bootstrap, names) == {n: (1, "1") for n in names}


def test_more_replicas_than_brokers_up_is_refused_in_one_line(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    proc = topics_create(kafka_bootstrap, unique_prefix, "--replication-factor", "3", "--wait", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        "error: topics not created: NotEnoughBrokers: GW_KAFKA_REPLICATION_FACTOR=3 but 1 broker(s)"
        " of the cluster are up"
    ], lines
    by_setting = topics_create(
        kafka_bootstrap, unique_prefix, "--wait", "1", GW_KAFKA_REPLICATION_FACTOR="2"
    )
    assert by_setting.returncode == 1 and "GW_KAFKA_REPLICATION_FACTOR=2" in by_setting.stderr
    contradiction = topics_create(
        kafka_bootstrap, unique_prefix, "--replication-factor", "1", "--min-insync-replicas", "2"
    )
    assert contradiction.returncode == 2, contradiction.stderr
    assert (
        "GW_KAFKA_MIN_INSYNC_REPLICAS=2 is above the replication factor 1" in contradiction.stderr
    )


async def test_a_service_restarting_while_a_broker_is_down_finds_its_topics(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    """Found by the cluster chaos test: a judge restarted while one of three brokers was down was
    refused (RF 3 > 2 brokers up) although its topics existed. Only missing topics need the
    brokers: here the topics exist and the factor asked is more than the one broker up."""
    from groundwatch.adapters.bus.kafka import KafkaBus

    assert topics_create(kafka_bootstrap, unique_prefix).returncode == 0
    bus = KafkaBus(kafka_bootstrap, replication_factor=3)
    await bus.ensure_topics(Topics(unique_prefix).all(), wait_s=5)  # no NotEnoughBrokers
