"""The read model: a view published after each batch reads exactly what the tagger read at that
moment, stays so while the tagger goes on (immutable), is made from the previous view and the
changed groups only (shards nobody touched are shared), and serves the report and the group
listings while another thread applies judgements."""

from __future__ import annotations

import random
import threading

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, TaggerView, Window, publish
from groundwatch.core.tagging.view import CowMap
from groundwatch.report.build import report_from_tagger
from groundwatch.report.groups import group_results, status_summary

from .test_tagger_incremental import stream
from .test_tagger_state import full_state, outage_stream

pytestmark = pytest.mark.unit


def reads(t: Tagger | TaggerView) -> tuple[object, ...]:
    """Every read, in a form two holders of the same state compare equal in."""
    return (
        *full_state(t),  # type: ignore[arg-type]
        sorted(t.transition_counts().items()),
        sorted(t.transition_kinds().items()),
        t.recent_transitions(20),
        sorted((k, t.status(*k)) for k in {(x.target, x.cohort, x.group_id) for x in t.tallies()}),
        sorted(
            (k, sorted(t.retrieval_judgements(*k).items()), t.answered_anywhere(*k))
            for k in {(x.target, x.group_id) for x in t.tallies()}
        ),
        t.targets(),
        t.cohorts(),
        len(t),
        t.window,
    )


@pytest.mark.parametrize("window", [None, 1, 3])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("make", [stream, outage_stream], ids=["random", "outages"])
def test_a_view_reads_what_the_tagger_read_and_never_changes(
    window: int | None, seed: int, make: object
) -> None:
    w = Window(runs=window) if window is not None else None
    obs = make(seed)  # type: ignore[operator]
    rng = random.Random(seed)
    tagger = Tagger(w, open_domain_baseline="base")
    view: TaggerView | None = None
    kept: list[tuple[TaggerView, tuple[object, ...]]] = []
    i = 0
    while i < len(obs):
        batch = obs[i : i + rng.randrange(1, 50)]
        i += len(batch)
        for o in batch:
            tagger.apply(o)
        tagger.drain_transitions()
        tagger.refresh_causes(max_groups=rng.choice((0, 3, None)))
        now = reads(tagger)  # (which refreshes the attribution first: cause_counts())
        view = publish(tagger, view)
        assert reads(view) == now
        if rng.random() < 0.2:
            kept.append((view, now))
        # a group dropped from the tagger leaves the next view too
        if rng.random() < 0.05:
            tagger.discard_group(None, rng.choice(batch).group_id)
            view = publish(tagger, view)
            assert reads(view) == reads(tagger)
    for old, then in kept:  # every view published earlier still reads as it did
        assert reads(old) == then


def test_the_report_and_the_group_listing_from_a_view_are_the_taggers() -> None:
    tagger = Tagger(Window(runs=2), open_domain_baseline="base")
    for o in outage_stream(3):
        tagger.apply(o)
    tagger.refresh_causes()
    view = publish(tagger)
    a = report_from_tagger(tagger).model_dump(exclude={"generated_at"})
    b = report_from_tagger(view).model_dump(exclude={"generated_at"})
    assert a == b
    assert group_results(view, scenario=None) == group_results(tagger, scenario=None)
    assert status_summary(view) == status_summary(tagger)


def test_publishing_copies_only_what_the_batch_changed() -> None:
    """Consecutive views share every shard of the group map no changed group lives in."""
    tagger = Tagger(Window(runs=1))
    for g in range(5000):
        tagger.apply(Observation(f"a{g}", "t", "c", f"g{g}", "f", Verdict.CORRECT, cycle=1))
    first = publish(tagger)
    tagger.apply(Observation("b", "t", "c", "g7", "f", Verdict.INCORRECT, cycle=2))
    second = publish(tagger, first)
    shards_a, shards_b = first._tallies._shards, second._tallies._shards
    shared = sum(1 for x, y in zip(shards_a, shards_b, strict=True) if x is y)
    assert shared == len(shards_a) - 1  # one shard copied: the one g7 lives in
    assert first.tally("t", "c", "g7") != second.tally("t", "c", "g7")
    assert first.status("t", "c", "g7").value == "robust"
    assert second.status("t", "c", "g7").value == "gap"


def test_readers_in_other_threads_never_see_the_live_state_change() -> None:
    """Reports and listings built in a worker thread from the published views while the consume
    loop applies judgements: no "dictionary changed size during iteration", and each report
    counts one batch's state (what it read of a view is what that view held)."""
    tagger = Tagger(Window(runs=2))
    rng = random.Random(1)
    views: list[TaggerView] = [publish(tagger)]
    failures: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                v = views[-1]
                total = len(v)
                report_from_tagger(v)
                group_results(v, scenario=None)
                assert sum(1 for _ in v.observations()) == total
        except BaseException as exc:  # reported to the test below
            failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        view = views[0]
        for cycle in range(1, 30):
            for g in range(300):
                for f in range(3):
                    tagger.apply(
                        Observation(
                            f"{cycle}-{g}-{f}",
                            "t",
                            "c",
                            f"g{g}",
                            f"f{f}",
                            rng.choice((Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR)),
                            group_forms=3,
                            series="s",
                            cycle=cycle,
                            retrieved_ids=(f"d{rng.randrange(5)}",),
                        )
                    )
                if g % 50 == 0:
                    view = publish(tagger, view)
                    views.append(view)
    finally:
        done.set()
        reader.join()
    assert not failures, failures[0]


def test_a_cow_map_evolves_without_changing() -> None:
    rng = random.Random(2)
    m: CowMap[int, int] = CowMap()
    model: dict[int, int] = {}
    history = []
    for _ in range(300):
        changes = {rng.randrange(3000): rng.randrange(10) for _ in range(rng.randrange(40))}
        removed = {k: rng.randrange(10) for k in rng.sample(sorted(model), min(5, len(model)))}
        from groundwatch.core.tagging.view import REMOVE

        step = {**changes, **dict.fromkeys(removed, REMOVE)}
        m2 = m.evolve(step)
        history.append((m, dict(model)))
        for k, v in step.items():
            if v is REMOVE:
                model.pop(k, None)
            else:
                model[k] = v
        m = m2
        assert dict(m.items()) == model and len(m) == len(model)
        assert all(m.get(k) == v and k in m for k, v in model.items())
    for old, then in history:
        assert dict(old.items()) == then
