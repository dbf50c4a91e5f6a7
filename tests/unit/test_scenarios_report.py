"""Failure rate per scenario per target: the report's ``scenarios`` section, its text table and
``groundwatch_scenario_failure_ratio``; scenario probes leave the GRAMMAR numbers alone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window
from groundwatch.report.build import build_report
from groundwatch.report.text import render_text
from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry

pytestmark = pytest.mark.unit

C, W, E, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR, Verdict.UNDECIDED


def obs(
    pid: str,
    verdict: Verdict,
    *,
    target: str = "rag",
    scenario: str = "factual",
    cohort: str | None = None,
    group: str | None = None,
    forms: int = 1,
    run: str = "r1",
    cycle: int = 0,
) -> Observation:
    return Observation(
        probe_id=pid,
        target=target,
        cohort=cohort or (scenario if scenario != "factual" else "short"),
        group_id=group or f"g-{pid}",
        form_id=f"f-{pid}",
        verdict=verdict,
        scenario=scenario,
        group_forms=forms,
        run_id=run,
        cycle=cycle,
    )


def factual() -> list[Observation]:
    out = []
    for g, (short, long) in enumerate([(C, C), (C, W), (W, W), (C, C)]):
        out.append(obs(f"s{g}", short, cohort="short", group=f"G{g}"))
        out.append(obs(f"l{g}", long, cohort="long", group=f"G{g}"))
    return out


def scenario_probes(target: str = "rag") -> list[Observation]:
    verdicts = {"S1": [C, C, C, W, E, U], "S4": [W, W, C], "S6": [E, E]}
    return [
        obs(f"{target}-{s}-{i}", v, target=target, scenario=s)
        for s, vs in verdicts.items()
        for i, v in enumerate(vs)
    ]


def grammar_part(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in ("target", "cohorts", "hypothesis", "targets")}


def test_scenario_probes_get_their_own_section_and_leave_grammar_numbers_alone() -> None:
    alone = build_report(factual()).to_json()
    mixed = build_report(factual() + scenario_probes()).to_json()
    assert grammar_part(mixed) == grammar_part(alone)
    assert alone["scenarios"] == {}
    s = mixed["scenarios"]["rag"]
    assert list(s) == ["S1", "S4", "S6"]
    assert {k: s["S1"][k] for k in ("probes", "correct", "incorrect", "errors", "undecided")} == {
        "probes": 6, "correct": 3, "incorrect": 1, "errors": 1, "undecided": 1,
    }  # fmt: skip
    assert s["S1"]["failure_rate"] == pytest.approx(0.25)  # errors and undecided are no failures
    lo, hi = s["S1"]["failure_rate_ci"]
    assert lo < 0.25 < hi
    assert s["S4"]["failure_rate"] == pytest.approx(2 / 3)
    assert s["S6"]["failure_rate"] is None and s["S6"]["errors"] == 2  # nothing decided yet
    json.dumps(mixed, allow_nan=False)


def test_only_scenario_probes_still_report() -> None:
    report = build_report(scenario_probes("a") + scenario_probes("b"))
    r = report.to_json()
    assert r["target"] is None and r["cohorts"] == {}
    assert set(r["scenarios"]) == {"a", "b"}
    text = render_text(report)
    assert "RAGProbe scenarios" in text


def test_text_report_prints_failure_rate_per_scenario_and_target() -> None:
    text = render_text(build_report(factual() + scenario_probes()))
    section = text[text.index("RAGProbe scenarios") :]
    lines = {ln.split()[1]: ln.split() for ln in section.splitlines()[3:] if ln.strip()}
    assert lines["S1"][:8] == ["rag", "S1", "6", "3", "1", "1", "1", "0.250"]
    assert lines["S4"][7] == "0.667"
    assert lines["S6"][7] == "–"
    assert "GRAMMAR group report" in text  # the existing report is still there, first


def _scrape(tagger: Tagger) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    registry = CollectorRegistry()
    AnalyticsTelemetry(registry, lambda: tagger)
    out = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name.startswith("groundwatch_scenario"):
                out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    assert b"groundwatch_scenario_failure_ratio" in generate_latest(registry)
    return out


def test_failure_ratio_is_exported_per_target_and_scenario() -> None:
    tagger = Tagger()
    tagger.apply_many(factual() + scenario_probes("rag") + scenario_probes("canary")[:3])
    got = _scrape(tagger)

    def ratio(target: str, scenario: str) -> float | None:
        key = frozenset({("target", target), ("scenario", scenario)})
        return got.get(("groundwatch_scenario_failure_ratio", key))

    assert ratio("rag", "S1") == pytest.approx(0.25)
    assert ratio("rag", "S4") == pytest.approx(2 / 3)
    assert ratio("rag", "S6") is None  # only errors: undefined, so absent rather than 0
    assert ratio("canary", "S1") == 0.0
    errors = frozenset({("target", "rag"), ("scenario", "S6"), ("verdict", "error")})
    assert got[("groundwatch_scenario_judgements", errors)] == 2
    assert not any(("scenario", "factual") in labels for _, labels in got)


def test_scenario_counts_follow_the_window() -> None:
    tagger = Tagger(Window(runs=1))
    one = [obs(f"a{i}", W, scenario="S5", group="g", run="r1", cycle=1) for i in range(3)]
    tagger.apply_many(one)
    assert tagger.scenario_counts()[("rag", "S5")][W] == 3
    two = [obs(f"b{i}", C, scenario="S5", group="g", run="r2", cycle=2) for i in range(3)]
    tagger.apply_many(two)  # a newer complete cycle of the same group evicts the old one
    counts = tagger.scenario_counts()[("rag", "S5")]
    assert (counts[W], counts[C]) == (0, 3)
    tagger.discard_group("rag", "g")
    assert tagger.scenario_counts() == {}
