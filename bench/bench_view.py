"""View benchmark: ``groundwatch view``'s groups page and a group's page over a store of 100k
groups and 20 cycles.

A store is built once (SQLite, the schema by the migrations, rows written with the driver's
executemany, not through groundwatch): one dataset of ``--groups`` semantic groups of one cohort
with ``--forms`` forms, 20 cycles of one series — the first probing every group, each later one
a ``--sample`` of them (as a continuous run that samples its groups does), a tenth of the
groups wrong in each. ``groundwatch view`` serves it in its own process; the bench waits for the
first page (the store replayed: the state load, timed), then asks, interleaved, the groups page
(a filter and a page drawn at random: every status, failing, a cohort, a page deep in the
table) and a group's page (a group drawn at random), ``--requests`` of each, over loopback. Every
``--verdict-every`` rounds a person's verdict is posted, which has the view replay the store in
the background while the requests go on: the p95 includes requests made during a state load.
The figures are each page's p95 wall time (target ≤ 200 ms), the median beside it; the load
average is in the output.

Usage: ``python bench/bench_view.py [--groups 100000] [--cycles 20] [--requests 300] [--out F]``.
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
import orjson
from _common import emit, figure, machine

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
    conn.execute(
        "INSERT INTO datasets (dataset_id, name, source, forms_per_cohort, cohorts, meta,"
        " created_at) VALUES ('bench', 'bench', '', ?, ?, '{}', ?)",
        (forms, orjson.dumps([COHORT]).decode(), start.isoformat(" ")),
    )
    gids = [f"{g:016x}" for g in range(groups)]
    conn.executemany(
        "INSERT INTO semantic_groups (dataset_id, group_id, sql, params, answer, answer_version,"
        " relevant_doc_ids, scenario) VALUES ('bench', ?, 'SELECT v FROM t WHERE k = :k', ?, ?,"
        " 1, '[]', 'factual')",
        ((gid, f'{{"k": {i}}}', f'{{"values": ["v{i}"]}}') for i, gid in enumerate(gids)),
    )
    conn.executemany(
        "INSERT INTO text_forms (dataset_id, group_id, form_id, cohort, text) VALUES"
        " ('bench', ?, ?, ?, ?)",
        (
            (gid, f"{gid}-{f}", COHORT, f"What is v of {i} (form {f})?")
            for i, gid in enumerate(gids)
            for f in range(forms)
        ),
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
                        f"What is v of {i} (form {f})?",
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


def measure(
    base: str, proc: subprocess.Popen[bytes], groups: int, requests: int, verdict_every: int
) -> dict[str, Any]:
    rng = random.Random(11)
    gids = [f"{g:016x}" for g in range(groups)]
    filters: list[dict[str, Any]] = [
        {},
        {"status": "failing"},
        {"status": "non_robust"},
        {"status": "robust"},
        {"cohort": COHORT},
        {"target": "prod", "held": "no"},
    ]
    table: list[float] = []
    group: list[float] = []
    during: list[float] = []  # requests a verdict's background replay ran beside
    with httpx.Client(base_url=base, timeout=120) as client:
        load_s = _wait_ready(client, proc, 1800)
        shown = re.search(r"page 1 of (\d+)", client.get("/ui/").text)
        if shown is None:
            raise RuntimeError("the groups page shows no page count")
        pages = int(shown.group(1))
        replay_since = -1.0
        for i in range(requests):
            params = dict(rng.choice(filters))
            if rng.random() < 0.3:
                params["page"] = rng.randint(1, pages)  # a page deep in the unfiltered table
                params.pop("status", None)
                params.pop("held", None)
            gid = rng.choice(gids)
            for kind in ("table", "group") if i % 2 else ("group", "table"):
                started = time.perf_counter()
                if kind == "table":
                    r = client.get("/ui/", params=params)
                else:
                    r = client.get(f"/ui/groups/{gid}")
                took = (time.perf_counter() - started) * 1000
                if r.status_code != 200 and not (kind == "group" and r.status_code == 404):
                    raise RuntimeError(f"{r.request.url}: {r.status_code} {r.text[:200]}")
                (table if kind == "table" else group).append(took)
                if replay_since >= 0 and time.perf_counter() - replay_since < load_s:
                    during.append(took)
            if verdict_every and i % verdict_every == verdict_every - 1:
                probe = f"1-{gid}-0"
                given = client.post(
                    "/ui/verdicts",
                    data={"probe_id": probe, "verdict": "incorrect", "who": "bench"},
                    headers={"Authorization": f"Bearer {TOKEN}"},
                )
                if given.status_code != 200:
                    raise RuntimeError(f"verdict: {given.status_code} {given.text[:200]}")
                replay_since = time.perf_counter()
    return {"load_s": load_s, "table": table, "group": group, "during": during}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--forms", type=int, default=2, help="forms of each group's one cohort")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--sample", type=float, default=0.05, help="groups a later cycle probes")
    ap.add_argument("--requests", type=int, default=300, help="of each page")
    ap.add_argument("--verdict-every", type=int, default=50, help="rounds (0: no verdicts)")
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
            got = measure(
                f"http://127.0.0.1:{port}", proc, args.groups, args.requests, args.verdict_every
            )
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    table, group, during = got["table"], got["group"], got["during"]
    label = f"{args.groups // 1000}k"
    bound = (
        "a filter's groups picked worst first once per replay of the store, a page a slice"
        " of them; a group found by its key; each page's texts read from the store"
    )
    figures = {
        f"view_table_p95_ms_{label}": figure(
            f"groups page p95 over {args.groups:,} groups × {args.cycles} cycles"
            " (filters and pages drawn at random, interleaved with group pages and replays)",
            round(_p95(table), 1),
            unit=" ms",
            target=TARGET_MS,
            goal="<=",
            measured=round(statistics.median(table), 1),
            absolute_unit="ms median",
            bound=bound,
            digits=1,
        ),
        f"view_group_p95_ms_{label}": figure(
            f"a group's page p95 over {args.groups:,} groups × {args.cycles} cycles",
            round(_p95(group), 1),
            unit=" ms",
            target=TARGET_MS,
            goal="<=",
            measured=round(statistics.median(group), 1),
            absolute_unit="ms median",
            bound=bound,
            digits=1,
        ),
    }
    result = {
        "bench": "view",
        **machine(),
        "groups": args.groups,
        "cycles": args.cycles,
        "judgements": judgements,
        "store_build_s": round(build_s, 1),
        "state_load_s": round(got["load_s"], 1),
        "requests": {"table": len(table), "group": len(group), "during_replay": len(during)},
        "p95_during_replay_ms": round(_p95(during), 1) if len(during) >= 2 else None,
        "figures": figures,
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
