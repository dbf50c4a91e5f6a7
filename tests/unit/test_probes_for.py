"""The planner's fast path (a group's siblings carry its validated probe, the forms' fields are
validated once and kept between cycles, probe ids from one random read) makes exactly the probes
full validation makes, and refuses what full validation refuses."""

from __future__ import annotations

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


def test_probe_ids_are_random_version_4_uuids() -> None:
    ids = new_probe_ids(500)
    assert len(set(ids)) == 500
    for u in ids:
        assert u.version == 4 and u.variant == uuid.RFC_4122
        again = uuid.UUID(str(u))
        assert again == u and hash(again) == hash(u) and again.bytes == u.bytes


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
