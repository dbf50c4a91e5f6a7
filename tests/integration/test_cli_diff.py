"""`groundwatch diff`, `baseline save` and `run --baseline --fail-on-regression` on real runs.

A scripted endpoint answers 24 capitals right in its first cycle and forgets 12 of them in the
second: the diff of the second run against the first lists exactly those 12 as robust→gap with
the sign test significant, and the regression gate fails the second run (exit 1, each forgotten
fact a JUnit failure with its question, gold and answer) while passing a run that forgot nothing.
A baseline of another dataset version is refused (exit 2, one line).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import orjson
import pytest

from tests.integration.test_monitoring_cycles import dataset

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("groundwatch"))
FORGOTTEN = range(3, 15)  # Country3 … Country14


def forgetful_capitals(query: str) -> dict[str, object]:
    """Every capital right, except in a "forget" state (``GW_TEST_SCRIPT_STATE``), where the
    facts of Country3–14 are missing from its knowledge base."""
    import re

    forget = Path(os.environ["GW_TEST_SCRIPT_STATE"]).read_text().strip() == "forget"
    m = re.search(r"Country(\d+)", query)
    if m is None:
        return {"answer": "I don't know."}
    i = int(m.group(1))
    if forget and i in FORGOTTEN:
        return {"answer": "I don't know."}
    return {"answer": f"The capital is City{i}."}


class Env:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.groups = dataset(tmp / "capitals.jsonl")
        self.targets = tmp / "targets.yaml"
        self.targets.write_text(
            "targets:\n  - name: scripted\n    type: callable\n"
            "    callable: tests.integration.test_cli_diff:forgetful_capitals\n"
        )
        self.state = tmp / "state"
        self.db = f"sqlite:///{tmp / 'store.db'}"
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.env = {**os.environ, "PYTHONPATH": path, "GW_TEST_SCRIPT_STATE": str(self.state)}

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args], capture_output=True, text=True, timeout=300, cwd=ROOT, env=self.env
        )

    def run(self, state: str, *extra: str) -> subprocess.CompletedProcess[str]:
        self.state.write_text(state)
        return self.cli(
            "run", "--dataset", str(self.tmp / "capitals.jsonl"), "--targets", str(self.targets),
            "--once", "--database-url", self.db, "--series", "capitals", "--quiet", *extra,
        )  # fmt: skip

    def runs(self) -> list[str]:
        proc = self.cli("runs", "--database-url", self.db, "--json")
        assert proc.returncode == 0, proc.stderr
        return [r["run_id"] for r in orjson.loads(proc.stdout)]


def test_diff_lists_the_forgotten_facts_and_the_gate_fails_on_them(tmp_path: Path) -> None:
    env = Env(tmp_path)
    assert env.run("all").returncode == 0
    proc = env.run("forget")
    assert proc.returncode == 0, proc.stderr[-2000:]
    newest, before = env.runs()[:2]
    forgotten = {env.groups[i].group_id for i in FORGOTTEN}

    out = tmp_path / "diff.json"
    proc = env.cli(
        "diff", before, newest, "--database-url", env.db, "--json", str(out),
        "--html", str(tmp_path / "diff.html"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(out.read_bytes())
    moved = {(c["group_id"], c["transition"], c["kind"]) for c in doc["changes"]}
    assert moved == {(g, "robust→gap", "regression") for g in forgotten}
    assert doc["regressed"] == 12 and doc["paired"]["worse"] == 12
    assert doc["paired"]["better"] == 0 and doc["paired"]["p_value"] < 0.05
    assert doc["significant"] is True
    short = {d["figure"]: d for d in doc["targets"]["scripted"]["cohorts"]["short"]}
    assert short["acc_db"]["a"] == 1.0 and short["acc_db"]["b"] == 0.5
    assert short["acc_db"]["delta"] == -0.5 and short["acc_db"]["delta_ci"][1] < 0
    # the diff's figures of a run are the report's of that run
    rep = env.cli("report", "--run", newest, "--database-url", env.db, "--json", "-")
    assert rep.returncode == 0, rep.stderr
    numbers = orjson.loads(rep.stdout)["targets"]["scripted"]["cohorts"]["short"]
    for name in ("acc_db", "refined_accuracy", "lambda", "coverage"):
        assert short[name]["b"] == pytest.approx(numbers[name]), name
    change = next(c for c in doc["changes"] if c["group_id"] == env.groups[3].group_id)
    assert change["gold"] == "City3"
    assert {f["after_answer"] for f in change["forms"]} == {"I don't know."}
    assert {f["before_answer"] for f in change["forms"]} == {"The capital is City3."}
    assert "robust→gap" in proc.stdout and "12 regressed" in proc.stdout
    assert "Changed groups" in (tmp_path / "diff.html").read_text()

    # the same through series names and a saved baseline
    base = tmp_path / "base.json"
    proc = env.cli(
        "baseline", "save", "series:capitals~1", "--out", str(base), "--database-url", env.db
    )
    assert proc.returncode == 0, proc.stderr
    # the baseline's run is pinned: retention never prunes its raw judgements
    import sqlite3

    with sqlite3.connect(tmp_path / "store.db") as conn:
        assert [r[0] for r in conn.execute("SELECT run_id FROM pinned_runs")] == [before]
    proc = env.cli("diff", str(base), "series:capitals", "--database-url", env.db, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    assert {c["group_id"] for c in doc["changes"]} == forgotten
    assert all(f["before"] == "correct" and f["after"] == "incorrect"
               for c in doc["changes"] for f in c["forms"])  # fmt: skip

    # the gate: a run that forgets fails against the baseline, one that does not passes
    junit = tmp_path / "junit.xml"
    page = tmp_path / "report.html"
    proc = env.run(
        "forget", "--baseline", str(base), "--fail-on-regression", "--junit", str(junit),
        "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    html = page.read_text()
    assert "Against the baseline" in html and html.count(">regression</span>") == 12
    assert "12 groups regressed" in proc.stderr
    suite = next(s for s in ET.parse(junit).getroot() if s.get("name") == "groundwatch.regressions")
    failures = [c for c in suite if c.find("failure") is not None]
    assert len(failures) == 12 and suite.get("failures") == "12"
    text = failures[0].find("failure").text or ""  # type: ignore[union-attr]
    assert "gold: City" in text and "I don't know." in text and "Country" in text
    proc = env.run("all", "--baseline", str(base), "--fail-on-regression")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # more allowed than regressed, or only when significant with a higher bar: passes
    proc = env.run("forget", "--baseline", str(base), "--fail-on-regression=12")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # a run id as the baseline
    proc = env.run("forget", "--baseline", before, "--fail-on-regression")
    assert proc.returncode == 1, proc.stderr[-2000:]


def test_a_baseline_of_another_dataset_version_is_refused(tmp_path: Path) -> None:
    env = Env(tmp_path)
    assert env.run("all").returncode == 0
    base = tmp_path / "base.json"
    assert env.cli("baseline", "save", "series:capitals", "--out", str(base),
                   "--database-url", env.db).returncode == 0  # fmt: skip
    doc = orjson.loads(base.read_bytes())
    doc["digest"] = "0" * 64  # as a baseline of a regenerated dataset would be
    base.write_bytes(orjson.dumps(doc))
    proc = env.run("all", "--baseline", str(base), "--fail-on-regression")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "another version of dataset 'capitals'" in lines[0], proc.stderr
    proc = env.cli(
        "diff", str(tmp_path / "capitals.jsonl"), "series:capitals", "--database-url", env.db
    )
    assert proc.returncode == 2 and "not a baseline" in proc.stderr
