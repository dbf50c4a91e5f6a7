"""Kill the Kafka broker in the middle of a run and bring it back: the services reconnect, the run
completes, and the tallies are exact.

The test starts a broker of its own on free ports (``scripts/kafka.sh`` with ``GW_KAFKA_PORT``,
``GW_KAFKA_CONTROLLER_PORT`` and ``GW_KAFKA_HOME``) and never touches the shared broker other
tests use. The restart reuses the broker's data directory — ``kafka.sh start`` would wipe it, which
is a new cluster, not a restart — by relaunching the very command line the script started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from tests.conftest import need
from tests.e2e.procs import free_port, running_pipeline, wait_published
from tests.e2e.test_faults_kafka import (
    PROBES_PER_CYCLE,
    check_exact,
    published,
    report,
    stored_count,
    wait_settled,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.kafka, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
RUNS = 2  # 4,452 probes
RATE = 300  # probes/s: publishing lasts ~15 s, the broker dies a third of the way in
DOWN_S = 12.0  # dead longer than the 10 s session timeout: every group must rejoin


@dataclass
class Broker:
    """A broker this test started; ``kill`` and ``restart`` keep its data directory."""

    port: int
    home: Path
    env: dict[str, str]
    relaunched: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pidfile(self) -> Path:
        return self.home / "broker.pid"

    def kill(self, sig: int = signal.SIGKILL) -> list[str]:
        """Kill the broker process; returns its command line for :meth:`restart`."""
        pid = int(self.pidfile.read_text())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        assert any("kafka.Kafka" in a for a in argv), argv
        os.kill(pid, sig)
        wait_until("the broker to die", lambda: not _alive(pid), 30, 0.1)
        return argv

    def restart(self, argv: list[str]) -> float:
        """Start the same broker on the same data; returns seconds until clients are served."""
        started = time.monotonic()
        log = (self.home / "broker.log").open("ab")
        self.relaunched = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self.pidfile.write_text(str(self.relaunched.pid))  # so `kafka.sh stop` stops this one
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts/wait_kafka.py"),
                "--bootstrap",
                self.bootstrap,
                "--timeout",
                "90",
            ],
            check=True,
            timeout=120,
        )
        return time.monotonic() - started


def _alive(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())  # a zombie has an empty cmdline
    except FileNotFoundError:
        return False


def _kill_leftover(home: Path) -> None:
    """SIGKILL a broker of *this* home that ``kafka.sh`` lost track of (its start can give up on
    a slow machine after launching the JVM, and then its stop leaves that JVM running)."""
    try:
        pid = int((home / "broker.pid").read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    if "kafka.Kafka" in cmdline and str(home) in cmdline:
        os.kill(pid, signal.SIGKILL)
        wait_until("the leftover broker to die", lambda: not _alive(pid), 30, 0.1)


@pytest.fixture
def own_broker() -> Iterator[Broker]:
    port, controller = free_port(), free_port()
    base = Path(tempfile.mkdtemp(prefix="gw-kafka-faults-"))
    home = base / "broker"
    env = {
        **os.environ,
        "GW_KAFKA_PORT": str(port),
        "GW_KAFKA_CONTROLLER_PORT": str(controller),
        "GW_KAFKA_HOME": str(home),
        "PYTHON": sys.executable,
    }
    script = str(ROOT / "scripts/kafka.sh")

    def run(action: str, timeout: float) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(
                ["bash", script, action], env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return None

    def clean_up() -> None:
        run("stop", 90)
        _kill_leftover(home)

    proc = run("start", 240)
    if proc is None or proc.returncode != 0:  # one retry: start wipes the home, so it is clean
        clean_up()
        proc = run("start", 240)
    broker = Broker(port, home, env)
    try:
        if proc is None or proc.returncode != 0:
            why = (proc.stdout + proc.stderr)[-2000:] if proc else "timeout"
            need(f"could not start a second Kafka broker: {why}")
        yield broker
    finally:
        clean_up()
        if broker.relaunched is not None:
            try:
                broker.relaunched.wait(30)
            except subprocess.TimeoutExpired:
                broker.relaunched.kill()
                broker.relaunched.wait(10)
        subprocess.run(["rm", "-rf", str(base)], check=False)
        Path(f"{home}.lock").unlink(missing_ok=True)


def test_broker_killed_and_restarted_mid_run(
    own_broker: Broker,
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
) -> None:
    db_url = fresh_pg_url()
    total = RUNS * PROBES_PER_CYCLE
    started = time.monotonic()
    with running_pipeline(
        bootstrap=own_broker.bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        runs=RUNS,
        generator_env={"GW_RATE": str(RATE)},
    ) as procs:
        gen, analytics = procs["generator"], procs["analytics"]
        wait_until("a third of the probes published", lambda: published(gen) >= total // 3, 120)
        wait_until("analytics stored some", lambda: stored_count(db_url) > 0, 60)
        at_kill, stored_at_kill = published(gen), stored_count(db_url)
        argv = own_broker.kill(signal.SIGKILL)
        time.sleep(DOWN_S)
        restart_s = own_broker.restart(argv)
        n = wait_published(gen, RUNS, timeout=240)
        try:
            drain_s = wait_settled(db_url, analytics, n, timeout=120)
        except AssertionError as exc:
            ready = {name: p.get("/readyz").text for name, p in procs.items()}
            raise AssertionError(f"{exc}; stored {stored_count(db_url)}; readyz {ready}") from None
        for name, proc in procs.items():  # every service is still up and its loops run
            assert proc.proc is not None and proc.proc.poll() is None, f"{name} died"
            assert proc.get("/readyz").status_code == 200, f"{name} not ready:\n{proc.tail()}"
        ex, _ = check_exact(own_broker.bootstrap, unique_prefix, db_url, analytics)
    assert n == total and ex.probes == total and ex.dead_letters == 0
    assert at_kill < total and stored_at_kill < total, "the kill did not land mid-run"
    report(
        "test_broker_killed_and_restarted_mid_run",
        published_at_kill=at_kill,
        stored_at_kill=stored_at_kill,
        down_s=DOWN_S,
        broker_restart_s=round(restart_s, 1),
        drain_after_publish_s=round(drain_s, 1),
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
        duplicate_judgements=ex.duplicate_judgements,
    )


async def test_commit_refused_after_a_rebalance_does_not_end_the_consume_loop(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    """The failure the broker restart exposed, made deterministic: the group forgets this member
    while its batch is in flight, so Kafka refuses the commit (CommitFailedError). The loop must
    carry on — the records are redelivered, duplicates are allowed — instead of dying silently."""
    import asyncio
    import uuid
    from collections.abc import Sequence
    from typing import Any

    from aiokafka.errors import CommitFailedError

    from groundwatch.adapters.bus import Outgoing, make_bus
    from groundwatch.contracts import Probe, RagResponse, TargetStatus, Topics, _Contract
    from groundwatch.core.model import Expected
    from groundwatch.runtime.consume import ConsumeLoop

    topics = Topics(unique_prefix)
    bus = make_bus("kafka", bootstrap=kafka_bootstrap, partitions=2)
    await bus.start()
    await bus.ensure_topics(topics.all())
    probes = [
        Probe(
            probe_id=uuid.uuid4(),
            run_id="r",
            dataset_id="d",
            group_id=f"g{i}",
            form_id="f",
            cohort="c",
            target="t",
            query=f"q{i}",
            expected=Expected(values=["a"]),
        )
        for i in range(200)
    ]
    handled: list[str] = []

    async def answer(batch: list[Probe]) -> Sequence[_Contract]:
        handled.extend(str(p.probe_id) for p in batch)
        return [RagResponse.for_probe(p, status=TargetStatus.OK, answer="a") for p in batch]

    loop = ConsumeLoop(
        bus=bus,
        topics=topics,
        source=topics.probes,
        group=f"{unique_prefix}g",
        handler=answer,
        service="test",
        max_records=20,
    )
    task = asyncio.create_task(loop.run())
    try:
        await asyncio.wait_for(loop.ready.wait(), 60)
        inner: Any = loop._consumer._consumer  # type: ignore[union-attr]
        real_commit = inner.commit
        refused = 0

        async def commit_once_refused(offsets: Any = None) -> None:
            nonlocal refused
            if refused < 3:
                refused += 1
                raise CommitFailedError("the group has already rebalanced")
            await real_commit(offsets)

        inner.commit = commit_once_refused
        await bus.publish_many(
            [Outgoing(topics.probes.name, p.group_id.encode(), p.to_bytes()) for p in probes]
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not task.done():
            if set(handled) >= {str(p.probe_id) for p in probes}:
                break
            await asyncio.sleep(0.2)
        assert not task.done(), f"the consume loop ended: {task.exception()!r}"
        assert refused == 3
        assert set(handled) == {str(p.probe_id) for p in probes}
    finally:
        loop.stop()
        await asyncio.gather(task, return_exceptions=True)
        await bus.stop()


def test_a_service_started_while_the_broker_is_down_waits_for_it(
    own_broker: Broker, unique_prefix: str, tmp_path: Path
) -> None:
    """Found by the randomized kill schedule: analytics restarted just before the broker died
    exited 3 (``KafkaConnectionError`` at start-up). A service now waits for the broker, bounded,
    as a rolling restart needs."""
    from tests.e2e.procs import ServiceProc

    argv = own_broker.kill(signal.SIGKILL)
    service = ServiceProc(
        "analytics",
        {
            "GW_BUS": "kafka",
            "GW_KAFKA_BOOTSTRAP": own_broker.bootstrap,
            "GW_TOPIC_PREFIX": unique_prefix,
            "GW_DATABASE_URL": f"sqlite:///{tmp_path}/a.db",
            "GW_ANALYTICS_GROUP": f"{unique_prefix}analytics",
        },
        tmp_path,
    ).start()
    retrying = "broker unreachable, retrying"

    def met_the_dead_broker() -> bool:
        assert service.proc is not None and service.proc.poll() is None, service.tail()
        return retrying in service.log_path.read_text(errors="replace")

    try:
        # the broker comes back only once the service has met it dead and chosen to wait
        wait_until("the service to retry the dead broker", met_the_dead_broker, 120, 0.2)
        own_broker.restart(argv)
        service.wait_ready(120)
        log = service.log_path.read_text(errors="replace")
    finally:
        service.kill()
    assert retrying in log
    report("test_a_service_started_while_the_broker_is_down_waits_for_it", retried=True)
