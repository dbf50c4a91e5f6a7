"""Issue 31: `make demo` then `make test` — a test never reads the state a command left behind.

The demo keeps its store in ./groundwatch.db, and `groundwatch report` with no arguments reads the
store of ``GW_DATABASE_URL`` or of the working directory. The test that checks that a bare
`report` is refused passed alone and failed after the demo; here it runs in a fresh pytest with
a demo store in its working directory and another named by ``GW_DATABASE_URL``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PRODUCT_VARIABLES, ROOT

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("groundwatch"))
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
BARE_REPORT_TEST = "tests/unit/test_analytics_grammar.py::test_cli_rejects_bad_input"


def test_each_test_starts_in_an_empty_directory_without_product_settings() -> None:
    assert Path.cwd() != ROOT and not any(Path.cwd().iterdir())
    assert not PRODUCT_VARIABLES & os.environ.keys()


def test_a_demo_store_in_the_working_directory_or_the_environment_is_not_read(
    tmp_path: Path,
) -> None:
    demo = subprocess.run(
        [CLI, "demo", "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    store = tmp_path / "groundwatch.db"
    assert store.is_file()
    report = subprocess.run([CLI, "report", "--quiet"], cwd=tmp_path, capture_output=True)
    assert report.returncode == 0  # the store is there: a bare `report` reads it
    for cwd, env in (
        (tmp_path, {}),  # pytest started where the demo ran
        (ROOT, {"GW_DATABASE_URL": f"sqlite:///{store}"}),  # or with the store in the shell
    ):
        inner = subprocess.run(
            [*PYTEST, f"--rootdir={ROOT}", str(ROOT / BARE_REPORT_TEST)],
            cwd=cwd,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert inner.returncode == 0, inner.stdout[-3000:]
