"""A PostgreSQL cluster of one test's own (``scripts/postgres.sh`` on a free loopback port and a
directory of its own), for tests that stop and restart the store: the shared server on 55432 is
never touched."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "postgres.sh"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class OwnPostgres:
    home: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/groundwatch_test"

    def _run(self, verb: str) -> None:
        env = {**os.environ, "GW_PG_HOME": str(self.home), "GW_PG_PORT": str(self.port)}
        done = subprocess.run(
            ["bash", str(SCRIPT), verb], env=env, capture_output=True, text=True, timeout=180
        )
        if done.returncode != 0:
            raise AssertionError(f"postgres.sh {verb} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        """Start the cluster (the first time: make it; after :meth:`halt`: on its own data)."""
        self._run("start")

    def halt(self) -> None:
        """Stop the server, keeping its data: a store outage."""
        self._run("halt")

    def stop(self) -> None:
        """Stop the server and remove the cluster (and the script's lock file beside it)."""
        self._run("stop")
        Path(f"{self.home}.lock").unlink(missing_ok=True)


@contextlib.contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A started cluster of this test's own; removed at exit. Skips (fails in CI) without
    PostgreSQL's server binaries."""
    from tests.conftest import need

    if not (list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) or shutil.which("initdb")):
        need("PostgreSQL server binaries (initdb) for a cluster of the test's own")
    home = Path(f"/tmp/gw-own-pg-{os.getpid()}-{_free_port()}")
    pg = OwnPostgres(home, _free_port())
    try:
        pg.start()
    except AssertionError as exc:
        pytest.fail(str(exc))
    try:
        yield pg
    finally:
        pg.stop()
