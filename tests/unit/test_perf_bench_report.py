"""`make bench` reporting: figures over repeats (median, spread), verdicts (met / not met /
unstable), the nested keys of results.json, holes named."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import run_all  # noqa: E402
from _common import figure, spread, verdict  # noqa: E402


def run(value: float, rate: float) -> dict[str, Any]:
    return {
        "figures": {
            "efficiency_5ms": figure(
                "runner at 5 ms",
                value,
                unit="×",
                target=0.9,
                measured=rate,
                baseline=rate / value,
                baseline_name="bare client",
                bound="the server",
            ),
            "cold_start_s": figure("cold start", 0.4, unit=" s", target=1.0, goal="<="),
        }
    }


def outcome(name: str, values: list[float]) -> run_all.Outcome:
    bench = next(b for b in run_all.BENCHES if b.name == name)
    runs = [run(v, 1000.0 * v) for v in values]
    return run_all.Outcome(bench, "ok", 1.0, runs[0], "", runs, [0.1] * len(runs))


def test_spread_and_verdicts() -> None:
    s = spread([1.0, 0.9, 1.1, 1.0, 1.05])
    assert s["median"] == 1.0 and s["min"] == 0.9 and s["max"] == 1.1 and s["spread_pct"] == 10.0
    assert verdict(0.95, 10.0, 0.9, ">=") == "met"
    assert verdict(0.85, 10.0, 0.9, ">=") == "not met"
    assert verdict(0.95, 25.0, 0.9, ">=") == "unstable"  # no verdict on a shaky figure
    assert verdict(0.5, 5.0, 1.0, "<=") == "met"
    assert verdict(None, None, 1.0, "<=") == "missing"
    assert verdict(3.0, 1.0, None, ">=") == "—"


def test_results_keys_carry_median_and_spread() -> None:
    outs = {"runner": outcome("runner", [0.93, 0.91, 0.95, 0.92, 0.94])}
    figs = run_all.figures(outs)
    summary = run_all.summarize(figs)
    r = summary["runner"]
    assert r["efficiency_5ms"] == pytest.approx(0.93)
    assert r["efficiency_5ms_spread"] == [pytest.approx(0.91), pytest.approx(0.95)]
    assert r["efficiency_5ms_verdict"] == "met" and r["efficiency_5ms_repeats"] == 5
    assert r["cold_start_s_verdict"] == "met"
    named = run_all.by_name(figs)["runner.efficiency_5ms"]
    assert named["median"] == pytest.approx(0.93) and named["verdict"] == "met"
    assert named["spread"] == [pytest.approx(0.91), pytest.approx(0.95)]


def test_markdown_names_unmet_unstable_and_holes() -> None:
    outs = {
        "runner": outcome("runner", [0.5, 0.52, 0.49, 0.51, 0.5]),
        "embedded": outcome("embedded", [0.5, 1.0, 0.9, 0.95, 0.3]),
        "generation": run_all.Outcome(
            next(b for b in run_all.BENCHES if b.name == "generation"),
            "failed",
            2.0,
            detail="exit status 2, no output\ntrace",
        ),
    }
    figs = run_all.figures(outs)
    meta = {
        "date": "2026-01-01 00:00 UTC",
        "commit": "abc",
        "machine": {"cpu": "cpu", "cpus": 2, "python": "3.11"},
        "memory_gb": 8,
        "platform": "linux",
        "load_start": 0.1,
        "load_end": 0.2,
        "seconds": 100.0,
        "repeats": 5,
    }
    text = run_all.markdown(meta, figs, outs, quick=False)
    assert "**NOT MET**" in text and "not met — median 0.50×" in text
    assert "*unstable*" in text and "unstable — 0.30–1.00×" in text
    assert "**generation** did not produce numbers (failed): exit status 2" in text
    assert "commit: `abc`" in text


def test_a_benchmark_script_that_does_not_exist_is_reported_missing(tmp_path: Path) -> None:
    bench = run_all.Bench("nope", "bench_does_not_exist.py", 5)
    o = run_all.run_one(bench, quick=True, timeout=5, work=tmp_path)
    assert o.status == "missing" and "does not exist" in o.detail


def test_agreement_between_runs_and_for_single_samples() -> None:
    """Two runs agree when a median lies in the other's spread; a one-sample figure (no spread,
    e.g. peak RSS) within 5 % of the other run's (80.3 vs 80.4 MB was judged "no")."""
    meta = {"meta": {"date": "d", "commit": "c"}}
    figs = run_all.figures({"runner": outcome("runner", [0.93, 0.91, 0.95])})
    near = {**meta, "runner": {"efficiency_5ms": 0.94, "efficiency_5ms_spread": [0.92, 0.96],
                               "cold_start_s": 0.41, "cold_start_s_spread": [0.41, 0.41]}}  # fmt: skip
    text = run_all.agreement(near, run_all.summarize(figs), figs)
    assert "**no**" not in text and "Every figure agrees." in text
    far = {**meta, "runner": {"efficiency_5ms": 0.5, "efficiency_5ms_spread": [0.45, 0.55],
                              "cold_start_s": 0.5, "cold_start_s_spread": [0.5, 0.5]}}  # fmt: skip
    text = run_all.agreement(far, run_all.summarize(figs), figs)
    assert text.count("| **no** |") == 2


def test_the_header_says_how_many_runs_the_budget_gave() -> None:
    """A budget that stopped the round-robin early is said, not hidden behind the runs asked."""
    full = {"runner": outcome("runner", [0.93, 0.91, 0.95])}
    assert run_all._repeats_line(3, full) == "3 runs of every benchmark"
    short = {**full, "embedded": outcome("embedded", [0.5, 0.6])}
    assert run_all._repeats_line(5, short) == (
        "5 runs asked of every benchmark, 2–3 in the time budget (`--budget`; n per figure)"
    )
