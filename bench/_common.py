"""What every benchmark of this directory shares: the machine description and the JSON output."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """Enough to tell two runs' machines apart (and a busy machine from a slow one)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": model,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def emit(result: dict[str, Any], out: Path | None) -> None:
    """JSON on stdout, and in ``out`` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    sys.stdout.flush()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


def delete_topics(bootstrap: str, prefix: str) -> None:
    """Best effort: drop a run's topics so repeated runs do not pile up on a shared broker."""
    import asyncio
    import contextlib

    from aiokafka.admin import AIOKafkaAdminClient

    async def drop() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            names = [t for t in await admin.list_topics() if t.startswith(prefix)]
            if names:
                await admin.delete_topics(names)
        finally:
            await admin.close()

    with contextlib.suppress(Exception):
        asyncio.run(asyncio.wait_for(drop(), 30))


# ---------------------------------------------------------------- figures (see run_all.py)

#: A figure whose repeats stray further than this from their median is unstable: no verdict.
UNSTABLE_PCT = 20.0


def figure(
    label: str,
    value: float | None,
    *,
    unit: str = "",
    target: float | None = None,
    goal: str = ">=",
    measured: float | None = None,
    baseline: float | None = None,
    baseline_name: str = "",
    absolute_unit: str = "",
    bound: str = "",
    digits: int = 2,
) -> dict[str, Any]:
    """One measurement of a figure in one run of a benchmark.

    ``value`` is what the verdict is on: a ratio of ``measured`` to ``baseline`` (both measured in
    the same run, one right after the other) or, where the target is absolute (a time, a CPU
    cost), the measurement itself. ``measured``/``baseline`` are the absolute numbers beside it,
    reported and never judged. ``run_all.py`` runs every benchmark several times in turn and
    reports each figure's median with its min-max spread.
    """
    return {
        "label": label,
        "value": value,
        "unit": unit,
        "target": target,
        "goal": goal,
        "measured": measured,
        "baseline": baseline,
        "baseline_name": baseline_name,
        "absolute_unit": absolute_unit,
        "bound": bound,
        "digits": digits,
    }


def spread(values: list[float]) -> dict[str, Any]:
    """Median, min, max and the largest relative distance of a repeat from the median (%)."""
    import statistics

    vals = sorted(v for v in values if v is not None)
    if not vals:
        return {"median": None, "min": None, "max": None, "spread_pct": None, "repeats": 0}
    med = statistics.median(vals)
    far = max(abs(vals[0] - med), abs(vals[-1] - med))
    pct = 100.0 * far / abs(med) if med else (0.0 if far == 0 else float("inf"))
    return {
        "median": med,
        "min": vals[0],
        "max": vals[-1],
        "spread_pct": round(pct, 1),
        "repeats": len(vals),
    }


def verdict(median: float | None, spread_pct: float | None, target: float | None, goal: str) -> str:
    """``met`` / ``not met`` / ``unstable`` (spread beyond ±UNSTABLE_PCT) / ``—`` (no target)."""
    if target is None:
        return "—"
    if median is None:
        return "missing"
    if spread_pct is None or spread_pct > UNSTABLE_PCT:
        return "unstable"
    ok = median >= target if goal == ">=" else median <= target
    return "met" if ok else "not met"


def wait_idle(max_load: float = 0.8, patience_s: float = 0.0) -> float:
    """Wait up to ``patience_s`` for the 1-minute load to fall to ``max_load``; the load then."""
    import time

    deadline = time.monotonic() + patience_s
    load = os.getloadavg()[0]
    while load > max_load and time.monotonic() < deadline:
        time.sleep(5)
        load = os.getloadavg()[0]
    return round(load, 2)


def seed_groups(
    conn: sqlite3.Connection,
    groups: int,
    cohorts: Sequence[str],
    forms: int,
    created_at: str,
    form_id: Any,
) -> list[str]:
    """A SQLite store's dataset ``bench`` of ``groups`` one-value groups, ``forms`` forms in each
    cohort (ids from ``form_id(group_id, cohort, form)``); the groups' ids. Written straight into
    the tables the migrations made, so a benchmark's store is built in seconds."""
    import orjson

    conn.execute(
        "INSERT INTO datasets (dataset_id, name, source, forms_per_cohort, cohorts, meta,"
        " created_at) VALUES ('bench', 'bench', '', ?, ?, '{}', ?)",
        (forms, orjson.dumps(list(cohorts)).decode(), created_at),
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
            (gid, form_id(gid, c, f), c, f"What is v of {i} ({c} {f})?")
            for i, gid in enumerate(gids)
            for c in cohorts
            for f in range(forms)
        ),
    )
    return gids
