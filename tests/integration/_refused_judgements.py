"""A refused answer's judgement for one group: the smallest input that makes a group a gap,
for the tests of people's verdicts that then correct it."""

from __future__ import annotations

import uuid

from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus
from groundwatch.core.model import AnswerType, Expected, Verdict


def refused_judgement(group_id: str, n: int) -> Judgement:
    """Group ``group_id``'s one short form asked of target ``t``, answered "I don't know."."""
    probe = Probe(
        probe_id=uuid.uuid4(),
        run_id="r1",
        series="s",
        cycle=1,
        dataset_id="d",
        group_id=group_id,
        form_id="f1",
        cohort="short",
        target="t",
        query=f"where is thing {n}?",
        expected=Expected(values=[f"place {n}"], types=[AnswerType.TEXT]),
        group_forms=1,
    )
    resp = RagResponse.for_probe(probe, status=TargetStatus.OK, answer="I don't know.")
    return Judgement.for_response(resp, verdict=Verdict.INCORRECT, tier="refusal")
