"""`groundwatch gen` then `groundwatch run --once` against a callable target from a targets file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("groundwatch"))


def test_gen_then_run_once_reports_every_group(tmp_path: Path) -> None:
    dataset = tmp_path / "demo.jsonl"
    subprocess.run(
        [CLI, "gen", "--demo", "--out", str(dataset)], check=True, capture_output=True, timeout=120
    )
    groups = [orjson.loads(line) for line in dataset.read_bytes().splitlines()]
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n"
        "  - name: clueless\n"
        "    type: callable\n"
        "    callable: tests.e2e.targets_fixture:knows_nothing\n"
    )
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            CLI,
            "run",
            "--dataset",
            str(dataset),
            "--targets",
            str(targets),
            "--once",
            "--json",
            str(out),
            "--database-url",
            f"sqlite:///{tmp_path / 'store.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the callable lives in the tests package
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = orjson.loads(out.read_bytes())
    for cohort in ("short", "long"):
        numbers = report["cohorts"][cohort]
        # A target that refuses everything: every answerable group is a gap, Acc_db = 0.
        assert numbers["groups"] == len(groups)
        assert numbers["gap_groups"] == len(groups)
        assert numbers["acc_db"] == 0.0
    assert "clueless" in proc.stdout
    # a filter naming nothing the series holds is a typo, said so (it printed "0 groups", exit 0)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    for option, typo, hint in (
        ("--cohort", "lng", "'long'"),
        ("--target", "clueles", "'clueless'"),
    ):
        bad = subprocess.run(
            [CLI, "groups", option, typo, "--database-url", store],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert bad.returncode == 2, bad.stdout
        assert f"did you mean {hint}?" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_run_rejects_a_bad_targets_file_naming_the_field(tmp_path: Path) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("")
    targets = tmp_path / "targets.yaml"
    targets.write_text("targets:\n  - name: x\n    type: http_json\n    url: ftp://nope\n")
    proc = subprocess.run(
        [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--once"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "targets[0].url" in proc.stderr and "Traceback" not in proc.stderr


def test_open_domain_filter_leaves_out_what_the_llm_only_baseline_knows(tmp_path: Path) -> None:
    dataset = tmp_path / "demo.jsonl"
    subprocess.run(
        [CLI, "gen", "--demo", "--out", str(dataset)], check=True, capture_output=True, timeout=120
    )
    groups = [orjson.loads(line) for line in dataset.read_bytes().splitlines()]
    city_groups = {
        g["group_id"] for g in groups if g["sql"] == "SELECT city FROM clients WHERE name = :name"
    }
    assert len(city_groups) >= 10
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n"
        "  - {name: rag, type: callable, callable: 'tests.e2e.targets_fixture:knows_nothing'}\n"
        "  - {name: llm-only, type: callable, callable: 'tests.e2e.targets_fixture:knows_the_client_locations'}\n"
    )
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            CLI,
            "run",
            "--dataset",
            str(dataset),
            "--targets",
            str(targets),
            "--once",
            "--open-domain-baseline",
            "llm-only",
            "--json",
            str(out),
            "--database-url",
            f"sqlite:///{tmp_path / 'store.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = orjson.loads(out.read_bytes())
    assert set(report["open_domain"]["group_ids"]) == city_groups
    assert report["cohorts"]["short"]["groups"] == len(groups) - len(city_groups)
    assert list(report.get("targets", {"rag": 0})) == ["rag"]


@pytest.mark.postgres
def test_run_once_on_postgres_with_a_nul_in_a_reply_completes_and_flags_it(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    """Issue 17: one NUL from the endpoint under test stopped analytics on PostgreSQL (0 stored,
    retries without end). Now the run completes, every probe is stored, the NUL one flagged."""
    from sqlalchemy import create_engine, select

    from groundwatch.adapters.db.tables import JudgementRow
    from groundwatch.contracts import REPLACEMENT
    from tests.e2e.nul_target import nul_target, nul_targets_yaml

    dataset = tmp_path / "demo.jsonl"
    subprocess.run(
        [CLI, "gen", "--demo", "--out", str(dataset)], check=True, capture_output=True, timeout=120
    )
    db_url = fresh_pg_url()
    with nul_target() as target:
        targets = tmp_path / "targets.yaml"
        targets.write_text(nul_targets_yaml("nul", target.url))
        args = ["--sample", "20", "--database-url", db_url]
        proc = subprocess.run(
            [CLI, "run", "--once", "--dataset", str(dataset), "--targets", str(targets), *args],
            capture_output=True,
            text=True,
            timeout=300,  # never a hang
        )
        answered = target.answered
    assert proc.returncode == 0, proc.stderr[-3000:]
    engine = create_engine(db_url)
    with engine.connect() as conn:
        answers = [r[0] for r in conn.execute(select(JudgementRow.answer))]
    engine.dispose()
    assert len(answers) == answered > 0
    flagged = [a for a in answers if a and REPLACEMENT in a]
    assert flagged == [f"The answer is {REPLACEMENT} unknown"]
    print(f"\nRUN-ONCE-NUL-FIGURES stored={len(answers)} flagged=1 of {answered} replies")


def test_run_warns_when_a_series_would_mix_two_datasets(tmp_path: Path) -> None:
    """Two different datasets with the same dataset id run against one store: the second run
    says it continues another dataset's series (a new user's 4-group dataset became cycle 3 of a
    74-group series without a word); the same dataset again is not warned about."""
    full = tmp_path / "full.jsonl"
    subprocess.run([CLI, "gen", "--demo", "--out", str(full)], check=True, timeout=120)
    lines = full.read_bytes().splitlines()
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"\n".join(lines[-3:]) + b"\n")  # three groups the first run never saw
    first = tmp_path / "first.jsonl"
    first.write_bytes(b"\n".join(lines[:20]) + b"\n")
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n"
        "  - name: clueless\n"
        "    type: callable\n"
        "    callable: tests.e2e.targets_fixture:knows_nothing\n"
    )
    store = f"sqlite:///{tmp_path / 'store.db'}"

    def run(dataset: Path) -> subprocess.CompletedProcess[str]:
        args = ["run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet"]
        proc = subprocess.run(
            [CLI, *args, "--database-url", store],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    assert "warning" not in run(first).stderr
    assert "warning" not in run(first).stderr  # the same dataset again: its next cycle
    mixed = run(other).stderr
    assert "warning: series" in mixed and "only 0 of this dataset's 3" in mixed, mixed
