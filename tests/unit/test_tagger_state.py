"""A partition restored from its tallies' states is the tagger that wrote them: on randomized
streams (out-of-order and late cycles, repeats, redeliveries, forms missing, outages of target
errors and undecided verdicts, changing truths, every window), the states written after each
batch — as the analytics stage writes them with its judgements — restore exactly the state the
live tagger has and a replay of the same judgements gives, including stale statuses, evidence
cycles, last conclusive statuses and attribution; and both go on alike."""

from __future__ import annotations

import random

import orjson
import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.scores import NO_SCORES, AnswerScores, Scores
from groundwatch.core.tagging import (
    STATE_FORMAT,
    GroupKey,
    Observation,
    Tagger,
    TallyState,
    Window,
    dump_state,
    restore,
    valid,
)

from .test_tagger_incremental import VERDICTS, state, stream

pytestmark = pytest.mark.unit


def outage_stream(seed: int) -> list[Observation]:
    """Cycles of several groups, with whole cycles of target errors or undecided verdicts (an
    outage, an abstaining judge) between conclusive ones, and scores on some judgements."""
    rng = random.Random(seed)
    out: list[Observation] = []
    n = 0
    for cycle in range(1, 13):
        down = rng.random() < 0.3
        for g in range(5):
            forms = 1 + g % 3
            for cohort in ("short", "long"):
                for f in range(forms):
                    if rng.random() < 0.08:
                        continue
                    n += 1
                    v = (
                        rng.choice((Verdict.ERROR, Verdict.ERROR, Verdict.UNDECIDED))
                        if down
                        else rng.choice(VERDICTS)
                    )
                    out.append(
                        Observation(
                            f"o{n}",
                            rng.choice(("t1", "base")),
                            cohort,
                            f"g{g}",
                            f"{cohort}{f}",
                            v,
                            run_id=f"r{cycle}",
                            group_forms=forms,
                            series="s",
                            cycle=cycle,
                            truth_version=1 + (cycle > 8 and g == 2),
                            at=float(n),
                            latency_s=0.25,
                            error_kind="http_503" if v is Verdict.ERROR else None,
                            context_has_answer=rng.choice((None, True, False)),
                            retrieved_ids=(f"d{rng.randrange(3)}",) if rng.random() < 0.6 else (),
                            relevant_doc_ids=("d1",) if g == 1 else (),
                            stale=rng.random() < 0.03,
                            scores=Scores(
                                answer=AnswerScores(5, exact_match=1.0, token_f1=rng.random())
                            ).tallied()
                            if rng.random() < 0.5
                            else NO_SCORES,
                        )
                    )
    late = rng.sample(out, 12)
    return out + late


def stored_states(tagger: Tagger, keys: set[GroupKey], store: dict[GroupKey, bytes]) -> None:
    """What the stage does after a batch: each touched tally's state, serialized."""
    for key in keys:
        s = dump_state(tagger, key)
        assert s is not None
        store[key] = orjson.dumps(s)


def restored(store: dict[GroupKey, bytes], window: Window | None) -> Tagger:
    t = Tagger(window, open_domain_baseline="base")
    states: list[tuple[GroupKey, TallyState]] = []
    for key, blob in store.items():
        s = orjson.loads(blob)
        assert valid(s)
        states.append((key, s))
    restore(t, states)
    return t


def full_state(t: Tagger) -> tuple[object, ...]:
    """Every read, ordered so two taggers holding the groups in another order compare."""
    (
        tallies,
        status,
        verdicts,
        numbers,
        numbers_cd,
        _transitions,  # counted as they happen: a restored (or replayed) tagger starts at none
        size,
        gaps1,
        gaps2,
        scenarios,
        open_domain,
        counted,
        causes,
    ) = state(t)
    return (
        sorted(tallies, key=lambda x: (x.target, x.cohort, x.group_id)),  # type: ignore[attr-defined]
        status,
        verdicts,
        numbers,
        numbers_cd,
        size,
        gaps1,
        gaps2,
        scenarios,
        open_domain,
        sorted(counted),  # type: ignore[type-var]
        causes,
        sorted(t.held_counts().items()),
        sorted(t.target_health().items()),
        sorted(t.knowledge_gap_counts().items()),
        sorted(t.knowledge_gap_counts(closed_domain=True).items()),
        sorted(t.cause_counts(closed_domain=True).items()),
        # each observation with its scores: the typed families survive the state's JSON
        {(o.probe_id, o.scores) for o in t.observations()},
        sorted(
            (k, t.flaky(*k), [o.probe_id for o in t.group_history(*k)])
            for k in {(x.target, x.cohort, x.group_id) for x in t.tallies()}
        ),
        sorted(t.reports_ids(x) for x in ("t1", "base")),
    )


def conclusive(t: Tagger) -> dict[GroupKey, object]:
    return {k: v.conclusive for k, v in t._tallies.items()}


@pytest.mark.parametrize("window", [None, 1, 2, 3])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("make", [stream, outage_stream], ids=["random", "outages"])
def test_restore_equals_the_live_tagger_and_the_replay(
    window: int | None, seed: int, make: object
) -> None:
    w = Window(runs=window) if window is not None else None
    obs = make(seed)  # type: ignore[operator]
    rng = random.Random(seed)
    live = Tagger(w, open_domain_baseline="base")
    store: dict[GroupKey, bytes] = {}
    i = 0
    checks = 0
    while i < len(obs):
        batch = obs[i : i + rng.randrange(1, 60)]
        i += len(batch)
        touched = {o.key for o in batch if live.apply(o)}
        live.drain_transitions()
        live.refresh_causes(max_groups=rng.choice((0, 2, 1000)))  # attribution may lag
        stored_states(live, touched, store)
        if rng.random() < 0.25 or i >= len(obs):
            checks += 1
            back = restored(store, w)
            replay = Tagger(w, open_domain_baseline="base")
            replay.rebuild(obs[:i])
            assert full_state(back) == full_state(live)
            assert full_state(back) == full_state(replay)
            assert conclusive(back) == conclusive(live)
            # and it goes on as the live tagger does: the same transitions (from the same last
            # conclusive statuses), the same state. (The twin is the live tagger applied anew.)
            twin = Tagger(w, open_domain_baseline="base")
            twin.apply_many(obs[:i])
            twin.drain_transitions()
            rest = obs[i : i + 80]
            for o in rest:
                assert back.apply(o) is twin.apply(o)
            assert back.drain_transitions() == twin.drain_transitions()
            assert full_state(back) == full_state(twin)
    assert checks


def test_a_state_of_another_format_is_not_restored() -> None:
    t = Tagger(Window(runs=1))
    t.apply(Observation("p", "t", "c", "g", "f", Verdict.CORRECT, series="s", cycle=1))
    s = dump_state(t, ("t", "c", "g"))
    assert valid(s) and s is not None and s[0] == STATE_FORMAT
    assert not valid([STATE_FORMAT + 1, *s[1:]])
    assert not valid(None) and not valid({"format": STATE_FORMAT})
