"""A restored analytics stage counts people's verdicts: from the tally's stored state (the
verdict that came on the topic), and from the store's ``human_verdicts`` when the state lacks
it — a verdict that never reached the topic (given by ``groundwatch view`` on the store), or a
tally rebuilt from its judgements because its state is of no format this code reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db import human_verdicts as hv
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import TallyRow
from groundwatch.contracts import HumanVerdict, Judgement
from groundwatch.core.tagging import GroupStatus, Window
from groundwatch.stages.analytics.stage import AnalyticsStage
from tests.integration._refused_judgements import refused_judgement

pytestmark = pytest.mark.integration


def _judgement(n: int) -> Judgement:
    return refused_judgement(f"g{n}", n)


async def test_a_restore_counts_the_stored_verdicts(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    create_schema(engine)
    store = AnalyticsStore(engine)
    first = AnalyticsStage(store, window=Window(runs=1), publish_views=True)
    first.reload()
    js = [_judgement(n) for n in range(3)]
    assert await first.handle(list(js)) == []
    keys = [(j.target, j.cohort, j.group_id) for j in js]
    assert all(first.view.status(*k) is GroupStatus.GAP for k in keys)

    # g0: through the topic (stored in its tally's state); g1: only in the store's table
    on_topic = hv.add(engine, str(js[0].probe_id), "correct", "", "ada", "incorrect")
    message = HumanVerdict(
        probe_id=js[0].probe_id,
        dataset_id="d",
        target="t",
        cohort="short",
        group_id="g0",
        verdict="correct",
        revision=on_topic.revision,
        who="ada",
    )
    assert await first.handle([message]) == []
    assert first.view.status(*keys[0]) is GroupStatus.ROBUST
    hv.add(engine, str(js[1].probe_id), "correct", "", "bob", "incorrect")
    assert first.view.status(*keys[1]) is GroupStatus.GAP  # no message: not live yet

    second = AnalyticsStage(store, window=Window(runs=1))
    second.reload()
    assert [second.view.status(*k) for k in keys] == [
        GroupStatus.ROBUST,
        GroupStatus.ROBUST,
        GroupStatus.GAP,
    ]
    assert await second.handle([message]) == []  # redelivered: a repeat
    tally = second.view.tally(*keys[0])
    assert tally is not None and (tally.correct, tally.incorrect) == (1, 0)

    # states of no format this code reads: the tallies replayed from their judgements, then
    # the people's verdicts counted on them again
    with engine.begin() as conn:
        conn.execute(update(TallyRow).values(state=None))
    third = AnalyticsStage(store, window=Window(runs=1))
    third.reload()
    assert [third.view.status(*k) for k in keys] == [
        GroupStatus.ROBUST,
        GroupStatus.ROBUST,
        GroupStatus.GAP,
    ]
    engine.dispose()
