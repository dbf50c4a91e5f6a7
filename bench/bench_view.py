"""View benchmark: ``groundwatch view``'s groups page and a group's page over a store of 100k
groups and 20 cycles.

A store is built once (SQLite, the schema by the migrations, rows written with the driver's
executemany, not through groundwatch): one dataset of ``--groups`` semantic groups of one cohort
with ``--forms`` forms, 20 cycles of one series — the first probing every group, each later one
a ``--sample`` of them (as a continuous run that samples its groups does), a tenth of the
groups wrong in each. ``groundwatch view`` serves it in its own process; the bench waits for the
first page (the store replayed: the state load, timed), then asks, interleaved, the groups page
(a filter and a page drawn at random: every status, failing, a cohort, a page deep in the
table) and a group's page (a group drawn at random), ``--steady`` pairs a block, over loopback.
After each block of steady requests a person's verdict is posted (a form the judge said right, marked
wrong), which has the view replay the store in the background, and the requests go on until the
group's page shows the verdict counted: the p95 includes the requests made during that state
load. The figures are each page's p95 wall time over both phases (target ≤ 200 ms), the median
beside it; each phase's p95, the time a verdict took to be counted, the server's CPU per
steady request and the load average are in the output.

Usage: ``python bench/bench_view.py [--groups 100000] [--cycles 20] [--rounds 3] [--out F]``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from _common import emit, figure, machine, seed_groups

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLI = str(Path(sys.executable).with_name("groundwatch"))
TARGET_MS = 200.0
COHORT = "short"
TOKEN = "bench-view-token-0123456789"


def build_store(db: Path, groups: int, forms: int, cycles: int, sample: float) -> int:
    """The store; how many judgements it holds."""
    from groundwatch.app.store import open_store

    url = f"sqlite:///{db}"
    open_store(url, "--database-url", create=True).close()  # the schema, by the migrations
    start = datetime.now(UTC) - timedelta(hours=cycles)
    conn = sqlite3.connect(db)
    gids = seed_groups(
        conn, groups, [COHORT], forms, start.isoformat(" "), lambda gid, _c, f: f"{gid}-{f}"
    )
    rng = random.Random(7)
    total = 0
    for cycle in range(1, cycles + 1):
        at = (start + timedelta(hours=cycle)).isoformat(" ")
        run = f"run-{cycle:03d}"
        probed = (
            range(groups) if cycle == 1 else sorted(rng.sample(range(groups), int(groups * sample)))
        )
        rows = []
        for i in probed:
            gid = gids[i]
            for f in range(forms):
                wrong = rng.random() < 0.1
                rows.append(
                    (
                        f"{cycle}-{gid}-{f}",
                        run,
                        gid,
                        f"{gid}-{f}",
                        f"What is v of {i} ({COHORT} {f})?",
                        "incorrect" if wrong else "correct",
                        "I don't know." if wrong else f"v{i}",
                        forms,
                        cycle,
                        at,
                        at,
                        at,
                    )
                )
        conn.execute(
            "INSERT INTO runs (run_id, dataset_id, series, cycle, targets, probes, status,"
            " started_at) VALUES (?, 'bench', 'bench', ?, '[\"prod\"]', ?, 'finished', ?)",
            (run, cycle, len(rows), at),
        )
        conn.executemany(
            "INSERT INTO judgements (probe_id, run_id, target, cohort, scenario, dataset_id,"
            " group_id, form_id, query, verdict, tier, reason, answer, expected, retrieved_ids,"
            f" relevant_doc_ids, group_forms, series, cycle, truth_version, scores,"
            f" probe_created_at, judged_at, tallied_at) VALUES (?, ?, 'prod', '{COHORT}',"
            " 'factual', 'bench', ?, ?, ?, ?, 'rules', '', ?, '{}', '[]', '[]', ?, 'bench', ?, 1,"
            " '{}', ?, ?, ?)",
            rows,
        )
        total += len(rows)
    conn.commit()
    conn.close()
    return total


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(client: httpx.Client, proc: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Seconds until the first groups page (the store's first replay)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"groundwatch view exited {proc.returncode}")
        try:
            if client.get("/ui/").status_code == 200:
                return time.perf_counter() - started
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError(f"no first page in {timeout_s:.0f} s")


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def _cpu_s(pid: int) -> float:
    """The process's CPU seconds so far (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Pages:
    """The two pages asked in turn, each request's wall time kept by page and phase."""

    FILTERS: tuple[dict[str, Any], ...] = (
        {},
        {"status": "failing"},
        {"status": "non_robust"},
        {"status": "robust"},
        {"cohort": COHORT},
        {"target": "prod", "held": "no"},
    )

    def __init__(self, client: httpx.Client, groups: int, pages: int, pid: int) -> None:
        self.client, self.pages, self.pid = client, pages, pid
        #: the server's CPU seconds by page over the steady requests (its own cost, whatever
        #: else the machine runs)
        self.cpu: dict[str, float] = {}
        self.gids = [f"{g:016x}" for g in range(groups)]
        self.rng = random.Random(11)
        self.times: dict[tuple[str, str], list[float]] = {}
        self.i = 0

    def pair(self, phase: str) -> None:
        params = dict(self.rng.choice(self.FILTERS))
        if self.rng.random() < 0.3:
            params = {"page": self.rng.randint(1, self.pages)}  # deep in the unfiltered table
        gid = self.rng.choice(self.gids)
        self.i += 1
        for kind in ("table", "group") if self.i % 2 else ("group", "table"):
            cpu = _cpu_s(self.pid)
            started = time.perf_counter()
            if kind == "table":
                r = self.client.get("/ui/", params=params)
            else:
                r = self.client.get(f"/ui/groups/{gid}")
            took = (time.perf_counter() - started) * 1000
            if phase == "steady":
                self.cpu[kind] = self.cpu.get(kind, 0.0) + _cpu_s(self.pid) - cpu
            if r.status_code != 200 and not (kind == "group" and r.status_code == 404):
                raise RuntimeError(f"{r.request.url}: {r.status_code} {r.text[:200]}")
            self.times.setdefault((kind, phase), []).append(took)


def _judged_right(client: httpx.Client, groups: int, k: int) -> tuple[str, str]:
    """A group of the window and a form of it the judge said right."""
    for j in range(k * 7919, k * 7919 + groups):
        gid = f"{j % groups:016x}"
        for row in client.get(f"/ui/groups/{gid}").text.split('<tr class="form-row"')[1:]:
            if 'td class="judge"><span class="v v-correct"' in row:
                return gid, row.split('data-probe="', 1)[1].split('"', 1)[0]
    raise RuntimeError("no form the judge said right")


def measure(
    base: str, proc: subprocess.Popen[bytes], groups: int, rounds: int, steady: int
) -> dict[str, Any]:
    """``rounds`` of: ``steady`` pairs of requests on an unchanging replay, then a person's
    verdict and pairs until the group's page shows it counted (the store replayed meanwhile)."""
    with httpx.Client(base_url=base, timeout=300) as client:
        load_s = _wait_ready(client, proc, 3000)
        shown = re.search(r"page 1 of (\d+)", client.get("/ui/").text)
        if shown is None:
            raise RuntimeError("the groups page shows no page count")
        pages = _Pages(client, groups, int(shown.group(1)), proc.pid)
        recounts: list[float] = []
        for k in range(rounds):
            for _ in range(steady):
                pages.pair("steady")
            # a form the judge said right, marked wrong: counted once the store is replayed
            gid, probe = _judged_right(client, groups, k)
            given = client.post(
                "/ui/verdicts",
                data={"probe_id": probe, "verdict": "incorrect", "who": "bench"},
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
            if given.status_code != 200:
                raise RuntimeError(f"verdict: {given.status_code} {given.text[:200]}")
            started = time.perf_counter()
            while "counted: incorrect" not in client.get(f"/ui/groups/{gid}").text:
                pages.pair("replay")
                if time.perf_counter() - started > 3000:
                    raise RuntimeError("a person's verdict was not counted in 3000 s")
            recounts.append(time.perf_counter() - started)
    cpu_ms = {
        kind: round(1000 * cpu / len(pages.times[(kind, "steady")]), 1)
        for kind, cpu in pages.cpu.items()
    }
    return {"load_s": load_s, "times": pages.times, "recount_s": recounts, "cpu_ms": cpu_ms}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--forms", type=int, default=2, help="forms of each group's one cohort")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--sample", type=float, default=0.05, help="groups a later cycle probes")
    ap.add_argument("--rounds", type=int, default=3, help="steady blocks, each then a verdict")
    ap.add_argument("--steady", type=int, default=60, help="request pairs of a steady block")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gw-bench-view-") as d:
        db = Path(d) / "store.db"
        started = time.perf_counter()
        judgements = build_store(db, args.groups, args.forms, args.cycles, args.sample)
        build_s = time.perf_counter() - started
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
        cmd = [CLI, "view", "--database-url", f"sqlite:///{db}", "--port", str(port)]
        cmd += ["--token", TOKEN, "--reviewer", "bench"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        try:
            got = measure(f"http://127.0.0.1:{port}", proc, args.groups, args.rounds, args.steady)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    times = got["times"]

    def every(kind: str) -> list[float]:
        return times.get((kind, "steady"), []) + times.get((kind, "replay"), [])

    def p95(kind: str, phase: str) -> float | None:
        values = times.get((kind, phase), [])
        return round(_p95(values), 1) if len(values) >= 2 else None

    label = f"{args.groups // 1000}k"
    bound = (
        "a filter's groups picked worst first once per replay of the store, a page a slice"
        " of them; a group found by its key; each page's texts read from the store; requests"
        " during a replay share the interpreter with it"
    )
    figures = {}
    for kind, what in (("table", "groups page"), ("group", "a group's page")):
        values = every(kind)
        figures[f"view_{kind}_p95_ms_{label}"] = figure(
            f"{what} p95 over {args.groups:,} groups × {args.cycles} cycles, requests"
            " interleaved with the other page, on a steady replay and during replays",
            round(_p95(values), 1),
            unit=" ms",
            target=TARGET_MS,
            goal="<=",
            measured=round(statistics.median(values), 1),
            absolute_unit="ms median",
            bound=bound,
            digits=1,
        )
    result = {
        "bench": "view",
        **machine(),
        "groups": args.groups,
        "cycles": args.cycles,
        "judgements": judgements,
        "store_build_s": round(build_s, 1),
        "state_load_s": round(got["load_s"], 1),
        "recount_s": [round(x, 1) for x in got["recount_s"]],
        "requests": {f"{k}/{ph}": len(v) for (k, ph), v in times.items()},
        "p95_ms": {f"{k}/{ph}": p95(k, ph) for (k, ph) in times},
        "median_ms": {f"{k}/{ph}": round(statistics.median(v), 1) for (k, ph), v in times.items()},
        "server_cpu_ms_per_steady_request": got["cpu_ms"],
        "figures": figures,
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
