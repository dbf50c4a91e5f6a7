"""POST /traffic on continuous mode's app: users' questions judged beside the probes' cohorts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import orjson
import pytest

from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline, monitoring_app
from groundwatch.core.model import SemanticGroup
from groundwatch.core.tagging import GroupStatus
from groundwatch.runtime.traffic_api import MAX_BATCH, parse_batch
from groundwatch.stages.runner.lanes import Runner
from groundwatch.stages.traffic.stage import TRAFFIC_COHORT
from tests.unit.traffic_questions import FLEET
from tests.waiting import until

TOKEN = "traffic-secret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[SemanticGroup]:
    db: Path = tmp_path_factory.mktemp("traffic") / "fleet.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(FLEET)
    return generate_groups(f"sqlite:///{db}", k=2, cohorts=("short",), dataset_id="fleet").groups


async def test_users_traffic_is_judged_beside_the_probes(groups: list[SemanticGroup]) -> None:
    gold = {f.text: g.answer.values[0] for g in groups for f in g.forms}
    runner = Runner(
        {"shipbot": CallableTarget(lambda q: f"It is {gold[q]}.")},
        {"shipbot": TargetLimits(concurrency=4)},
    )
    pipeline = EmbeddedPipeline(groups, runner, traffic=True)
    await pipeline.start()
    try:
        await pipeline.run(1)  # the probes: every form answered right
        app = monitoring_app(pipeline, api_token=TOKEN)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as http:
            batch = [
                {"target": "shipbot", "question": "Rotterdam berths", "answer": "57 berths"},
                {"target": "shipbot", "question": "how many berths does rotterdam have?",
                 "answer": "Rotterdam has 57.", "trace_id": "0af7651916cd43dd8448eb211c80319c",
                 "span_id": "b7ad6b7169203331"},
                {"target": "shipbot", "question": "hello there", "answer": "Hi!"},
            ]  # fmt: skip
            assert (await http.post("/traffic", json=batch)).status_code == 401
            sent = await http.post("/traffic", json={"records": batch}, headers=AUTH)
            assert sent.status_code == 202 and sent.json() == {"accepted": 3}
            stage = pipeline.traffic
            assert stage is not None
            berths = next(
                g.group_id for g in groups if "berths" in g.sql and g.params["name"] == "Rotterdam"
            )
            gap_line = 'groundwatch_groups{cohort="traffic",status="gap",target="shipbot"} 1.0'

            async def published() -> bool:
                """The two grounded records tallied and the gauges publishing them."""
                t = pipeline.analytics.tagger.tally("shipbot", TRAFFIC_COHORT, berths)
                tallied = t is not None and t.forms_judged == 2
                return tallied and gap_line in (await http.get("/metrics")).text

            await until("the grounded records tallied and published", published, timeout=120)
            users = pipeline.analytics.tagger.tally("shipbot", TRAFFIC_COHORT, berths)
            probes = pipeline.analytics.tagger.tally("shipbot", "short", berths)
            assert users is not None and users.status is GroupStatus.GAP
            assert probes is not None and probes.status is GroupStatus.ROBUST
            view = (await http.get("/traffic/unmatched")).json()
            assert view["records"] == 3 and view["matched"] == 2
            assert view["shapes"] == [{"shape": "hello there", "count": 1}]
            assert view["reasons"] == {"no_entity": 1}
            metrics = (await http.get("/metrics")).text
            assert 'groundwatch_traffic_records_total{outcome="matched"} 2.0' in metrics
            assert 'groundwatch_traffic_records_total{outcome="no_entity"} 1.0' in metrics
            assert "groundwatch_traffic_match_ratio 0.666" in metrics
            # the users' gap is a gap group of its own cohort, which the shipped alerts read
            assert gap_line in metrics

            bad = await http.post("/traffic", json=[{"target": "shipbot"}], headers=AUTH)
            assert bad.status_code == 422 and bad.json()["detail"].startswith("record 0: question")
            blank = await http.post(
                "/traffic", json=[{"target": "shipbot", "question": " "}], headers=AUTH
            )
            assert blank.status_code == 422
            huge = await http.post("/traffic", content=b"[" + b" " * (2 << 20) + b"]", headers=AUTH)
            assert huge.status_code == 413
        assert stage.counts.records == 3  # nothing of a refused batch was published
    finally:
        await pipeline.stop()


def test_a_batch_is_refused_whole_with_one_line() -> None:
    one = {"target": "t", "question": "q"}
    assert len(parse_batch(orjson.dumps(one))) == 1
    assert len(parse_batch(orjson.dumps({"records": [one, one]}))) == 2
    for body, says in (
        (b"{", "not JSON"),
        (b"[]", "no records"),
        (orjson.dumps([one] * (MAX_BATCH + 1)), "at most"),
        (orjson.dumps([one, {**one, "target": "bad target"}]), "record 1: target"),
        (orjson.dumps([{**one, "extra": 1}]), "record 0: extra"),
    ):
        with pytest.raises(ValueError, match=says) as caught:
            parse_batch(body)
        assert "\n" not in str(caught.value)
