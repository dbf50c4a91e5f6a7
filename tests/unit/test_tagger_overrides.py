"""A person's verdict counted instead of the judge's (``Tagger.override``): it changes the
group's numbers, status and transitions as if the judge had said it; it is idempotent by its
revision (a redelivery or an older verdict is a repeat), a later one replaces an earlier one, a
withdrawal restores the judge's, and the stored state, a compressed tally and a restore keep it."""

from __future__ import annotations

import random

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import (
    GroupStatus,
    Observation,
    Override,
    Tagger,
    Window,
    dump_state,
    restore,
)

from .test_tagger_incremental import state
from .test_tagger_state import outage_stream

pytestmark = pytest.mark.unit

C, W = Verdict.CORRECT, Verdict.INCORRECT
KEY = ("t1", "short", "g1")


def _obs(pid: str, form: str, verdict: Verdict, cycle: int = 1) -> Observation:
    return Observation(
        pid, *KEY, form, verdict, group_forms=2, series="s", cycle=cycle, at=float(cycle)
    )


def _gap_tagger() -> Tagger:
    t = Tagger(Window(runs=3))
    assert t.apply(_obs("p1", "f1", W))
    assert t.apply(_obs("p2", "f2", W))
    assert t.status(*KEY) is GroupStatus.GAP
    t.drain_transitions()
    return t


def test_a_verdict_moves_the_status_once_and_later_ones_replace_it() -> None:
    t = _gap_tagger()
    assert t.override(KEY, "p1", C, 1, at=50.0) is Override.APPLIED
    tally = t.tally(*KEY)
    assert tally is not None and (tally.correct, tally.incorrect) == (1, 1)
    assert t.status(*KEY) is GroupStatus.NON_ROBUST
    (tr,) = t.drain_transitions()
    assert (tr.from_status, tr.to_status, tr.at) == (GroupStatus.GAP, GroupStatus.NON_ROBUST, 50.0)
    assert t.verdict_counts().get(("t1", C)) == 1

    before = state(t)
    assert t.override(KEY, "p1", C, 1) is Override.REPEATED  # redelivered
    assert state(t) == before and not t.drain_transitions()

    assert t.override(KEY, "p1", W, 2) is Override.APPLIED  # the person changed their mind
    assert t.status(*KEY) is GroupStatus.GAP
    assert t.override(KEY, "p1", C, 1) is Override.REPEATED  # the older one replayed late
    assert t.status(*KEY) is GroupStatus.GAP

    assert t.override(KEY, "p2", C, 3) is Override.APPLIED
    assert t.override(KEY, "p2", None, 4) is Override.APPLIED  # withdrawn: the judge's again
    assert t.status(*KEY) is GroupStatus.GAP
    assert t.verdict_counts() == {("t1", W): 2}


def test_unknown_answers_and_bad_verdicts() -> None:
    t = _gap_tagger()
    assert t.override(KEY, "nope", C, 1) is Override.UNKNOWN
    assert t.override(("t1", "long", "g1"), "p1", C, 1) is Override.UNKNOWN  # another tally
    assert t.override(("t1", "short", "g9"), "p1", C, 1) is Override.UNKNOWN
    with pytest.raises(ValueError, match="correct or incorrect"):
        t.override(KEY, "p1", Verdict.UNDECIDED, 1)
    with pytest.raises(ValueError, match="revision"):
        t.override(KEY, "p1", C, 0)
    assert t.status(*KEY) is GroupStatus.GAP


def test_the_stored_state_and_a_compressed_tally_keep_the_verdict() -> None:
    t = _gap_tagger()
    t.override(KEY, "p1", C, 7)
    saved = dump_state(t, KEY)
    assert saved is not None
    t.drain_transitions()
    t.refresh_causes()
    t.make_cold()  # touched by the verdict: kept live for one more batch
    assert t.make_cold() == 1  # quiet now: compressed, then thawed by the next write
    assert t.status(*KEY) is GroupStatus.NON_ROBUST
    assert t.override(KEY, "p1", C, 7) is Override.REPEATED

    fresh = Tagger(Window(runs=3))
    restore(fresh, [(KEY, saved)])
    assert fresh.status(*KEY) is GroupStatus.NON_ROBUST
    assert fresh.override(KEY, "p1", C, 7) is Override.REPEATED
    assert fresh.override(KEY, "p1", None, 8) is Override.APPLIED
    assert fresh.status(*KEY) is GroupStatus.GAP


@pytest.mark.parametrize("window", [None, 1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_overrides_equal_a_replay_that_counts_the_peoples_verdicts(
    window: int | None, seed: int
) -> None:
    """Random people's verdicts (some withdrawn, some replaced, some redelivered) on a live
    tagger give the numbers, statuses, gaps and causes a tagger fed the same judgements with
    the people's verdicts in place of the judge's gives."""
    rng = random.Random(seed)
    w = Window(runs=window) if window is not None else None
    observations = outage_stream(seed)
    live = Tagger(w, open_domain_baseline="base")
    for o in observations:
        live.apply(o)
    kept = {o.probe_id: o for o in live.counted_observations()}
    people: dict[str, Verdict | None] = {}
    revision = 0
    for pid in rng.sample(sorted(kept), min(40, len(kept))):
        for _ in range(rng.choice((1, 1, 2, 3))):
            revision += 1
            verdict = rng.choice((C, W, None))
            assert live.override(kept[pid].key, pid, verdict, revision) is Override.APPLIED
            people[pid] = verdict
            if rng.random() < 0.3:  # a redelivery
                assert live.override(kept[pid].key, pid, C, revision) is Override.REPEATED
    replay = Tagger(w, open_domain_baseline="base")
    for o in observations:
        v = people.get(o.probe_id)
        replay.apply(o if v is None else Observation(**{**_fields(o), "verdict": v}))
    live.refresh_causes()
    replay.refresh_causes()
    # the transitions differ in when they happened (a person's verdict comes after its cycle)
    ignore = {5}
    a, b = state(live), state(replay)
    assert [x for i, x in enumerate(a) if i not in ignore] == [
        x for i, x in enumerate(b) if i not in ignore
    ]


def _fields(o: Observation) -> dict[str, object]:
    return {f: getattr(o, f) for f in Observation.__slots__}
