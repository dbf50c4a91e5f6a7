"""``groundwatch.evaluate`` from Python: typed results and ``Report.to_pandas``, also from inside
a running event loop (a notebook)."""

from __future__ import annotations

import asyncio

import pytest

import groundwatch
from groundwatch.core.model import Expected, SemanticGroup, TextForm

pytestmark = pytest.mark.unit


def facts() -> list[SemanticGroup]:
    out = []
    for i, city in enumerate(["Espoo", "Lisbon", "Ghent", "Tartu"]):
        gid = f"{i:016x}"
        out.append(
            SemanticGroup(
                group_id=gid,
                dataset_id="mine",
                sql="SELECT city FROM people WHERE name = :name",
                params={"name": f"P{i}"},
                answer=Expected(values=[city]),
                forms=[
                    TextForm(
                        form_id=f"{gid}-{c}{k}", cohort=c, text=f"Where does P{i} live {c}{k}?"
                    )
                    for c in ("short", "long")
                    for k in range(2)
                ],
            )
        )
    return out


KNOWN = {"P0": "Espoo", "P1": "Lisbon", "P2": "Ghent"}  # P3's city is missing: a gap


def rag(question: str) -> str:
    name = question.split()[2]
    return f"{name} lives in {KNOWN[name]}." if name in KNOWN else "I don't know."


def test_evaluate_returns_typed_results_and_a_data_frame() -> None:
    report = groundwatch.evaluate(facts(), {"mine": rag})
    assert isinstance(report, groundwatch.Report)
    assert report.cohorts["short"].gap_groups == 1 and report.cohorts["short"].acc_db == 0.75
    (gap,) = report.failing_groups
    assert gap.params == {"name": "P3"} and gap.gold == ["Tartu"] and gap.knowledge_gap
    assert {f.answer for f in gap.forms} == {"I don't know."}
    assert len(report.groups) == 4  # every group, robust ones too
    df = report.to_pandas()
    assert len(df) == 16 and set(df["verdict"]) == {"correct", "incorrect"}
    assert set(df.loc[df["group_status"] == "gap", "question"].str.contains("P3")) == {True}


def test_evaluate_works_under_a_running_event_loop() -> None:
    async def notebook_cell() -> groundwatch.Report:
        return groundwatch.evaluate(facts(), {"mine": rag})

    report = asyncio.run(notebook_cell())
    assert report.cohorts["long"].gap_groups == 1


def test_evaluate_rejects_an_empty_dataset() -> None:
    from groundwatch.errors import ConfigError

    with pytest.raises(ConfigError, match="no semantic groups"):
        groundwatch.evaluate([], {"mine": rag})


def test_a_target_that_answered_nothing_is_warned_about() -> None:
    """What `groundwatch run` exits 3 for: from Python, a warning naming the first error (a
    user's callable failed on every probe and the report looked like a result)."""

    def broken(question: str) -> str:
        raise RuntimeError("database is locked")

    with pytest.warns(
        groundwatch.TargetFailedWarning, match="target down: all 16 probes of cycle 1 failed"
    ):
        report = groundwatch.evaluate(facts(), {"down": broken, "mine": rag})
    assert report.target_health["down"].all_failed and not report.target_health["mine"].errors
