"""Users' questions grounded, judged by the same judge against SQL truth, tallied as a cohort."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.contracts import RagResponse, Topics, TrafficRecord
from groundwatch.core.model import SemanticGroup, Verdict
from groundwatch.core.tagging import GroupStatus, Tagger, Window
from groundwatch.errors import PoisonMessage, Reject
from groundwatch.stages.analytics.observe import observation_from_judgement
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.judge.tiered import TieredJudge
from groundwatch.stages.traffic.stage import TRAFFIC_COHORT, TrafficStage
from tests.unit.traffic_questions import FLEET

T0 = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[SemanticGroup]:
    db: Path = tmp_path_factory.mktemp("traffic") / "fleet.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(FLEET)
    return generate_groups(f"sqlite:///{db}", k=3, dataset_id="fleet").groups


def _record(question: str, answer: str | None, at: datetime = T0, **kw: str) -> TrafficRecord:
    return TrafficRecord(target="shipbot", question=question, answer=answer, asked_at=at, **kw)


async def test_matched_traffic_is_judged_and_tallied_as_its_groups_cohort(
    groups: list[SemanticGroup],
) -> None:
    stage = TrafficStage(groups, dataset_id="fleet")
    records = [
        _record("who is the captain of the Pacific Heron", "Diego Fuentes commands her."),
        _record("pacific heron captain?", "It is Diego Fuentes."),
        _record("Rotterdam berths", "Rotterdam has 57 berths."),  # the database says 320
        _record("how many berths does rotterdam have", "57"),
        _record("good morning", "Good morning! How can I help?"),
        _record("who is its captain", "Which ship do you mean?"),
    ]
    out = await stage.handle(records)
    responses = [r for r in out if isinstance(r, RagResponse)]
    assert len(responses) == 4 and stage.counts.records == 6 and stage.counts.matched == 4
    assert stage.counts.match_rate == pytest.approx(4 / 6)
    assert {r.cohort for r in responses} == {TRAFFIC_COHORT}
    assert len({r.group_id for r in responses}) == 2
    judgements = await JudgeStage(TieredJudge().judge).handle(responses)
    verdicts = {j.query: j.verdict for j in judgements}
    assert verdicts["pacific heron captain?"] is Verdict.CORRECT
    assert verdicts["Rotterdam berths"] is Verdict.INCORRECT

    tagger = Tagger()
    for j in judgements:
        tagger.apply(observation_from_judgement(j))
    captain = next(r.group_id for r in responses if r.query.startswith("who is"))
    berths = next(r.group_id for r in responses if r.query == "Rotterdam berths")
    right = tagger.tally("shipbot", TRAFFIC_COHORT, captain)
    wrong = tagger.tally("shipbot", TRAFFIC_COHORT, berths)
    assert right is not None and right.status is GroupStatus.ROBUST
    assert wrong is not None and wrong.status is GroupStatus.GAP
    assert stage.counts.unmatched() == [("good morning", 1), ("who is its captain", 1)]


async def test_a_question_counts_once_per_window_and_windows_are_cycles(
    groups: list[SemanticGroup],
) -> None:
    stage = TrafficStage(groups, dataset_id="fleet", window_s=3600)
    first = stage.ground(_record("Rotterdam berths", "320", trace_id="a" * 32, span_id="b" * 16))
    again = stage.ground(_record("rotterdam  BERTHS", "320", trace_id="a" * 32, span_id="b" * 16))
    later = stage.ground(_record("Rotterdam berths", "320", at=T0 + timedelta(hours=2)))
    assert first is not None and again is not None and later is not None
    assert first.probe_id == again.probe_id  # the same span sent twice is one judgement
    assert first.form_id == again.form_id and first.cycle == again.cycle
    assert later.cycle == first.cycle + 2 and later.series == first.series == "fleet:traffic"


async def test_unanswered_and_foreign_records(groups: list[SemanticGroup]) -> None:
    stage = TrafficStage(groups, dataset_id="fleet")
    (silent,) = await stage.handle([_record("Rotterdam berths", None)])
    assert isinstance(silent, RagResponse) and silent.error_kind == "no_answer"
    (refused,) = await stage.handle(
        [TrafficRecord(target="shipbot", question="Rotterdam berths", dataset_id="other")]
    )
    assert isinstance(refused, Reject) and "other" in refused.reason


def test_the_traffic_contract_refuses_what_cannot_be_judged() -> None:
    topic = Topics().traffic
    record = _record("Rotterdam berths", "320", trace_id="0af7651916cd43dd8448eb211c80319c")
    assert topic.decode(topic.encode(record)) == record
    for bad in (b'{"target": "x", "question": "   "}', b'{"question": "q"}', b"[1]"):
        with pytest.raises(PoisonMessage):
            topic.decode(bad)


async def test_a_fact_users_stop_getting_is_a_regression_from_traffic_alone(
    groups: list[SemanticGroup],
) -> None:
    """No probe at all: an hour of right answers, then an hour of wrong ones, is robust → gap
    in the traffic cohort (the transition the shipped regression alert counts)."""
    stage = TrafficStage(groups, dataset_id="fleet")
    judge = JudgeStage(TieredJudge().judge)
    tagger = Tagger(Window(runs=1))  # the live view of a continuous run
    for hour, answer in ((0, "Diego Fuentes is the captain."), (1, "The captain is Lars Eriksen.")):
        at = T0 + timedelta(hours=hour)
        asked = [_record(q, answer, at=at) for q in ("pacific heron captain?", "Heron's captain")]
        responses = [r for r in await stage.handle(asked) if isinstance(r, RagResponse)]
        for j in await judge.handle(responses):
            tagger.apply(observation_from_judgement(j))
    moves = [(t.cohort, t.from_status, t.to_status) for t in tagger.drain_transitions()]
    assert (TRAFFIC_COHORT, GroupStatus.ROBUST, GroupStatus.GAP) in moves


async def test_sampling_keeps_the_same_traces_on_every_evaluator(
    groups: list[SemanticGroup],
) -> None:
    """A share drawn by trace id: two evaluators keep the same traces, every span of a kept
    trace is kept, and the share kept is near the share asked for."""
    records = [
        _record(
            "pacific heron captain?", "Diego Fuentes", trace_id=f"{i:032x}", span_id=f"{s:016x}"
        )
        for i in range(400)
        for s in (1, 2)
    ]
    kept = []
    for _evaluator in range(2):
        stage = TrafficStage(groups, dataset_id="fleet", sample=0.25)
        out = await stage.handle(records)
        kept.append({r.trace_context for r in out if isinstance(r, RagResponse)})
        assert stage.counts.records + stage.counts.sampled_out == len(records)
    assert kept[0] == kept[1]
    traces = {c.split("-")[0] for c in kept[0] if c}
    assert all(f"{t}-{s:016x}" in kept[0] for t in traces for s in (1, 2))
    # 400 traces at p = 0.25: the binomial's sd is about 8.7, so 60–140 is over 4.5 sd
    assert 60 <= len(traces) <= 140
    everything = TrafficStage(groups, dataset_id="fleet", sample=1.0)
    nothing = TrafficStage(groups, dataset_id="fleet", sample=0.0)
    assert len(await everything.handle(records[:10])) == 10
    assert await nothing.handle(records[:10]) == [] and nothing.counts.sampled_out == 10
    with pytest.raises(ValueError, match="between 0 and 1"):
        TrafficStage(groups, dataset_id="fleet", sample=1.5)


async def test_personal_data_is_masked_before_grounding_and_judging(
    groups: list[SemanticGroup],
) -> None:
    """With ``pii`` the response carries no e-mail or phone, the question still matches, and the
    answer's figures the judge reads survive."""
    record = _record(
        "how many berths does rotterdam have? reply to jan.smit@example.nl or +31 10 252 1010",
        "Rotterdam has 320 berths; call (010) 252 1010 for a slot.",
    )
    plain = await TrafficStage(groups, dataset_id="fleet").handle([record])
    masked = await TrafficStage(groups, dataset_id="fleet", pii=True).handle([record])
    assert len(plain) == len(masked) == 1
    (response,) = masked
    assert isinstance(response, RagResponse) and isinstance(plain[0], RagResponse)
    assert response.group_id == plain[0].group_id
    text = f"{response.query} {response.answer}"
    assert "jan.smit@example.nl" in plain[0].query
    assert "@" not in text and "252" not in text and "[email]" in text and "[phone]" in text
    assert "320 berths" in (response.answer or "")
