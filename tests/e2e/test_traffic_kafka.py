"""Users' traffic through the services deployment, on the real Kafka broker.

The five services run as OS processes, as `make up` runs them. Traffic is posted to analytics'
``POST /traffic`` (rate-limited per target), goes onto the ``traffic`` topic, the generator
grounds it in the groups it probes, the judge judges it against their SQL truth and analytics
tallies it as the groups' ``traffic`` cohort. A message on the topic that is no traffic record
ends in the dead-letter topic with its raw bytes, and the records around it flow on.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from aiokafka import AIOKafkaProducer

from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.app.datasets import write_dataset
from groundwatch.contracts import Topics
from groundwatch.core.model import SemanticGroup
from groundwatch.core.traffic import GroundingIndex
from tests.e2e.procs import ServiceProc, metric_samples, running_pipeline
from tests.e2e.test_pipeline_kafka import read_topic
from tests.unit.traffic_questions import FLEET

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.kafka, pytest.mark.timeout(400)]

TOKEN = "traffic-e2e-secret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
POISON = b'{"schema_version": 1, "target": "shipbot"'  # cut short: not JSON


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[SemanticGroup]]:
    where = tmp_path_factory.mktemp("fleet")
    with sqlite3.connect(where / "fleet.sqlite") as conn:
        conn.executescript(FLEET)
    groups = generate_groups(
        f"sqlite:///{where / 'fleet.sqlite'}", k=2, cohorts=("short",), dataset_id="fleet"
    ).groups
    write_dataset(groups, where / "fleet.jsonl")
    return where / "fleet.jsonl", groups


@pytest.fixture
def services(
    kafka_bootstrap: str,
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
    fleet: tuple[Path, list[SemanticGroup]],
) -> Iterator[dict[str, ServiceProc]]:
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=fresh_pg_url(),
        log_dir=tmp_path,
        runs=0,  # no probes: whatever is tallied came from the users
        generator_env={"GW_DATASET": str(fleet[0])},
        service_env={
            "analytics": {"GW_API_TOKEN": TOKEN, "GW_TRAFFIC_RATE": "0.01", "GW_TRAFFIC_BURST": "8"}
        },
    ) as procs:
        yield procs


def _matched_questions(groups: list[SemanticGroup], n: int) -> list[tuple[str, SemanticGroup]]:
    """``n`` questions of distinct groups the matcher grounds in their own group."""
    index = GroundingIndex(groups)
    out: list[tuple[str, SemanticGroup]] = []
    for g in groups:
        for form in g.forms:
            if index.match(form.text).group_id == g.group_id:
                out.append((form.text, g))
                break
        if len(out) == n:
            break
    assert len(out) == n, "the fleet schema grounds too few of its own questions"
    return out


async def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for v in values:
            await producer.send_and_wait(topic, v, key=b"shipbot")
    finally:
        await producer.stop()


def _wait(what: str, ok: Callable[[], bool], proc: ServiceProc, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what} not seen in {timeout}s:\n{proc.tail()}")


def test_traffic_is_grounded_judged_and_tallied_by_the_services(
    services: dict[str, ServiceProc],
    fleet: tuple[Path, list[SemanticGroup]],
    kafka_bootstrap: str,
    unique_prefix: str,
) -> None:
    analytics, gen = services["analytics"], services["generator"]
    asked = _matched_questions(fleet[1], 6)
    right = [
        {"target": "shipbot", "question": q, "answer": f"It is {g.answer.values[0]}."}
        for q, g in asked[:3]
    ]
    wrong = [
        {"target": "shipbot", "question": q, "answer": "I do not know that one."}
        for q, _ in asked[3:]
    ]
    small_talk = {"target": "shipbot", "question": "hello there, how are you", "answer": "Hi!"}

    url = f"{analytics.url}/traffic"
    assert httpx.post(url, json=right, timeout=10).status_code == 401
    first = httpx.post(url, json=[*right, small_talk], headers=AUTH, timeout=10)
    assert first.status_code == 202, first.text
    # 4 of the target's 8 records taken, 4 left: a batch of 5 waits, whole, and says how long
    over = httpx.post(url, json=[*wrong, small_talk, small_talk], headers=AUTH, timeout=10)
    assert over.status_code == 429, over.text
    assert int(over.headers["Retry-After"]) >= 1
    # what is left of the budget still takes a batch that fits in it
    assert httpx.post(url, json=wrong, headers=AUTH, timeout=10).status_code == 202

    topics = Topics(unique_prefix)
    asyncio.run(_produce(kafka_bootstrap, topics.traffic.name, [POISON]))

    def tallied() -> float:
        text = analytics.get("/metrics").text
        return sum(metric_samples(text, "groundwatch_judgements_total").values())

    _wait("6 users' judgements", lambda: tallied() >= 6, analytics)
    unmatched = gen.get("/traffic/unmatched").json()
    assert unmatched["records"] == 7 and unmatched["matched"] == 6, unmatched
    assert unmatched["shapes"][0]["count"] == 1

    page = analytics.get("/groups?cohort=traffic&limit=100").json()
    rows = {row["group_id"]: row for row in page["groups"]}
    assert {g.group_id for _, g in asked} == set(rows), page
    for _, g in asked[:3]:
        assert rows[g.group_id]["status"] == "robust", rows[g.group_id]
    for _, g in asked[3:]:
        assert rows[g.group_id]["status"] == "gap", rows[g.group_id]
    metrics = analytics.get("/metrics").text
    gaps = metric_samples(metrics, "groundwatch_groups")
    assert gaps[(("cohort", "traffic"), ("status", "gap"), ("target", "shipbot"))] == 3.0
    assert "groundwatch_traffic_match_ratio" in gen.get("/metrics").text

    letters = [
        topics.dead_letter.decode(raw)
        for raw in asyncio.run(read_topic(kafka_bootstrap, topics.dead_letter.name, 1))
    ]
    assert [(d.source_topic, d.raw) for d in letters] == [(topics.traffic.name, POISON)]
    assert letters[0].service == "traffic"
