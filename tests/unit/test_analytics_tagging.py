"""The incremental GRAMMAR tagger: statuses, idempotency, windows, incremental counts."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwatch.contracts import Judgement
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import (
    Cause,
    GroupStatus,
    Observation,
    RetrievalEvidence,
    Tagger,
    Window,
    judge_retrieval,
    retrieval_sufficient,
)
from groundwatch.stages.analytics.observe import observation_from_judgement

pytestmark = pytest.mark.unit

C, W, E, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR, Verdict.UNDECIDED


def obs(
    pid: str,
    verdict: Verdict,
    *,
    form: str = "f1",
    group: str = "g",
    cohort: str = "short",
    target: str = "t",
    run: str = "r1",
    cycle: int = 0,
    truth: int = 1,
    forms: int = 3,
    at: float = 0.0,
    retrieved: tuple[str, ...] = (),
    relevant: tuple[str, ...] = (),
) -> Observation:
    return Observation(
        probe_id=pid,
        target=target,
        cohort=cohort,
        group_id=group,
        form_id=form,
        verdict=verdict,
        run_id=run,
        cycle=cycle,
        truth_version=truth,
        group_forms=forms,
        at=at,
        retrieved_ids=retrieved,
        relevant_doc_ids=relevant,
    )


def feed(tagger: Tagger, verdicts: list[Verdict], **kw: object) -> GroupStatus:
    for i, v in enumerate(verdicts):
        tagger.apply(obs(f"p{i}", v, form=f"f{i}", forms=len(verdicts), **kw))  # type: ignore[arg-type]
    return tagger.status("t", "short", "g")


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([C, C, C], GroupStatus.ROBUST),
        ([W, W, W], GroupStatus.GAP),
        ([C, W, W], GroupStatus.NON_ROBUST),
        ([C, C, E], GroupStatus.ROBUST),  # an error never counts as wrong
        ([W, W, E], GroupStatus.GAP),  # …nor as right
        # one wrong form beside undecided and erred ones is too little evidence for a gap
        ([W, U, E], GroupStatus.UNKNOWN),
        ([W, W, U, U, U, U], GroupStatus.UNKNOWN),  # 2 of 6 decided: under half
        ([W, W, W, U, U, U], GroupStatus.GAP),  # half decided, all wrong
        ([C, U, U, U, U, U], GroupStatus.UNKNOWN),  # …nor robust on one of six
        ([C, W, U, U, U, U], GroupStatus.NON_ROBUST),  # a right and a wrong form: conclusive
        ([E, E, E], GroupStatus.UNKNOWN),  # no decisive verdict: no evidence either way
        ([U, E, U], GroupStatus.UNKNOWN),
    ],
)
def test_status_follows_grammar_definitions(verdicts: list[Verdict], expected: GroupStatus) -> None:
    assert feed(Tagger(), verdicts) is expected


def test_pending_until_every_form_judged() -> None:
    t = Tagger()
    t.apply(obs("a", W, form="f1"))
    t.apply(obs("b", W, form="f2"))
    assert t.status("t", "short", "g") is GroupStatus.PENDING
    # the same form judged again (another run) does not complete the group
    t.apply(obs("c", W, form="f2", run="r2"))
    assert t.status("t", "short", "g") is GroupStatus.PENDING
    t.apply(obs("d", C, form="f3"))
    assert t.status("t", "short", "g") is GroupStatus.NON_ROBUST
    assert t.status("t", "short", "unknown") is GroupStatus.PENDING


def test_duplicate_probe_id_changes_nothing() -> None:
    t = Tagger()
    assert t.apply(obs("a", C, form="f1"))
    before = (t.tally("t", "short", "g"), t.status_counts(), t.verdict_counts(), len(t))
    assert not t.apply(obs("a", C, form="f1"))
    assert not t.apply(obs("a", W, form="f2"))  # same probe id, whatever it says
    assert (t.tally("t", "short", "g"), t.status_counts(), t.verdict_counts(), len(t)) == before


def test_tally_counts_each_verdict() -> None:
    t = Tagger()
    feed(t, [C, W, E, U, C])
    tally = t.tally("t", "short", "g")
    assert tally is not None
    assert (tally.correct, tally.incorrect, tally.error, tally.undecided) == (2, 1, 1, 1)
    assert tally.examples == 3 and tally.forms_judged == 5
    assert t.verdict_counts() == {("t", C): 2, ("t", W): 1, ("t", E): 1, ("t", U): 1}


def cycle_of(t: Tagger, n: int, verdicts: list[Verdict], **kw: object) -> GroupStatus:
    """One cycle of the group "g": form f{i} gets verdicts[i]."""
    for i, v in enumerate(verdicts):
        t.apply(obs(f"c{n}-{i}", v, form=f"f{i}", cycle=n, run=f"r{n}", forms=len(verdicts), **kw))  # type: ignore[arg-type]
    return t.status("t", "short", "g")


def test_window_lets_a_group_recover_and_refuses_late_verdicts_of_evicted_cycles() -> None:
    t = Tagger(Window(runs=1))
    assert cycle_of(t, 1, [W, W, W]) is GroupStatus.GAP
    assert cycle_of(t, 2, [C, C, C]) is GroupStatus.ROBUST
    assert t.status_counts() == {("t", "short", GroupStatus.ROBUST): 1}
    assert {o.run_id for o in t.observations()} == {"r2"}
    # a late judgement of the evicted cycle is refused, not counted
    assert not t.apply(obs("late", W, form="f0", cycle=1))
    assert t.status("t", "short", "g") is GroupStatus.ROBUST


def test_a_fix_is_robust_at_once_even_with_a_wider_window() -> None:
    """Cycles that are each uniform are no wording sensitivity: the status follows the latest."""
    t = Tagger(Window(runs=2))
    statuses = [cycle_of(t, n, [v, v, v]) for n, v in ((1, W), (2, C), (3, C))]
    assert statuses == [GroupStatus.GAP, GroupStatus.ROBUST, GroupStatus.ROBUST]


def test_a_mixed_cycle_in_the_window_keeps_the_group_non_robust() -> None:
    t = Tagger(Window(runs=2))
    assert cycle_of(t, 1, [C, W, C]) is GroupStatus.NON_ROBUST
    assert cycle_of(t, 2, [C, C, C]) is GroupStatus.NON_ROBUST  # cycle 1 still in the window
    assert cycle_of(t, 3, [C, C, C]) is GroupStatus.ROBUST


def test_regression_and_recovery_are_transitions() -> None:
    """A fact removed at cycle 2 is a gap at once (window 1), fixed at cycle 4 robust at once."""
    t = Tagger(Window(runs=1))
    plan = [C, W, W, C, C]
    statuses = [cycle_of(t, n, [v, v, v]) for n, v in enumerate(plan, start=1)]
    assert (
        statuses
        == [GroupStatus.ROBUST, GroupStatus.GAP, GroupStatus.GAP] + [GroupStatus.ROBUST] * 2
    )
    trs = t.drain_transitions()
    assert [(tr.from_status, tr.to_status, tr.cycle, tr.kind) for tr in trs] == [
        (GroupStatus.ROBUST, GroupStatus.GAP, 2, "regression"),
        (GroupStatus.GAP, GroupStatus.ROBUST, 4, "recovery"),
    ]
    assert t.drain_transitions() == []
    assert t.flaky("t", "short", "g") == frozenset()  # a change that persists is no flakiness
    assert t.transition_counts() == {
        ("t", "short", GroupStatus.ROBUST, GroupStatus.GAP): 1,
        ("t", "short", GroupStatus.GAP, GroupStatus.ROBUST): 1,
    }


def test_a_cycle_still_filling_never_flips_the_group() -> None:
    t = Tagger(Window(runs=1))
    assert cycle_of(t, 1, [C, C, C]) is GroupStatus.ROBUST
    t.apply(obs("x", W, form="f0", cycle=2))  # first verdict of cycle 2
    assert t.status("t", "short", "g") is GroupStatus.ROBUST
    tally = t.tally("t", "short", "g")
    assert tally is not None and (tally.correct, tally.incorrect) == (3, 0)
    t.apply(obs("y", W, form="f1", cycle=2))
    t.apply(obs("z", W, form="f2", cycle=2))  # cycle 2 complete
    assert t.status("t", "short", "g") is GroupStatus.GAP


def test_a_form_that_alternates_with_an_unchanged_truth_is_flaky_not_a_gap() -> None:
    t = Tagger(Window(runs=1))
    statuses = [cycle_of(t, n, [v]) for n, v in enumerate([C, W, C, W, C, W], start=1)]
    assert statuses[:2] == [GroupStatus.ROBUST, GroupStatus.GAP]  # once: could be a regression
    assert statuses[3] is GroupStatus.FLAKY and statuses[5] is GroupStatus.FLAKY
    assert t.flaky("t", "short", "g") == {"f0"}
    assert t.cohort_numbers()[("t", "short")]["flaky_forms"] == 1


def test_flaky_forms_among_steady_ones_are_not_wording_sensitivity() -> None:
    t = Tagger(Window(runs=1))
    seq = [[C, C, C], [C, W, C], [C, C, C], [C, W, C]]
    statuses = [cycle_of(t, n, v) for n, v in enumerate(seq, start=1)]
    assert statuses == [
        GroupStatus.ROBUST,
        GroupStatus.NON_ROBUST,
        GroupStatus.ROBUST,
        GroupStatus.FLAKY,
    ]


def test_a_verdict_that_follows_a_changed_truth_is_not_flaky() -> None:
    t = Tagger(Window(runs=1))
    for n, (v, truth) in enumerate([(C, 1), (W, 2), (C, 3), (W, 4)], start=1):
        t.apply(obs(f"p{n}", v, form="f0", cycle=n, truth=truth, forms=1))
    assert t.flaky("t", "short", "g") == frozenset()
    assert t.status("t", "short", "g") is GroupStatus.GAP


def test_late_verdicts_of_an_older_cycle_never_evict_a_newer_one() -> None:
    t = Tagger(Window(runs=1))
    cycle_of(t, 2, [C, C, C])
    cycle_of(t, 3, [W, W, W])
    assert not t.apply(obs("old", C, form="f0", cycle=1))  # older than the window: refused
    assert not t.apply(obs("old2", C, form="f0", cycle=2))  # evicted when cycle 3 closed
    assert t.status("t", "short", "g") is GroupStatus.GAP
    assert {o.cycle for o in t.observations()} == {3}
    # a late verdict of the newest cycle still joins it
    t2 = Tagger(Window(runs=1))
    t2.apply(obs("a", C, form="f0", cycle=5, forms=2))
    t2.apply(obs("b", C, form="f0", cycle=6, forms=2))  # cycle 6 starts: cycle 5 closes
    assert t2.apply(obs("d", C, form="f1", cycle=5, forms=2))  # late, cycle 5 is still kept
    assert t2.status("t", "short", "g") is GroupStatus.ROBUST
    assert t2.apply(obs("c", W, form="f1", cycle=6, forms=2))  # cycle 6 complete: 5 leaves
    assert t2.status("t", "short", "g") is GroupStatus.NON_ROBUST
    assert {o.cycle for o in t2.observations()} == {6}


def test_each_form_counts_once_whatever_the_number_of_cycles() -> None:
    """Re-asking the same questions adds no examples: intervals do not narrow by repetition."""
    pooled = Tagger()  # every cycle pooled
    for n in range(1, 6):
        cycle_of(pooled, n, [C, C, W])
    numbers = pooled.cohort_numbers()[("t", "short")]
    assert (numbers["examples"], numbers["correct"]) == (3, 2)


def test_errors_are_never_robust_silently_and_never_a_gap() -> None:
    t = Tagger(Window(runs=1))
    assert cycle_of(t, 1, [C, C, E]) is GroupStatus.ROBUST
    tally = t.tally("t", "short", "g")
    assert tally is not None and tally.partial and tally.coverage == pytest.approx(2 / 3)
    # a cycle in which the target answered nothing is no evidence: the status stays, held
    assert cycle_of(t, 2, [E, E, E]) is GroupStatus.ROBUST
    tally = t.tally("t", "short", "g")
    assert tally is not None and tally.held and tally.evidence_cycle == 1 and tally.cycle == 2
    n = t.cohort_numbers()[("t", "short")]
    assert n["groups"] == 1 and n["robust_groups"] == 1 and n["held_groups"] == 1
    # a group that never had evidence is unknown, never a gap
    u = Tagger(Window(runs=1))
    assert cycle_of(u, 1, [E, E, E]) is GroupStatus.UNKNOWN
    n = u.cohort_numbers()[("t", "short")]
    assert n["groups"] == 0 and n["unknown_groups"] == 1 and n["acc_db"] is None
    assert n["coverage"] == 0.0 and n["errors"] == 3


def test_knowledge_gap_needs_every_cohort_with_evidence_to_be_a_gap() -> None:
    t = Tagger(Window(runs=1))
    for i in range(3):
        t.apply(obs(f"s{i}", W, form=f"s{i}", cohort="short"))
        t.apply(obs(f"l{i}", E, form=f"l{i}", cohort="long"))  # the long form always errs
    assert t.status("t", "long", "g") is GroupStatus.UNKNOWN
    assert t.knowledge_gaps("t") == {"g"} and t.knowledge_gap_counts() == {"t": 1}
    t.apply(obs("s-late", C, form="s0", cohort="short", cycle=1))
    t.apply(obs("s-late1", C, form="s1", cohort="short", cycle=1))
    t.apply(obs("s-late2", C, form="s2", cohort="short", cycle=1))
    assert t.knowledge_gaps("t") == set()


def test_run_window_is_per_target() -> None:
    t = Tagger(Window(runs=1))
    t.apply(obs("a", W, form="f1", target="prod", cycle=1, forms=1))
    t.apply(obs("b", C, form="f1", target="canary", cycle=2, forms=1))
    assert t.status("prod", "short", "g") is GroupStatus.GAP
    assert t.status("canary", "short", "g") is GroupStatus.ROBUST


def test_cohort_numbers_follow_eq_1_to_3() -> None:
    t = Tagger(Window(runs=1))
    feed(t, [C, C, C], cycle=1)
    for i, v in enumerate([W, W]):
        t.apply(obs(f"k{i}", v, group="k", form=f"f{i}", forms=2, cycle=1))
    n = t.cohort_numbers()[("t", "short")]
    assert (n["examples"], n["correct"], n["groups"], n["gap_groups"], n["gap_examples"]) == (
        5,
        3,
        2,
        1,
        2,
    )
    assert n["acc_db"] == 0.5 and n["refined_accuracy"] == 1.0 and n["lambda"] == 0.4
    assert n["accuracy"] == pytest.approx(n["refined_accuracy"] * (1 - n["lambda"]))
    # a new cycle: the gap group recovers, its old cycle leaves the window
    for i in range(2):
        t.apply(obs(f"k2{i}", C, group="k", form=f"f{i}", forms=2, cycle=2))
    n = t.cohort_numbers()[("t", "short")]
    assert (n["examples"], n["gap_groups"], n["gap_examples"], n["lambda"]) == (5, 0, 0, 0.0)


def test_pending_groups_stay_out_of_every_denominator() -> None:
    t = Tagger()
    t.apply(obs("a", W, form="f1"))  # 1 of 3 forms: pending
    feed(t, [C, C, C], group="h")
    n = t.cohort_numbers()[("t", "short")]
    assert (n["examples"], n["correct"], n["groups"], n["pending_groups"]) == (3, 3, 1, 1)
    assert n["refined_accuracy"] == 1.0 and n["acc_db"] == 1.0 and n["lambda"] == 0.0


def test_window_validation() -> None:
    with pytest.raises(ValueError):
        Window(runs=0)


def test_retrieval_judgement_order_of_evidence() -> None:
    given_ok = Observation("p", "t", "c", "g", "f", W, retrieval_ok=True)
    assert judge_retrieval(given_ok, set()) == (True, RetrievalEvidence.GIVEN)
    truth = obs("p", C, retrieved=("d2", "d9"), relevant=("d1",))
    assert retrieval_sufficient(truth, set()) is False  # ground truth beats "correct ⇒ sufficient"
    assert judge_retrieval(obs("p", W, retrieved=("d1", "d9"), relevant=("d1",)), set()) == (
        True,
        RetrievalEvidence.GROUND_TRUTH,
    )
    # ground truth needs retrieved ids: without them the dataset's ids prove nothing
    assert judge_retrieval(obs("p", W, relevant=("d1",)), set()) == (None, RetrievalEvidence.NONE)
    # a correct answer without ids or contexts says nothing about the retrieval (an LLM-only
    # target answers from memory): no "correct ⇒ sufficient" without retrieval evidence
    assert retrieval_sufficient(obs("p", C), set()) is None
    ctx = {frozenset({"d1", "d2"})}
    assert judge_retrieval(obs("p", W, retrieved=("d2", "d1")), ctx) == (
        True,
        RetrievalEvidence.CONTEXT_COMPARISON,
    )
    # a superset of a correct form's documents is sufficient (more documents take none away)
    assert retrieval_sufficient(obs("p", W, retrieved=("d3", "d2", "d1", "d9")), ctx) is True
    # disjoint from every correctly answered form's documents: insufficient
    assert judge_retrieval(obs("p", W, retrieved=("d7",)), ctx) == (
        False,
        RetrievalEvidence.CONTEXT_COMPARISON,
    )
    # overlapping without containing: the needed document may be the shared one — inconclusive
    assert judge_retrieval(obs("p", W, retrieved=("d2",)), ctx) == (None, RetrievalEvidence.NONE)
    # ... unless the text says: the gold stated in the contexts, or contexts without it
    said = Observation("p", "t", "c", "g", "f", W, retrieved_ids=("d2",), context_has_answer=True)
    assert judge_retrieval(said, ctx) == (True, RetrievalEvidence.CONTEXT_TEXT)
    unsaid = Observation("p", "t", "c", "g", "f", C, context_has_answer=False)
    assert judge_retrieval(unsaid, set()) == (False, RetrievalEvidence.CONTEXT_TEXT)
    # ids beat the text matcher when a correct form had the same documents (a paraphrase the
    # matcher misses cannot turn a proven context into an insufficient one)
    para = Observation(
        "p", "t", "c", "g", "f", W, retrieved_ids=("d1", "d2"), context_has_answer=False
    )
    assert retrieval_sufficient(para, ctx) is True
    # no ids, no contexts: inconclusive, never a retrieval failure
    assert judge_retrieval(obs("p", W), {frozenset()}) == (None, RetrievalEvidence.NONE)
    assert retrieval_sufficient(obs("p", W), ctx) is None
    # an empty list from a target that reports ids is an empty retrieval
    assert judge_retrieval(obs("p", W), ctx, reports_ids=True) == (
        False,
        RetrievalEvidence.NOTHING_RETRIEVED,
    )
    assert retrieval_sufficient(obs("p", E), ctx) is None
    assert retrieval_sufficient(obs("p", U, retrieved=("d1",), relevant=("d1",)), set()) is True


def test_no_retrieval_evidence_is_inconclusive_not_retrieval() -> None:
    """A target that returns neither ids nor contexts (openai_chat, http_json without paths):
    the failures of a non-robust group are inconclusive, none is blamed on retrieval."""
    t = Tagger()
    t.apply(obs("a", C, form="a", forms=3))
    t.apply(obs("b", W, form="b", forms=3))
    t.apply(obs("c", W, form="c", forms=3))
    assert t.cause_counts() == {("t", "short", Cause.INCONCLUSIVE): 2}
    assert set(t.retrieval_judgements("t", "g").values()) == {(None, RetrievalEvidence.NONE)}


def test_cause_counts_use_context_comparison_across_cohorts() -> None:
    t = Tagger()
    # group g: short answered right with docs {d1}; long wrong once with {d1} (LM), once with {d7}
    t.apply(obs("s1", C, form="s1", cohort="short", forms=1, retrieved=("d1",)))
    t.apply(obs("l1", W, form="l1", cohort="long", forms=3, retrieved=("d1",)))
    t.apply(obs("l2", W, form="l2", cohort="long", forms=3, retrieved=("d7",)))
    assert t.cause_counts() == {("t", "long", Cause.PENDING): 2}
    t.apply(obs("l3", C, form="l3", cohort="long", forms=3, retrieved=("d1",)))
    t.apply(obs("x", E, form="x1", group="h", forms=1))
    assert t.cause_counts() == {
        ("t", "long", Cause.LM): 1,
        ("t", "long", Cause.RETRIEVAL): 1,
        ("t", "short", Cause.TARGET_ERROR): 1,
    }
    # a gap group's failures are the knowledge base's
    for i in range(2):
        t.apply(obs(f"k{i}", W, form=f"k{i}", group="k", forms=2, retrieved=("d1",)))
    assert t.cause_counts()[("t", "short", Cause.GAP)] == 2


def test_from_judgement() -> None:
    created = datetime(2024, 1, 1, tzinfo=UTC)
    j = Judgement(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="long",
        target="prod",
        query="q?",
        expected=Expected(values=["x"]),
        group_forms=3,
        relevant_doc_ids=["d1"],
        verdict=Verdict.INCORRECT,
        tier="exact",
        retrieved_ids=["d1", "d2"],
        probe_created_at=created,
        judged_at=created + timedelta(seconds=2.5),
    )
    o = observation_from_judgement(j)
    assert o.probe_id == str(j.probe_id) and o.verdict is Verdict.INCORRECT
    assert (o.group_forms, o.retrieved_ids, o.relevant_doc_ids) == (3, ("d1", "d2"), ("d1",))
    assert o.latency_s == pytest.approx(2.5)
    assert o.key == ("prod", "long", "g")


_events = st.lists(
    st.tuples(
        st.integers(0, 30),  # probe id (repeats = redeliveries)
        st.sampled_from(["g1", "g2", "g3"]),
        st.sampled_from(["a", "b"]),  # cohort
        st.sampled_from(["f1", "f2", "f3"]),
        st.sampled_from(list(Verdict)),
        st.integers(0, 4),  # run
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(_events, st.sampled_from([None, 1, 2]))
def test_incremental_counts_equal_recomputation(
    events: list[tuple[int, str, str, str, Verdict, int]], runs: int | None
) -> None:
    """Whatever the order, redeliveries, late verdicts and evictions, the maintained counts equal
    a fresh count over the groups' snapshots and the observations left in the window."""
    t = Tagger(Window(runs=runs)) if runs else Tagger()
    for pid, g, c, f, verdict, r in events:
        t.apply(obs(f"p{pid}", verdict, group=g, cohort=c, form=f, cycle=r, forms=2))
    live = list(t.observations())
    assert len({o.probe_id for o in live}) == len(live)
    assert t.verdict_counts() == dict(Counter((o.target, o.verdict) for o in live))
    snapshots = list(t.tallies())
    assert t.status_counts() == dict(Counter((s.target, s.cohort, s.status) for s in snapshots))
    if runs is not None:
        # at most W closed cycles with evidence, the newest closed one without (an outage's
        # last cycle: never more, however long) and one filling per group
        per_group: dict[tuple[str, str, str], set[int]] = {}
        for o in live:
            per_group.setdefault(o.key, set()).add(o.cycle)
        assert all(len(cycles) <= runs + 2 for cycles in per_group.values())
    numbers = t.cohort_numbers()
    decided = {GroupStatus.GAP, GroupStatus.ROBUST, GroupStatus.NON_ROBUST, GroupStatus.FLAKY}
    for (target, cohort), nums in numbers.items():
        tallies = [x for x in snapshots if (x.target, x.cohort) == (target, cohort)]
        counted = [x for x in tallies if x.status in decided]
        gap_ex = sum(x.examples for x in counted if x.status is GroupStatus.GAP)
        examples = sum(x.examples for x in counted)
        correct = sum(x.correct for x in counted)
        assert (nums["gap_examples"], nums["examples"], nums["correct"]) == (
            gap_ex,
            examples,
            correct,
        )
        assert nums["probed"] == sum(x.forms_judged for x in tallies)
        assert nums["groups"] == len(counted)
        if examples - gap_ex:
            assert nums["refined_accuracy"] == pytest.approx(correct / (examples - gap_ex))
    assert set(numbers) == {(s.target, s.cohort) for s in snapshots}


def test_cohort_gap_is_not_a_knowledge_gap() -> None:
    """A group every long form fails while the short forms answer it: status gap (GRAMMAR, per
    cohort), but its failures are retrieval's or the LM's, and it is no knowledge gap."""
    t = Tagger()
    for i in range(3):
        t.apply(obs(f"s{i}", C, form=f"s{i}", cohort="short", retrieved=("d1",)))
    t.apply(obs("l0", W, form="l0", cohort="long", retrieved=("d9",)))
    t.apply(obs("l1", W, form="l1", cohort="long", retrieved=("d9",)))
    t.apply(obs("l2", W, form="l2", cohort="long", retrieved=("d1",)))
    for i in range(3):  # and one real knowledge gap, wrong in both cohorts
        t.apply(obs(f"ks{i}", W, form=f"ks{i}", cohort="short", group="k"))
        t.apply(obs(f"kl{i}", W, form=f"kl{i}", cohort="long", group="k"))
    assert t.status("t", "long", "g") is GroupStatus.GAP
    assert t.knowledge_gaps("t") == {"k"}
    assert t.answered_anywhere("t", "g") and not t.answered_anywhere("t", "k")
    assert t.cause_counts() == {
        ("t", "long", Cause.RETRIEVAL): 2,
        ("t", "long", Cause.LM): 1,
        ("t", "long", Cause.GAP): 3,
        ("t", "short", Cause.GAP): 3,
    }


def test_discard_group_on_revocation() -> None:
    t = Tagger()
    feed(t, [C, W, C])
    t.apply(obs("other", C, group="h", forms=1))
    t.apply(obs("long", W, cohort="long", forms=1))
    t.cause_counts()
    assert t.discard_group("t", "g") == 4
    assert t.status_counts() == {("t", "short", GroupStatus.ROBUST): 1}
    assert t.cause_counts() == {} and t.verdict_counts() == {("t", C): 1}
    assert t.cohort_numbers()[("t", "short")]["examples"] == 1
    assert ("t", "long") not in t.cohort_numbers()
    assert t.apply(obs("p0", C, form="f0"))  # a discarded probe id may come back (new owner)


def test_observations_are_a_snapshot_a_report_thread_can_iterate_while_verdicts_arrive() -> None:
    """The report is built in a worker thread while the consume loop applies judgements: the
    iteration must not see the window change (it raised "dictionary changed size during
    iteration", a 500 on a continuous run's /report.html)."""
    tagger = Tagger()
    tagger.apply(obs("p1", C, form="f1"))
    seen = tagger.observations()
    tagger.apply(obs("p2", W, form="f2"))
    assert [o.probe_id for o in seen] == ["p1"]
    assert [o.probe_id for o in tagger.observations()] == ["p1", "p2"]


def test_a_flip_back_is_a_transition_of_the_cycle_that_showed_it() -> None:
    """Robust, then one form wrong in cycle 3 (non-robust), then right again in cycle 4: the form
    is flaky, and that change is cycle 4's. Both transitions read "cycle 3" before, as if one
    cycle had moved the group twice."""
    t = Tagger()
    n = 0
    moves = []
    for cycle, verdicts in enumerate(["CCC", "CCC", "WCC", "CCC"], start=1):
        for i, v in enumerate(verdicts):
            n += 1
            t.apply(obs(f"p{n}", C if v == "C" else W, form=f"f{i}", cycle=cycle, run=f"r{cycle}"))
            moves += [(tr.from_status, tr.to_status, tr.cycle) for tr in t.drain_transitions()]
    assert moves[:2] == [
        (GroupStatus.ROBUST, GroupStatus.NON_ROBUST, 3),
        (GroupStatus.NON_ROBUST, GroupStatus.FLAKY, 4),
    ]


def test_lazy_reads_are_snapshots_too() -> None:
    """``tallies()`` and ``counted_observations()`` are generators a report thread consumes while
    new groups arrive (the first cycle of a run): they read a copy, not the live dicts."""
    t = Tagger()
    t.apply(obs("p1", C, group="g1"))
    groups, counted = t.tallies(), t.counted_observations()
    first, first_obs = next(groups), next(counted)
    t.apply(obs("p2", W, group="g2"))
    assert [first.group_id, *(g.group_id for g in groups)] == ["g1"]
    assert [first_obs.probe_id, *(o.probe_id for o in counted)] == ["p1"]
    assert sorted(g.group_id for g in t.tallies()) == ["g1", "g2"]
