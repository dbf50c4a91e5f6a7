"""The transition series the regression alert reads exist at 0 before the first transition.

prometheus_client exports a labelled counter only once a child exists: the first robust→gap of a
target/cohort used to appear at 1, and Prometheus' increase() — what
GroundwatchKnowledgeGapRegression is built on — never sees a series rise from its first sample.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window
from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry


def _value(registry: CollectorRegistry, **labels: str) -> float | None:
    return registry.get_sample_value("groundwatch_group_transitions_total", labels)


def test_alerted_transition_series_are_exported_at_zero_from_the_first_judgement() -> None:
    tagger = Tagger(Window(runs=1))
    registry = CollectorRegistry()
    metrics = AnalyticsTelemetry(registry, lambda: tagger)
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


def _cycle(tagger: Tagger, metrics: AnalyticsTelemetry, n: int, wrong: dict[str, set[str]]) -> None:
    """Cycle ``n`` of two facts in two cohorts of two forms; ``wrong[group]``: its wrong cohorts."""
    applied = []
    for group in ("lost", "fragile"):
        for cohort in ("short", "long"):
            for form in ("a", "b"):
                o = Observation(
                    probe_id=f"{n}{group}{cohort}{form}", target="mine", cohort=cohort,
                    group_id=group, form_id=f"{cohort}{form}", run_id=f"r{n}", cycle=n,
                    group_forms=2,
                    verdict=Verdict.INCORRECT if cohort in wrong.get(group, ()) else Verdict.CORRECT,
                )  # fmt: skip
                assert tagger.apply(o)
                applied.append(o)
    metrics.observe(applied, tagger.drain_transitions(), tallied_at=0.0)


def test_a_lost_fact_counts_once_and_a_cohort_level_regression_not_at_all() -> None:
    """GroundwatchKnowledgeGapRegression's counter: a fact lost in both cohorts is one knowledge
    regression (the per-cohort transitions count it twice); a fact still right in the short
    wordings is wording fragility, not lost knowledge, though its long cohort turned gap."""
    tagger = Tagger(Window(runs=1))
    registry = CollectorRegistry()
    metrics = AnalyticsTelemetry(registry, lambda: tagger)

    def lost() -> float | None:
        return registry.get_sample_value(
            "groundwatch_knowledge_gap_regressions_total", {"target": "mine"}
        )

    _cycle(tagger, metrics, 1, {})
    assert lost() == 0.0  # exported at 0 from the first judgement
    _cycle(tagger, metrics, 2, {"lost": {"short", "long"}, "fragile": {"long"}})
    assert tagger.knowledge_gaps("mine") == {"lost"}
    regressions = {
        c: _value(registry, target="mine", cohort=c, from_status="robust", to_status="gap")
        for c in ("short", "long")
    }
    assert regressions == {"short": 1.0, "long": 2.0}  # per cohort: lost twice, fragile once
    assert lost() == 1.0
    _cycle(tagger, metrics, 3, {"lost": {"short", "long"}, "fragile": {"long"}})
    assert lost() == 1.0  # still lost: no new loss
    _cycle(tagger, metrics, 4, {})
    _cycle(tagger, metrics, 5, {"lost": {"long"}})  # lost again, in one cohort only: fragility
    assert lost() == 1.0
