"""Start the services as separate OS processes, as `make up` and production do."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent


#: ports handed out by this test process
_GIVEN: set[int] = set()


def free_port() -> int:
    """A free port not handed out before by this process: the kernel can return one port twice
    while the service given it first has not bound it yet (a pipeline's analytics and runner got
    one port, and analytics exited on "address already in use")."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


@dataclass
class ServiceProc:
    name: str
    env: dict[str, str]
    log_dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.name}-{self.port}.log"

    def start(self) -> ServiceProc:
        env = {
            **os.environ,
            **self.env,
            "GW_PORT": str(self.port),
            "GW_HOST": "127.0.0.1",
            "GW_INSTANCE": f"{self.name}-{self.port}",
        }
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [str(BIN / f"groundwatch-{self.name}")],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited {self.proc.returncode}:\n{self.tail()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AssertionError(
            f"{self.name} not ready in {timeout}s:\n{self.tail()}\n{self.broker_groups()}"
        )

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=10)

    def kill(self, sig: int = signal.SIGTERM, wait: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def broker_groups(self, lines: int = 40) -> str:
        """What the test broker's group coordinator logged about this run's consumer groups
        (joins, rebalances, members removed): a service that never gets its partitions is
        explained there, not in its own log."""
        path, prefix = os.environ.get("GW_TEST_KAFKA_LOG", ""), self.env.get("GW_TOPIC_PREFIX")
        if not path or not prefix or not Path(path).is_file():
            return "(no broker log)"
        with Path(path).open(errors="replace") as f:
            found = [
                line.rstrip()[:400] for line in f if "GroupCoordinator" in line and prefix in line
            ]
        return "broker, groups of this run:\n" + "\n".join(found[-lines:])

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text[-lines:]) + f"\n(full log: {self.log_path})"


def metric_samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Samples of one metric family from a Prometheus exposition, keyed by sorted labels."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[tuple[tuple[str, str], ...], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


@contextlib.contextmanager
def running_pipeline(
    *,
    bootstrap: str,
    prefix: str,
    database_url: str,
    log_dir: Path,
    judges: int = 1,
    analytics: int = 1,
    runs: int = 1,
    generator_env: dict[str, str] | None = None,
    runner_env: dict[str, str] | None = None,
    service_env: dict[str, dict[str, str]] | None = None,
    ready_timeout: float = 90.0,
) -> Iterator[dict[str, ServiceProc]]:
    """The five services as OS processes on one topic prefix; ``judges`` judge processes share a
    consumer group. Yields them by name (``judge``, ``judge-2``, …); stops them all at exit.
    ``runner_env`` overrides the runner's variables (e.g. its target URL); ``service_env`` adds
    variables to the named processes (e.g. a test fault hook for ``judge-2`` only)."""
    common = {
        "GW_BUS": "kafka",
        "GW_KAFKA_BOOTSTRAP": bootstrap,
        "GW_TOPIC_PREFIX": prefix,
        "GW_DATABASE_URL": database_url,
        "GW_LOG_LEVEL": "INFO",
    }
    rag = ServiceProc("reference-rag", dict(common), log_dir)
    procs: dict[str, ServiceProc] = {"reference-rag": rag}
    for i in range(analytics):
        name = "analytics" if i == 0 else f"analytics-{i + 1}"
        procs[name] = ServiceProc("analytics", common, log_dir)
    for i in range(judges):
        procs["judge" if i == 0 else f"judge-{i + 1}"] = ServiceProc("judge", common, log_dir)
    procs["rag-runner"] = ServiceProc(
        "rag-runner",
        {**common, "GW_RUNNER_REFERENCE_URL": f"{rag.url}/query", **(runner_env or {})},
        log_dir,
    )
    procs["generator"] = ServiceProc(
        "generator",
        {**common, "GW_RUNS": str(runs), "GW_TARGETS": '["reference"]', **(generator_env or {})},
        log_dir,
    )
    for name, extra in (service_env or {}).items():
        procs[name].env = {**procs[name].env, **extra}
    try:
        # Consumers first, generator last, so no probe waits on a consumer-group rebalance.
        for name, proc in procs.items():
            if name != "generator":
                proc.start()
        for name, proc in procs.items():
            if name != "generator":
                proc.wait_ready(ready_timeout)
        procs["generator"].start().wait_ready(ready_timeout)
        yield procs
    finally:
        for proc in reversed(list(procs.values())):
            proc.kill()


def wait_published(generator: ServiceProc, runs: int, timeout: float = 240.0) -> int:
    """Probes the generator published once its ``runs`` start-up cycles are done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = generator.get("/runs").json()
        if len(state["runs"]) >= runs:
            return int(state["published"])
        time.sleep(0.5)
    raise AssertionError(f"generator did not finish {runs} runs in {timeout}s:\n{generator.tail()}")


def wait_tallied(analytics: ServiceProc, count: int, timeout: float = 240.0) -> int:
    """Judgements analytics has tallied, once it reaches ``count`` (or the timeout)."""
    deadline = time.monotonic() + timeout
    judged = 0
    while time.monotonic() < deadline:
        samples = metric_samples(analytics.get("/metrics").text, "groundwatch_judgements_total")
        judged = int(sum(samples.values()))
        if judged >= count:
            break
        time.sleep(0.5)
    return judged
