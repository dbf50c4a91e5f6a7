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


def _shop(db: Path) -> None:
    con = sqlite3.connect(db)
    con.executescript(
        """
        CREATE TABLE product (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL, discontinued INTEGER NOT NULL,
            launched DATETIME NOT NULL, price_usd REAL NOT NULL
        );
        """
    )
    con.executemany(
        "INSERT INTO product VALUES (?, ?, ?, ?, ?)",
        [
            (i, f"Gadget {chr(65 + i)}", i % 2, f"2022-0{1 + i % 9}-1{i % 10} 00:00:00", 9.5 + i)
            for i in range(12)
        ],
    )
    con.commit()
    con.close()


def test_a_refresh_reads_each_value_as_generation_said_it(tmp_path: Path) -> None:
    """The refresh re-reads a group's answer in the form generation gave its gold — a flag's 0/1
    as yes/no, a midnight date-time as its day, money with its currency — so an unchanged fact
    is no new version (a flag's '1' was one: its right 'Yes, …' answers became stale and the
    group a false gap), and a changed one reads as generation would say it."""
    from groundwatch.adapters.sources.generate import generate_groups

    db = tmp_path / "shop.db"
    _shop(db)
    groups = generate_groups(f"sqlite:///{db}", k=2).groups
    by_gold: dict[str, list[SemanticGroup]] = {}
    for g in groups:
        by_gold.setdefault(g.answer.values[0], []).append(g)
    flags = by_gold.get("yes", []) + by_gold.get("no", [])
    days = [g for g in groups if g.answer.types == [AnswerType.DATE]]
    money = [g for g in groups if g.answer.values[0].endswith(" USD")]
    assert flags and days and money, sorted(by_gold)[:20]
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        unchanged = refresh_answers(engine, groups)
    finally:
        engine.dispose()
    assert unchanged.changed == [] and unchanged.vanished == []

    con = sqlite3.connect(db)
    con.execute(
        "UPDATE product SET discontinued = 1 - discontinued, launched = '2023-05-06 00:00:00',"
        " price_usd = price_usd + 1"
    )
    con.commit()
    con.close()
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        changed = refresh_answers(engine, flags + days + money)
    finally:
        engine.dispose()
    after = {g.group_id: g.answer for g in changed.groups}
    for g in flags:
        assert after[g.group_id].values == ["no" if g.answer.values == ["yes"] else "yes"]
        assert after[g.group_id].version == 2
    for g in days:
        assert after[g.group_id].values == ["2023-05-06"], after[g.group_id].values
    for g in money:
        old = float(g.answer.values[0].removesuffix(" USD"))
        new = after[g.group_id].values[0]
        assert new.endswith(" USD") and float(new.removesuffix(" USD")) == old + 1, new
