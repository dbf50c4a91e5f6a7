"""The tagger's per-judgement fast paths (window numbers moved by the one new verdict, the status
kept when nothing it stands on moved, per-cycle form verdicts kept as they arrive) reach exactly
what a straightforward re-derivation from the window's observations gives, after every
judgement of randomized streams: out-of-order and late cycles, repeats, redeliveries, forms
missing, changing form counts and truth versions, every verdict, windows of every size."""

from __future__ import annotations

import random

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import (
    EvidenceRule,
    GroupStatus,
    Observation,
    Tagger,
    Window,
    flaky_forms,
)
from groundwatch.core.tagging.windows import Tally

pytestmark = pytest.mark.unit

DECIDED = (Verdict.CORRECT, Verdict.INCORRECT)
ANSWERED = (*DECIDED, Verdict.UNDECIDED)
VERDICTS = [Verdict.CORRECT] * 5 + [Verdict.INCORRECT] * 4 + [Verdict.ERROR, Verdict.UNDECIDED]


class FullTagger(Tagger):
    """The reference: every judgement re-derives its group's window numbers and status from
    scratch (the fast paths never apply: the counted cycles never look unchanged)."""

    def _recompute(self, key: tuple[str, str, str], t: Tally, obs: Observation | None) -> None:
        t.reshaped = True
        super()._recompute(key, t, obs)


def stream(seed: int) -> list[Observation]:
    rng = random.Random(seed)
    out: list[Observation] = []
    for n in range(1, 901):
        g = rng.randrange(6)
        cohort = rng.choice(("short", "long"))
        forms = rng.choice((1, 2, 3, 3, 3))
        cycle = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8)) if rng.random() < 0.2 else None
        if cycle is None:  # mostly moving forward, per group
            cycle = min(8, 1 + len(out) // 110 + rng.choice((0, 0, 0, -1, 1)))
        pid = f"p{n}" if rng.random() > 0.05 or not out else rng.choice(out).probe_id
        out.append(
            Observation(
                pid,
                rng.choice(("t1", "t1", "base")),
                cohort,
                f"g{g}",
                f"{cohort}{rng.randrange(forms + (rng.random() < 0.1))}",
                rng.choice(VERDICTS),
                run_id=f"r{cycle}",
                group_forms=forms,
                series="s",
                scenario="S2" if g == 5 else "factual",  # a RAGProbe item: never a knowledge gap
                cycle=cycle,
                truth_version=1 + (rng.random() < 0.05),
                retrieved_ids=(f"d{rng.randrange(4)}",) if rng.random() < 0.5 else (),
                at=float(n),
            )
        )
    return out


def naive_latest(t: Tally) -> list[tuple[str, str]]:
    """Each form's latest observation over the counted cycles, by sorting and rescanning."""
    cycles = sorted(t.cycles)
    closed = [c for c in cycles if t.cycles[c].closed]
    # the closed cycles with answers (a verdict other than a target error); without any, the
    # newest closed one
    answered = [c for c in closed if any(o.verdict in ANSWERED for o in t.cycles[c].forms.values())]
    counted = answered or closed[-1:] or cycles
    latest: dict[str, Observation] = {}
    for c in counted:
        for o in t.cycles[c].observations():
            latest[o.form_id] = o
    return [(f, o.probe_id) for f, o in latest.items()]


def naive_status(t: Tally) -> GroupStatus:
    """GRAMMAR's status from the closed cycles' observations, rescanned (see the module)."""
    closed = [t.cycles[c] for c in sorted(t.cycles) if t.cycles[c].closed]
    if not closed:
        return GroupStatus.PENDING
    mixed: set[str] = set()
    last: tuple[set[str], set[str]] | None = None
    for cy in closed:
        per_form = {o.form_id: o.verdict for o in cy.observations()}
        right = {f for f, v in per_form.items() if v is Verdict.CORRECT}
        wrong = {f for f, v in per_form.items() if v is Verdict.INCORRECT}
        if right and wrong:
            mixed |= wrong
        if any(v in ANSWERED for v in per_form.values()):
            last = (right, wrong)
    if last is None:
        return GroupStatus.UNKNOWN
    if mixed:
        culprits, status = mixed, GroupStatus.NON_ROBUST
    elif len(last[0]) + len(last[1]) < EvidenceRule().needed(t.group_forms):
        return GroupStatus.UNKNOWN  # too little decided for gap or robust
    elif last[1]:
        culprits, status = last[1], GroupStatus.GAP
    else:
        return GroupStatus.ROBUST
    return GroupStatus.FLAKY if culprits <= flaky_forms(t.history) else status


def state(t: Tagger) -> tuple[object, ...]:
    return (
        list(t.tallies()),
        sorted(t.status_counts().items()),
        sorted(t.verdict_counts().items()),
        t.cohort_numbers(),
        t.cohort_numbers(closed_domain=True),
        sorted(t.transition_counts().items()),
        len(t),
        sorted(t.knowledge_gaps("t1")),
        sorted(t.knowledge_gaps("base")),
        sorted(t.scenario_counts().items()),
        sorted(t.open_domain_groups()),
        [o.probe_id for o in t.counted_observations()],
        t.cause_counts(),
    )


@pytest.mark.parametrize("window", [None, 1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_fast_paths_equal_a_full_rederivation(window: int | None, seed: int) -> None:
    w = Window(runs=window) if window is not None else None
    fast = Tagger(w, open_domain_baseline="base")
    full = FullTagger(w, open_domain_baseline="base")
    for obs in stream(seed):
        assert fast.apply(obs) is full.apply(obs)
        t = fast._tallies.get(obs.key)
        if t is not None:
            assert list(t.cycles) == sorted(t.cycles)  # kept ascending
            assert [(f, o.probe_id) for f, o in t.latest.items()] == naive_latest(t)
            assert t.status is naive_status(t)
            assert t.flaky == flaky_forms(t.history)
            for cy in t.cycles.values():
                per_form = {o.form_id: o for o in cy.observations()}
                assert cy.forms == per_form and list(cy.forms) == list(per_form)
                verdicts = [o.verdict for o in per_form.values()]
                assert cy.right == verdicts.count(Verdict.CORRECT)
                assert cy.wrong == verdicts.count(Verdict.INCORRECT)
                assert cy.answered == len(verdicts) - verdicts.count(Verdict.ERROR)
        assert fast.drain_transitions() == full.drain_transitions()
        assert state(fast) == state(full)
    # and a rebuild of the same stream (numbers derived once per group) reaches the same state
    rebuilt = Tagger(w, open_domain_baseline="base")
    rebuilt.rebuild(stream(seed))
    assert list(rebuilt.tallies()) == list(fast.tallies())
    assert sorted(rebuilt.status_counts().items()) == sorted(fast.status_counts().items())
    assert rebuilt.cohort_numbers() == fast.cohort_numbers()


def test_discard_then_reapply_matches() -> None:
    fast, full = Tagger(Window(runs=2)), FullTagger(Window(runs=2))
    obs = stream(11)
    for i, o in enumerate(obs):
        fast.apply(o)
        full.apply(o)
        if i % 150 == 149:
            assert fast.discard_group(None, o.group_id) == full.discard_group(None, o.group_id)
        assert state(fast) == state(full)
