"""The analytics stage's wire → domain mapping: the id the stage formatted already, and a
verdict validated as the enum, give exactly the observation of the plain mapping."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from groundwatch.contracts import Judgement
from groundwatch.core.model import Expected, Verdict
from groundwatch.stages.analytics.observe import observation_from_judgement

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("verdict", list(Verdict))
def test_given_probe_id_and_enum_verdict_map_the_same(verdict: Verdict) -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    j = Judgement(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="long",
        target="prod",
        query="q?",
        expected=Expected(values=["x"], version=2),
        group_forms=3,
        relevant_doc_ids=["d1"],
        verdict=verdict,
        tier="exact",
        reason="stale: v1",
        scores={"f1": 0.5},
        retrieved_ids=["d1", "d2"],
        probe_created_at=created,
        judged_at=created + timedelta(seconds=2.5),
    )
    plain = observation_from_judgement(j)
    assert observation_from_judgement(j, str(j.probe_id)) == plain
    assert plain.probe_id == str(j.probe_id) and plain.verdict is verdict
    assert type(plain.verdict) is Verdict and plain.stale and plain.truth_version == 2
    # a message built without validation carries the verdict's text: still the enum here
    raw = Judgement.model_construct(**{**dict(j), "verdict": verdict.value})
    assert observation_from_judgement(raw) == plain
    assert observation_from_judgement(raw).verdict is verdict
