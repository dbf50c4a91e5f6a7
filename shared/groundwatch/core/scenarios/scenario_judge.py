"""Judging a scenario probe on the scenario's own acceptable metrics (RAGProbe §3.1, construct 6).

The metrics themselves are the judge's (:mod:`groundwatch.core.ragprobe_metrics`); a scenario
file only chooses which of them count. A probe fails when any chosen metric fails (RAGProbe §5.2),
passes when all pass, and is undecided otherwise — the LLM-judged metrics of
:mod:`groundwatch.stages.judge.ragprobe_llm` can then settle what the rules leave open.
"""

from __future__ import annotations

from groundwatch.core.model import Expected, Verdict
from groundwatch.core.ragprobe_metrics import (
    MetricResult,
    RagProbeMetric,
    deterministic_metrics,
    probe_verdict,
)
from groundwatch.core.scenarios.spec import ScenarioSpec


def scenario_metrics(
    spec: ScenarioSpec, query: str, expected: Expected, response: str | None
) -> dict[RagProbeMetric, MetricResult]:
    """The rule-decided results of ``spec``'s acceptable metrics (``None`` = needs a reader).

    The spec's metrics are a subset of the answerable or the unanswerable set (the schema checks
    that), and :func:`deterministic_metrics` computes the whole set for the expectation, so the
    chosen ones are always there.
    """
    every = deterministic_metrics(spec.id, query, expected, response)
    return {m: every[m] for m in spec.acceptable_metrics if m in every}


def scenario_verdict(
    spec: ScenarioSpec, query: str, expected: Expected, response: str | None
) -> Verdict:
    results = scenario_metrics(spec, query, expected, response)
    return probe_verdict({m: r.passed for m, r in results.items()})
