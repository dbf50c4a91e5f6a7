"""Per-instance counters count only what that instance committed (issue 30).

Reported: after a SIGSTOP longer than the session timeout, a resumed analytics instance counted
78 judgements another instance had counted (``groundwatch_judgements_total`` 4,494 for 4,416;
the stored tallies were exact). Why: while it was frozen its partitions went to the other
instance, which took its uncommitted batch from the last committed offset, stored and counted
it; on resuming, the frozen instance still held that batch and its in-memory tagger (which knew
nothing of the other's work), so it applied it, its ``ON CONFLICT DO NOTHING`` insert changed
nothing — and it counted the batch all the same, and upserted tallies computed from its stale
view over the newer ones. Now the store is the fence: the transaction commits only if every
judgement of the batch is new; else it rolls back and the instance rebuilds from the store and
applies only the rest.

The two instances share one store, as two analytics processes do; the freeze is replayed
deterministically (instance B applies A's batch and a later one before A resumes), on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import Observation, Transition, Window
from groundwatch.stages.analytics.stage import AnalyticsStage

pytestmark = pytest.mark.integration

GROUPS = 6
FORMS = 3


def judgements(cycle: int, verdict: Verdict) -> list[Judgement]:
    out = []
    for g in range(GROUPS):
        for f in range(FORMS):
            p = Probe(
                probe_id=uuid.uuid4(),
                run_id=f"run{cycle}",
                dataset_id="d",
                group_id=f"g{g}",
                form_id=f"f{f}",
                cohort="short",
                target="t",
                query=f"q{g}-{f}",
                expected=Expected(values=["a"]),
                group_forms=FORMS,
                series="s",
                cycle=cycle,
            )
            r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="a")
            out.append(Judgement.for_response(r, verdict=verdict, tier="exact"))
    return out


class Instance:
    """One analytics instance: its stage and what its ``groundwatch_judgements_total`` counts."""

    def __init__(self, store: AnalyticsStore) -> None:
        self.counted = 0

        def count(applied: list[Observation], _t: list[Transition], _at: float) -> None:
            self.counted += len(applied)

        self.stage = AnalyticsStage(store, window=Window(runs=1), on_applied=count)
        self.stage.reload()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/a.db"
    factory: Callable[[], str] = request.getfixturevalue("fresh_pg_url")
    return factory()


def stored_tallies(store: AnalyticsStore) -> dict[tuple[str, str, str], tuple[int, int, str]]:
    from sqlalchemy import select

    from groundwatch.adapters.db.tables import TallyRow

    with store.engine.connect() as conn:
        rows = conn.execute(select(TallyRow)).all()
    return {(r.target, r.cohort, r.group_id): (r.correct, r.incorrect, r.status) for r in rows}


async def test_a_resumed_instance_counts_nothing_another_committed(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    a, b = Instance(store), Instance(store)
    cycle1 = judgements(1, Verdict.CORRECT)  # the batch A holds, uncommitted, when frozen
    cycle2 = judgements(2, Verdict.INCORRECT)  # what came after, on the same partitions

    # A is frozen past its session timeout with cycle1 in hand; B owns the partitions now and
    # takes cycle1 again from the last committed offset, then cycle2
    await b.stage.handle(cycle1)
    await b.stage.handle(cycle2)
    assert b.counted == 2 * GROUPS * FORMS
    after_b = stored_tallies(store)
    assert {v[2] for v in after_b.values()} == {"gap"}, after_b  # correct, then all incorrect

    # A resumes and finishes the batch it held
    await a.stage.handle(cycle1)
    assert a.counted == 0, "the resumed instance counted judgements the other one committed"
    assert stored_tallies(store) == after_b, "the resumed instance overwrote newer tallies"
    # its view is the store's now: a redelivery changes nothing either
    await a.stage.handle(cycle1 + cycle2)
    assert a.counted == 0 and stored_tallies(store) == after_b
    engine.dispose()


async def test_a_batch_partly_stored_elsewhere_counts_only_the_rest(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    a, b = Instance(store), Instance(store)
    batch = judgements(1, Verdict.CORRECT)
    await b.stage.handle(batch[:7])  # the other instance got as far as the first 7
    await a.stage.handle(batch)
    assert (a.counted, b.counted) == (len(batch) - 7, 7)
    assert a.counted + b.counted == len(batch)
    tallies = stored_tallies(store)
    assert sum(c for c, _, _ in tallies.values()) == len(batch)
    engine.dispose()


async def test_a_stored_judgement_outside_the_rebuilt_window_is_skipped_not_retried(
    db_url: str,
) -> None:
    """The rebuild keeps each group's window only; a late redelivery of an older cycle's
    judgement is found in the store and skipped (no retry loop, nothing counted, and not
    dead-lettered as too late: it was counted when it came first)."""
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    first = Instance(store)
    old, new = judgements(1, Verdict.CORRECT), judgements(2, Verdict.CORRECT)
    await first.stage.handle(old)
    await first.stage.handle(new)
    restarted = Instance(store)  # rebuilt from the store: cycle 2's window
    letters = await restarted.stage.handle(old[:3])
    assert restarted.counted == 0
    assert list(letters) == [], "a stored judgement redelivered is a duplicate, not a letter"
    engine.dispose()


async def test_each_tally_keeps_its_own_fence_token(tmp_path: Path) -> None:
    """The token each write must find is kept in the tally (live or cold), not in a
    map beside every group (~90 bytes a group, 15 MB at 500k probes): the one stored, through
    going cold and a restart, and the next write after either passes the fence."""
    engine = make_engine(f"sqlite:///{tmp_path}/a.db")
    create_schema(engine)
    store = AnalyticsStore(engine)
    a = Instance(store)
    await a.stage.handle(judgements(1, Verdict.CORRECT))
    await a.stage.handle(judgements(2, Verdict.INCORRECT))  # a second write of every tally
    stored = {key: token for key, _state, token in store.load_states()}
    assert len(stored) == GROUPS and all(stored.values())
    tagger = a.stage.tagger
    tagger.refresh_causes()
    tagger.make_cold()
    assert not tagger._hot_keys, "every tally cold"
    assert {k: tagger.fence(k) for k in tagger._tallies} == stored
    assert a.stage._tokens == {}
    restarted = Instance(store)
    assert {k: restarted.stage.tagger.fence(k) for k in stored} == stored
    await restarted.stage.handle(judgements(3, Verdict.CORRECT))  # thaws, writes, passes
    assert restarted.counted == GROUPS * FORMS
    after = {key: token for key, _state, token in store.load_states()}
    assert after.keys() == stored.keys() and not set(after.values()) & set(stored.values())
    assert {k: restarted.stage.tagger.fence(k) for k in after} == after
    engine.dispose()
