"""The SQLite migration lock excludes every other holder, in threads and processes, even while
holders remove the lock file on release (a waiter may wake on a removed file)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from groundwatch.adapters.db.migrate import _file_lock

pytestmark = pytest.mark.unit


def test_one_holder_at_a_time_and_no_file_left(tmp_path: Path) -> None:
    path = tmp_path / "x.migrate-lock"
    inside = 0
    most = 0
    guard = threading.Lock()

    def hold() -> None:
        nonlocal inside, most
        for _ in range(30):
            with _file_lock(path):
                with guard:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0.0005)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=hold) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1
    assert not path.exists()


def test_a_failure_inside_releases_and_removes(tmp_path: Path) -> None:
    path = tmp_path / "x.migrate-lock"
    with pytest.raises(RuntimeError), _file_lock(path):
        raise RuntimeError("migration failed")
    assert not path.exists()
    with _file_lock(path):  # not left locked
        assert path.exists()
