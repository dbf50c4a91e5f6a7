"""Judgement.for_response's plain path (the judge's usual values checked without a pydantic
model) builds exactly what validation builds, and leaves anything unusual to validation."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import groundwatch.contracts as contracts
from groundwatch.contracts import Judgement, RagResponse, TargetStatus
from groundwatch.core.model import Verdict
from groundwatch.core.scores import (
    NO_SCORES,
    AnswerScores,
    AuditScore,
    EvaluatorCall,
    ReferenceFreeScores,
    RulesScores,
    Scores,
)
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.unit
RESPONSE = RagResponse.for_probe(
    probe("t", "Where is Acme?"), status=TargetStatus.OK, answer="Oslo", retrieved_ids=["d1"]
)


def both(fields: dict[str, Any]) -> tuple[Judgement | str, Judgement | str]:
    """(plain path, validation) on the same fields; a validation error as its first message."""
    out: list[Judgement | str] = []
    for plain in (True, False):
        saved = contracts._judge_fields_as_they_are
        if not plain:
            contracts._judge_fields_as_they_are = lambda f, r: None  # type: ignore[assignment]
        try:
            out.append(Judgement.for_response(RESPONSE, **fields))
        except ValidationError as exc:
            out.append(str(exc.errors()[0]["msg"]))
        finally:
            contracts._judge_fields_as_they_are = saved
    return out[0], out[1]


def same(fields: dict[str, Any]) -> None:
    plain, validated = both(fields)
    if isinstance(plain, str) or isinstance(validated, str):
        assert plain == validated
        return
    a, b = plain.__dict__.copy(), validated.__dict__.copy()
    assert abs((a.pop("judged_at") - b.pop("judged_at")).total_seconds()) < 5
    assert a == b and list(a) == list(b)  # same values, same field order
    assert (
        plain.to_bytes().split(b'"judged_at"')[0] == validated.to_bytes().split(b'"judged_at"')[0]
    )


ids = st.one_of(
    st.sampled_from(["exact", "typed", "contains", "llm", "a" * 33, "a" * 64, "a" * 65, ""]),
    st.text(max_size=12),
)
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3))
finite = st.floats(allow_nan=False, allow_infinity=False)
#: The judge's typed scores (schema 4), an audit tier drawn like any identifier.
typed_scores = st.builds(
    Scores,
    answer=st.one_of(st.none(), st.builds(AnswerScores, st.integers(1, 10), finite, finite)),
    audit=st.one_of(st.none(), st.builds(AuditScore, ids, st.one_of(st.none(), st.booleans()))),
    rules=st.one_of(st.none(), st.builds(RulesScores, finite, finite, finite)),
)


@settings(max_examples=400, deadline=None)
@given(
    verdict=st.one_of(st.sampled_from(list(Verdict)), st.sampled_from(["correct", "nope", 1])),
    tier=ids,
    reason=st.one_of(st.text(max_size=30), st.just("x" * 20_001), st.just("a\x00b")),
    scores=st.one_of(st.dictionaries(ids, floats, max_size=4), typed_scores),
    prompt_version=st.one_of(st.none(), ids),
    context=st.one_of(st.none(), st.booleans(), st.just(1)),
    latency=st.one_of(st.floats(allow_nan=True), st.just(0.0), st.just(2)),
)
def test_plain_path_equals_validation(
    verdict: Any,
    tier: Any,
    reason: Any,
    scores: Any,
    prompt_version: Any,
    context: Any,
    latency: Any,
) -> None:
    same(
        {
            "verdict": verdict,
            "tier": tier,
            "reason": reason,
            "scores": scores,
            "prompt_version": prompt_version,
            "context_has_answer": context,
            "judge_latency_s": latency,
        }
    )


USUAL: dict[str, Any] = {
    "verdict": Verdict.CORRECT,
    "tier": "exact",
    "reason": "same",
    "scores": Scores(rules=RulesScores(1.0, 1.0, 1.0)),
    "prompt_version": None,
    "context_has_answer": True,
    "judge_latency_s": 0.001,
}
EDGES: list[tuple[str, Any]] = [
    ("tier", "a" * 32),
    ("tier", "a" * 33),
    ("tier", "bad tier"),
    ("tier", ""),
    ("tier", "é"),
    ("reason", "a\x00b"),
    ("reason", "a\ud800b"),
    ("reason", "x" * 20_000),
    ("reason", "x" * 20_001),
    ("reason", 5),
    ("scores", {"a" * 64: 1.0}),
    ("scores", {"a" * 65: 1.0}),
    ("scores", {"bad name": 1.0}),
    ("scores", {"f1": 1}),
    ("scores", {"f1": True}),
    ("scores", {"f1": math.nan}),
    ("scores", {"f1": math.inf}),
    ("scores", {f"s{i}": 0.5 for i in range(64)}),
    ("scores", {f"s{i}": 0.5 for i in range(65)}),
    ("scores", {"token_f1": 1.0, "token_recall": 1.0, "token_precision": 0.5}),  # schema 3
    ("scores", {}),
    ("scores", NO_SCORES),
    ("scores", Scores(audit=AuditScore("a" * 33, True))),
    ("scores", Scores(audit=AuditScore("bad tier", None))),
    ("scores", Scores(reference_free=ReferenceFreeScores(selfcheck=EvaluatorCall.NOT_SAMPLED))),
    ("scores", {"answer": {"k": 5, "bleu": 0.5}}),  # typed, as JSON
    ("scores", {"answer": {"k": 5, "bleu": math.nan}}),
    ("scores", {"answer": {"k": 0}}),
    ("scores", {"answers": {"k": 5}}),
    ("scores", {"answer": {"k": 5, "extra": 1.0}}),
    ("prompt_version", "v" * 32),
    ("prompt_version", "v" * 33),
    ("prompt_version", "v 1"),
    ("context_has_answer", 1),
    ("context_has_answer", "yes"),
    ("judge_latency_s", 1),
    ("judge_latency_s", math.nan),
    ("judge_latency_s", -math.inf),
    ("verdict", "correct"),
    ("verdict", "wrong"),
]


@pytest.mark.parametrize(("name", "value"), EDGES)
def test_each_edge_is_what_validation_makes_of_it(name: str, value: Any) -> None:
    same({**USUAL, name: value})


def test_the_judges_usual_values_take_the_plain_path() -> None:
    scores = Scores(answer=AnswerScores(5, 1.0, 1.0, 1.0, 1.0), audit=AuditScore("exact", True))
    fields = {"verdict": Verdict.CORRECT, "tier": "exact", "reason": "same", "scores": scores}
    own = contracts._judge_fields_as_they_are(fields, RESPONSE.__dict__)
    assert own is not None and own["answer"] == "Oslo" and own["retrieved_ids"] == ["d1"]
    assert own["scores"] is scores  # immutable: carried as it is
    same(fields)
    same({"verdict": Verdict.ERROR, "tier": "error"})  # defaults for the rest
    # a field a judge does not usually give, or a carried one, goes through validation
    assert contracts._judge_fields_as_they_are({**fields, "judged_at": None}, {}) is None
    assert math.isfinite(Judgement.for_response(RESPONSE, **fields).judge_latency_s)
