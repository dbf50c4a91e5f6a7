"""Message contracts: round trip, forbidden extras, schema version, field carry-forward."""

from __future__ import annotations

import uuid

import orjson
import pytest

from groundwatch.contracts import (
    SCHEMA_VERSION,
    DeadLetter,
    HumanVerdict,
    Judgement,
    Probe,
    RagResponse,
    TargetStatus,
    Topics,
)
from groundwatch.core.model import AnswerType, Expected, Verdict
from groundwatch.errors import PoisonMessage

pytestmark = pytest.mark.unit


def make_probe(**over: object) -> Probe:
    fields: dict[str, object] = dict(
        probe_id=uuid.uuid4(),
        run_id="r1",
        dataset_id="d",
        group_id="g1",
        form_id="f1",
        cohort="short",
        target="ref",
        query="location of 'Acme'?",
        expected=Expected(values=["Oslo"], types=[AnswerType.TEXT]),
        group_forms=3,
    )
    fields.update(over)
    return Probe(**fields)  # type: ignore[arg-type]


def test_round_trip_every_topic() -> None:
    topics = Topics("gw.")
    probe = make_probe()
    resp = RagResponse.for_probe(probe, status=TargetStatus.OK, answer="Oslo", retrieved_ids=["d1"])
    judg = Judgement.for_response(resp, verdict=Verdict.CORRECT, tier="exact")
    for topic, msg in ((topics.probes, probe), (topics.responses, resp), (topics.judgements, judg)):
        assert topic.decode(topic.encode(msg)) == msg
    assert (
        judg.probe_id == probe.probe_id and judg.group_forms == 3 and judg.retrieved_ids == ["d1"]
    )
    assert topics.all() == [
        "gw.probes",
        "gw.responses",
        "gw.judgements",
        "gw.dead-letter",
        "gw.traffic",
        "gw.human-verdicts",
    ]


def test_human_verdict_round_trip_key_and_refusals() -> None:
    topics = Topics("gw.")
    fields: dict[str, object] = dict(
        probe_id=uuid.uuid4(),
        dataset_id="d",
        target="ref",
        cohort="short",
        group_id="g1",
        verdict="incorrect",
        revision=3,
        who="ann",
    )
    msg = HumanVerdict(**fields)  # type: ignore[arg-type]
    assert topics.human_verdicts.decode(msg.to_bytes()) == msg
    assert msg.key == b"g1" and msg.schema_version == SCHEMA_VERSION  # lands with its group
    withdrawn = HumanVerdict(**{**fields, "verdict": None})  # type: ignore[arg-type]
    assert topics.human_verdicts.decode(withdrawn.to_bytes()).verdict is None
    for bad in ({"verdict": "undecided"}, {"revision": 0}, {"who": ""}, {"group_id": "a b"}):
        raw = orjson.dumps({**fields, "probe_id": str(fields["probe_id"]), **bad})
        with pytest.raises(PoisonMessage):
            topics.human_verdicts.decode(raw)


def test_key_is_group_id() -> None:
    assert make_probe(group_id="abc").key == b"abc"


@pytest.mark.parametrize(
    "raw, needle",
    [
        (b"{not json", "Invalid JSON"),
        (b'{"probe_id": "x"}', "Field required"),
        (None, "Extra inputs are not permitted"),
        (b"", "EOF"),
    ],
)
def test_bad_messages_raise_poison(raw: bytes | None, needle: str) -> None:
    topics = Topics()
    if raw is None:
        data = orjson.loads(make_probe().to_bytes())
        data["surprise"] = 1
        raw = orjson.dumps(data)
    with pytest.raises(PoisonMessage, match=needle):
        topics.probes.decode(raw)


def test_newer_schema_version_is_rejected() -> None:
    data = orjson.loads(make_probe().to_bytes())
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(PoisonMessage, match="schema_version"):
        Topics().probes.decode(orjson.dumps(data))


def test_version_2_probes_are_still_read_and_version_3_carries_the_domain() -> None:
    from groundwatch.core.model import ColumnDomain, Expected

    data = orjson.loads(make_probe().to_bytes())
    assert data["schema_version"] == SCHEMA_VERSION
    for key in ("domain", "attributes", "alternatives"):
        data["expected"].pop(key)
    data["schema_version"] = 2
    old = Topics().probes.decode(orjson.dumps(data))
    assert old.expected.domain == [] and old.expected.attributes == []
    domain = ColumnDomain.of(["Calgary", "Winnipeg"])
    assert domain.id == ColumnDomain.of(["Winnipeg", "Calgary"]).id  # order-independent
    rich = make_probe(
        expected=Expected(
            values=["Calgary"], domain=[domain], attributes=["Lethbridge"],
            alternatives=[["YYC"]],
        )
    )  # fmt: skip
    again = Topics().probes.decode(rich.to_bytes())
    assert again.expected == rich.expected


def test_version_3_judgements_with_flat_scores_are_still_read_into_the_families() -> None:
    """Schema 4 types a judgement's scores; a judge of schema 3 sent a flat dict of numbers."""
    from groundwatch.core.scores import AnswerScores, AuditScore, RulesScores, Scores

    response = RagResponse.for_probe(make_probe(), status=TargetStatus.OK, answer="Oslo")
    scores = Scores(
        answer=AnswerScores(5, 1.0, 1.0, 1.0, 1.0),
        audit=AuditScore("contains", False),
        rules=RulesScores(1.0, 1.0, 1.0),
    )
    judgement = Judgement.for_response(
        response, verdict=Verdict.CORRECT, tier="contains", scores=scores
    )
    data = orjson.loads(judgement.to_bytes())
    assert data["schema_version"] == SCHEMA_VERSION == 5
    assert data["scores"]["audit"] == {"tier": "contains", "agreed": False}
    assert Topics().judgements.decode(judgement.to_bytes()).scores == scores
    data["schema_version"] = 3
    data["scores"] = {
        "token_precision": 1.0,
        "token_recall": 1.0,
        "token_f1": 1.0,
        "metric.k": 5.0,
        "metric.exact_match": 1.0,
        "metric.token_f1": 1.0,
        "metric.rouge_l": 1.0,
        "metric.bleu": 1.0,
        "audit.contains": 0.0,
    }
    old = Topics().judgements.decode(orjson.dumps(data))
    assert old.scores == scores
    data["scores"]["metric.bleu"] = "NaN"  # refused then, refused now
    with pytest.raises(PoisonMessage, match="scores"):
        Topics().judgements.decode(orjson.dumps(data))


def test_oversize_text_is_rejected() -> None:
    with pytest.raises(ValueError):
        make_probe(query="x" * 20_001)


def test_dead_letter_keeps_raw_bytes() -> None:
    import base64

    raw = b"\x00\xffnot json"
    dl = DeadLetter(
        error="bad",
        source_topic="gw.probes",
        partition=1,
        offset=7,
        raw_b64=base64.b64encode(raw).decode(),
        service="judge",
    )
    assert Topics().dead_letter.decode(dl.to_bytes()).raw == raw


def test_a_judgement_leaves_the_columns_domain_behind() -> None:
    from groundwatch.contracts import Judgement, RagResponse, TargetStatus
    from groundwatch.core.model import ColumnDomain, Expected, Verdict

    exp = Expected(values=["Calgary"], domain=[ColumnDomain.of(["Calgary", "Winnipeg"])],
                   attributes=["Lethbridge"])  # fmt: skip
    response = RagResponse.for_probe(make_probe(expected=exp), status=TargetStatus.OK, answer="x")
    j = Judgement.for_response(response, verdict=Verdict.INCORRECT, tier="conflict", reason="r")
    assert j.expected.domain == [] and j.expected.attributes == ["Lethbridge"]
    assert j.expected.values == ["Calgary"] and response.expected.domain
    again = Judgement.for_response(response, verdict=Verdict.CORRECT, tier="t", reason="r")
    assert again.expected is j.expected  # one copy per expected answer
    assert Topics().judgements.decode(j.to_bytes()) == j


def test_a_deployments_consumer_groups_are_scoped_by_its_topic_prefix() -> None:
    from groundwatch.adapters.bus.memory import MemoryBus
    from groundwatch.contracts import DEFAULT_PREFIX, Topics
    from groundwatch.runtime.consume import consume
    from groundwatch.stages.dead_letters.stage import DeadLetterKeeper

    # the default deployment keeps the bare names its offsets are committed under
    assert Topics(DEFAULT_PREFIX).group("judge") == "judge" == Topics("").group("judge")
    # another prefix (staging beside production, two test runs on one broker) has its own groups
    assert Topics("staging.").group("judge") == "staging.judge"
    loop = consume(DeadLetterKeeper(store=None), MemoryBus(), Topics("staging."))  # type: ignore[arg-type]
    assert loop.group == "staging.dead-letter-keeper"
