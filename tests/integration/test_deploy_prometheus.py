"""The Prometheus configuration, rules and alerts, checked and unit-tested with the real promtool.

promtool and amtool come from Debian's ``prometheus`` and ``prometheus-alertmanager`` packages,
installed by ``scripts/prometheus.sh install`` when missing. Under ``CI=true`` a missing tool
fails these tests instead of skipping them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import need
from tests.integration.test_deploy_metrics import exported_metrics, metric_names_in

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
RULE_FILES = sorted((PROM / "rules").glob("*.yml"))
TEST_FILES = sorted((PROM / "tests").glob("*.test.yml"))
ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"

#: The alerts issue 8 asks for, by what they watch (the names are ours).
REQUIRED_ALERTS = {
    "knowledge gap regression": "GroundwatchKnowledgeGapRegression",
    "flaky answers (LM stochasticity)": "GroundwatchFlakyAnswers",
    "verdict coverage low": "GroundwatchVerdictCoverageLow",
    "non-robust share above a threshold": "GroundwatchNonRobustShareHigh",
    "accuracy drop against a 24 h baseline": "GroundwatchAccuracyDrop",
    "target error ratio high": "GroundwatchTargetErrorRatioHigh",
    "pipeline stalled": "GroundwatchPipelineStalled",
    "judge consumer lag high": "GroundwatchJudgeLagHigh",
    "LLM judge error rate high": "GroundwatchLLMJudgeErrorRateHigh",
    "LLM 429 rate high": "GroundwatchLLMRateLimited",
}


def prometheus_tool(name: str) -> str:
    """Path of promtool/amtool, installing Debian's packages through scripts/prometheus.sh."""
    found = shutil.which(name)
    if found:
        return found
    run = subprocess.run(
        ["bash", str(ROOT / "scripts" / "prometheus.sh"), "install"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = shutil.which(name)
    if not found:
        need(
            f"{name} missing and `scripts/prometheus.sh install` could not install it:\n"
            f"{run.stdout[-2000:]}{run.stderr[-2000:]}"
        )
    assert found is not None
    return found


@pytest.fixture(scope="module")
def promtool() -> str:
    return prometheus_tool("promtool")


@pytest.fixture(scope="module")
def amtool() -> str:
    return prometheus_tool("amtool")


def run(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=120, cwd=cwd
    )


class ThrowawayPrometheus:
    """A real Prometheus on a free loopback port, run by scripts/prometheus.sh, for one test."""

    def __init__(self, config: Path, port: int) -> None:
        self.config, self.port = config, port
        self.env = {**os.environ, "GW_PROM_PORT": str(port)}
        self.url = f"http://127.0.0.1:{port}"

    def _script(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(ROOT / "scripts" / "prometheus.sh"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def start(self) -> ThrowawayPrometheus:
        prometheus_tool("prometheus")
        result = self._script("start", str(self.config))
        if result.returncode != 0:
            need(f"scripts/prometheus.sh start failed:\n{result.stdout}{result.stderr}")
        return self

    def stop(self) -> None:
        self._script("stop")

    def log(self) -> str:
        path = Path(self._script("logs").stdout.strip())
        return path.read_text(errors="replace")[-3000:] if path.is_file() else "(no log)"

    def api(self, path: str, **params: str) -> Any:
        import httpx

        response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=10)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {response.status_code} {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        result: list[dict[str, Any]] = data["result"] if data["resultType"] == "vector" else []
        return result


def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = []
    for path in RULE_FILES:
        groups += yaml.safe_load(path.read_text())["groups"]
    return groups


def rules() -> Iterator[dict[str, Any]]:
    for group in rule_groups():
        yield from group["rules"]


def alert_names() -> set[str]:
    return {r["alert"] for r in rules() if "alert" in r}


def test_compose_prometheus_config_is_valid(promtool: str) -> None:
    result = run(promtool, "check", "config", PROM / "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    # The compose config loads exactly the rule files promtool checks and tests below.
    assert f"{len(RULE_FILES)} rule files found" in result.stdout


def test_rule_files_are_valid(promtool: str) -> None:
    result = run(promtool, "check", "rules", *RULE_FILES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_unit_tests_pass(promtool: str) -> None:
    assert TEST_FILES, "no promtool unit tests under deploy/prometheus/tests"
    result = run(promtool, "test", "rules", *TEST_FILES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_unit_test() -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for path in TEST_FILES:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert alert_names() - fired == set(), "alerts without a test in which they fire"
    assert alert_names() - quiet == set(), "alerts without a test in which they stay quiet"
    assert set(REQUIRED_ALERTS.values()) <= alert_names()


def test_unit_tests_can_fail(promtool: str, tmp_path: Path) -> None:
    """The harness is not vacuous: moving one threshold breaks the expectations."""
    shutil.copytree(PROM / "rules", tmp_path / "rules")
    shutil.copytree(PROM / "tests", tmp_path / "tests")
    alerts = tmp_path / "rules" / "groundwatch-alerts.yml"
    text = alerts.read_text()
    assert "groundwatch:groups:non_robust_share > 0.2" in text
    alerts.write_text(
        text.replace(
            "groundwatch:groups:non_robust_share > 0.2", "groundwatch:groups:non_robust_share > 0.4"
        )
    )
    result = run(promtool, "test", "rules", *sorted((tmp_path / "tests").glob("*.test.yml")))
    assert result.returncode != 0
    assert "GroundwatchNonRobustShareHigh" in result.stdout + result.stderr


def test_rules_use_only_exported_metrics_and_recorded_series() -> None:
    exported = exported_metrics()
    recorded = {r["record"] for r in rules() if "record" in r}
    unknown: dict[str, set[str]] = {}
    for rule in rules():
        names = metric_names_in(rule["expr"])
        assert names, f"{rule.get('alert') or rule.get('record')}: selects no metric"
        missing = {n for n in names if n.startswith("groundwatch_") and n not in exported}
        missing |= {n for n in names if ":" in n and n not in recorded}
        if missing:
            unknown[rule.get("alert") or rule["record"]] = missing
    assert unknown == {}, f"rules select series no service exports: {unknown}"


def test_alerts_are_documented_and_labelled() -> None:
    for rule in rules():
        if "alert" not in rule:
            continue
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
        assert re.fullmatch(r"Groundwatch[A-Z][A-Za-z]+", rule["alert"])


def test_alert_list_in_the_operations_doc_matches_the_rules() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text()
    if "## Deploy" not in doc:
        pytest.fail("docs/operations.md has no '## Deploy' section")
    deploy = doc.split("## Deploy", 1)[1]
    listed = set(re.findall(r"`(Groundwatch[A-Za-z]+)`", deploy))
    assert listed == alert_names()


def test_alertmanager_config_is_valid_and_routes_by_severity(amtool: str) -> None:
    result = run(amtool, "check-config", ALERTMANAGER)
    assert result.returncode == 0, result.stdout + result.stderr
    routes = {
        "critical": run(
            amtool,
            "config",
            "routes",
            "test",
            f"--config.file={ALERTMANAGER}",
            "severity=critical",
            "alertname=GroundwatchPipelineStalled",
        ),
        "warning": run(
            amtool,
            "config",
            "routes",
            "test",
            f"--config.file={ALERTMANAGER}",
            "severity=warning",
            "alertname=GroundwatchNonRobustShareHigh",
        ),
    }
    assert routes["critical"].stdout.strip() == "groundwatch-oncall", routes["critical"].stderr
    assert routes["warning"].stdout.strip() == "rag-quality", routes["warning"].stderr
    config = yaml.safe_load(ALERTMANAGER.read_text())
    inhibited = " ".join(m for r in config["inhibit_rules"] for m in r["target_matchers"])
    for name in re.findall(r"Groundwatch[A-Za-z]+", inhibited):
        assert name in alert_names(), f"inhibit rule names unknown alert {name}"


def test_prometheus_script_is_valid_bash() -> None:
    assert run("bash", "-n", ROOT / "scripts" / "prometheus.sh").returncode == 0
    assert os.access(ROOT / "scripts" / "prometheus.sh", os.X_OK)
