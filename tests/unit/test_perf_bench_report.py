"""`make bench` reporting: the nested keys of results.json, holes named, unmet targets said."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import run_all  # noqa: E402

REQUIRED = [
    ("generation", "speedup"),
    ("generation", "peak_rss_mb"),
    ("pipeline_kafka", "probes_per_s"),
    ("pipeline_kafka", "p99_latency_s"),
    ("embedded", "probes_per_s"),
    ("runner", "efficiency"),
    ("judge", "judgements_per_s"),
    ("analytics", "ingest_per_s"),
    ("analytics", "metrics_latency_ms"),
]


def raw_results(embedded_rate: float) -> dict[str, dict[str, Any]]:
    return {
        "generation": {
            "speedup_queries_per_s": 28.3,
            "ours_answers": {"queries_per_s": 700_000.0},
            "ours_end_to_end": {"peak_rss_mb": 73.2, "queries": 1_000_200, "queries_per_s": 25e3},
            "baseline": {"queries_per_s": 25_000.0, "peak_rss_mb": 95.0},
            "database": {"rows": 200_200},
        },
        "pipeline_kafka": {
            "probes_per_s": 4000.0,
            "p50_latency_s": 0.13,
            "p99_latency_s": 0.3,
            "paced_rate_per_s": 1000.0,
            "best_judges": 1,
            "configs": [
                {
                    "judges": 1,
                    "probes_per_s": 4000.0,
                    "steady_probes_per_s": 4500.0,
                    "paced": {"p50_s": 0.13, "p99_s": 0.3},
                    "cpu_us_per_probe": {"analytics": 80.0, "judge-1": 70.0, "kafka-broker": 20},
                }
            ],
            "baseline": {"probes_per_s": 40_000.0},
        },
        "embedded": {
            "probes_per_s": embedded_rate,
            "cpu_us_per_probe": 190.0,
            "baseline": {"probes_per_s": 3000.0},
        },
        "runner": {"efficiency": 0.94, "achieved_rps": 600.0, "limit_rps": 640.0},
        "judge": {"deterministic_per_s": 80_000, "llm_calls_per_1000_probes_with_cache": 0.9},
        "analytics": {"ingest_per_s": 300_000},
        "metrics_endpoint": {"metrics_latency_p99_ms": 19.0, "metrics_latency_p50_ms": 7.0},
        "serialization": {"probes_per_s_bound": 42_000, "contracts": {"probe": {}}},
    }


def outcomes(data: dict[str, dict[str, Any]]) -> dict[str, run_all.Outcome]:
    return {
        b.name: run_all.Outcome(
            b, "ok" if data.get(b.name) else "missing", 1.0, data.get(b.name, {})
        )
        for b in run_all.BENCHES
    }


def meta() -> dict[str, Any]:
    return {
        "date": "2026-01-01 00:00 UTC",
        "commit": "abc",
        "machine": {"cpu": "cpu", "cpus": 2, "python": "3.11"},
        "memory_gb": 8,
        "platform": "linux",
        "load_start": 0.1,
        "load_end": 0.2,
        "seconds": 100.0,
    }


def test_results_have_the_numeric_keys_and_the_table_says_what_is_not_met() -> None:
    data = raw_results(embedded_rate=4200.0)
    summary = run_all.summarize(outcomes(data))
    for section, key in REQUIRED:
        assert isinstance(summary[section][key], int | float), (section, key)
    table = run_all.rows(summary, data, 2)
    missed = [r.figure for r in table if r.met is False]
    assert missed == ["embedded pipeline: probes/s (in-process bus, one event loop)"]
    text = run_all.markdown(meta(), table, outcomes(data), quick=False)
    assert "**NOT MET**" in text and "measured 4,200" in text and "commit: `abc`" in text


def test_a_missing_benchmark_is_a_named_hole_not_a_crash() -> None:
    data = raw_results(embedded_rate=6000.0)
    del data["generation"]
    outs = outcomes(data)
    summary = run_all.summarize(outs)
    assert summary["generation"]["speedup"] is None
    table = run_all.rows(summary, data, 2)
    assert all(r.met is not False for r in table)
    text = run_all.markdown(meta(), table, outs, quick=False)
    assert "**generation** did not produce numbers (missing)" in text


def test_a_benchmark_script_that_does_not_exist_is_reported_missing(tmp_path: Path) -> None:
    bench = run_all.Bench("nope", "bench_does_not_exist.py", 5)
    outcome = run_all.run_one(bench, quick=True, timeout=5, work=tmp_path)
    assert outcome.status == "missing" and "does not exist" in outcome.detail
