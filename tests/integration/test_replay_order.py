"""A replay of the judgements topic into a fresh store, its partitions read out of order: no
valid judgement dead-lettered, and the same tallies as the judgements read in cycle order.

Each group's judgements are in one partition, in order; the partitions are read as a consumer
may read them after a long outage or on a new deployment — one of them through every cycle
(and a restarted numbering of the series) before the others start. Groups first seen late
must be placed by the series' clock and the generator's epoch, whatever the first message seen.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import Window
from groundwatch.errors import Reject
from groundwatch.stages.analytics.stage import AnalyticsStage
from tests.integration.test_analytics_persistence import stored_tallies

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PARTITIONS = 3
#: (number the generator gave, slot in time, numbering): three cycles, then the generator is
#: restarted on a fresh store and numbers from 1 again
PLAN = [(1, 1, 0), (2, 2, 0), (3, 3, 0), (1, 4, 1), (2, 5, 1)]


def topic(groups: int, stamped: bool) -> dict[int, list[Judgement]]:
    """The judgements topic by partition (a group's in one), each in publishing order."""
    out: dict[int, list[Judgement]] = {p: [] for p in range(PARTITIONS)}
    for number, slot, numbering in PLAN:
        start = T0 + timedelta(minutes=10 * slot)
        epoch = T0 + timedelta(minutes=10 if numbering == 0 else 40)
        for g in range(groups):
            for f in range(2):
                wrong = (g + slot) % 4 == 0 and f == 0
                probe = Probe(
                    probe_id=uuid.uuid4(),
                    run_id=f"r{slot}",
                    dataset_id="d",
                    group_id=f"g{g}",
                    form_id=f"f{f}",
                    cohort="short",
                    target="t",
                    query=f"q{g}",
                    expected=Expected(values=["a"]),
                    group_forms=2,
                    series="s",
                    cycle=number,
                    cycle_started_at=start,
                    series_epoch=epoch if stamped else None,
                    probe_created_at=start + timedelta(seconds=g),
                )
                resp = RagResponse.for_probe(probe, status=TargetStatus.OK, answer="a")
                verdict = Verdict.INCORRECT if wrong else Verdict.CORRECT
                out[g % PARTITIONS].append(
                    Judgement.for_response(resp, verdict=verdict, tier="exact")
                )
    return out


async def replay(url: str, order: list[Judgement], batch: int = 7) -> list[str]:
    engine = make_engine(url)
    create_schema(engine)
    stage = AnalyticsStage(AnalyticsStore(engine), window=Window(runs=1))
    letters: list[str] = []
    for i in range(0, len(order), batch):
        out = await stage.handle(order[i : i + batch])
        letters += [r.reason for r in out if isinstance(r, Reject)]
    engine.dispose()
    return letters


@pytest.mark.parametrize("stamped", [True, False], ids=["epoch-stamped", "schema-4"])
async def test_a_replay_read_out_of_order_dead_letters_nothing(
    tmp_path: Path, stamped: bool
) -> None:
    parts = topic(groups=12, stamped=stamped)
    in_order = sorted(
        (j for p in parts.values() for j in p), key=lambda j: j.cycle_started_at or T0
    )
    # partition 2 through every cycle first, then 0 and 1 interleaved record by record
    skewed = parts[2] + [j for pair in zip(parts[0], parts[1], strict=True) for j in pair]
    # and the reverse: the late partition first seen when the others are done
    late = parts[0] + parts[1] + parts[2]
    reference = f"sqlite:///{tmp_path / 'ref.db'}"
    assert await replay(reference, in_order) == []
    for name, order in (("skewed", skewed), ("late", late)):
        url = f"sqlite:///{tmp_path / f'{name}.db'}"
        assert await replay(url, order) == [], name
        assert stored_tallies(url) == stored_tallies(reference), name
    # the restarted numbering continues the series: its cycles 1 and 2 count as 4 and 5
    assert newest_stored(reference) == 5


def newest_stored(url: str) -> int:
    engine = make_engine(url)
    with engine.connect() as conn:
        newest = conn.execute(select(func.max(JudgementRow.cycle))).scalar_one()
    engine.dispose()
    return int(newest)


async def test_one_forged_cycle_cannot_move_the_series(tmp_path: Path) -> None:
    """A judgement claiming cycle newest + 1000 is dead-lettered with the reason; one within
    the bound counts for its own group only, and the next real cycle is placed as numbered —
    not read as a restarted numbering (before: stored as cycle 1,007, /groups said so)."""
    parts = topic(groups=6, stamped=True)
    cycle1 = [j for p in parts.values() for j in p if j.run_id == "r1"]
    cycle2 = [j for p in parts.values() for j in p if j.run_id == "r2"]
    url = f"sqlite:///{tmp_path / 'forged.db'}"
    engine = make_engine(url)
    create_schema(engine)
    stage = AnalyticsStage(AnalyticsStore(engine), window=Window(runs=1))
    assert await stage.handle(cycle1) == []
    far = cycle2[0].model_copy(update={"cycle": 1 + 1000, "probe_id": uuid.uuid4()})
    near = cycle2[1].model_copy(update={"cycle": 1 + 50, "probe_id": uuid.uuid4()})
    out = await stage.handle([far, near])
    reasons = [r.reason for r in out if isinstance(r, Reject)]
    assert len(reasons) == 1 and "1000 cycles ahead" in reasons[0], reasons
    assert await stage.handle(cycle2) == []
    engine.dispose()
    with make_engine(url).connect() as conn:
        cycles = sorted(set(conn.execute(select(JudgementRow.cycle)).scalars()))
    assert cycles == [1, 2, 51]  # the real cycle 2 as numbered, no epoch opened
