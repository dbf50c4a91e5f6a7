#!/usr/bin/env python3
"""Wait until a Kafka broker really serves clients (used by scripts/kafka.sh).

An open port is not enough: the broker binds before it serves, and metadata /
topic creation only work once the KRaft controller has elected itself. So we do
what the services will do: connect with aiokafka's admin client, create a
throw-away topic, list topics and look up a group coordinator.

Usage: wait_kafka.py [--bootstrap 127.0.0.1:9092] [--timeout 90]
Exit 0 when ready, 1 on timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

READY_TOPIC = "__gw_ready"


async def probe(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    await admin.start()
    try:
        if READY_TOPIC not in await admin.list_topics():
            # TopicAlreadyExists: a concurrent waiter won the race; fine.
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics([NewTopic(READY_TOPIC, 1, 1)])
        if READY_TOPIC not in await admin.list_topics():
            raise RuntimeError(f"{READY_TOPIC} not visible after create")
        # The broker creates __consumer_offsets lazily on the first group lookup; doing it here
        # spares the first test consumer a GroupCoordinatorNotAvailable retry loop.
        await admin.find_coordinator("__gw_ready")
    finally:
        await admin.close()


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--timeout", type=float, default=90.0)
    args = ap.parse_args()
    # aiokafka logs every refused connection at ERROR; only our one-line summary matters here.
    logging.basicConfig(level=logging.CRITICAL)

    deadline = time.monotonic() + args.timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            await asyncio.wait_for(probe(args.bootstrap), timeout=15)
            return 0
        except Exception as e:  # any failure just means "not ready yet"
            last = e
            await asyncio.sleep(1)
    msg = f"kafka at {args.bootstrap} not ready after {args.timeout:.0f}s: {last!r}"
    print(msg, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
