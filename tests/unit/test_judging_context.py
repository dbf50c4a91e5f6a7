"""The text evidence: does a text state the gold answer about the question's entities?"""

from __future__ import annotations

import uuid

import pytest

from groundwatch.contracts import Probe, RagResponse, TargetStatus
from groundwatch.core.judging.context import (
    Stated,
    gold_in_contexts,
    quoted_entities,
    states,
)
from groundwatch.core.judging.gold import prepare_gold
from groundwatch.core.model import Expected, Verdict
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.judge.tiered import TieredJudge

pytestmark = pytest.mark.unit

Q = "Start date for project 'Blue Lagoon Luxury Resort'"
DATE = Expected(values=["2023-04-01"])


def test_quoted_entities() -> None:
    q = "Name of the employee with title 'Senior Engineer' in \u201cUrban Planning\u201d, O'Neil's team"
    assert quoted_entities(q) == ("Senior Engineer", "Urban Planning")
    assert quoted_entities("Where is \"Leeds\" and 'Leeds'?") == ("Leeds",)
    assert quoted_entities("no names here") == ()


def test_stated_needs_the_gold_beside_every_entity() -> None:
    gold = prepare_gold(DATE)
    ents = ("Blue Lagoon Luxury Resort",)
    # dates are compared as dates
    assert states("The Blue Lagoon Luxury Resort began on April 1, 2023.", gold, ents) == (
        Stated.STATED
    )
    # the value only in a sentence about something else: it may be another row's
    other = "The Blue Lagoon Luxury Resort is large. Harbour Works began on April 1, 2023."
    assert states(other, gold, ents) is Stated.ELSEWHERE
    assert states("The Blue Lagoon Luxury Resort began in 2023.", gold, ents) is Stated.ABSENT
    assert states("It began on 1 April 2023.", gold, ()) is Stated.STATED  # no entity known
    # a row singled out by two values: each must meet the answer somewhere
    name = prepare_gold(Expected(values=["Rowena Northcott"]))
    two = ("Senior Engineer", "Urban Planning")
    both = (
        "The job title of Rowena Northcott is Senior Engineer. "
        "The department of Rowena Northcott is Urban Planning."
    )
    assert states(both, name, two) is Stated.STATED
    one = "The department of Rowena Northcott is Urban Planning. Ann is a Senior Engineer."
    assert states(one, name, two) is Stated.ELSEWHERE


def test_gold_in_contexts_is_a_three_way_summary() -> None:
    yes = ["The Blue Lagoon Luxury Resort began on April 1, 2023."]
    assert gold_in_contexts(DATE, yes, Q) is True
    assert gold_in_contexts(DATE, ["Nothing about dates.", "Or this."], Q) is False
    elsewhere = ["The Blue Lagoon Luxury Resort is large.", "Harbour Works began 2023-04-01."]
    assert gold_in_contexts(DATE, elsewhere, Q) is None
    assert gold_in_contexts(DATE, [], Q) is None  # no contexts: no evidence
    unanswerable = Expected(values=[], answerable=False)
    assert gold_in_contexts(unanswerable, yes, Q) is None
    # a multi-column answer needs every column
    pair = Expected(values=["Leeds", "United Kingdom"])
    assert gold_in_contexts(pair, ["'X' is in Leeds."], "Where is 'X'?") is False
    assert gold_in_contexts(pair, ["'X' is in Leeds, United Kingdom."], "Where is 'X'?") is True


async def test_the_judge_stage_summarises_the_contexts_and_drops_them() -> None:
    probe = Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="short",
        target="t",
        query=Q,
        expected=DATE,
    )
    stage = JudgeStage(TieredJudge().judge)
    with_it = RagResponse.for_probe(
        probe,
        status=TargetStatus.OK,
        answer="I don't know.",
        contexts=["The Blue Lagoon Luxury Resort began on April 1, 2023."],
    )
    without = RagResponse.for_probe(
        probe, status=TargetStatus.OK, answer="2023-04-01", contexts=["Unrelated text."]
    )
    none = RagResponse.for_probe(probe, status=TargetStatus.OK, answer="2023-04-01")
    error = RagResponse.for_probe(probe, status=TargetStatus.ERROR, error_kind="timeout")
    j1, j2, j3, j4 = await stage.handle([with_it, without, none, error])
    assert (j1.context_has_answer, j2.context_has_answer) == (True, False)
    assert j3.context_has_answer is None and j4.context_has_answer is None
    assert j2.verdict is Verdict.CORRECT  # the flag is about the retrieval, not the answer
    assert "contexts" not in j1.model_dump()
