"""The evidence rules (issue 34): a group's status says only what its decided verdicts show,
an outage keeps the last conclusive status (held), and a cycle of too little evidence neither
hides a regression nor makes a gap regress again."""

from __future__ import annotations

import pytest

from groundwatch.core.evidence import EvidenceRule
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import GroupStatus, Observation, Tagger, Window

pytestmark = pytest.mark.unit

C, W, E, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR, Verdict.UNDECIDED


def cycle(t: Tagger, n: int, verdicts: list[Verdict], *, cohort: str = "short") -> GroupStatus:
    for i, v in enumerate(verdicts):
        t.apply(
            Observation(
                f"{cohort}-{n}-{i}",
                "t",
                cohort,
                "g",
                f"{cohort}{i}",
                v,
                run_id=f"r{n}",
                series="s",
                cycle=n,
                group_forms=len(verdicts),
            )
        )
    return t.status("t", cohort, "g")


def both(t: Tagger, n: int, verdicts: list[Verdict]) -> None:
    cycle(t, n, verdicts, cohort="short")
    cycle(t, n, verdicts, cohort="long")


@pytest.mark.parametrize(
    ("rule", "forms", "needed"),
    [
        (EvidenceRule(), 1, 1),
        (EvidenceRule(), 2, 2),
        (EvidenceRule(), 3, 2),
        (EvidenceRule(), 6, 3),
        (EvidenceRule(min_forms=1, min_share=0.0), 6, 1),
        (EvidenceRule(min_forms=4, min_share=0.5), 3, 3),  # capped at the group's size
        (EvidenceRule(min_forms=1, min_share=1.0), 5, 5),
    ],
)
def test_needed_decided_forms(rule: EvidenceRule, forms: int, needed: int) -> None:
    assert rule.needed(forms) == needed


def test_rule_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="min_forms"):
        EvidenceRule(min_forms=0)
    with pytest.raises(ValueError, match="min_share"):
        EvidenceRule(min_share=1.5)


def test_one_wrong_form_beside_undecided_ones_is_no_knowledge_gap() -> None:
    """The scripted check of the issue: 1 conclusively wrong form, 5 undecided, in every cohort
    — it was tagged gap and listed as a knowledge gap (20 of 20)."""
    t = Tagger(Window(runs=1))
    both(t, 1, [W, U, U, U, U, U])
    assert t.status("t", "short", "g") is GroupStatus.UNKNOWN
    assert t.knowledge_gaps("t") == set() and t.knowledge_gap_counts() == {}
    n = t.cohort_numbers()[("t", "short")]
    assert n["gap_groups"] == 0 and n["groups"] == 0 and n["unknown_groups"] == 1
    assert n["acc_db"] is None  # over conclusive groups only; coverage beside it
    assert n["coverage"] == pytest.approx(1 / 6)


def test_a_stricter_rule_needs_more_decided_forms() -> None:
    t = Tagger(Window(runs=1), evidence=EvidenceRule(min_forms=3, min_share=1.0))
    assert cycle(t, 1, [W, W, U]) is GroupStatus.UNKNOWN
    assert cycle(t, 2, [W, W, W]) is GroupStatus.GAP
    lax = Tagger(Window(runs=1), evidence=EvidenceRule(min_forms=1, min_share=0.0))
    assert cycle(lax, 1, [W, U, U]) is GroupStatus.GAP


def test_an_outage_keeps_the_gap_list_and_makes_no_transition() -> None:
    """A cycle in which the target answered 503 to everything: the gap stays a gap (held),
    the knowledge-gap list keeps it, nothing transitions; evidence afterwards moves it again."""
    t = Tagger(Window(runs=1))
    both(t, 1, [C, C, C])
    both(t, 2, [W, W, W])
    assert t.knowledge_gaps("t") == {"g"}
    t.drain_transitions()
    for n in (3, 4, 5):  # three outage cycles
        both(t, n, [E, E, E])
        assert t.status("t", "short", "g") is GroupStatus.GAP
        assert t.knowledge_gaps("t") == {"g"} and t.knowledge_gap_counts() == {"t": 1}
        tally = t.tally("t", "short", "g")
        assert tally is not None and tally.held and tally.evidence_cycle == 2
        assert tally.cycle == n and (tally.correct, tally.incorrect) == (0, 3)
    assert t.drain_transitions() == []
    numbers = t.cohort_numbers()[("t", "short")]
    assert numbers["gap_groups"] == 1 and numbers["held_groups"] == 1
    assert numbers["lambda"] == 1.0 and numbers["acc_db"] == 0.0
    # the outage keeps one cycle of memory, however long it lasts
    assert {o.cycle for o in t.group_history("t", "short", "g")} == {2, 5}
    both(t, 6, [C, C, C])  # back, and fixed
    assert t.status("t", "short", "g") is GroupStatus.ROBUST
    assert not t.tally("t", "short", "g").held  # type: ignore[union-attr]
    assert [tr.kind for tr in t.drain_transitions()] == ["recovery", "recovery"]
    assert t.held_counts() == {}


def test_a_fact_lost_during_an_outage_is_a_regression_afterwards() -> None:
    t = Tagger(Window(runs=1))
    both(t, 1, [C, C, C])
    both(t, 2, [E, E, E])
    t.drain_transitions()
    both(t, 3, [W, W, W])
    trs = t.drain_transitions()
    assert [(tr.from_status, tr.to_status, tr.kind) for tr in trs] == [
        (GroupStatus.ROBUST, GroupStatus.GAP, "regression")
    ] * 2


def test_too_little_evidence_neither_hides_a_regression_nor_repeats_one() -> None:
    t = Tagger(Window(runs=1))
    assert cycle(t, 1, [C, C, C]) is GroupStatus.ROBUST
    assert cycle(t, 2, [W, U, U]) is GroupStatus.UNKNOWN  # one wrong form: too little
    assert cycle(t, 3, [W, W, W]) is GroupStatus.GAP
    kinds = [(tr.from_status.value, tr.to_status.value, tr.kind) for tr in t.drain_transitions()]
    assert kinds == [("robust", "unknown", "change"), ("unknown", "gap", "regression")]
    assert cycle(t, 4, [U, W, U]) is GroupStatus.UNKNOWN
    assert cycle(t, 5, [W, W, W]) is GroupStatus.GAP
    kinds = [tr.kind for tr in t.drain_transitions()]
    assert kinds == ["change", "change"]  # gap → unknown → gap lost nothing new
    assert cycle(t, 6, [C, U, U]) is GroupStatus.UNKNOWN
    assert cycle(t, 7, [C, C, C]) is GroupStatus.ROBUST
    assert [tr.kind for tr in t.drain_transitions()] == ["change", "recovery"]


def test_answers_nothing_was_decided_of_make_the_group_unknown_not_held() -> None:
    """Held means no answer: a cycle in which the target answered (some forms erred, the rest
    undecided) stands — unknown, no longer held, with its transition remembering the last
    conclusive status — while a cycle of target errors alone keeps the status held."""
    t = Tagger(Window(runs=1))
    assert cycle(t, 1, [C, C, C]) is GroupStatus.ROBUST
    t.drain_transitions()
    assert cycle(t, 2, [U, E, U]) is GroupStatus.UNKNOWN
    tally = t.tally("t", "short", "g")
    assert tally is not None and not tally.held and tally.evidence_cycle == 2
    assert (tally.correct, tally.incorrect, tally.undecided, tally.error) == (0, 0, 2, 1)
    (tr,) = t.drain_transitions()
    assert (tr.from_status, tr.to_status, tr.cycle) == (GroupStatus.ROBUST, GroupStatus.UNKNOWN, 2)
    assert tr.kind == "change"
    assert cycle(t, 3, [E, E, E]) is GroupStatus.UNKNOWN  # down now: unknown, held from 2
    tally = t.tally("t", "short", "g")
    assert tally is not None and tally.held and tally.evidence_cycle == 2
    assert t.held_counts() == {("t", "short"): 1}
    assert cycle(t, 4, [W, W, W]) is GroupStatus.GAP  # judged from the last conclusive status
    assert [tr.kind for tr in t.drain_transitions()] == ["regression"]


def test_a_gap_answered_in_undecidable_words_is_no_longer_a_knowledge_gap() -> None:
    t = Tagger(Window(runs=1))
    both(t, 1, [W, W, W])
    assert t.knowledge_gaps("t") == {"g"}
    both(t, 2, [U, U, U])
    assert t.status("t", "long", "g") is GroupStatus.UNKNOWN
    assert t.knowledge_gaps("t") == set() and t.held_counts() == {}


def test_a_window_of_cycles_keeps_its_answered_cycles_through_an_outage() -> None:
    """W = 2: two outage cycles evict nothing; an undecided cycle is one of the two kept."""
    t = Tagger(Window(runs=2))
    cycle(t, 1, [C, W, C])
    cycle(t, 2, [C, C, C])
    assert cycle(t, 3, [E, E, E]) is GroupStatus.NON_ROBUST
    assert cycle(t, 4, [E, E, E]) is GroupStatus.NON_ROBUST
    assert {o.cycle for o in t.group_history("t", "short", "g")} == {1, 2, 4}
    cycle(t, 5, [U, U, U])  # answered: cycle 1 leaves the window (4, the newest empty, stays)
    assert {o.cycle for o in t.group_history("t", "short", "g")} == {2, 4, 5}
    assert t.status("t", "short", "g") is GroupStatus.UNKNOWN


def test_the_restored_state_of_an_undecided_cycle_reads_the_same() -> None:
    from groundwatch.core.tagging import dump_state, restore

    live = Tagger(Window(runs=1))
    cycle(live, 1, [C, C, C])
    cycle(live, 2, [U, U, E])
    key = ("t", "short", "g")
    state = dump_state(live, key)
    assert state is not None
    back = Tagger(Window(runs=1))
    restore(back, [(key, state)])
    assert back.tally(*key) == live.tally(*key)
    assert back.status(*key) is GroupStatus.UNKNOWN
    live.make_cold()
    assert live.tally(*key) == back.tally(*key)  # cold, it reads the same


def test_outage_state_survives_a_rebuild() -> None:
    """The same observations replayed (start-up, rebalance) give the same held status."""
    live = Tagger(Window(runs=1))
    both(live, 1, [W, W, W])
    both(live, 2, [E, E, E])
    replay = Tagger(Window(runs=1))
    replay.rebuild(live.observations())
    assert replay.tally("t", "short", "g") == live.tally("t", "short", "g")
    assert replay.knowledge_gaps("t") == {"g"}
    assert replay.held_counts() == live.held_counts() == {("t", "short"): 1, ("t", "long"): 1}


def test_a_right_answer_in_a_cohort_of_too_little_evidence_refutes_the_knowledge_gap() -> None:
    """Every short form wrong, one long form right beside undecided ones: the long cohort is
    unknown, but the fact was answered — no knowledge gap (the demo listed 12 such groups)."""
    t = Tagger(Window(runs=1))
    cycle(t, 1, [W, W, W], cohort="short")
    assert t.knowledge_gaps("t") == {"g"}
    cycle(t, 1, [C, U, U], cohort="long")
    assert t.status("t", "long", "g") is GroupStatus.UNKNOWN
    assert t.knowledge_gaps("t") == set()
    from groundwatch.report.groups import group_results

    _, (row,) = group_results(t)
    assert row.status == "non_robust" and not row.knowledge_gap


def test_the_continuous_run_line_says_statuses_transitions_and_target_errors() -> None:
    """What `run` prints after each cycle (issue 34: the operator's one line per cycle)."""
    from groundwatch.app.runs import CycleLine

    t = Tagger(Window(runs=1))
    line = CycleLine()
    both(t, 1, [C, C, C])
    assert line.after(t) == (
        "gap 0, non-robust 0, flaky 0, unknown 0, robust 1; regressions 0, recoveries 0;"
        " target errors 0 of 6"
    )
    both(t, 2, [W, W, W])
    text = line.after(t)
    assert text.startswith("gap 1, non-robust 0") and "regressions 2, recoveries 0" in text
    both(t, 3, [E, E, E])
    text = line.after(t)
    assert text.startswith("gap 1, non-robust 0, flaky 0, unknown 0, robust 0 (held 1);")
    assert "regressions 0, recoveries 0; target errors 6 of 6 — t answered nothing" in text
    both(t, 4, [U, U, C])  # answered again, mostly in words the judge cannot place
    text = line.after(t)
    assert text.startswith("gap 0, non-robust 0, flaky 0, unknown 1, robust 0;"), text
    assert text.endswith("; target errors 0 of 6, undecided 4 of 6 answers"), text


def test_the_html_report_names_the_target_and_shows_cycle_transitions_and_trend() -> None:
    """The page left the target, the cycle, the transitions and their trend out although the
    JSON had them."""
    from groundwatch.report.build import report_from_tagger
    from groundwatch.report.html import render_html

    t = Tagger(Window(runs=1))
    both(t, 1, [C, C, C])
    both(t, 2, [W, W, W])
    both(t, 3, [E, E, E])
    report = report_from_tagger(t)
    assert report.targets["t"].cohorts["short"].regressions == 1
    assert report.targets["t"].cohorts["short"].held_groups == 1
    html = render_html(report)
    assert "<td>t · short</td>" in html and "<td>t · long</td>" in html
    assert "id='monitoring'" in html and "latest cycle 3" in html
    monitoring = html.split("id='monitoring'", 1)[1].split("<h2", 1)[0]
    # the trend: cycle 2 had two regressions (one per cohort); each transition listed
    assert "<tr><td>2</td><td>2</td><td>0</td><td>0</td></tr>" in monitoring
    assert monitoring.count("<td>robust</td><td>gap</td><td>regression</td><td>2</td>") == 2


def test_the_undecided_share_of_answers_is_a_gauge_of_its_own() -> None:
    """``groundwatch_target_undecided_ratio``: undecided / answered probes of the target's newest
    cycle; absent while it answers nothing (an outage is not undecidable answers)."""
    from prometheus_client import CollectorRegistry

    from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry

    t = Tagger(Window(runs=1))
    registry = CollectorRegistry()
    AnalyticsTelemetry(registry, lambda: t)

    def share() -> float | None:
        return registry.get_sample_value("groundwatch_target_undecided_ratio", {"target": "t"})

    both(t, 1, [C, U, C])
    assert share() == pytest.approx(1 / 3)
    both(t, 2, [U, U, E])  # two answers, both undecided
    assert share() == 1.0
    assert t.target_health()["t"] == (2, 6, 4, 4)
    both(t, 3, [E, E, E])
    assert share() is None
    assert registry.get_sample_value("groundwatch_target_answered_ratio", {"target": "t"}) == 0.0


def test_target_health_is_the_newest_cycles_whatever_the_windows_hold() -> None:
    """The report's target health and each cohort's error share come from the newest cycle's
    probes, also for held groups (whose windows count an older cycle) — and read the same from
    the tagger, its cold tallies and a published view."""
    from groundwatch.core.tagging import publish
    from groundwatch.report.groups import cycle_health

    t = Tagger(Window(runs=1))
    both(t, 1, [C, C, C])
    cycle(t, 2, [E, E, E], cohort="short")  # short: held from cycle 1
    cycle(t, 2, [C, E, U], cohort="long")
    health, cohorts = cycle_health(t)
    h = health["t"]
    assert (h.cycle, h.probes, h.answered, h.errors, h.all_failed) == (2, 6, 2, 4, False)
    assert cohorts == {("t", "short"): (3, 3), ("t", "long"): (3, 1)}
    assert t.tally("t", "short", "g").held  # type: ignore[union-attr]
    view = publish(t)
    t.refresh_causes()
    t.make_cold()
    assert t.make_cold() == 2  # both cohorts' tallies cold (untouched since the last call)
    assert cycle_health(t) == cycle_health(view) == (health, cohorts)
