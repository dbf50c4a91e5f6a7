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
    Tagger,
    Window,
    retrieval_sufficient,
    status_of,
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
        ([W, U, E], GroupStatus.GAP),
        ([E, E, E], GroupStatus.PENDING),  # no decisive verdict: no evidence either way
        ([U, E, U], GroupStatus.PENDING),
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


def test_run_window_lets_a_group_recover() -> None:
    t = Tagger(Window(runs=1))
    for i in range(3):
        t.apply(obs(f"r1-{i}", W, form=f"f{i}", run="r1"))
    assert t.status("t", "short", "g") is GroupStatus.GAP
    for i in range(3):
        t.apply(obs(f"r2-{i}", C, form=f"f{i}", run="r2"))
    assert t.status("t", "short", "g") is GroupStatus.ROBUST
    assert t.status_counts() == {("t", "short", GroupStatus.ROBUST): 1}
    assert {o.run_id for o in t.observations()} == {"r2"}
    # a late judgement of the evicted run is refused, not counted
    assert not t.apply(obs("late", W, form="f0", run="r1"))
    assert t.status("t", "short", "g") is GroupStatus.ROBUST


def test_two_run_window_goes_through_non_robust() -> None:
    t = Tagger(Window(runs=2))
    statuses = []
    for run, v in (("r1", W), ("r2", C), ("r3", C)):
        for i in range(3):
            t.apply(obs(f"{run}-{i}", v, form=f"f{i}", run=run))
        statuses.append(t.status("t", "short", "g"))
    assert statuses == [GroupStatus.GAP, GroupStatus.NON_ROBUST, GroupStatus.ROBUST]


def test_run_window_is_per_target() -> None:
    t = Tagger(Window(runs=1))
    t.apply(obs("a", W, form="f1", target="prod", run="r1", forms=1))
    t.apply(obs("b", C, form="f1", target="canary", run="r2", forms=1))
    assert t.status("prod", "short", "g") is GroupStatus.GAP
    assert t.status("canary", "short", "g") is GroupStatus.ROBUST


def test_cohort_numbers_follow_eq_1_to_3() -> None:
    t = Tagger(Window(runs=1))
    feed(t, [C, C, C], run="r1")
    for i, v in enumerate([W, W]):
        t.apply(obs(f"k{i}", v, group="k", form=f"f{i}", forms=2, run="r1"))
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
    # a new run: the gap group recovers, the old run leaves the window
    for i in range(2):
        t.apply(obs(f"k2{i}", C, group="k", form=f"f{i}", forms=2, run="r2"))
    n = t.cohort_numbers()[("t", "short")]
    assert (n["examples"], n["gap_groups"], n["gap_examples"], n["lambda"]) == (2, 0, 0, 0.0)


def test_time_window_evicts_and_forgets_empty_groups() -> None:
    t = Tagger(Window(seconds=60))
    t.apply(obs("a", W, form="f1", forms=1, at=1000.0))
    t.apply(obs("b", C, form="f1", forms=1, group="h", at=1030.0))
    assert t.status_counts() == {
        ("t", "short", GroupStatus.GAP): 1,
        ("t", "short", GroupStatus.ROBUST): 1,
    }
    assert t.expire(1061.0) == 1
    assert t.status("t", "short", "g") is GroupStatus.PENDING
    assert t.tally("t", "short", "g") is None
    assert t.status_counts() == {("t", "short", GroupStatus.ROBUST): 1}
    assert not t.apply(obs("old", W, form="f1", forms=1, at=900.0))
    assert t.apply(obs("c", C, form="f1", forms=1, at=1070.0))
    assert t.status("t", "short", "g") is GroupStatus.ROBUST
    assert t.expire(2000.0) == 2
    assert t.status_counts() == {} and len(t) == 0 and t.cause_counts() == {}


def test_window_validation() -> None:
    with pytest.raises(ValueError):
        Window(runs=0)
    with pytest.raises(ValueError):
        Window(seconds=-1)


def test_retrieval_judgement_order_of_evidence() -> None:
    given_ok = Observation("p", "t", "c", "g", "f", W, retrieval_ok=True)
    assert retrieval_sufficient(given_ok, set()) is True
    truth = obs("p", C, retrieved=("d2", "d9"), relevant=("d1",))
    assert retrieval_sufficient(truth, set()) is False  # ground truth beats "correct ⇒ sufficient"
    assert retrieval_sufficient(obs("p", W, retrieved=("d1", "d9"), relevant=("d1",)), set())
    assert retrieval_sufficient(obs("p", C), set()) is True
    ctx = {frozenset({"d1", "d2"})}
    assert retrieval_sufficient(obs("p", W, retrieved=("d2", "d1")), ctx) is True
    assert retrieval_sufficient(obs("p", W, retrieved=("d2",)), ctx) is False
    assert retrieval_sufficient(obs("p", W), {frozenset()}) is False  # no ids, no evidence
    assert retrieval_sufficient(obs("p", E), ctx) is None


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
    """Whatever the order, redeliveries and evictions, the maintained counts equal a fresh count
    over the observations left in the window."""
    t = Tagger(Window(runs=runs)) if runs else Tagger()
    for pid, g, c, f, verdict, r in events:
        t.apply(obs(f"p{pid}", verdict, group=g, cohort=c, form=f, run=f"r{r}", forms=2))
    live = list(t.observations())
    assert len({o.probe_id for o in live}) == len(live)
    per_group: dict[tuple[str, str, str], list[Observation]] = {}
    for o in live:
        per_group.setdefault(o.key, []).append(o)
    expected_status: Counter[tuple[str, str, GroupStatus]] = Counter()
    for key, os_ in per_group.items():
        n = Counter(o.verdict for o in os_)
        s = status_of(n[C], n[W], len({o.form_id for o in os_}), 2)
        assert t.status(*key) is s
        expected_status[(key[0], key[1], s)] += 1
    assert t.status_counts() == dict(expected_status)
    assert t.verdict_counts() == dict(Counter((o.target, o.verdict) for o in live))
    fresh = Tagger()
    fresh.apply_many(live)
    assert t.cause_counts() == fresh.cause_counts()
    # eq. 1–3 from running sums equal a count over the groups
    numbers = t.cohort_numbers()
    assert numbers == fresh.cohort_numbers()
    for (target, cohort), nums in numbers.items():
        tallies = list(t.tallies(target=target, cohort=cohort))
        gap_ex = sum(x.examples for x in tallies if x.status is GroupStatus.GAP)
        examples = sum(x.examples for x in tallies)
        correct = sum(x.correct for x in tallies)
        assert (nums["gap_examples"], nums["examples"], nums["correct"]) == (
            gap_ex,
            examples,
            correct,
        )
        if examples - gap_ex:
            assert nums["refined_accuracy"] == pytest.approx(correct / (examples - gap_ex))
    assert set(numbers) == {(k[0], k[1]) for k in per_group}


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
