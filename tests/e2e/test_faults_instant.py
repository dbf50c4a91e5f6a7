"""Issue 17 on the real Kafka broker and PostgreSQL, services as OS processes.

1. The reproduction: the endpoint's first reply holds a NUL and a judgement with a 65-character
   group id and a 40-character scenario is on the judgements topic. Before, analytics stored 0 of
   2,226 judgements and retried 63,770 times with ``/readyz`` 200; now the poison message is the
   one dead letter, every probe is stored, the NUL answer is stored replaced and flagged.
2. Faults at the dangerous instant, placed by the test-only hook ``GW_TEST_KILL_BEFORE_COMMIT``:
   a judge SIGKILLed right after it published a batch and before it committed, analytics right
   after its store transaction committed and before its offsets did. Each test shows the
   duplicates *were* delivered and were *not* counted twice.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from sqlalchemy import select

from groundwatch.adapters.db import make_engine
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.contracts import REPLACEMENT, Judgement, RagResponse, TargetStatus, Topics
from groundwatch.core.model import Expected, Verdict
from tests.e2e.nul_target import nul_target, nul_targets_yaml
from tests.e2e.procs import ServiceProc, metric_samples, running_pipeline, wait_published
from tests.e2e.test_faults_kafka import (
    PROBES_PER_CYCLE,
    check_exact,
    group_behind,
    ok_count,
    read_all,
    report,
    stored_count,
    wait_settled,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.kafka, pytest.mark.postgres]


def counter(proc: ServiceProc, name: str, outcome: str | None = None) -> float:
    samples = metric_samples(proc.get("/metrics").text, name)
    return sum(v for k, v in samples.items() if outcome is None or ("outcome", outcome) in k)


def poison_judgement() -> bytes:
    """What the issue saw pass the contract and break PostgreSQL: ids longer than their columns
    (``group_id`` 65 > 64, ``scenario`` 40 > 32) and a NUL in the answer."""
    r = RagResponse(
        probe_id=uuid.uuid4(),
        run_id="poison",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="short",
        target="reference",
        query="q",
        expected=Expected(values=["a"]),
        status=TargetStatus.OK,
        answer="a",
    )
    doc = orjson.loads(Judgement.for_response(r, verdict=Verdict.CORRECT, tier="exact").to_bytes())
    doc.update(group_id="g" * 65, scenario="s" * 40, answer="The answer is \x00 unknown")
    return orjson.dumps(doc)


async def _publish(bootstrap: str, topic: str, key: bytes, value: bytes) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


# --------------------------------------------------------------------------- 1. the reproduction
def test_nul_reply_and_over_long_ids_end_as_one_dead_letter_and_everything_else_stored(
    kafka_bootstrap: str,
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db_url = fresh_pg_url()
    topics = Topics(unique_prefix)
    started = time.monotonic()
    with nul_target() as target:
        targets_file = tmp_path / "targets.yaml"
        targets_file.write_text(nul_targets_yaml("reference", target.url))
        monkeypatch.setenv("GW_RUNNER_TARGETS_FILE", str(targets_file))
        with running_pipeline(
            bootstrap=kafka_bootstrap,
            prefix=unique_prefix,
            database_url=db_url,
            log_dir=tmp_path,
            runs=1,
        ) as procs:
            gen, analytics = procs["generator"], procs["analytics"]
            poison = poison_judgement()
            asyncio.run(_publish(kafka_bootstrap, topics.judgements.name, b"g" * 65, poison))
            n = wait_published(gen, 1, timeout=180)
            wait_settled(db_url, analytics, n, timeout=180)
            wait_until("the poison dead-lettered", lambda: counter(
                analytics, "groundwatch_messages_total", "dead_letter") >= 1, 60)  # fmt: skip
            retries = counter(analytics, "groundwatch_messages_total", "retry")
            ready = analytics.get("/readyz")
            ex, first = check_exact(kafka_bootstrap, unique_prefix, db_url, analytics)
        answered = target.answered
    letters = [
        topics.dead_letter.decode(r) for r in read_all(kafka_bootstrap, topics.dead_letter.name)
    ]
    engine = make_engine(db_url)
    with engine.connect() as conn:
        flagged = conn.execute(
            select(JudgementRow.answer).where(JudgementRow.answer.contains(REPLACEMENT))
        ).all()
    engine.dispose()
    assert n == PROBES_PER_CYCLE == ex.probes == ex.stored == answered
    (letter,) = letters
    assert letter.raw == poison and letter.source_topic == topics.judgements.name
    assert letter.service == "analytics" and "group_id" in letter.error
    assert "scenario" in letter.error
    assert [tuple(r) for r in flagged] == [(f"The answer is {REPLACEMENT} unknown",)]
    assert sum(j.answer_sanitized for j in first.values()) == 1
    assert retries == 0 and ready.status_code == 200
    report(
        "test_nul_reply_and_over_long_ids_end_as_one_dead_letter_and_everything_else_stored",
        flagged_answers=len(flagged),
        analytics_retries=retries,
        readyz=ready.status_code,
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
    )


# --------------------------------------------------------------------------- 2. judge
def test_judge_killed_between_publish_and_commit_duplicates_arrive_and_count_once(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    db_url = fresh_pg_url()
    kill_after = 4
    started = time.monotonic()
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        judges=2,
        runs=1,
        generator_env={"GW_RATE": "300"},
        service_env={"judge-2": {"GW_TEST_KILL_BEFORE_COMMIT": str(kill_after)}},
    ) as procs:
        victim, analytics = procs["judge-2"], procs["analytics"]
        assert victim.proc is not None
        wait_until("the victim killed itself", lambda: victim.proc.poll() is not None, 120)
        n = wait_published(procs["generator"], 1, timeout=180)
        # Everything can be stored before the survivor takes the victim's partitions (the
        # victim may have judged all of its share by the kill): the redelivery comes once the
        # victim's session has timed out and the group has committed every response.
        responses, group = Topics(unique_prefix).responses.name, f"{unique_prefix}judge"
        wait_until(
            "the judge group committed every response",
            lambda: group_behind(kafka_bootstrap, group, responses) == 0,
            180,
        )
        wait_settled(db_url, analytics, n, timeout=180)
        tallied = counter(analytics, "groundwatch_judgements_total")
        survivor = ok_count(procs["judge"])
        ex, _ = check_exact(kafka_bootstrap, unique_prefix, db_url, analytics)
    log = victim.log_path.read_text(errors="replace")
    assert victim.proc.returncode == -signal.SIGKILL
    assert f"test fault: SIGKILL after batch {kill_after}" in log
    assert ex.probes == n == ex.stored and ex.dead_letters == 0
    # the batch it published but never committed was judged again by the survivor
    assert ex.duplicate_judgements > 0, "no duplicate was delivered: the kill missed the window"
    assert tallied == n, "analytics counted a duplicate judgement"
    report(
        "test_judge_killed_between_publish_and_commit_duplicates_arrive_and_count_once",
        kill_after_batches=kill_after,
        survivor_judged=survivor,
        analytics_tallied=tallied,
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
        duplicate_judgements=ex.duplicate_judgements,
    )


# --------------------------------------------------------------------------- 3. analytics
def test_analytics_killed_between_store_and_commit_redelivery_counts_nothing_twice(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    db_url = fresh_pg_url()
    kill_after = 3
    started = time.monotonic()
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        runs=1,
        generator_env={"GW_RATE": "300"},
        service_env={"analytics": {"GW_TEST_KILL_BEFORE_COMMIT": str(kill_after)}},
    ) as procs:
        analytics = procs["analytics"]
        assert analytics.proc is not None
        wait_until("analytics killed itself", lambda: analytics.proc.poll() is not None, 120)
        assert analytics.proc.returncode == -signal.SIGKILL
        log = analytics.log_path.read_text(errors="replace")
        stored_at_restart = stored_count(db_url)  # includes the batch whose commit never came
        analytics.env = {k: v for k, v in analytics.env.items() if "KILL" not in k}
        analytics.start().wait_ready(90)
        n = wait_published(procs["generator"], 1, timeout=180)
        wait_settled(db_url, analytics, n, timeout=180)
        counted = int(counter(analytics, "groundwatch_judgements_total"))
        consumed = int(counter(analytics, "groundwatch_messages_total", "ok"))
        ex, _ = check_exact(kafka_bootstrap, unique_prefix, db_url, analytics)
    assert f"test fault: SIGKILL after batch {kill_after}" in log
    assert ex.probes == n == ex.stored and ex.dead_letters == 0
    assert stored_at_restart > 0
    # the new process was handed again what the dead one had stored but not committed ...
    redelivered = consumed - counted
    assert redelivered > 0, "no stored judgement was redelivered: the kill missed the window"
    # ... and counted exactly what was not stored yet
    assert counted == n - stored_at_restart
    report(
        "test_analytics_killed_between_store_and_commit_redelivery_counts_nothing_twice",
        kill_after_batches=kill_after,
        stored_at_restart=stored_at_restart,
        consumed_by_new_process=consumed,
        counted_by_new_process=counted,
        redelivered_already_stored=redelivered,
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
    )
