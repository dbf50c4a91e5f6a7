"""Start the services as separate OS processes, as `make up` and production do."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        raise AssertionError(f"{self.name} not ready in {timeout}s:\n{self.tail()}")

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
