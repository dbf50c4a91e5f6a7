"""A partition's state recovered from its tallies' stored states, on SQLite, PostgreSQL and
MariaDB: what a new owner restores is exactly what a replay of the stored judgements gives (and
the writer had), a store without states (or with some) falls back to the replay, and the state
is fenced: an instance that lost the partition cannot overwrite the new owner's state."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, and_, func, select, text, update

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import Base, JudgementRow, TallyRow
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.scores import AnswerScores, Scores
from groundwatch.core.tagging import Tagger, Window
from groundwatch.stages.analytics.stage import AnalyticsStage

pytestmark = pytest.mark.integration

STORE_TABLES = (*(t.name for t in reversed(Base.metadata.sorted_tables)), "alembic_version")
VERDICTS = [Verdict.CORRECT] * 4 + [Verdict.INCORRECT] * 3 + [Verdict.ERROR, Verdict.UNDECIDED]


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/a.db"
        return
    if request.param == "postgresql":
        factory: Callable[[], str] = request.getfixturevalue("fresh_pg_url")
        yield factory()
        return
    # the shared MariaDB database (no rights to make another): every table of the models
    # dropped before and after, children first, as tests/integration/test_mysql.py does
    url, _reader = request.getfixturevalue("mysql_urls")
    admin = make_engine(url)

    def drop() -> None:
        with admin.begin() as conn:
            for t in STORE_TABLES:
                conn.execute(text(f"DROP TABLE IF EXISTS {t}"))

    drop()
    try:
        yield url
    finally:
        drop()
        admin.dispose()


def cycle_judgements(rng: random.Random, cycle: int, *, down: bool = False) -> list[Judgement]:
    """One cycle of 8 groups × 2 cohorts × 1–3 forms (some missing), or an outage."""
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=cycle)
    out = []
    for g in range(8):
        forms = 1 + g % 3
        for cohort in ("short", "long"):
            for f in range(forms):
                if rng.random() < 0.1:
                    continue
                p = Probe(
                    probe_id=uuid.uuid4(),
                    run_id=f"r{cycle}",
                    dataset_id="d",
                    group_id=f"g{g}",
                    form_id=f"{cohort}{f}",
                    cohort=cohort,
                    target=rng.choice(("t", "t", "u")),
                    query=f"q{g}{f}",
                    expected=Expected(values=["a"], version=1 + (cycle > 6 and g == 3)),
                    group_forms=forms,
                    series="s",
                    cycle=cycle,
                    cycle_started_at=started,
                    probe_created_at=started + timedelta(seconds=rng.randrange(600)),
                )
                status = TargetStatus.ERROR if down else TargetStatus.OK
                r = RagResponse.for_probe(
                    p, status=status, answer=None if down else "a", retrieved_ids=[f"d{g}"]
                )
                v = Verdict.ERROR if down else rng.choice(VERDICTS)
                out.append(
                    Judgement.for_response(
                        r,
                        verdict=v,
                        tier="exact",
                        scores=Scores(answer=AnswerScores(5, token_f1=rng.random())),
                    )
                )
    rng.shuffle(out)
    return out


def view(t: Tagger) -> tuple[object, ...]:
    return (
        sorted(t.tallies(), key=lambda x: (x.target, x.cohort, x.group_id)),
        sorted(t.status_counts().items()),
        sorted(t.verdict_counts().items()),
        t.cohort_numbers(),
        sorted(t.held_counts().items()),
        sorted(t.target_health().items()),
        sorted((k, sorted(v)) for k, v in ((x, t.knowledge_gaps(x)) for x in ("t", "u"))),
        # with their scores: the typed families survive the stored state
        sorted((o.probe_id, str(o.scores)) for o in t.observations()),
        sorted(t.cause_counts().items()),
    )


def replayed(store: AnalyticsStore, window: Window) -> Tagger:
    t = Tagger(window)
    t.rebuild(store.load_observations())
    t.drain_transitions()
    return t


@pytest.mark.parametrize("runs", [1, 3])
async def test_a_restored_partition_is_the_replay_and_the_writer(db_url: str, runs: int) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    window = Window(runs=runs)
    writer = AnalyticsStage(store, window=window)
    writer.reload()
    rng = random.Random(runs)
    for cycle in range(1, 10):
        js = cycle_judgements(rng, cycle, down=cycle in (4, 5))
        for i in range(0, len(js), 13):  # batches that split groups
            await writer.handle(js[i : i + 13])
    with engine.connect() as conn:
        missing = conn.execute(
            select(func.count()).select_from(TallyRow).where(TallyRow.state.is_(None))
        ).scalar()
    assert missing == 0
    reader = AnalyticsStage(store, window=window)
    n = reader.reload()
    assert n == len(writer.tagger)
    assert view(reader.tagger) == view(writer.tagger) == view(replayed(store, window))
    # the series clock is where the scan of the judgements puts it
    assert store.newest_cycles() == scanned_clock(engine)
    assert store.newest_cycles()["s"][0] == 9
    # a store written before states (or a tally without one): those tallies are replayed
    with engine.begin() as conn:
        conn.execute(update(TallyRow).where(TallyRow.group_id.in_(["g1", "g4"])).values(state=None))
    partial = AnalyticsStage(store, window=window)
    assert partial.reload() >= n  # the replayed tallies read their history too
    assert view(partial.tagger) == view(writer.tagger)
    with engine.begin() as conn:
        conn.execute(update(TallyRow).values(state=None, state_token=0))
    old = AnalyticsStage(store, window=window)
    assert old.reload() >= n  # the replay reads each group's history too
    assert view(old.tagger) == view(writer.tagger)
    # and it goes on writing states the next owner restores
    more = cycle_judgements(rng, 10)
    await old.handle(more)
    await writer.handle(more)
    again = AnalyticsStage(store, window=window)
    again.reload()
    assert view(again.tagger) == view(writer.tagger) == view(replayed(store, window))
    engine.dispose()


async def test_the_state_is_fenced_against_an_instance_that_lost_the_partition(
    db_url: str,
) -> None:
    """A (frozen past its session) and B (the new owner) both hold group g0; B stores newer
    judgements of it, then A resumes with judgements B has not seen: A's write must not replace
    B's state with a view that lacks B's judgements. It is fenced, A restores from the store
    and applies its judgements over B's, and the stored state is the replay of the store."""
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    window = Window(runs=2)
    rng = random.Random(7)
    a = AnalyticsStage(store, window=window)
    a.reload()
    await a.handle(cycle_judgements(rng, 1))
    b = AnalyticsStage(store, window=window)
    b.reload()
    cycle2 = cycle_judgements(rng, 2)
    half = len(cycle2) // 2
    await b.handle(cycle2[:half])  # B took the partition over and went on
    await a.handle(cycle2[half:])  # A resumes: fenced on the tallies B wrote, then applied
    restored = AnalyticsStage(store, window=window)
    restored.reload()
    whole = replayed(store, window)
    assert view(restored.tagger) == view(whole)
    assert view(a.tagger) == view(whole)
    with engine.connect() as conn:
        stored = conn.execute(select(func.count()).select_from(JudgementRow)).scalar()
    assert stored == len(cycle_judgements(random.Random(7), 1)) + len(cycle2)
    engine.dispose()


def test_series_clocks_match_the_scan_of_the_judgements(tmp_path: Path) -> None:
    """What the clock restores from: per series, the newest cycle and its first probe time, as
    the scan of every judgement computed it (kept by the batches instead)."""
    engine = make_engine(f"sqlite:///{tmp_path}/c.db")
    create_schema(engine)
    store = AnalyticsStore(engine)
    rng = random.Random(3)
    batches = [cycle_judgements(rng, c) for c in (2, 1, 3)]
    late = batches[2][:5]
    for b in (batches[0], batches[1], batches[2][5:], late):  # late firsts of the newest cycle
        store.save(b, [])
    assert store.newest_cycles() == scanned_clock(engine)
    assert store.newest_cycles()["s"][0] == 3
    engine.dispose()


def scanned_clock(engine: Engine) -> dict[str, tuple[int, float]]:
    """The newest cycle per series and its first probe time, by a scan of every judgement."""
    newest = (
        select(JudgementRow.series, func.max(JudgementRow.cycle).label("cycle"))
        .group_by(JudgementRow.series)
        .subquery()
    )
    scan = (
        select(newest.c.series, newest.c.cycle, func.min(JudgementRow.probe_created_at))
        .join(
            JudgementRow,
            and_(JudgementRow.series == newest.c.series, JudgementRow.cycle == newest.c.cycle),
        )
        .group_by(newest.c.series, newest.c.cycle)
    )
    with engine.connect() as conn:
        rows = conn.execute(scan).all()
    return {
        series: (cycle, (first if first.tzinfo else first.replace(tzinfo=UTC)).timestamp())
        for series, cycle, first in rows
    }
