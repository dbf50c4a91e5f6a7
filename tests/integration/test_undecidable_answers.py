"""Held means no answer: two scripted endpoints answer well for four cycles; then one loses its
table and answers every question with an unrelated sentence, the other goes down (HTTP 503).

The first is no outage: its groups turn unknown in the very next cycle (not held: "unknown
since cycle 5, was robust"), its undecided share jumps, and the shipped
``GroundwatchAnswersUndecidable`` alert fires for it. The second keeps every group's status from
cycle 4, held, and only ``GroundwatchTargetDown`` fires for it. The alerts are the shipped rules
evaluated by promtool over the run's own /metrics pages, one page a minute (as in
test_live_signal)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client import generate_latest

from groundwatch.adapters.db.datasets import read_jsonl
from groundwatch.adapters.targets.http_json import HttpJsonTarget
from groundwatch.adapters.targets.limits import TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.core.tagging import GroupStatus, Tagger, Transition, Window
from groundwatch.stages.runner.lanes import Runner
from tests.integration._http_rag import answers_of
from tests.integration.test_cli_failures import company_db, gw, knows_half
from tests.integration.test_deploy_prometheus import prometheus_tool
from tests.integration.test_live_signal import firing_timeline, minutes, samples

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

GOOD = range(1, 5)
CYCLES = 8
#: what a reader that lost its table says to every question: nothing the judge can place (no
#: value of the database, no number)
UNRELATED = (
    "Thank you for your patience while we look into this.",
    "Please see the help centre for the frequently asked questions.",
    "We have updated our privacy policy; the new version is on the website.",
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("undecidable")
    company_db(d / "company.db")
    out = d / "groups.jsonl"
    proc = gw("gen", "--db", "sqlite:///company.db", "--out", str(out), cwd=d)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def statuses(tagger: Tagger, target: str) -> dict[tuple[str, str], tuple[GroupStatus, bool, int]]:
    return {
        (t.cohort, t.group_id): (t.status, t.held, t.evidence_cycle)
        for t in tagger.tallies()
        if t.target == target
    }


def test_unrelated_answers_turn_groups_unknown_and_fire_the_undecided_alert_an_outage_holds(
    dataset: Path, tmp_path: Path
) -> None:
    groups = read_jsonl(dataset)
    answers = answers_of(dataset, knows_half)
    clock = {"cycle": 1}

    def endpoint(broken: bool) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            query = orjson.loads(request.content)["query"]
            if clock["cycle"] in GOOD:
                return httpx.Response(200, json={"answer": answers.get(query, "I don't know.")})
            if broken:
                return httpx.Response(200, json={"answer": UNRELATED[len(query) % 3]})
            return httpx.Response(503, text="upstream unavailable")

        return httpx.MockTransport(handle)

    Seen = dict[str, dict[tuple[str, str], tuple[GroupStatus, bool, int]]]

    async def drive() -> tuple[list[dict[str, float]], list[Seen], list[Transition]]:
        clients = [httpx.AsyncClient(transport=endpoint(b)) for b in (True, False)]
        targets = {
            name: HttpJsonTarget(
                c, "http://reader.test/ask", retrieved_ids_path=None, contexts_path=None
            )
            for name, c in zip(("broken", "down"), clients, strict=True)
        }
        limits = TargetLimits(concurrency=8, retries=0)
        runner = Runner(targets, dict.fromkeys(targets, limits))
        p = EmbeddedPipeline(
            groups, runner, database_url=f"sqlite:///{tmp_path / 's.db'}", series="held",
            window=Window(runs=1), on_stop=[c.aclose for c in clients],
        )  # fmt: skip
        scraped: list[dict[str, float]] = []
        seen: list[Seen] = []
        transitions: list[Transition] = []
        await p.start()
        try:
            for cycle in range(1, CYCLES + 1):
                clock["cycle"] = cycle
                await p.run(1)
                scraped.append(dict(samples(generate_latest(p.registry).decode())))
                tagger = p.analytics.tagger
                seen.append({t: statuses(tagger, t) for t in ("broken", "down")})
                if cycle == 5:
                    transitions = [
                        tr for tr in tagger.recent_transitions(10_000) if tr.target == "broken"
                    ]
        finally:
            await p.stop()
        return scraped, seen, transitions

    scraped, seen, transitions = asyncio.run(drive())
    before = seen[3]
    assert {s for s, _, _ in before["broken"].values()} == {GroupStatus.GAP, GroupStatus.ROBUST}
    assert before["broken"] == before["down"]
    # the next cycle: every group of the broken endpoint unknown, none held; the down one's
    # groups keep cycle 4's status, held, through every cycle of the outage
    for i in range(4, CYCLES):
        broken, down = seen[i]["broken"], seen[i]["down"]
        assert {(s, held, ev) for s, held, ev in broken.values()} == {
            (GroupStatus.UNKNOWN, False, i + 1)
        }, i + 1
        assert {k: (s, held, ev) for k, (s, held, ev) in down.items()} == {
            k: (s, True, 4) for k, (s, _, _) in before["down"].items()
        }, i + 1
    # the transitions say since when and what the group was
    moved = {(tr.from_status, tr.to_status, tr.cycle) for tr in transitions if tr.cycle == 5}
    assert moved == {
        (GroupStatus.ROBUST, GroupStatus.UNKNOWN, 5),
        (GroupStatus.GAP, GroupStatus.UNKNOWN, 5),
    }
    gauge = 'groundwatch_target_undecided_ratio{target="broken"}'
    assert scraped[3][gauge] < 0.2 and scraped[4][gauge] == 1.0
    assert 'groundwatch_target_undecided_ratio{target="down"}' not in scraped[4]

    timeline = firing_timeline(prometheus_tool("promtool"), scraped, tmp_path)
    fired = {
        (alert, target): [m for m, ts in sorted(t.items()) if target in ts]
        for alert, t in timeline.items()
        for target in {x for ts in t.values() for x in ts}
    }
    print(f"\nHELD-GATE alerts {fired}")
    # true from minute 5; `for: 2m` (plus a minute when a recording rule is read before its
    # group is evaluated, as promtool may)
    assert fired.pop(("GroundwatchAnswersUndecidable", "broken")) in ([7, 8], [8])
    assert fired.pop(("GroundwatchTargetDown", "down")) in ([7, 8], [8])
    assert fired == {}, f"other alerts fired: {fired}"
    assert minutes(timeline["GroundwatchTargetDown"]) in ([7, 8], [8])
