"""The generation benchmark runs and compares like with like (tiny size; numbers not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
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
    rules = res["rules"]
    ours, answers, base = rules["ours_end_to_end"], rules["ours_answers"], rules["baseline"]
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
    assert ours["peak_rss_mb"] > 0 and rules["speedup_answers"] > 0
    # the end-to-end baseline pays the same text forms and output as ours, on top of its SQL
    assert rules["baseline_end_to_end_seconds"] >= base["extrapolated_seconds_for_all"]
    many = res["many_placeholders"]
    assert many["ours_end_to_end"]["templates"] == 3 and many["speedup_end_to_end"] > 0
    assert set(res["figures"]) >= {"speedup_end_to_end", "speedup_end_to_end_many"}
