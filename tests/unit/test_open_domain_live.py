"""The open-domain filter live (GRAMMAR 002 §5.2, Table 4): with an LLM-only baseline configured,
the groups it answers correctly and the baseline itself are left out of the live numbers, the
metrics (and so the alerts) and the report — the same closed domain the batch report uses."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from groundwatch.core.model import Verdict
from groundwatch.core.open_domain import closed_domain, open_domain_groups
from groundwatch.core.tagging import Cause, GroupStatus, Observation, Tagger, Window
from groundwatch.report.build import build_report, report_from_tagger
from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry

pytestmark = pytest.mark.unit

C, W = Verdict.CORRECT, Verdict.INCORRECT
BASE = "llm-only"


def obs(
    pid: str,
    verdict: Verdict,
    *,
    target: str = "rag",
    group: str = "g",
    form: str = "f1",
    cohort: str = "short",
    forms: int = 2,
    cycle: int = 0,
) -> Observation:
    return Observation(
        probe_id=pid,
        target=target,
        cohort=cohort,
        group_id=group,
        form_id=form,
        verdict=verdict,
        group_forms=forms,
        cycle=cycle,
    )


def scenario() -> list[Observation]:
    """Three groups, all gaps of the RAG; the baseline knows group "a" (open-domain)."""
    out = []
    for g in ("a", "b", "c"):
        for f in ("f1", "f2"):
            out.append(obs(f"rag-{g}-{f}", W, group=g, form=f))
            out.append(obs(f"base-{g}-{f}", C if g == "a" else W, target=BASE, group=g, form=f))
    return out


def test_closed_domain_reads_leave_out_the_baseline_and_what_it_knows() -> None:
    t = Tagger(open_domain_baseline=BASE)
    t.apply_many(scenario())
    assert t.open_domain_groups() == {"a"}
    # the full view is unchanged
    assert t.knowledge_gaps("rag") == {"a", "b", "c"}
    assert t.status_counts()[("rag", "short", GroupStatus.GAP)] == 3
    # the closed domain: group "a" and the baseline's own numbers are gone
    assert t.knowledge_gaps("rag", closed_domain=True) == {"b", "c"}
    assert t.knowledge_gap_counts(closed_domain=True) == {"rag": 2}
    assert t.status_counts(closed_domain=True) == {("rag", "short", GroupStatus.GAP): 2}
    nums = t.cohort_numbers(closed_domain=True)
    assert set(nums) == {("rag", "short")}
    assert (nums[("rag", "short")]["groups"], nums[("rag", "short")]["examples"]) == (2, 4)
    assert nums[("rag", "short")]["acc_db"] == 0.0
    assert t.cause_counts(closed_domain=True) == {("rag", "short", Cause.GAP): 4}
    # without a baseline the closed-domain reads are the plain ones
    plain = Tagger()
    plain.apply_many(scenario())
    assert plain.cohort_numbers(closed_domain=True) == plain.cohort_numbers()


def test_flags_follow_the_baseline_window() -> None:
    t = Tagger(Window(runs=1), open_domain_baseline=BASE)
    t.apply(obs("b1", C, target=BASE, form="f1", forms=1, cycle=1))
    t.apply(obs("r1", W, form="f1", forms=1, cycle=1))
    assert t.open_domain_groups() == {"g"}
    assert t.knowledge_gap_counts(closed_domain=True) == {}
    # the next cycle the baseline no longer answers: the group is closed-domain again
    t.apply(obs("b2", W, target=BASE, form="f1", forms=1, cycle=2))
    assert t.open_domain_groups() == set()
    assert t.knowledge_gap_counts(closed_domain=True) == {"rag": 1}
    assert t.discard_group(None, "g") == 2  # b1 left with its cycle
    assert t.cohort_numbers(closed_domain=True) == {}


_events = st.lists(
    st.tuples(
        st.sampled_from(["rag", "rag2", BASE]),
        st.sampled_from(["g1", "g2", "g3", "g4"]),
        st.sampled_from(["short", "long"]),
        st.sampled_from(["f1", "f2"]),
        st.sampled_from([C, W, Verdict.ERROR]),
    ),
    max_size=60,
)


@settings(max_examples=120, deadline=None)
@given(_events)
def test_live_closed_domain_equals_the_batch_filter(
    events: list[tuple[str, str, str, str, Verdict]],
) -> None:
    """The incremental closed-domain numbers equal a fresh tagger fed the batch filter's
    observations (:func:`groundwatch.core.open_domain.closed_domain`)."""
    live = Tagger(open_domain_baseline=BASE)
    for i, (target, g, c, f, v) in enumerate(events):
        live.apply(obs(f"p{i}", v, target=target, group=g, cohort=c, form=f))
    observations = list(live.counted_observations())
    flagged = open_domain_groups(observations, BASE)
    assert live.open_domain_groups() == flagged
    batch = Tagger()
    batch.apply_many(closed_domain(observations, BASE, flagged))
    assert live.cohort_numbers(closed_domain=True) == batch.cohort_numbers()
    assert live.status_counts(closed_domain=True) == batch.status_counts()
    assert live.knowledge_gap_counts(closed_domain=True) == batch.knowledge_gap_counts()
    assert live.cause_counts(closed_domain=True) == batch.cause_counts()
    snapshots = [s for s in live.tallies() if s.target != BASE and s.group_id not in flagged]
    assert live.status_counts(closed_domain=True) == dict(
        Counter((s.target, s.cohort, s.status) for s in snapshots)
    )


def test_metrics_and_report_are_the_closed_domain() -> None:
    t = Tagger(open_domain_baseline=BASE)
    t.apply_many(scenario())
    registry = CollectorRegistry()
    AnalyticsTelemetry(registry, lambda: t)
    text = generate_latest(registry).decode()
    assert 'groundwatch_knowledge_gap_groups{target="rag"} 2.0' in text
    assert 'groundwatch_open_domain_groups{baseline="llm-only"} 1.0' in text
    assert f'target="{BASE}"' not in text.split("groundwatch_open_domain_groups")[0]
    assert 'groundwatch_groups{cohort="short",status="gap",target="rag"} 2.0' in text
    report = report_from_tagger(t)
    assert report.open_domain is not None and report.open_domain.group_ids == ["a"]
    assert list(report.targets) == ["rag"]
    assert report.cohorts["short"].gap_groups == 2
    # the batch report of the same observations agrees
    obs_all = list(t.observations())
    batch = build_report(closed_domain(obs_all, BASE, open_domain_groups(obs_all, BASE)))
    assert batch.cohorts["short"].model_dump() == report.cohorts["short"].model_dump()
