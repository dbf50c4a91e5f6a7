"""Answer versions: a changed source fact starts a new version; an old answer is judged stale and
attributed as stale, apart from gaps and errors."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from groundwatch.adapters.sources.connect import readonly_engine
from groundwatch.adapters.sources.refresh import refresh_answers
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.model import AnswerType, Expected, SemanticGroup, TextForm, Verdict
from groundwatch.core.tagging import Cause, Tagger
from groundwatch.core.versions import next_version
from groundwatch.stages.analytics.observe import observation_from_judgement

pytestmark = pytest.mark.unit


def test_next_version_keeps_the_old_answer_as_stale() -> None:
    e = Expected(values=["Oslo"], types=[AnswerType.TEXT])
    assert next_version(e, ["Oslo"], [AnswerType.TEXT]) is None
    v2 = next_version(e, ["Bergen"], [AnswerType.TEXT])
    assert (
        v2 is not None
        and v2.version == 2
        and v2.values == ["Bergen"]
        and v2.stale_values == [["Oslo"]]
    )
    v3 = next_version(v2, ["Oslo"], [AnswerType.TEXT])  # moved back: Oslo is current, not stale
    assert v3 is not None and v3.stale_values == [["Bergen"]]


def test_refresh_reads_the_changed_fact_from_a_read_only_source(tmp_path: Path) -> None:
    db = tmp_path / "src.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE client (name TEXT, location TEXT)")
    con.executemany("INSERT INTO client VALUES (?, ?)", [("Acme", "Oslo"), ("Brio", "Rome")])
    con.commit()
    sql = "SELECT location FROM client WHERE name = :name"
    groups = [
        SemanticGroup(
            group_id=n,
            sql=sql,
            params={"name": n},
            answer=Expected(values=[loc], types=[AnswerType.TEXT]),
            forms=[TextForm(form_id="f", cohort="short", text=f"location of {n}")],
        )
        for n, loc in (("Acme", "Oslo"), ("Brio", "Rome"), ("Gone", "Paris"))
    ]
    con.execute("UPDATE client SET location = 'Bergen' WHERE name = 'Acme'")
    con.commit()
    con.close()
    engine = readonly_engine(f"sqlite:///{db}")
    result = refresh_answers(engine, groups)
    engine.dispose()
    assert result.changed == ["Acme"] and result.vanished == ["Gone"]
    acme = result.groups[0].answer
    assert acme.values == ["Bergen"] and acme.version == 2 and acme.stale_values == [["Oslo"]]
    assert result.groups[1] is groups[1]


def test_stale_answer_is_its_own_failure_kind() -> None:
    expected = Expected(
        values=["Bergen"], types=[AnswerType.TEXT], version=2, stale_values=[["Oslo"]]
    )
    decision = judge_deterministic("Where is Acme located?", expected, "Acme is located in Oslo.")
    assert decision.verdict is Verdict.INCORRECT and decision.reason.startswith("stale")
    probe = Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="short",
        target="t",
        query="q",
        expected=expected,
        group_forms=2,
    )
    resp = RagResponse.for_probe(probe, status=TargetStatus.OK, answer="Oslo")
    stale = Judgement.for_response(
        resp, verdict=decision.verdict, tier=decision.tier, reason=decision.reason
    )
    right = Judgement.for_response(
        RagResponse.for_probe(
            probe.model_copy(update={"probe_id": uuid.uuid4(), "form_id": "f2"}),
            status=TargetStatus.OK,
            answer="Bergen",
        ),
        verdict=Verdict.CORRECT,
        tier="exact",
    )
    tagger = Tagger()
    for j in (stale, right):
        tagger.apply(observation_from_judgement(j))
    assert tagger.cause_counts() == {("t", "short", Cause.STALE): 1}
