"""Issue 14's run through the Kafka services: the scripted endpoint over six cycles of one series.

The same facts and script as ``tests/integration/test_monitoring_cycles.py``, but through the
five services on the local broker and PostgreSQL. After each cycle the test scrapes analytics'
``/metrics``; the scraped series, one cycle every three minutes, are then fed to promtool with
the project's own rules: the knowledge-gap regression alert fires for the lost fact, and the
non-robust and flakiness alerts never fire across the run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx
import pytest
import yaml
from sqlalchemy import create_engine, select

from groundwatch.adapters.db.tables import TallyRow, TransitionRow
from tests.e2e.procs import ServiceProc, metric_samples, running_pipeline
from tests.e2e.test_faults_kafka import wait_settled, wait_until
from tests.integration.test_deploy_prometheus import prometheus_tool
from tests.integration.test_monitoring_cycles import GROUPS, WORDINGS, dataset

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "rules"
API_TOKEN = "cycles-test-api-token-5e1f"
CYCLES = 6
MINUTES_PER_CYCLE = 3
#: The exported series the alerts read, by metric name.
WATCHED = (
    "groundwatch_groups",
    "groundwatch_knowledge_gap_groups",
    "groundwatch_group_transitions_total",
    "groundwatch_knowledge_gap_regressions_total",
    "groundwatch_verdict_coverage_ratio",
    "groundwatch_flaky_forms",
)


def _series_name(metric: str, labels: tuple[tuple[str, str], ...]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{metric}{{{inner}}}"


def _done(gen: ServiceProc, poll: str) -> bool:
    return bool(gen.get(poll).json()["status"] == "done")


def test_services_follow_regression_recovery_and_flakiness(
    kafka_bootstrap: str,
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
) -> None:
    groups = dataset(tmp_path / "capitals.jsonl")
    lost, flaky = groups[0].group_id, groups[1].group_id
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n  - name: reference\n    type: callable\n"
        "    callable: tests.e2e.targets_fixture:scripted_capitals\n"
    )
    state = tmp_path / "cycle"
    state.write_text("1")
    db_url = fresh_pg_url()
    per_cycle = GROUPS * len(WORDINGS)
    scraped: list[dict[str, float]] = []
    statuses: list[dict[str, str]] = []
    engine = create_engine(db_url)
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        runs=0,
        generator_env={
            "GW_API_TOKEN": API_TOKEN,
            "GW_DATASET": str(tmp_path / "capitals.jsonl"),
            "GW_SERIES": "capitals",
        },
        runner_env={
            "GW_RUNNER_TARGETS_FILE": str(targets),
            "GW_TEST_SCRIPT_STATE": str(state),
            # the test's own target module on the path, before whatever was there
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        },
    ) as procs:
        gen, analytics = procs["generator"], procs["analytics"]
        for cycle in range(1, CYCLES + 1):
            state.write_text(str(cycle))
            resp = httpx.post(
                f"{gen.url}/runs", headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=30
            )
            assert resp.status_code == 202, resp.text  # answered at once: polled until run
            poll = resp.json()["poll"]
            wait_until(f"cycle {cycle} run", partial(_done, gen, poll), 120)
            assert gen.get(poll).json()["cycles"][-1]["cycle"] == cycle
            wait_settled(db_url, analytics, per_cycle * cycle, timeout=120)
            text = analytics.get("/metrics").text
            scraped.append(
                {_series_name(m, k): v for m in WATCHED for k, v in metric_samples(text, m).items()}
            )
            with engine.connect() as conn:
                statuses.append({r.group_id: r.status for r in conn.execute(select(TallyRow))})
    with engine.connect() as conn:
        moves = [
            (r.from_status, r.to_status, r.cycle)
            for r in conn.execute(
                select(TransitionRow)
                .where(TransitionRow.group_id == lost)
                .order_by(TransitionRow.id)
            )
        ]
    engine.dispose()

    assert [s[lost] for s in statuses] == ["robust", "gap", "gap", "robust", "robust", "robust"]
    assert [s[flaky] for s in statuses] == [
        "robust", "non_robust", "robust", "flaky", "robust", "flaky"
    ]  # fmt: skip
    assert moves == [("robust", "gap", 2), ("gap", "robust", 4)]

    # the scraped series, one cycle every MINUTES_PER_CYCLE minutes, through the real rules
    names = sorted({n for s in scraped for n in s})
    series = [
        {
            "series": n,
            "values": " ".join(
                " ".join([repr(float(s.get(n, 0.0)))] * MINUTES_PER_CYCLE) for s in scraped
            ),
        }
        for n in names
    ]
    end = f"{CYCLES * MINUTES_PER_CYCLE - 1}m"
    quiet = [
        {"eval_time": f"{m}m", "alertname": a, "exp_alerts": []}
        for m in range(0, CYCLES * MINUTES_PER_CYCLE)
        for a in ("GroundwatchNonRobustShareHigh", "GroundwatchFlakyAnswers")
    ]
    gap_from, gap_to = MINUTES_PER_CYCLE, 3 * MINUTES_PER_CYCLE  # cycles 2-3
    fires_at = f"{gap_to - 1}m"  # 3 m of `for` plus the rules' one-evaluation lag, still a gap
    tests = {
        "rule_files": [
            str(RULES / "groundwatch-recording.yml"),
            str(RULES / "groundwatch-alerts.yml"),
        ],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "scraped from the services over six cycles",
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    *quiet,
                    {
                        "eval_time": fires_at,
                        "alertname": "GroundwatchKnowledgeGapRegression",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", "target": "reference"},
                                "exp_annotations": {
                                    "summary": "reference lost knowledge it had: regressions to gap",
                                    "description": "reference turned about 1 semantic groups from"
                                    " right answers to wrong in every text form within the last"
                                    " hour, and knowledge gaps remain. Missing knowledge: check the"
                                    " target's corpus and index for the regressed groups (analytics"
                                    " /transitions, `groundwatch groups --status gap`).",
                                },
                            }
                        ],
                    },
                    {
                        "eval_time": end,
                        "alertname": "GroundwatchKnowledgeGapRegression",
                        "exp_alerts": [],
                    },
                ],
            }
        ],
    }
    assert gap_from < gap_to
    test_file = tmp_path / "cycles.test.yml"
    test_file.write_text(yaml.safe_dump(tests, sort_keys=False))
    proc = subprocess.run(
        [prometheus_tool("promtool"), "test", "rules", str(test_file)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
