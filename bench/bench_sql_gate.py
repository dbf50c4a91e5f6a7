"""Read-gate benchmark: what checking every SQL text before it reaches a source costs.

On the demo domain (SQLite, its ~370 semantic groups): the per-cycle answer refresh through the
gate (``refresh_answers``: each group's SQL checked — parsed once per distinct text, then a cache
hit — and its canonical form run on a read-only connection) against the refresh before the gate
(``conn.execute(text(sql))`` per group on the same connection, nothing checked), one right after
the other; and the cost of checking a text the gate has not seen (sqlglot tokenize + parse + the
allow-list walk + printing it for the driver with a marker per placeholder + parsing that printing
back), over every distinct SQL text the demo runs.

Usage: ``python bench/bench_sql_gate.py [--repeat 5] [--out FILE]``. JSON on stdout. Targets: the
gated refresh keeps ≥ 0.5 of the ungated rate; a new text is checked in ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from _common import emit, figure, machine

TARGET_REFRESH_RATIO = 0.5
TARGET_CHECK_US = 2000.0


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    from sqlalchemy import text

    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.adapters.sources.introspect import introspect
    from groundwatch.adapters.sources.refresh import refresh_answers
    from groundwatch.core.generation.sql_gate import ReadGate
    from groundwatch.demo import demo_dataset

    domain, groups = demo_dataset()
    groups = list(groups)
    engine = readonly_engine(domain.db_url)
    with engine.connect() as conn:
        schema = introspect(conn, profile=False)
    texts = sorted({g.sql for g in groups})

    def ungated() -> float:
        started = time.perf_counter()
        with engine.connect() as conn:
            for g in groups:
                conn.execute(text(g.sql), g.params).all()
        return time.perf_counter() - started

    gate = ReadGate(schema)

    def gated() -> float:
        started = time.perf_counter()
        refresh_answers(engine, groups, gate=gate)
        return time.perf_counter() - started

    def cold_checks() -> float:
        fresh = ReadGate(schema)
        started = time.perf_counter()
        for sql in texts:
            fresh.bound(sql, "named", reader="engine")  # what the SQLite port asks for
        return (time.perf_counter() - started) / len(texts)

    ungated(), gated()  # warm the page cache and the gate's cache
    base = min(ungated() for _ in range(args.repeat))
    ours = min(gated() for _ in range(args.repeat))
    check_s = min(cold_checks() for _ in range(args.repeat))
    engine.dispose()
    result = {
        "bench": "sql_gate",
        **machine(),
        "groups": len(groups),
        "distinct_sql": len(texts),
        "refresh_groups_per_s": round(len(groups) / ours),
        "ungated_refresh_groups_per_s": round(len(groups) / base),
        "new_text_check_us": round(check_s * 1e6, 1),
        "note": "SQLite demo source; best of --repeat; the gated refresh re-uses one gate (as the"
        " answer refresher does between cycles), the cold check a new gate per pass",
        "figures": {
            "refresh": figure(
                "read gate: per-cycle answer refresh, groups/s ratio to the ungated refresh",
                round(base / ours, 3),
                unit="×",
                target=TARGET_REFRESH_RATIO,
                measured=round(len(groups) / ours),
                baseline=round(len(groups) / base),
                baseline_name="conn.execute(text(sql)) per group, unchecked",
                absolute_unit="groups/s",
            ),
            "check": figure(
                "read gate: checking an SQL text not seen before",
                round(check_s * 1e6, 1),
                unit="µs",
                target=TARGET_CHECK_US,
                goal="<=",
                digits=1,
            ),
        },
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
