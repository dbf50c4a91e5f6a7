"""A real Prometheus scrapes the five services during an end-to-end run on the local Kafka.

The services run as OS processes (as in production) on a fresh topic prefix and a fresh
PostgreSQL database; Prometheus (Debian's, through scripts/prometheus.sh) scrapes them every
second and evaluates the project's recording and alert rules. The test then asks Prometheus's
HTTP API for the gap and non-robust group tallies and requires them to equal what analytics'
own /metrics reports, checks that the recording rules derived from them agree, that every rule
evaluates without error on real series, and that the metric names actually scraped are among
those the deploy checks derive from the source.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.procs import ServiceProc, free_port, metric_samples
from tests.integration.test_deploy_metrics import exported_metrics
from tests.integration.test_deploy_prometheus import ThrowawayPrometheus, rules

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.timeout(420),
]

ROOT = Path(__file__).resolve().parents[2]
RUNS = 1
GROUPS = 120  # semantic groups per cycle (x 2 cohorts x 3 forms probes): enough for gap and non-robust ones
STATUSES = ("gap", "non_robust")


@pytest.fixture
def pipeline(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> Iterator[dict[str, ServiceProc]]:
    common = {
        "GW_BUS": "kafka",
        "GW_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "GW_TOPIC_PREFIX": unique_prefix,
        "GW_DATABASE_URL": fresh_pg_url(),
        "GW_LOG_LEVEL": "INFO",
    }
    rag = ServiceProc("reference-rag", {**common}, tmp_path).start()
    procs = {
        "reference-rag": rag,
        "analytics": ServiceProc("analytics", common, tmp_path),
        "judge": ServiceProc("judge", common, tmp_path),
        "rag-runner": ServiceProc(
            "rag-runner", {**common, "GW_RUNNER_REFERENCE_URL": f"{rag.url}/query"}, tmp_path
        ),
        "generator": ServiceProc(
            "generator",
            {
                **common,
                "GW_RUNS": str(RUNS),
                "GW_SAMPLE": str(GROUPS),
                "GW_TARGETS": '["reference"]',
            },
            tmp_path,
        ),
    }
    try:
        for name, proc in procs.items():
            if name != "reference-rag":
                proc.start()
        for proc in procs.values():
            proc.wait_ready(90)
        yield procs
    finally:
        for proc in reversed(list(procs.values())):
            proc.kill()


def scrape_config(procs: dict[str, ServiceProc]) -> dict[str, Any]:
    """The compose scrape config's shape (job per service, system/component labels), local ports."""
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [
            str(p) for p in sorted((ROOT / "deploy" / "prometheus" / "rules").glob("*.yml"))
        ],
        "scrape_configs": [
            {
                "job_name": name,
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{proc.port}"],
                        "labels": {"system": "groundwatch", "component": name},
                    }
                ],
            }
            for name, proc in procs.items()
        ],
    }


@pytest.fixture
def prometheus(pipeline: dict[str, ServiceProc], tmp_path: Path) -> Iterator[ThrowawayPrometheus]:
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(scrape_config(pipeline), sort_keys=False))
    server = ThrowawayPrometheus(config, free_port()).start()
    try:
        yield server
    finally:
        server.stop()


def tallies_from_analytics(analytics: ServiceProc) -> dict[tuple[str, str, str], float]:
    samples = metric_samples(analytics.get("/metrics").text, "groundwatch_groups")
    out = {}
    for labels, value in samples.items():
        d = dict(labels)
        if d["status"] in STATUSES:
            out[(d["target"], d["cohort"], d["status"])] = value
    return out


def tallies_from_prometheus(server: ThrowawayPrometheus) -> dict[tuple[str, str, str], float]:
    result = server.query('groundwatch_groups{job="analytics", status=~"gap|non_robust"}')
    return {
        (r["metric"]["target"], r["metric"]["cohort"], r["metric"]["status"]): float(r["value"][1])
        for r in result
    }


def healthchecks() -> list[list[str]]:
    """The exec-form health check commands of the image and of the compose services."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    image = re.search(r"^HEALTHCHECK .*?CMD (\[.*?\])$", dockerfile, re.M | re.S)
    assert image, "Dockerfile has no exec-form HEALTHCHECK"
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    service = compose["services"]["analytics"]["healthcheck"]["test"]
    assert service[0] == "CMD"
    return [json.loads(image.group(1)), service[1:]]


def run_healthcheck(command: list[str], port: int) -> int:
    assert command[0] == "python"
    env = {**os.environ, "GW_PORT": str(port)}
    return subprocess.run(
        [sys.executable, *command[1:]], env=env, capture_output=True, timeout=30
    ).returncode


def wait_all_judged(pipeline: dict[str, ServiceProc], deadline: float) -> int:
    gen, analytics = pipeline["generator"], pipeline["analytics"]
    published = 0
    while time.monotonic() < deadline:
        state = gen.get("/runs").json()
        published = state["published"]
        if len(state["runs"]) == RUNS and published:
            break
        time.sleep(0.5)
    assert published > 0, f"generator published nothing:\n{gen.tail()}"
    judged = 0
    while time.monotonic() < deadline:
        judged = int(
            sum(
                metric_samples(
                    analytics.get("/metrics").text, "groundwatch_judgements_total"
                ).values()
            )
        )
        if judged >= published:
            return published
        time.sleep(0.5)
    raise AssertionError(f"analytics tallied {judged} of {published} probes:\n{analytics.tail()}")


def test_prometheus_sees_the_tallies_analytics_computed(
    pipeline: dict[str, ServiceProc], prometheus: ThrowawayPrometheus
) -> None:
    deadline = time.monotonic() + 240
    published = wait_all_judged(pipeline, deadline)
    expected = tallies_from_analytics(pipeline["analytics"])
    assert expected, "analytics exports no gap/non-robust tallies"
    assert sum(expected.values()) > 0, "the demo run produced neither gap nor non-robust groups"

    # Prometheus scrapes every second; wait for a scrape taken after the last tally (every
    # judgement counted), then its gap and non-robust tallies must equal analytics' own view.
    judged, seen = 0.0, {}
    while time.monotonic() < deadline:
        judged = sum(float(r["value"][1]) for r in prometheus.query("groundwatch_judgements_total"))
        seen = tallies_from_prometheus(prometheus)
        if judged == published:
            break
        time.sleep(1)
    assert judged == published, (
        f"Prometheus counted {judged} of {published} judgements\n{prometheus.log()}"
    )
    assert seen == expected, f"Prometheus {seen} != analytics {expected}"

    # Every service was scraped, under the labels the alerts and dashboards select on.
    # (a target Prometheus has not reached yet has no `up` series at all: wait for every one)
    deadline = time.monotonic() + 30
    while True:
        up = {
            r["metric"]["component"]: r["value"][1]
            for r in prometheus.query('up{system="groundwatch"}')
        }
        if up == {name: "1" for name in pipeline} or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert up == {name: "1" for name in pipeline}, up

    # The recording rules agree with the raw tallies (same labels, same numbers).
    while time.monotonic() < deadline:
        recorded = {
            (r["metric"]["target"], r["metric"]["cohort"]): float(r["value"][1])
            for r in prometheus.query("groundwatch:groups:non_robust")
        }
        want = {(t, c): v for (t, c, s), v in expected.items() if s == "non_robust"}
        if recorded == want:
            break
        time.sleep(1)
    assert recorded == want
    shares = prometheus.query("groundwatch:groups:non_robust_share")
    assert len(shares) == len(want), shares
    decided = {
        (r["metric"]["target"], r["metric"]["cohort"]): float(r["value"][1])
        for r in prometheus.query("groundwatch:groups:decided")
    }
    for r in shares:
        key = (r["metric"]["target"], r["metric"]["cohort"])
        assert float(r["value"][1]) == pytest.approx(want[key] / decided[key])

    # Every recording and alert rule evaluated on these real series without an error
    # (e.g. no many-to-many matching), and every rule file loaded.
    groups = prometheus.api("rules")["groups"]
    loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
    assert set(loaded) == {r.get("alert") or r["record"] for r in rules()}
    broken = {
        name: rule.get("lastError") for name, rule in loaded.items() if rule.get("health") != "ok"
    }
    assert broken == {}, broken

    # The container health checks (Dockerfile: /healthz, compose: /readyz) work against the real
    # services, and fail against a port nobody serves.
    for name, proc in pipeline.items():
        for command in healthchecks():
            assert run_healthcheck(command, proc.port) == 0, f"{name}: {command}"
    assert all(run_healthcheck(c, free_port()) != 0 for c in healthchecks())

    # The deploy checks derive exported names from the source; what was scraped must be among them.
    scraped = {n for n in prometheus.api("label/__name__/values") if n.startswith("groundwatch_")}
    assert scraped, "no groundwatch series scraped"
    assert scraped - exported_metrics() == set(), "series the source derivation does not know"
