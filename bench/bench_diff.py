"""Comparison benchmark: ``groundwatch diff A B`` of two stored 100k-group runs.

A store is built once (SQLite, the schema by the migrations, rows written with the driver's
executemany, not through groundwatch): one dataset of ``--groups`` semantic groups with two
cohorts of three forms, and two runs that judged every form — the second with ``--changed`` of
the groups forgotten (every form wrong: robust → gap) and as many recovered. Then ``groundwatch
diff`` runs in its own process ``--repeat`` times, its JSON written to a file (the changed groups'
answers read from the store, as a user gets them); each run's wall time and peak RSS (the
kernel's ``wait4`` ``ru_maxrss``) are measured, and the median is each figure; the process's CPU
seconds are reported beside the wall time (on a loaded machine the two part). Target: ≤ 10 s
and ≤ 500 MB at 100k groups.

Usage: ``python bench/bench_diff.py [--groups 100000] [--changed 1000] [--repeat 3] [--out F]``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from _common import emit, figure, machine, seed_groups

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLI = str(Path(sys.executable).with_name("groundwatch"))
TARGET_S = 10.0
TARGET_MB = 500.0
COHORTS = ("short", "long")
FORMS = 3


def build_store(db: Path, groups: int, changed: int) -> tuple[str, str]:
    """The store with two runs of one series; (run before, run after)."""
    from groundwatch.app.store import open_store

    url = f"sqlite:///{db}"
    open_store(url, "--database-url", create=True).close()  # the schema, by the migrations
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    conn = sqlite3.connect(db)
    gids = seed_groups(conn, groups, COHORTS, FORMS, now, lambda gid, c, f: f"{gid}-{c}-{f}")
    runs = ("run-before", "run-after")
    for cycle, run in enumerate(runs, 1):
        conn.execute(
            "INSERT INTO runs (run_id, dataset_id, series, cycle, targets, probes, status,"
            " started_at) VALUES (?, 'bench', 'bench', ?, '[\"prod\"]', ?, 'finished', ?)",
            (run, cycle, groups * len(COHORTS) * FORMS, now),
        )

        def verdict(i: int, cycle: int = cycle) -> str:
            # before: the last `changed` groups are gaps; after: the first `changed` are
            if cycle == 1:
                return "incorrect" if i >= groups - changed else "correct"
            return "incorrect" if i < changed else "correct"

        conn.executemany(
            "INSERT INTO judgements (probe_id, run_id, target, cohort, scenario, dataset_id,"
            " group_id, form_id, query, verdict, tier, reason, answer, expected, retrieved_ids,"
            " relevant_doc_ids, group_forms, series, cycle, truth_version, scores,"
            " probe_created_at, judged_at, tallied_at) VALUES (?, ?, 'prod', ?, 'factual',"
            " 'bench', ?, ?, ?, ?, 'rules', '', ?, '{}', '[]', '[]', 3, 'bench', ?, 1, '{}', ?,"
            " ?, ?)",
            (
                (
                    f"{cycle}-{gid}-{c}-{f}",
                    run,
                    c,
                    gid,
                    f"{gid}-{c}-{f}",
                    f"What is v of {i} ({c} {f})?",
                    v,
                    f"v{i}" if v == "correct" else "I don't know.",
                    cycle,
                    now,
                    now,
                    now,
                )
                for i, gid in enumerate(gids)
                for v in (verdict(i),)
                for c in COHORTS
                for f in range(FORMS)
            ),
        )
    conn.commit()
    conn.close()
    return runs


def diff_once(db: Path, a: str, b: str, out: Path) -> dict[str, float]:
    """``groundwatch diff`` in its own process: seconds and peak RSS (MB)."""
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    cmd = [CLI, "diff", a, b, "--database-url", f"sqlite:///{db}", "--json", str(out), "--quiet"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"diff exited {code}: {err[-2000:]}")
    return {
        "seconds": round(seconds, 2),
        # the process's own CPU: on a shared machine the wall time is also the others' load
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--changed", type=int, default=1000, help="groups regressed (and recovered)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gw-bench-diff-") as d:
        tmp = Path(d)
        db = tmp / "store.db"
        started = time.perf_counter()
        a, b = build_store(db, args.groups, args.changed)
        build_s = time.perf_counter() - started
        runs = [diff_once(db, a, b, tmp / "diff.json") for _ in range(args.repeat)]
        doc = orjson.loads((tmp / "diff.json").read_bytes())
    counts = doc["counts"]
    if counts["regression"] != args.changed or counts["recovery"] != args.changed:
        raise RuntimeError(f"the diff found {counts}, expected {args.changed} each way")
    seconds = statistics.median(r["seconds"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    rss = statistics.median(r["peak_rss_mb"] for r in runs)
    label = f"{args.groups // 1000}k"
    figures = {
        f"diff_s_{label}": figure(
            f"diff of two {args.groups:,}-group runs ({len(COHORTS)} cohorts × {FORMS} forms),"
            f" {args.changed:,} regressed and as many recovered, answers read",
            seconds,
            unit=" s",
            target=TARGET_S,
            goal="<=",
            measured=cpu,
            absolute_unit="s of the process's CPU",
            bound="two aggregate queries (one per run) and the changed groups' forms; the"
            " process's start (~1 s of imports) included",
        ),
        f"diff_peak_rss_mb_{label}": figure(
            f"diff of two {args.groups:,}-group runs: peak RSS",
            rss,
            unit=" MB",
            target=TARGET_MB,
            goal="<=",
            bound="two sides of per-(group, cohort) counts; no judgement held as an object",
            digits=1,
        ),
    }
    result = {
        "bench": "diff",
        **machine(),
        "groups": args.groups,
        "judgements": 2 * args.groups * len(COHORTS) * FORMS,
        "store_build_s": round(build_s, 1),
        "runs": runs,
        "figures": figures,
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
