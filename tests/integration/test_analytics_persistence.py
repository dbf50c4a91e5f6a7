"""Analytics persists tallies with the judgements, resumes after a restart without double counting,
and never lets its memory run ahead of the store."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import JudgementRow, TallyRow
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus, Topics
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.scores import (
    AnswerScores,
    AuditScore,
    EvaluatorCall,
    ReferenceFreeScores,
    RetrievalScores,
    RulesScores,
    Scores,
)
from groundwatch.core.tagging import GroupStatus, Tagger
from groundwatch.errors import RetryLater
from groundwatch.runtime.consume import consume
from groundwatch.stages.analytics.observe import observation_from_judgement
from groundwatch.stages.analytics.stage import AnalyticsStage
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/a.db"
    factory: Callable[[], str] = request.getfixturevalue("fresh_pg_url")
    return factory()


def judgements(groups: int = 20, forms: int = 3) -> list[Judgement]:
    out = []
    for g in range(groups):
        for f in range(forms):
            for cohort in ("short", "long"):
                verdict = (
                    Verdict.CORRECT
                    if (g % 3 == 0 or (g % 3 == 1 and f == 0))
                    else Verdict.INCORRECT
                )
                if cohort == "long" and g % 5 == 0:
                    verdict = Verdict.ERROR
                probe = Probe(
                    probe_id=uuid.uuid4(),
                    run_id="r1",
                    dataset_id="d",
                    group_id=f"g{g}",
                    form_id=f"{cohort}{f}",
                    cohort=cohort,
                    target="t",
                    query=f"q{g}{f}",
                    expected=Expected(values=["a"]),
                    group_forms=forms,
                )
                resp = RagResponse.for_probe(
                    probe, status=TargetStatus.OK, answer="x", retrieved_ids=[f"d{g}"]
                )
                out.append(Judgement.for_response(resp, verdict=verdict, tier="exact"))
    return out


def stored_tallies(url: str) -> dict[tuple[str, str, str], tuple[int, int, int, str]]:
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(TallyRow)).all()
    engine.dispose()
    return {
        (r.target, r.cohort, r.group_id): (r.correct, r.incorrect, r.error, r.status) for r in rows
    }


async def test_restart_resumes_without_double_counting(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    batch = judgements()
    first = AnalyticsStage(AnalyticsStore(engine))
    await first.handle(batch[:70])
    await first.handle(batch[50:])  # overlapping redelivery within one life
    before = stored_tallies(db_url)

    # A new process: state comes back from the store; everything is redelivered once more.
    second = AnalyticsStage(AnalyticsStore(engine))
    await second.handle(batch)
    assert stored_tallies(db_url) == before

    expected = Tagger()
    expected.apply_many(observation_from_judgement(j) for j in batch)
    assert second.tagger.status_counts() == expected.status_counts()
    assert sum(
        1 for k, v in before.items() if v[3] == GroupStatus.GAP.value
    ) == expected.status_counts().get(
        ("t", "short", GroupStatus.GAP), 0
    ) + expected.status_counts().get(("t", "long", GroupStatus.GAP), 0)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one() == len(
            batch
        )
    engine.dispose()


async def test_failed_write_rebuilds_state_before_the_retry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    engine = make_engine(url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    worker = AnalyticsStage(store)
    batch = judgements(groups=4)
    await worker.handle(batch[:6])

    real_save = store.save
    calls = {"n": 0}

    def failing_save(*args: object) -> None:
        calls["n"] += 1
        from sqlalchemy.exc import OperationalError

        raise OperationalError("INSERT", {}, Exception("database is down"))

    store.save = failing_save  # type: ignore[method-assign]
    with pytest.raises(RetryLater):
        await worker.handle(batch[6:])
    store.save = real_save  # type: ignore[method-assign]
    # The redelivered batch must be stored, not skipped as "already seen" by a tagger that ran ahead.
    await worker.handle(batch[6:])
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one() == len(
            batch
        )
    assert len(worker.tagger) == len(batch) and calls["n"] == 1
    engine.dispose()


async def test_unexpected_store_failure_never_leaves_memory_ahead(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/a.db")
    create_schema(engine)
    store = AnalyticsStore(engine)
    worker = AnalyticsStage(store)
    batch = judgements(groups=3)
    real_save = store.save

    def broken(*args: object) -> None:
        raise RuntimeError("disk full")

    store.save = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await worker.handle(batch)
    store.save = real_save  # type: ignore[method-assign]
    await worker.handle(batch)
    assert len(AnalyticsStore(engine).load_observations()) == len(batch)
    engine.dispose()


async def test_killed_mid_write_commits_nothing_and_a_restart_counts_exactly(
    tmp_path: Path,
) -> None:
    """SIGKILL-like: the loop dies while the database write is in flight. No offset was committed,
    so a restarted worker in the same group gets every judgement again and tallies each once."""
    import threading

    engine = make_engine(f"sqlite:///{tmp_path}/a.db")
    create_schema(engine)
    bus, topics = MemoryBus(partitions=3), Topics("x.")
    batch = judgements(groups=10)
    await bus.publish_many([Outgoing(topics.judgements.name, j.key, j.to_bytes()) for j in batch])

    store = AnalyticsStore(engine)
    release = threading.Event()
    entered = threading.Event()

    def hang(*args: object) -> None:
        entered.set()
        release.wait(10)

    store.save = hang  # type: ignore[method-assign]
    doomed = consume(AnalyticsStage(store), bus, topics)
    task = asyncio.create_task(doomed.run())
    await asyncio.to_thread(entered.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert all(bus.committed(doomed.group, topics.judgements.name, p) == 0 for p in range(3))

    fresh = AnalyticsStage(AnalyticsStore(engine))
    fresh_loop = consume(fresh, bus, topics)
    task = asyncio.create_task(fresh_loop.run())
    await until("the batch consumed again", lambda: fresh_loop.stats.consumed >= len(batch))
    fresh_loop.stop()
    await task
    expected = Tagger()
    expected.apply_many(observation_from_judgement(j) for j in batch)
    assert len(fresh.tagger) == len(batch)
    assert fresh.tagger.status_counts() == expected.status_counts()
    engine.dispose()


async def test_two_instances_split_the_groups_and_sum_to_the_whole(tmp_path: Path) -> None:
    """Several analytics instances own disjoint partitions: each tallies only its groups, the sum
    equals the whole, and when one leaves the other takes over its groups from the store."""
    engine = make_engine(f"sqlite:///{tmp_path}/a.db")
    create_schema(engine)
    bus, topics = MemoryBus(partitions=6), Topics("m.")
    batch = judgements(groups=30)
    a = AnalyticsStage(AnalyticsStore(engine))
    b = AnalyticsStage(AnalyticsStore(engine))
    a_loop = consume(a, bus, topics, client_id="a")
    b_loop = consume(b, bus, topics, client_id="b")
    tasks = [asyncio.create_task(loop.run()) for loop in (a_loop, b_loop)]
    await asyncio.gather(a_loop.ready.wait(), b_loop.ready.wait())
    await bus.publish_many([Outgoing(topics.judgements.name, j.key, j.to_bytes()) for j in batch])
    await until("every group tallied", lambda: len(a.tagger) + len(b.tagger) >= len(batch))
    expected = Tagger()
    expected.apply_many(observation_from_judgement(j) for j in batch)
    assert len(a.tagger) > 0 and len(b.tagger) > 0
    assert not {o.group_id for o in a.tagger.observations()} & {
        o.group_id for o in b.tagger.observations()
    }
    summed: dict[tuple[str, str, GroupStatus], int] = {}
    for w in (a, b):
        for k, n in w.tagger.status_counts().items():
            summed[k] = summed.get(k, 0) + n
    assert summed == expected.status_counts()

    # b leaves: a owns every partition now and loads b's groups from the store.
    b_loop.stop()
    await tasks[1]
    await until("b's groups loaded by a", lambda: len(a.tagger) == len(batch))
    assert a.tagger.status_counts() == expected.status_counts()
    a_loop.stop()
    await tasks[0]
    engine.dispose()


def _typed(i: int, j: Judgement) -> Scores:
    return Scores(
        answer=AnswerScores(5, 1.0 if j.verdict is Verdict.CORRECT else 0.0),
        retrieval=RetrievalScores(5, 1.0, 0.2, 1.0, 1.0, 1.0),
        audit=AuditScore("exact", bool(i % 4)),
        reference_free=ReferenceFreeScores(selfcheck=EvaluatorCall.RIGHT),
        # the rules' detail: stored, not carried by the tagger
        rules=RulesScores(0.3, 0.3, 0.3),
    )


def _flat(i: int, j: Judgement) -> dict[str, float]:
    """The same scores as a judge of schema version 3 stored them."""
    return {
        "token_precision": 0.3,
        "token_recall": 0.3,
        "token_f1": 0.3,
        "metric.k": 5.0,
        "metric.exact_match": 1.0 if j.verdict is Verdict.CORRECT else 0.0,
        "metric.recall@5": 1.0,
        "metric.precision@5": 0.2,
        "metric.ap@5": 1.0,
        "metric.rr": 1.0,
        "metric.ndcg@5": 1.0,
        "audit.exact": 1.0 if i % 4 else 0.0,
        "rf.selfcheck": 1.0,
    }


async def test_judge_scores_are_stored_and_rebuild_the_scores_section(db_url: str) -> None:
    """Answer metrics, audit and evaluator calls travel in ``Judgement.scores``; a restarted
    analytics rebuilds the same score tallies from the stored judgements — typed, and
    the flat dict rows of schema version 3 alike."""
    from groundwatch.report.build import report_from_tagger

    engine = make_engine(db_url)
    create_schema(engine)
    scored = [
        j.model_copy(update={"scores": _typed(i, j)}) for i, j in enumerate(judgements(groups=6))
    ]
    first = AnalyticsStage(AnalyticsStore(engine))
    await first.handle(scored)
    live = report_from_tagger(first.tagger).scores
    restarted = AnalyticsStage(AnalyticsStore(engine))
    await asyncio.to_thread(restarted.reload)
    rebuilt = report_from_tagger(restarted.tagger).scores
    assert live is not None and rebuilt is not None
    # the same numbers; a mean summed in another order may differ in its last bits
    assert _rounded(rebuilt.model_dump()) == _rounded(live.model_dump())
    short = live.answer_metrics["t"]["short"]["factual"]
    assert short.answers == 18 and short.metrics["recall@5"].mean == 1.0
    assert live.audit["t"]["exact"].audited == len(scored)
    selfcheck = live.reference_free["t"]["selfcheck"]
    assert selfcheck.unmatched == sum(1 for j in scored if j.verdict is Verdict.ERROR)
    with engine.connect() as conn:
        stored = conn.execute(select(JudgementRow.scores)).scalars().first()
    assert stored is not None and stored["rules"] == {
        "token_precision": 0.3,
        "token_recall": 0.3,
        "token_f1": 0.3,
    }
    assert "retrieval" in stored and "semantic" not in stored  # the families set, no nulls
    # rows a judge of schema version 3 stored (flat dicts) rebuild the same numbers
    with engine.begin() as conn:
        for i, j in enumerate(scored):
            conn.execute(
                update(JudgementRow)
                .where(JudgementRow.probe_id == str(j.probe_id))
                .values(scores=_flat(i, j))
            )
    old = AnalyticsStage(AnalyticsStore(engine))
    await asyncio.to_thread(old.reload)
    from_flat = report_from_tagger(old.tagger).scores
    assert from_flat is not None
    assert _rounded(from_flat.model_dump()) == _rounded(live.model_dump())
    engine.dispose()


def _rounded(x: object) -> object:
    if isinstance(x, float):
        return round(x, 12)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_rounded(v) for v in x]
    return x
