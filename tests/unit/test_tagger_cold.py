"""Cold tallies (groundwatch.core.tagging.cold): a tagger that makes its untouched groups cold
after every batch reads, writes and publishes exactly as one that keeps them all live — through
windows, outages, repeats, late verdicts, rebalances and restores — and holds far fewer bytes."""

from __future__ import annotations

import random
import sys
from dataclasses import replace

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import (
    Observation,
    Tagger,
    Window,
    codec,
    dump_state,
    publish,
    restore,
)
from groundwatch.core.tagging.cold import ColdTally
from groundwatch.report.build import report_from_tagger

from .test_tagger_incremental import stream
from .test_tagger_state import outage_stream
from .test_tagger_view import reads

pytestmark = pytest.mark.unit


def states(t: Tagger) -> list[tuple[object, object]]:
    return sorted(((k, dump_state(t, k)) for k in list(t._tallies)), key=repr)


def redelivered_in_their_group(obs: list[Observation]) -> list[Observation]:
    """The streams repeat probe ids as redeliveries, some under another group: a probe belongs
    to one group (its judgement's key never changes), which is all a cold group's repeat
    test can rely on (it looks into the group's own window)."""
    first: dict[str, Observation] = {}
    out = []
    for o in obs:
        f = first.setdefault(o.probe_id, o)
        out.append(replace(o, target=f.target, cohort=f.cohort, group_id=f.group_id))
    return out


def cold(t: Tagger) -> int:
    return sum(1 for v in t._tallies.values() if isinstance(v, ColdTally))


@pytest.mark.parametrize("window", [None, 1, 3])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("make", [stream, outage_stream], ids=["random", "outages"])
def test_a_tagger_with_cold_tallies_is_the_live_one(
    window: int | None, seed: int, make: object
) -> None:
    w = Window(runs=window) if window is not None else None
    obs = redelivered_in_their_group(make(seed))  # type: ignore[operator]
    rng = random.Random(seed)
    live = Tagger(w, open_domain_baseline="base")
    packed = Tagger(w, open_domain_baseline="base")
    view = publish(packed)
    made_cold = 0
    i = 0
    while i < len(obs):
        batch = obs[i : i + rng.randrange(1, 40)]
        i += len(batch)
        for o in batch:
            assert live.apply(o) is packed.apply(o)
            assert (o.probe_id in live) is (o.probe_id in packed) or o.probe_id not in packed
        assert live.drain_transitions() == packed.drain_transitions()
        if rng.random() < 0.5:  # attribution partly done: the groups still due stay live
            live.refresh_causes(max_groups=3)
            packed.refresh_causes(max_groups=3)
            made_cold += packed.make_cold()
        # attribution done (the view's reads do not refresh it): every untouched group cold
        live.refresh_causes()
        packed.refresh_causes()
        made_cold += packed.make_cold()
        view = publish(packed, view)
        assert reads(view) == reads(live)
        assert reads(packed) == reads(live)
        assert states(packed) == states(live)
        if rng.random() < 0.1:  # a partition moves away
            gid = f"g{rng.randrange(6)}"
            assert live.discard_group(None, gid) == packed.discard_group(None, gid)
    assert made_cold > 0  # the test made something cold
    live.refresh_causes()
    packed.refresh_causes()
    packed.make_cold()
    packed.make_cold()  # nothing touched since the last call: every closed group cold
    assert cold(packed) > 0
    assert reads(packed) == reads(live)
    # group by group once cold, but the same observations
    assert sorted(map(repr, packed.observations())) == sorted(map(repr, live.observations()))
    for key in list(live._tallies):
        assert packed.group_history(*key) == live.group_history(*key)
    # the clock's second aside (two builds can straddle one: this failed once under load)
    a = report_from_tagger(packed).model_dump(mode="json", exclude={"generated_at"})
    b = report_from_tagger(live).model_dump(mode="json", exclude={"generated_at"})
    assert a == b
    # a tagger restored from the cold one's states is the live one too
    again = Tagger(w, open_domain_baseline="base")
    restore(again, states(packed))  # type: ignore[arg-type]
    twin = Tagger(w, open_domain_baseline="base")
    restore(twin, states(live))  # type: ignore[arg-type]
    assert reads(again) == reads(twin)


def test_a_redelivered_judgement_of_a_cold_group_is_a_repeat() -> None:
    tagger = Tagger(Window(runs=2))
    first = [
        Observation(f"p{f}", "t", "short", "g", f"f{f}", Verdict.CORRECT, group_forms=2, cycle=1)
        for f in range(2)
    ]
    assert tagger.apply_many(first) == 2
    tagger.refresh_causes()
    assert tagger.make_cold() == 0  # touched in this batch: live one batch more
    assert tagger.make_cold() == 1 and cold(tagger) == 1
    assert "p0" not in tagger  # not looked into …
    assert len(tagger) == 2
    assert not tagger.apply(first[0])  # … but apply thaws the group and knows it
    assert cold(tagger) == 0 and "p0" in tagger and len(tagger) == 2
    # touched: it stays live for one more batch, then goes cold again
    assert tagger.make_cold() == 0
    assert tagger.make_cold() == 1


def test_a_group_still_filling_or_due_for_attribution_stays_live() -> None:
    tagger = Tagger(Window(runs=2))
    tagger.apply(
        Observation("p0", "t", "short", "g", "f0", Verdict.CORRECT, group_forms=2, cycle=1)
    )
    tagger.make_cold()  # touched this batch
    assert tagger.make_cold() == 0  # its cycle is still filling
    tagger.apply(
        Observation("p1", "t", "short", "g", "f1", Verdict.INCORRECT, group_forms=2, cycle=1)
    )
    tagger.make_cold()
    assert tagger.make_cold() == 0  # closed, but its attribution is due
    tagger.refresh_causes()
    assert tagger.make_cold() == 1


def test_cold_groups_take_a_fraction_of_the_memory() -> None:
    def fill(t: Tagger) -> None:
        for g in range(300):
            for f in range(6):
                t.apply(
                    Observation(
                        f"{g:04d}-{f}-0123456789abcdef0123456789", "target", "short", f"group-{g}",
                        f"form-{g}-{f}", Verdict.CORRECT if f % 3 else Verdict.INCORRECT,
                        run_id="run-1", group_forms=6, series="s", cycle=1,
                        retrieved_ids=(f"doc-{g}",), relevant_doc_ids=(f"doc-{g}",),
                    )
                )  # fmt: skip
        t.refresh_causes()

    live, packed = Tagger(Window(runs=3)), Tagger(Window(runs=3))
    fill(live)
    fill(packed)
    packed.make_cold()
    assert packed.make_cold() == 300

    def size(t: Tagger) -> int:
        seen: set[int] = set()

        def deep(o: object) -> int:
            if id(o) in seen or isinstance(o, type):
                return 0
            seen.add(id(o))
            n = sys.getsizeof(o)
            if isinstance(o, dict):
                n += sum(deep(k) + deep(v) for k, v in o.items())
            elif isinstance(o, list | tuple | set | frozenset):
                n += sum(deep(v) for v in o)
            for cls in type(o).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if hasattr(o, name):
                        n += deep(getattr(o, name))
            return n

        return deep(t._tallies) + deep(t._live)

    assert size(packed) * 3 < size(live)


def test_windows_made_cold_after_the_dictionary_is_made_expand_the_same() -> None:
    tagger = Tagger(Window(runs=2))
    for g in range(2 * codec.SAMPLES):
        for f in range(3):
            tagger.apply(
                Observation(
                    f"p{g}-{f}", "t", "short", f"g{g}", f"f{f}",
                    Verdict.CORRECT if (g + f) % 4 else Verdict.INCORRECT, group_forms=3,
                    cycle=1, retrieved_ids=(f"d{g}",), relevant_doc_ids=(f"d{g}",),
                )
            )  # fmt: skip
    tagger.refresh_causes()
    before = states(tagger)
    tagger.make_cold()
    tagger.make_cold()
    blobs = [v._store.get(v._slot) for v in tagger._tallies.values() if isinstance(v, ColdTally)]
    assert len(blobs) == 2 * codec.SAMPLES
    assert codec.dictionary_made() and any(codec.used_dictionary(b) for b in blobs)
    assert states(tagger) == before  # read through the cold windows
    for key in list(tagger._tallies):
        tagger._live_tally(key)  # every window thawed
    assert states(tagger) == before and cold(tagger) == 0
