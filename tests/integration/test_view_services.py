"""The view at ``/ui`` on a continuous ``groundwatch run``: the live worker's groups, behind
the read token, and a person's verdict behind the write token (the analytics service mounts
the same routes through the same ``add_routes``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.integration._http_rag import answers_of, serve
from tests.integration.test_cli_serve import CLI, free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

READ = "read-token-for-the-view-0123"
WRITE = "write-token-for-the-view-0123"


def test_continuous_run_serves_the_view_behind_its_tokens(tmp_path: Path) -> None:
    dataset = tmp_path / "demo.jsonl"
    gen = subprocess.run([CLI, "gen", "--demo", "--out", str(dataset)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert gen.returncode == 0, gen.stderr[-2000:]
    port = free_port()
    read = {"Authorization": f"Bearer {READ}"}
    with serve(answers_of(dataset, lambda gid: int(gid, 16) % 2 == 0)) as url:
        targets = tmp_path / "t.yaml"
        targets.write_text(f"targets:\n  - {{name: mine, type: http_json, url: '{url}'}}\n")
        env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
        env |= {"GW_API_READ_TOKEN": READ, "GW_API_TOKEN": WRITE}
        proc = subprocess.Popen(
            [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--interval",
             "3600", "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 's.db'}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}/ui"
            deadline = time.monotonic() + 240
            page = ""
            while time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()[1][-3000:]
                try:
                    r = httpx.get(f"{base}/", params={"status": "gap"}, headers=read, timeout=30)
                    page = r.text if r.status_code == 200 else ""
                except httpx.TransportError:
                    page = ""
                if 'class="group-row"' in page:
                    break
                time.sleep(0.5)
            assert 'class="group-row"' in page
            assert httpx.get(f"{base}/", timeout=30).status_code == 401  # no read token
            gid = page.split('href="/ui/groups/', 1)[1].split("?", 1)[0]
            group = httpx.get(f"{base}/groups/{gid}", headers=read, timeout=30)
            assert group.status_code == 200 and "SELECT" in group.text.upper()
            probe = group.text.split('data-probe="', 1)[1].split('"', 1)[0]
            verdict = {"probe_id": probe, "verdict": "correct", "who": "ada"}
            # the read token is not the write token
            refused = httpx.post(f"{base}/verdicts", data=verdict, headers=read, timeout=30)
            assert refused.status_code == 401
            given = httpx.post(
                f"{base}/verdicts",
                data=verdict,
                headers={"Authorization": f"Bearer {WRITE}"},
                timeout=30,
            )
            assert given.status_code == 200 and "by ada" in given.text
            # the trends and the comparison of runs, over the pipeline's store
            trends = httpx.get(f"{base}/trends", headers=read, timeout=60)
            assert trends.status_code == 200 and 'class="trend-row"' in trends.text
            assert "<svg" in trends.text
            assert httpx.get(f"{base}/trends", timeout=30).status_code == 401
            compare = httpx.get(f"{base}/compare", headers=read, timeout=60)
            assert compare.status_code == 200 and "fewer than two runs" in compare.text
            labels = httpx.get(f"{base}/labels.json", headers=read, timeout=30).json()
            assert [(i["probe_id"], i["judgement"], i["who"]) for i in labels] == [
                (probe, "Correct", "ada")
            ]
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
