"""A service process whose worker loop cannot go on exits non-zero with one log line (issue 30).

Before: the loop's task ended, the error was logged only at shutdown, the process stayed up and
``/healthz`` answered 200 — a supervisor had nothing to act on. Now ``serve`` shuts the service
down and exits 3, so compose / Kubernetes / systemd restart it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.procs import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_a_loop_that_cannot_go_on_exits_the_process_3_with_one_line() -> None:
    env = {
        **os.environ,
        "GW_PORT": str(free_port()),
        "GW_LOG_LEVEL": "INFO",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.integration._fatal_service"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    critical = [line for line in out.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1, out
    assert "loop x:x.probes cannot go on (RuntimeError: topic authorization failed)" in critical[0]
    assert "Traceback" not in out, out
