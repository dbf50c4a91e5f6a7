"""The installed ``groundwatch`` command's usage errors: one line on stderr, exit 2.

The real console script runs in a process of its own, so this sits among the integration tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["report", "--windw-runs", "2"], "No such option: --windw-runs"),
        (["show"], "Missing argument 'group_id'"),
        (["nosuchcmd"], "No such command 'nosuchcmd'"),
        (["report", "--window-runs", "-3"], "Invalid value for '--window-runs'"),
        # a dry run writes nothing: an --out beside it would be left empty after exit 0
        (["gen", "--demo", "--dry-run", "--out", "x.jsonl"], "--out goes without --dry-run"),
        (["gen", "--scenarios", "all", "--demo", "--dry-run"], "--dry-run goes with SQL"),
    ],
)
def test_a_usage_error_is_one_line_with_exit_2(argv: list[str], says: str) -> None:
    """Typer's own usage error is a five-line box; the brief asks for one line."""
    cli = str(Path(sys.executable).with_name("groundwatch"))
    proc = subprocess.run([cli, *argv], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
