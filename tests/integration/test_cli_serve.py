"""`groundwatch run` in continuous mode serves /groups, /groups/{id} and /report from the worker
it probes with (issue 16: /groups/{id} used to answer HTTP 500 under `run`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration._http_rag import answers_of, serve

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CLI = str(Path(sys.executable).with_name("groundwatch"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_continuous_run_serves_groups_and_one_groups_evidence(tmp_path: Path) -> None:
    dataset = tmp_path / "demo.jsonl"
    gen = subprocess.run([CLI, "gen", "--demo", "--out", str(dataset)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert gen.returncode == 0, gen.stderr[-2000:]
    port = free_port()
    with serve(answers_of(dataset, lambda gid: int(gid, 16) % 2 == 0)) as url:
        targets = tmp_path / "t.yaml"
        targets.write_text(f"targets:\n  - {{name: mine, type: http_json, url: '{url}'}}\n")
        env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
        proc = subprocess.Popen(
            [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--interval",
             "3600", "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 's.db'}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            page: dict[str, object] = {}
            while time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()[1][-3000:]
                try:
                    r = httpx.get(f"{base}/groups", params={"status": "gap"}, timeout=10)
                    page = r.json() if r.status_code == 200 else {}
                except httpx.TransportError:
                    page = {}
                report = httpx.get(f"{base}/report", timeout=30).json() if page else {}
                if (
                    page
                    and report.get("targets", {})
                    .get("mine", {})
                    .get("cohorts", {})
                    .get("short", {})
                    .get("pending_groups", 1)
                    == 0
                ):
                    break
                time.sleep(0.5)
            page = httpx.get(f"{base}/groups", params={"status": "gap", "limit": 5}).json()
            assert page["total"] > 0 and page["count"] == 5
            # one series in the live state: the page names it (it said null)
            assert page["series"] and page["series"] == page["groups"][0]["series"]
            gid = page["groups"][0]["group_id"]
            assert int(gid, 16) % 2 == 1  # a fact the endpoint does not know
            assert page["groups"][0]["sql"] and page["groups"][0]["forms"][0]["answer"]
            assert httpx.get(f"{base}/groups", params={"status": "bogus"}).status_code == 422
            nxt = httpx.get(f"{base}/groups", params={"status": "gap", "offset": 5, "limit": 5})
            assert {g["group_id"] for g in nxt.json()["groups"]}.isdisjoint(
                g["group_id"] for g in page["groups"]
            )
            detail = httpx.get(f"{base}/groups/{gid}", timeout=30)
            assert detail.status_code == 200, detail.text
            body = detail.json()
            assert body["groups"][0]["status"] == "gap" and body["forms"]
            assert body["forms_total"] == len(body["forms"]) and not body["forms_truncated"]
            # a group's stored history grows every cycle: the listing takes the newest
            one = httpx.get(f"{base}/groups/{gid}", params={"limit": 1}, timeout=30).json()
            assert len(one["forms"]) == 1 and one["forms_truncated"]
            assert one["forms_total"] == body["forms_total"] > 1
            assert one["forms"][0]["cycle"] == max(f["cycle"] for f in body["forms"])
            assert httpx.get(f"{base}/groups/ffffffffffffffff").status_code == 404
            # a unique prefix names the group, as `groundwatch show` takes it (it was a 404)
            short = httpx.get(f"{base}/groups/{gid[:8]}", timeout=30)
            assert short.status_code == 200, short.text
            assert short.json()["group_id"] == gid and short.json()["groups"][0]["group_id"] == gid
            assert short.json()["forms"] == body["forms"]
            assert httpx.get(f"{base}/groups/{gid[:1]}").status_code == 404  # ambiguous
            metrics = httpx.get(f"{base}/metrics", timeout=30).text
            # the generator's series, as the generator service exports them: is it cycling,
            # and what did it publish (GroundwatchPipelineStalled reads the latter)
            assert f'groundwatch_cycle{{series="{page["series"]}"}} 1.0' in metrics
            assert "groundwatch_cycle_started_timestamp_seconds{" in metrics
            assert 'groundwatch_probes_published_total{target="mine"}' in metrics
            html = httpx.get(f"{base}/report.html", timeout=30).text
            assert gid in html and "failing-facts" in html
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
