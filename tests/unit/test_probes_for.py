"""The planner's fast path (a group's siblings carry its validated probe, the forms' fields are
validated once and kept between cycles, probe ids from one random read) makes exactly the probes
full validation makes, and refuses what full validation refuses."""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from groundwatch.contracts import Probe
from groundwatch.core.model import Expected, SemanticGroup, TextForm
from groundwatch.stages.generator.planner import FormFields, new_probe_ids, probes_for

pytestmark = pytest.mark.unit


def group(texts: list[str], cohorts: list[str], gid: str = "g1") -> SemanticGroup:
    return SemanticGroup(
        group_id=gid,
        dataset_id="d",
        sql="SELECT 1",
        params={},
        answer=Expected(values=["Paris"], types=["text"]),
        forms=[
            TextForm(form_id=f"f{i}", cohort=c, text=t)
            for i, (t, c) in enumerate(zip(texts, cohorts, strict=True))
        ],
    )


def test_probe_ids_are_time_ordered_version_7_uuids() -> None:
    before = time.time_ns() // 1_000_000
    ids = new_probe_ids(500)
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == 500
    assert ids == sorted(ids) and [str(u) for u in ids] == sorted(str(u) for u in ids)
    for u in ids:
        assert u.version == 7 and u.variant == uuid.RFC_4122
        assert before <= u.int >> 80 <= after  # RFC 9562: the first 48 bits are Unix ms
        again = uuid.UUID(str(u))
        assert again == u and hash(again) == hash(u) and again.bytes == u.bytes
    # the 74 random bits vary: not a counter, not a constant
    assert len({u.int & ((1 << 62) - 1) for u in ids}) == 500
    assert len({(u.int >> 64) & 0xFFF for u in ids}) > 300


def test_later_probe_ids_sort_after_earlier_ones() -> None:
    """What keeps every store's primary-key index appending: a later millisecond's ids sort
    after an earlier one's, as UUIDs and as the stored strings."""
    first, second = (
        new_probe_ids(50, now_ms=1_700_000_000_000),
        new_probe_ids(50, 1_700_000_000_001),
    )
    assert max(first) < min(second) and max(map(str, first)) < min(map(str, second))


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=5),
    targets=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
)
def test_fast_probes_equal_fully_validated_ones(texts: list[str], targets: list[str]) -> None:
    cohorts = ["short" if i % 2 else "long" for i in range(len(texts))]
    g = group(texts, cohorts)
    cache: FormFields = {}
    for cycle in (1, 2):  # the second cycle takes the forms' fields from the cache
        probes = list(probes_for([g], targets, "run1", series="s", cycle=cycle, validated=cache))
        assert len(probes) == len(texts) * len(targets)
        assert len({p.probe_id for p in probes}) == len(probes)
        for p in probes:
            assert Probe(**p.__dict__) == p  # what full validation makes of the same values
            assert Probe.model_validate_json(p.to_bytes()) == p
            assert p.cycle == cycle and p.expected == g.answer


def test_a_form_the_contract_refuses_is_refused_on_the_fast_path() -> None:
    g = group(["ok", "also ok"], ["short", "short"])
    bad = g.model_copy(
        update={"forms": [g.forms[0], g.forms[1].model_copy(update={"cohort": "bad cohort!"})]}
    )
    with pytest.raises(ValidationError):
        list(probes_for([bad], ["a"], "run1"))
    with pytest.raises(TypeError, match="no field"):
        Probe.validate_fields(nope=1)


def test_text_with_unstorable_characters_is_replaced_on_both_paths() -> None:
    g = group(["first", "sec\x00ond"], ["short", "short"])
    probes = list(probes_for([g], ["a"], "run1"))
    assert probes[1].query == "sec\ufffdond"
    assert Probe(**{**probes[1].__dict__, "query": "sec\x00ond"}).query == probes[1].query
