"""The transition series the regression alert reads exist at 0 before the first transition.

prometheus_client exports a labelled counter only once a child exists: the first robust→gap of a
target/cohort used to appear at 1, and Prometheus' increase() — what
GroundwatchKnowledgeGapRegression is built on — never sees a series rise from its first sample.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window
from groundwatch.runtime.analytics_metrics import AnalyticsMetrics


def _value(registry: CollectorRegistry, **labels: str) -> float | None:
    return registry.get_sample_value("groundwatch_group_transitions_total", labels)


def test_alerted_transition_series_are_exported_at_zero_from_the_first_judgement() -> None:
    tagger = Tagger(Window(runs=1))
    registry = CollectorRegistry()
    metrics = AnalyticsMetrics(registry, lambda: tagger)
    labels = {"target": "mine", "cohort": "long", "from_status": "robust", "to_status": "gap"}
    assert _value(registry, **labels) is None  # nothing judged yet: no series
    obs = Observation(
        probe_id="p1", target="mine", cohort="long", group_id="g", form_id="f",
        verdict=Verdict.CORRECT,
    )  # fmt: skip
    metrics.observe([obs], [], tallied_at=0.0)
    assert _value(registry, **labels) == 0.0
    for old in ("non_robust", "flaky"):
        assert _value(registry, **{**labels, "from_status": old}) == 0.0
    assert _value(registry, **{**labels, "from_status": "gap", "to_status": "robust"}) == 0.0
    # other statuses are not pre-created (no series per status pair)
    assert _value(registry, **{**labels, "to_status": "unknown"}) is None
