"""A frozen broker fails readiness at the deadline instead of hanging it.

The broker is a Kafka of the test's own (``scripts/kafka.sh`` on free loopback ports, never the
shared one), SIGSTOPped: its connections stay open and nothing answers, the case where a ping
hangs rather than fails. ``/readyz`` of a judge process on it must answer 503 within its
deadline (``GW_READY_DEADLINE_S``, 0.8 s by default), naming the bus as the check that missed
it — the answer is the deadline's, not the ping's (which gives up after 5 s) — and 200 again once
the broker is thawed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from groundwatch.runtime.settings import READY_DEADLINE_S
from tests.e2e.procs import ServiceProc

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.kafka, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def _two_free_ports() -> int:
    for _ in range(100):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            port = int(a.getsockname()[1])
            try:
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture
def own_kafka(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A broker of this test's own: its bootstrap and its JVM's pid."""
    home = tmp_path / "kafka"

    def sh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(ROOT / "scripts/kafka.sh"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def env_on(port: int) -> dict[str, str]:
        return {
            **os.environ,
            "GW_KAFKA_BROKERS": "1",
            "GW_KAFKA_PORT": str(port),
            "GW_KAFKA_CONTROLLER_PORT": str(port + 1),
            "GW_KAFKA_HOME": str(home),
            "PYTHON": sys.executable,
        }

    tries: list[str] = []
    for _ in range(3):
        # New ports each try: a JVM that exits at once on a loaded machine is started again,
        # and a port taken between the pick and the bind (another test run beside this one)
        # shows as "reusing" someone else's broker, which this test must never freeze.
        env = env_on(_two_free_ports())
        started = sh(env, "start")
        pid = sh(env, "node-pid", "1")
        if started.returncode == 0 and pid.returncode == 0 and pid.stdout.strip().isdigit():
            broker = int(pid.stdout.strip())
            break
        tries.append(started.stdout + started.stderr + pid.stderr)
        sh(env, "stop")
    else:
        pytest.fail("own Kafka did not start:\n" + "\n---\n".join(tries))
    try:
        yield f"127.0.0.1:{env['GW_KAFKA_PORT']}", broker
    finally:
        if sh(env, "node-pid", "1").returncode == 0:
            os.kill(broker, signal.SIGCONT)  # a stopped JVM cannot take the SIGTERM of stop
        sh(env, "stop")


def test_a_frozen_broker_is_a_503_at_the_readiness_deadline(
    own_kafka: tuple[str, int], tmp_path: Path, unique_prefix: str
) -> None:
    bootstrap, pid = own_kafka
    judge = ServiceProc(
        "judge",
        {
            "GW_BUS": "kafka",
            "GW_KAFKA_BOOTSTRAP": bootstrap,
            "GW_TOPIC_PREFIX": unique_prefix,
            "GW_DATABASE_URL": f"sqlite:///{tmp_path / 'j.db'}",
        },
        tmp_path,
    ).start()
    try:
        judge.wait_ready(120)
        os.kill(pid, signal.SIGSTOP)
        try:
            # a generous client timeout: what bounds the answer is the deadline it reports
            frozen = httpx.get(f"{judge.url}/readyz", timeout=30)
            again = httpx.get(f"{judge.url}/readyz", timeout=30)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert frozen.status_code == again.status_code == 503, frozen.text
        body = frozen.json()
        assert body["checks"]["bus"] is False
        assert body["timed_out"] == ["bus"], body  # the deadline answered, not the ping
        assert body["deadline_s"] == READY_DEADLINE_S <= 1.0
        deadline = time.monotonic() + 60
        while httpx.get(f"{judge.url}/readyz", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, f"not ready after the thaw:\n{judge.tail()}"
            time.sleep(0.3)
    finally:
        judge.kill()
