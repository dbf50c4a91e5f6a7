"""A member of a multi-topic group joins once. aiokafka 0.14 sends one JoinGroup per configured
assignor, each with different protocol metadata; the broker takes every such join as a changed
member and rebalances again, and two analytics instances chased each other through hundreds of
generations on a loaded machine (never ready in 90 s). The broker's own log says whether a
member's join changed its metadata."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundwatch.adapters.bus import make_bus
from tests.conftest import need
from tests.waiting import until

pytestmark = [pytest.mark.integration, pytest.mark.kafka]


def group_lines(group: str) -> list[str]:
    path = os.environ.get("GW_TEST_KAFKA_LOG", "")
    if not path or not Path(path).is_file():
        need("GW_TEST_KAFKA_LOG names no broker log (run through `make test`)")
    with Path(path).open(errors="replace") as f:
        return [line for line in f if "GroupCoordinator" in line and f"group {group} " in line]


async def test_members_of_a_multi_topic_group_join_without_changing_their_metadata(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    topics, group = [f"{unique_prefix}a", f"{unique_prefix}b"], f"{unique_prefix}grp"
    bus = make_bus("kafka", bootstrap=kafka_bootstrap, partitions=2)
    await bus.start()
    members = [bus.consumer(topics, group, client_id=f"m{i}") for i in range(2)]
    try:
        await bus.ensure_topics(topics)
        for m in members:
            await m.start()

        async def both_hold_partitions() -> bool:
            for m in members:
                await m.poll(100, 0.1)
            return all(m.assignment() for m in members)

        await until("both members hold partitions", both_hold_partitions)
    finally:
        for m in members:
            await m.stop()
        await bus.stop()
    lines = group_lines(group)
    assert lines, f"the broker logged nothing about group {group}"
    changed = [line.strip() for line in lines if "Updating metadata for member" in line]
    assert not changed, "a member's own join changed its metadata:\n" + "\n".join(changed[:5])
