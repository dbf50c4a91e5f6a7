"""Grounded candidates: other values of the answer column, bounded, deterministic, never the gold."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.sources import generate_groups
from groundwatch.core.generation.candidates import ColumnSample, candidates_for
from groundwatch.core.model import MAX_CANDIDATES, AnswerType

pytestmark = pytest.mark.unit


def test_sample_excludes_the_gold_and_its_case_variants() -> None:
    sample = ColumnSample.of(["USA", "UK", "France", None, "", "usa", "Élan", "UK"])
    assert sorted(sample.values) == ["France", "UK", "USA", "usa", "Élan"]
    cands = sample.candidates(["USA"])
    assert sorted(cands) == ["France", "UK", "Élan"]
    assert sample.candidates(["elan"]) == [v for v in sample.values if v not in ("Élan",)]


def test_large_domain_is_a_bounded_deterministic_sketch() -> None:
    values = [f"Company {i}" for i in range(5000)]
    a = ColumnSample.of(values)
    b = ColumnSample.of(reversed(values))  # order of the rows does not matter
    assert a == b
    assert len(a.values) == MAX_CANDIDATES + 1
    gold = a.values[0]
    cands = a.candidates([gold])
    assert len(cands) == MAX_CANDIDATES and gold not in cands
    # a gold outside the sample still leaves at most MAX_CANDIDATES
    assert len(a.candidates(["not in the sample"])) == MAX_CANDIDATES
    # not the first values in sort order: a sample of the whole domain
    assert max(int(v.split()[1]) for v in a.values) > 2500


def test_values_are_formatted_and_too_long_ones_skipped() -> None:
    sample = ColumnSample.of([dt.date(2024, 1, 2), 3.0, "x" * 300, "ok"])
    assert sorted(sample.values) == ["2024-01-02", "3", "ok"]


def test_every_gold_part_is_excluded_from_every_column() -> None:
    s = ColumnSample.of(["Mining", "Retail", "Banking"])
    out = candidates_for([s, s], ["Mining", "Retail"])
    assert out == [["Banking"], ["Banking"]]
    assert candidates_for([None, None], ["a", "b"]) == []


def test_generated_groups_carry_candidates_of_text_columns(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    engine = create_engine(f"sqlite:///{db}")
    industries = ["Mining", "Retail", "Banking", "Energy", "Transport"]
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE company (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                "industry TEXT NOT NULL, founded INTEGER NOT NULL)"
            )
        )
        for i in range(20):
            conn.execute(
                text("INSERT INTO company VALUES (:i, :n, :ind, :f)"),
                {"i": i, "n": f"Firm {chr(65 + i)}", "ind": industries[i % 5], "f": 1950 + i},
            )
    engine.dispose()
    groups = generate_groups(f"sqlite:///{db}", k=1, cohorts=("short",)).groups
    about_industry = [
        g
        for g in groups
        if g.answer.types == [AnswerType.TEXT] and g.answer.values[0] in industries
    ]
    assert about_industry
    ids = set()
    for g in about_industry:
        # the whole column (the gold among it), shared by the template's groups, no candidates
        (domain,) = g.answer.domain
        assert domain is not None and domain.complete
        assert sorted(domain.values) == sorted(industries)
        assert g.answer.values[0] in domain.values and g.answer.candidates == []
        ids.add(domain.id)
        # the asked row's other text values: its name (the slot) is the question's own
        assert g.answer.attributes == [] or g.params
    assert len(ids) == 1
    numeric = [g for g in groups if g.answer.types == [AnswerType.NUMBER]]
    assert numeric and all(not any(g.answer.domain) for g in numeric)
