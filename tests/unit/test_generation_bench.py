"""The generation benchmark runs and compares like with like (tiny size; numbers not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_generation.py"


def test_bench_generation_smoke(tmp_path: Path) -> None:
    out = tmp_path / "gen.json"
    subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--rows",
            "1000",
            "--baseline-sample",
            "100",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    res = json.loads(out.read_text())
    ours, answers, base = res["ours_end_to_end"], res["ours_answers"], res["baseline"]
    assert res["database"]["rows"] >= 1000
    assert ours["templates"] == answers["templates"] == base["templates"]
    # same templates, same database: the grouped queries find every answered combination
    dropped = ours["summary"]["dropped_fills"]
    single = ours["summary"]["queries"]
    assert single >= 5 * 1000
    assert answers["queries"] == single + sum(
        dropped.get(r, 0)
        for r in ("several_answers", "null_answer", "answer_in_question", "duplicate_forms")
    )
    assert base["extrapolated"] is True and base["sampled_queries"] <= 100 + base["templates"]
    assert ours["peak_rss_mb"] > 0 and res["speedup_queries_per_s"] > 0
