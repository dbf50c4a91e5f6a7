"""RagResponse.answered (the runner's ok response without re-validating each string) builds
exactly what RagResponse.for_probe builds, and falls back to it for anything unusual."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from groundwatch.contracts import (
    MAX_CONTEXTS,
    MAX_DOC_ID,
    MAX_DOC_IDS,
    MAX_SAMPLES,
    MAX_TEXT,
    RagResponse,
    TargetStatus,
)
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.unit
PROBE = probe("t", "Where is Acme?")


def both(*args: Any) -> tuple[RagResponse | str, RagResponse | str]:
    """(answered, for_probe) on the same input; a validation error as its first message."""
    answer, ids, contexts, samples, latency, truncated = args
    out: list[RagResponse | str] = []
    for build in (
        lambda: RagResponse.answered(PROBE, answer, ids, contexts, samples, latency, truncated),
        lambda: RagResponse.for_probe(
            PROBE,
            status=TargetStatus.OK,
            answer=answer,
            retrieved_ids=ids,
            contexts=contexts,
            samples=samples,
            latency_s=latency,
            answer_truncated=truncated,
        ),
    ):
        try:
            out.append(build())
        except ValidationError as exc:
            out.append(exc.errors()[0]["msg"])
    return out[0], out[1]


def assert_same(fast: RagResponse | str, slow: RagResponse | str) -> None:
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
        return
    a, b = dict(fast.__dict__), dict(slow.__dict__)
    assert list(a) == list(b)  # same fields, same order (a new field must be added to both)
    a.pop("responded_at"), b.pop("responded_at")
    assert a == b
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump_json(exclude={"responded_at"}) == slow.model_dump_json(
        exclude={"responded_at"}
    )


CASES = [
    ("Oslo", ["d1"], ["Acme is in Oslo."], [], 0.01, False),
    ("", [], [], [], 0.0, False),
    (
        "x" * MAX_TEXT,
        ["i" * MAX_DOC_ID] * MAX_DOC_IDS,
        ["c" * MAX_TEXT] * 3,
        ["s"] * MAX_SAMPLES,
        1.5,
        True,
    ),
    ("x" * (MAX_TEXT + 1), [], [], [], 0.1, False),  # over a cap: refused by both
    ("a", ["d"] * (MAX_DOC_IDS + 1), [], [], 0.1, False),
    ("a", [], ["c"] * (MAX_CONTEXTS + 1), [], 0.1, False),
    ("a", [], [], ["s"] * (MAX_SAMPLES + 1), 0.1, False),
    ("a", ["i" * (MAX_DOC_ID + 1)], [], [], 0.1, False),
    ("Os\x00lo", ["d\x00"], ["c"], [], 0.1, False),  # unstorable: replaced and flagged by both
    ("a", ["d"], ["\ud800c"], ["s\x00"], 0.1, False),
    ("Ø\u00e9", ["dé"], ["ctx ✓"], [], 0.1, False),  # not ASCII, storable
    ("a", [7], [], [], 0.1, False),  # not text: both as pydantic decides
    ("a", [], [], [], float("nan"), False),
    ("a", [], [], [], 1, False),  # an int latency
]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_answered_equals_for_probe(case: tuple[Any, ...]) -> None:
    assert_same(*both(*case))


text = st.text(st.characters(codec=None, blacklist_categories=()), max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    text,
    st.lists(text, max_size=3),
    st.lists(text, max_size=3),
    st.lists(text, max_size=2),
    st.floats(min_value=0, max_value=100),
    st.booleans(),
)
def test_answered_equals_for_probe_on_any_text(
    answer: str, ids: list[str], contexts: list[str], samples: list[str], latency: float, cut: bool
) -> None:
    assert_same(*both(answer, ids, contexts, samples, latency, cut))
