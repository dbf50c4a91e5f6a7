"""A person's verdict given on ``/ui`` of the embedded pipeline (a continuous ``groundwatch
run``) reaches the live tallies over the in-process bus: the group's status, Acc_db and the
Prometheus series follow it, a second verdict on the same answer replaces the first, and a
redelivery of the same message counts nothing."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from groundwatch.adapters.bus.base import Outgoing
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline, monitoring_app
from groundwatch.contracts import HumanVerdict
from groundwatch.core.tagging import GroupStatus
from groundwatch.demo import demo_dataset
from groundwatch.stages.runner.lanes import Runner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

WRITE = "write-token-for-verdicts-0123"
AUTH = {"Authorization": f"Bearer {WRITE}"}


def _series(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


async def _until(check: object, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the live tally never moved"
        await asyncio.sleep(0.02)


async def test_a_verdict_on_ui_moves_the_live_tally_and_the_metrics() -> None:
    _, groups = demo_dataset(k=1, cohorts=("short",))
    runner = Runner(
        {"t": CallableTarget(lambda q: {"answer": "I don't know."})},
        {"t": TargetLimits(concurrency=8)},
    )
    pipeline = EmbeddedPipeline(groups[:8], runner, keep_consumed=True)
    await pipeline.start()
    try:
        await pipeline.run(1, timeout_s=120)
        stage = pipeline.analytics
        gaps = list(stage.view.tallies(status=GroupStatus.GAP))
        # one form: a single verdict turns the gap robust (more forms: non-robust)
        gap = next(t for t in gaps if t.group_forms == 1)
        key = (gap.target, gap.cohort, gap.group_id)
        (obs,) = stage.view.group_history(*key)
        app = monitoring_app(pipeline, api_token=WRITE)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://run") as client:
            before = (await client.get("/metrics")).text
            gap_count = _series(before, "groundwatch_groups", target="t", status="gap")
            acc_db = _series(before, "groundwatch_acc_db", target="t", cohort=gap.cohort)
            assert gap_count is not None and acc_db is not None

            r = await client.post(
                "/ui/verdicts",
                data={"probe_id": obs.probe_id, "verdict": "correct", "who": "ada"},
                headers=AUTH,
            )
            assert r.status_code == 200, r.text
            await _until(lambda: stage.view.status(*key) is GroupStatus.ROBUST)
            after = (await client.get("/metrics")).text
            assert _series(after, "groundwatch_groups", target="t", status="gap") == gap_count - 1
            moved = _series(after, "groundwatch_acc_db", target="t", cohort=gap.cohort)
            assert moved is not None and moved > acc_db
            tally = stage.view.tally(*key)
            assert tally is not None and (tally.correct, tally.incorrect) == (1, 0)

            # the same message again (a redelivery): counted once
            (msg,) = [
                r.message
                for r in pipeline.bus.records(pipeline.topics.human_verdicts.name)
                if isinstance(r.message, HumanVerdict)
            ]
            assert msg.group_id == gap.group_id and msg.verdict == "correct"
            loop = pipeline.analytics_loop
            consumed = loop.stats.consumed
            name = pipeline.topics.human_verdicts.name
            await pipeline.bus.publish_many([Outgoing(name, msg.key, None, msg)])
            await _until(lambda: loop.stats.consumed > consumed)
            assert stage.view.status(*key) is GroupStatus.ROBUST
            again = (await client.get("/metrics")).text
            assert _series(again, "groundwatch_groups", target="t", status="gap") == gap_count - 1

            # the person changes their mind: the later verdict replaces the earlier
            r = await client.post(
                "/ui/verdicts",
                data={"probe_id": obs.probe_id, "verdict": "incorrect", "who": "ada"},
                headers=AUTH,
            )
            assert r.status_code == 200, r.text
            await _until(lambda: stage.view.status(*key) is GroupStatus.GAP)
            back = (await client.get("/metrics")).text
            assert _series(back, "groundwatch_groups", target="t", status="gap") == gap_count
            assert _series(back, "groundwatch_acc_db", target="t", cohort=gap.cohort) == acc_db

            # a verdict on an answer never judged: a dead letter, nothing counted
            letters = pipeline.keeper.seen
            stray = msg.model_copy(update={"probe_id": uuid.uuid4(), "revision": 10**6})
            await pipeline.bus.publish_many([Outgoing(name, stray.key, None, stray)])
            await _until(lambda: pipeline.keeper.seen > letters)
            (letter,) = [
                r.message
                for r in pipeline.bus.records(pipeline.topics.dead_letter.name)
                if getattr(r.message, "source_topic", "") == name
            ]
            assert "no judged answer" in letter.error  # type: ignore[attr-defined]
            assert stage.view.status(*key) is GroupStatus.GAP
    finally:
        await pipeline.stop()
