"""End to end from traffic alone: an app instrumented with the OpenTelemetry SDK sends its spans
(OpenInference attributes) over OTLP/HTTP to a running ``groundwatch run``; groundwatch matches,
judges and tallies them; the app loses a fact and the shipped regression-to-gap alert fires.

The app (:mod:`tests.e2e.otel_rag_app`) answers its users from one sentence per fact of the
source database. groundwatch probes another target only, so whatever it knows about the app it
learned from the app's own traffic. Two windows of users' traffic: in the first the app knows
everything it is asked, before the second it loses the document of Rotterdam's berths. The
alerts are the shipped rules evaluated by promtool over the run's own /metrics pages, one page a
minute (as in test_live_signal): the page after the first window for 4 minutes, then the page
after the second.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.e2e.otel_rag_app import PortsApp, facts_of, questions
from tests.integration.test_cli_serve import CLI, free_port, wait_serving
from tests.integration.test_deploy_prometheus import prometheus_tool
from tests.integration.test_live_signal import firing_timeline, samples
from tests.unit.traffic_questions import FLEET

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "otel-e2e-secret"
BEFORE, AFTER = 4, 8  # minutes of /metrics pages after each window


def _until(
    what: str, ok: Callable[[], bool], proc: subprocess.Popen[str], seen: Callable[[], object]
) -> None:
    deadline = time.monotonic() + 180
    while not ok():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{what} never happened: {seen()}"
        time.sleep(0.3)


def test_an_instrumented_app_loses_a_fact_and_the_gap_alert_fires_from_its_traffic(
    tmp_path: Path,
) -> None:
    db = tmp_path / "fleet.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(FLEET)
    dataset = tmp_path / "groups.jsonl"
    gen = subprocess.run(
        [CLI, "gen", "--db", f"sqlite:///{db}", "--out", str(dataset)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert gen.returncode == 0, gen.stderr[-3000:]
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n  - name: probes\n    type: callable\n"
        "    callable: tests.e2e.targets_fixture:knows_nothing\n"
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    env |= {"PYTHONPATH": f"{ROOT / 'shared'}{os.pathsep}{ROOT}", "GW_API_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--interval", "3600",
         "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 's.db'}", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    app = PortsApp(facts_of(db), f"{base}/v1/traces", TOKEN)
    asked = list(questions())
    # two whole windows of the past, an hour apart: the app's clock stamps each span
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    first, second = hour - timedelta(hours=3, minutes=-10), hour - timedelta(hours=2, minutes=-10)

    def unmatched() -> dict[str, object]:
        reply: dict[str, object] = httpx.get(f"{base}/traffic/unmatched", timeout=10).json()
        return reply

    def statuses() -> list[tuple[str, str, str]]:
        page = httpx.get(
            f"{base}/groups", params={"cohort": "traffic", "target": "shipbot"}, timeout=30
        ).json()
        return sorted((str(g["sql"]), str(g["gold"]), g["status"]) for g in page["groups"])

    try:
        wait_serving(base, proc)
        answers = [app.ask(q, first + timedelta(seconds=i)) for i, q in enumerate(asked)]
        assert "320 berths" in answers[0]
        _until("the first window tallied", lambda: unmatched()["matched"] == 4, proc, unmatched)
        _until(
            "4 users' groups decided",
            lambda: [s for _, _, s in statuses()] == ["robust"] * 4,
            proc,
            statuses,
        )
        page_one = dict(samples(httpx.get(f"{base}/metrics", timeout=10).text))

        app.forget("port-1-berths")
        answers = [app.ask(q, second + timedelta(seconds=i)) for i, q in enumerate(asked)]
        # the next best sentence: another port's berths
        assert "320" not in answers[0] and "berths" in answers[0]
        _until("the second window tallied", lambda: unmatched()["matched"] == 8, proc, unmatched)
        _until(
            "Rotterdam's berths a gap for users",
            lambda: sorted(s for _, _, s in statuses()) == ["gap", "robust", "robust", "robust"],
            proc,
            statuses,
        )
        gaps = [(sql, gold) for sql, gold, s in statuses() if s == "gap"]
        assert len(gaps) == 1 and "berths" in gaps[0][0] and "320" in gaps[0][1], gaps
        view = unmatched()
        assert view["records"] == 10 and view["reasons"] == {"no_entity": 2}, view
        page_two = dict(samples(httpx.get(f"{base}/metrics", timeout=10).text))
    finally:
        app.close()
        if proc.poll() is None:
            proc.terminate()
            proc.wait(60)

    key = 'groundwatch_groups{cohort="traffic",status="gap",target="shipbot"}'
    assert page_one.get(key, 0.0) == 0.0 and page_two[key] == 1.0
    timeline = firing_timeline(
        prometheus_tool("promtool"), [page_one] * BEFORE + [page_two] * AFTER, tmp_path
    )
    fired = {
        alert: sorted(m for m, ts in minutes.items() if "shipbot" in ts)
        for alert, minutes in timeline.items()
    }
    fired = {alert: ms for alert, ms in fired.items() if ms}
    print(f"\nTRAFFIC alerts for shipbot: {fired}")
    regression = fired.pop("GroundwatchKnowledgeGapRegression", [])
    # true from minute 5, for 3 minutes (plus one when a recording rule is read before its
    # group is evaluated, as promtool may), and on to the end
    assert regression and regression[0] in (8, 9) and regression[-1] == BEFORE + AFTER, regression
    assert fired == {}, f"other alerts fired for the app: {fired}"
