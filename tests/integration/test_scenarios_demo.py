"""``groundwatch demo`` with RAGProbe scenario probes in the same stream: the report shows a
failure rate per scenario for the reference RAG, and the GRAMMAR numbers and the gap detection
are exactly what they are without the scenario probes."""

from __future__ import annotations

from typing import Any

import pytest

from groundwatch.app.demo import run_demo
from groundwatch.app.runs import Console

pytestmark = pytest.mark.integration

GRAMMAR_KEYS = ("cohorts", "gap_recall", "gap_precision", "injected_gaps", "detected_gaps")


def _without_time(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in GRAMMAR_KEYS}


async def test_demo_reports_scenario_failure_rates_without_disturbing_gap_detection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with_scenarios = (
        await run_demo(1, ("short", "long"), 1, "keyword", Console(say=print), None, "all")
    ).to_json()
    printed = capsys.readouterr().out
    without = (
        await run_demo(1, ("short", "long"), 1, "keyword", Console(), None, "none")
    ).to_json()

    assert _without_time(with_scenarios) == _without_time(without)
    assert without["scenarios"] == {}
    rates = with_scenarios["scenarios"]["reference"]
    assert sorted(rates) == ["S1", "S2", "S3", "S4", "S5", "S6"]
    for s, n in rates.items():
        assert n["probes"] >= 10, s
        assert n["errors"] == 0 and n["failure_rate"] is not None
    # the extractive reader answers one sentence: several questions at once defeat it
    assert rates["S4"]["failure_rate"] > rates["S1"]["failure_rate"]
    assert rates["S5"]["failure_rate"] > rates["S1"]["failure_rate"]
    assert with_scenarios["probes"] == without["probes"] + sum(n["probes"] for n in rates.values())

    assert "RAGProbe scenario probes (SQL truth)" in printed
    table = printed[printed.index("RAGProbe scenarios (failure rate") :]
    for s in rates:
        assert f"reference  {s} " in table
    assert "injected knowledge gaps" in printed
