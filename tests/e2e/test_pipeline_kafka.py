"""End to end, for real: five services as OS processes on the local Kafka broker.

The generator publishes probes for the built-in demo dataset, the runner asks the reference RAG
over HTTP, the judge judges, analytics tallies into PostgreSQL. Every probe must be judged exactly
once, and the tallies analytics exports must equal what the core computes in-process from the
same judgements.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groundwatch.adapters.bus import make_bus
from groundwatch.contracts import Topics
from groundwatch.core.tagging import GroupStatus, Tagger, Window
from groundwatch.stages.analytics.observe import observation_from_judgement
from tests.e2e.procs import ServiceProc, metric_samples, running_pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(600)]

RUNS = 1  # one cycle over the demo dataset: 371 groups × 6 forms, well over 500 probes


async def read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[bytes]:
    bus = make_bus("kafka", bootstrap=bootstrap)
    consumer = bus.consumer([topic], f"reader-{time.time_ns()}")
    await consumer.start()
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            got.extend(r.value for r in await consumer.poll(2000, 0.5))
            if len(got) >= expected:
                # keep reading briefly: a duplicate would arrive right behind
                got.extend(r.value for r in await consumer.poll(2000, 1.0))
                break
    finally:
        await consumer.stop()
    return got


@pytest.fixture
def pipeline(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> Iterator[dict[str, ServiceProc]]:
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=fresh_pg_url(),
        log_dir=tmp_path,
        runs=RUNS,
    ) as procs:
        yield procs


def test_every_probe_judged_once_and_tallies_match(
    pipeline: dict[str, ServiceProc], kafka_bootstrap: str, unique_prefix: str
) -> None:
    gen, analytics = pipeline["generator"], pipeline["analytics"]
    deadline = time.monotonic() + 240
    published = 0
    while time.monotonic() < deadline:
        state = gen.get("/runs").json()
        published = state["published"]
        if len(state["runs"]) == RUNS:
            break
        time.sleep(0.5)
    assert published >= 500, f"only {published} probes published"

    judged = 0
    while time.monotonic() < deadline:
        samples = metric_samples(analytics.get("/metrics").text, "groundwatch_judgements_total")
        judged = int(sum(samples.values()))
        if judged >= published:
            break
        time.sleep(0.5)
    assert judged == published, f"analytics tallied {judged} of {published}:\n{analytics.tail()}"

    topics = Topics(unique_prefix)
    probes = [
        topics.probes.decode(r)
        for r in asyncio.run(read_topic(kafka_bootstrap, topics.probes.name, published))
    ]
    raw_j = asyncio.run(read_topic(kafka_bootstrap, topics.judgements.name, published))
    judgements = [topics.judgements.decode(r) for r in raw_j]
    per_probe = Counter(str(j.probe_id) for j in judgements)
    assert set(per_probe) == {str(p.probe_id) for p in probes}, "a probe was never judged"
    assert max(per_probe.values()) == 1, "a probe was judged twice"
    letters = asyncio.run(read_topic(kafka_bootstrap, topics.dead_letter.name, 1, timeout=2))
    assert letters == [], "unexpected dead letters"

    # The same judgements through the core in-process must give the exported tallies.
    tagger = Tagger(Window(runs=1))  # the services' default live view
    in_order = sorted(judgements, key=lambda j: (j.cycle, j.judged_at))
    assert tagger.apply_many(observation_from_judgement(j) for j in in_order) == published
    exported = metric_samples(analytics.get("/metrics").text, "groundwatch_groups")
    expected = {
        (("cohort", c), ("status", s.value), ("target", t)): float(n)
        for (t, c, s), n in tagger.status_counts().items()
    }
    assert {k: v for k, v in exported.items() if v} == expected
    assert (
        sum(n for (t, c, s), n in tagger.status_counts().items() if s is not GroupStatus.PENDING)
        > 0
    )

    # /groups and /groups/{id} agree with the core: every gap group of a cohort is listed with
    # its SQL (stored by the generator), gold answer and each form's question and answer.
    page = analytics.get("/groups?status=gap&cohort=short&limit=1000").json()
    expected_gaps = {
        t.group_id
        for t in tagger.tallies(cohort="short", status=GroupStatus.GAP)
        if t.scenario == "factual"
    }
    assert page["total"] == len(expected_gaps) > 0
    assert {r["group_id"] for r in page["groups"]} == expected_gaps
    for row in page["groups"][:5]:
        assert row["status"] == "gap" and row["sql"] and row["gold"]
        assert all(f["question"] and f["verdict"] != "correct" for f in row["forms"])
        detail = analytics.get(f"/groups/{row['group_id']}").json()
        assert {f["verdict"] for f in detail["forms"] if f["cohort"] == "short"} <= {
            "incorrect",
            "error",
            "undecided",
        }
        (live,) = [g for g in detail["groups"] if g["target"] == row["target"]]
        assert live["cohort_status"]["short"] == "gap" and live["sql"] == row["sql"]
    for p in pipeline.values():
        assert p.get("/healthz").status_code == 200
        assert "groundwatch_" in p.get("/metrics").text or p.name == "reference-rag"
