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
import orjson
import pytest

from tests.integration._http_rag import answers_of, serve
from tests.waiting import wait_until

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
    forms = sum(
        len(orjson.loads(line)["forms"]) for line in dataset.read_bytes().splitlines() if line
    )
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
                cohorts = report.get("targets", {}).get("mine", {}).get("cohorts", {})
                # every form of every cohort tallied: a group's status is over all of them, so
                # a page read while some forms still arrive could reorder under the next page
                # (no pending tally is not enough: a group whose long forms have not arrived
                # at all has no long tally yet)
                if page and sum(c.get("probed", 0) for c in cohorts.values()) >= forms:
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
            proc.send_signal(signal.SIGTERM)  # SIGINT may be ignored: see the test below
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


ROOT = Path(__file__).resolve().parents[2]


def stored_runs(store: str, env: dict[str, str]) -> list[dict[str, object]]:
    """``groundwatch runs --json`` of the store: its cycles, newest first."""

    runs = subprocess.run(
        [CLI, "runs", "--database-url", store, "--json"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert runs.returncode == 0, runs.stderr
    return list(orjson.loads(runs.stdout))


def wait_serving(base: str, proc: subprocess.Popen[str]) -> None:
    def ready() -> bool:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        try:
            return httpx.get(f"{base}/readyz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    wait_until("the run to become ready", ready, timeout=60, step=0.3)


def signal_set(pid: int, field: str) -> set[int]:
    """The signals of a process's ``SigIgn`` (ignored) or ``SigCgt`` (caught) mask in
    /proc/<pid>/status: where its signals go, as the kernel will deliver them."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            mask = int(line.split()[1], 16)
            return {n for n in range(1, 65) if mask >> (n - 1) & 1}
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.mark.parametrize("ignoring_sigint", [False, True])
def test_a_signal_ends_a_continuous_run_whole_and_its_cycle_is_recorded_aborted(
    tmp_path: Path, ignoring_sigint: bool
) -> None:
    """SIGTERM (systemd, Docker, Kubernetes) and SIGINT end the run: the server *and* the
    probing, the cycle in flight recorded ``aborted``. A run started ignoring SIGINT (a job a
    script started with &) keeps ignoring it. uvicorn's handlers used to stop only the server
    (probing went on with no /metrics), and SIGTERM killed the run with its cycle 'running'."""
    dataset = tmp_path / "demo.jsonl"
    subprocess.run([CLI, "gen", "--demo", "--out", str(dataset)], check=True, timeout=120)
    targets = tmp_path / "t.yaml"
    targets.write_text(
        "targets:\n  - name: slow\n    type: callable\n"
        "    callable: tests.e2e.targets_fixture:slow_to_answer\n"
    )
    port = free_port()
    store = f"sqlite:///{tmp_path / 's.db'}"
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    env |= {"PYTHONPATH": str(ROOT), "GW_TEST_SLOW_S": "1"}
    proc = subprocess.Popen(
        [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--interval", "1",
         "--port", str(port), "--database-url", store, "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        # both ways set, not inherited: a suite started with `&` from a script inherits SIGINT
        # ignored, and the run rightly kept ignoring it (the [False] case timed out in CI)
        preexec_fn=lambda: signal.signal(
            signal.SIGINT, signal.SIG_IGN if ignoring_sigint else signal.SIG_DFL
        ),
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_serving(base, proc)
        ready = httpx.get(f"{base}/readyz", timeout=5).json()
        assert ready == {
            "status": "ready",
            "checks": {"database": True, "loops": True, "progress": True},
        }
        if ignoring_sigint:
            # ignored whole: the kernel discards it (no handler of the run's took it back), so
            # there is nothing to wait for before asking whether it is still serving
            assert signal.SIGINT in signal_set(proc.pid, "SigIgn")
            assert signal.SIGINT not in signal_set(proc.pid, "SigCgt")
            proc.send_signal(signal.SIGINT)
            assert proc.poll() is None
            assert httpx.get(f"{base}/metrics", timeout=5).status_code == 200
            proc.send_signal(signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    (cycle,) = stored_runs(store, env)
    assert cycle["status"] == "aborted"
    assert cycle["finished_at"] is not None


def test_a_signal_between_cycles_ends_the_run_at_once(tmp_path: Path) -> None:
    """SIGTERM while the run waits for its next cycle (``--interval 3600``): it ends now, not at
    the next cycle (the wait asked for every task to finish instead of the first)."""

    dataset = tmp_path / "demo.jsonl"
    subprocess.run([CLI, "gen", "--demo", "--out", str(dataset)], check=True, timeout=120)
    targets = tmp_path / "t.yaml"
    targets.write_text(
        "targets:\n  - name: clueless\n    type: callable\n"
        "    callable: tests.e2e.targets_fixture:knows_nothing\n"
    )
    port = free_port()
    store = f"sqlite:///{tmp_path / 's.db'}"
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--interval", "3600",
         "--port", str(port), "--database-url", store],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_serving(base, proc)
        wait_until(
            "the first cycle to start",
            lambda: "groundwatch_cycle{" in httpx.get(f"{base}/metrics", timeout=10).text,
            timeout=120,
            step=0.3,
        )
        wait_until(
            "a group to be tallied",
            lambda: httpx.get(f"{base}/groups", params={"limit": 1}, timeout=30).json()["total"],
            timeout=120,
            step=0.3,
        )
        wait_until(
            "the first cycle to finish",
            lambda: stored_runs(store, env)[0]["status"] == "finished",
            timeout=120,
            step=0.3,
        )
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)  # it waited for the interval: 3,600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert "GRAMMAR" in out or "Acc" in out  # the window's report, printed on the way out
    (cycle,) = stored_runs(store, env)
    assert cycle["status"] == "finished"
