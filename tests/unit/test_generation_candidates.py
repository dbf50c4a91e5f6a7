"""Grounded candidates: other values of the answer column, bounded, deterministic, never the gold."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.sources import generate_groups
from groundwatch.core.generation.candidates import (
    REFERENCING_ROWS,
    ColumnSample,
    candidates_for,
    entity_attributes,
)
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


T, N, D = AnswerType.TEXT, AnswerType.NUMBER, AnswerType.DATE
PORTS = [("Bergen", "Norway"), ("Gdansk", "Poland"), ("Valletta", "Malta")]
#: name, builder, launched, commissioned, refitted (a day stored as a date-time at midnight);
#: the i-th ship is in port i % 3 and in service when i is even (a yes/no flag)
SHIPS = [
    (f"Vessel {chr(65 + i)}", ["Kockums", "Damen", "Navantia", "Meyer Werft"][i % 4],
     1950 + 3 * i, dt.date(1951 + 3 * i, 1 + i, 10 + i), f"{1990 + i}-0{1 + i % 9}-15 00:00:00")
    for i in range(12)
]  # fmt: skip


def _harbour(path: Path) -> str:
    """Ports and the ships registered in them: text, numbers and dates, a foreign key."""
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE port (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                "country TEXT NOT NULL)"
            )
        )
        conn.execute(
            text(
                "CREATE TABLE ship (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                "port_id INTEGER NOT NULL REFERENCES port(id), builder TEXT NOT NULL, "
                "launched INTEGER NOT NULL, commissioned DATE NOT NULL, "
                "refitted DATETIME NOT NULL, in_service INTEGER NOT NULL)"
            )
        )
        for i, (name, country) in enumerate(PORTS):
            conn.execute(
                text("INSERT INTO port VALUES (:i, :n, :c)"), {"i": i + 1, "n": name, "c": country}
            )
        for i, (name, builder, launched, commissioned, refitted) in enumerate(SHIPS):
            conn.execute(
                text("INSERT INTO ship VALUES (:i, :n, :p, :b, :l, :c, :r, :s)"),
                {"i": i + 1, "n": name, "p": 1 + i % 3, "b": builder, "l": launched,
                 "c": commissioned, "r": refitted, "s": int(i % 2 == 0)},
            )  # fmt: skip
    engine.dispose()
    return url


def test_the_named_rows_other_values_of_every_type_through_joins_and_aggregates(
    tmp_path: Path,
) -> None:
    groups = generate_groups(_harbour(tmp_path / "h.sqlite"), k=1, cohorts=("short",)).groups
    ships = {name: row for name, *row in SHIPS}
    countries = dict(PORTS)
    kinds: set[str] = set()
    for g in groups:
        a = g.answer
        values = dict(zip(a.attributes, a.attribute_types, strict=True))
        sql, named = " ".join(g.sql.split()), next(iter(g.params.values()))
        if named in ships:
            # the ship the question names: its builder, launch year, commissioning and refit
            # days, typed; never its name (the question's own), its ids, its yes/no flag (any
            # answer's word), or the asked value (the gold) — also when the answer is the port
            # it is joined to
            # it is joined to; and the values of the port its foreign key names (a neighbour's
            # sentence), each with the column it came from
            builder, launched, commissioned, refitted = ships[named]
            port, country = PORTS[[n for n, *_ in SHIPS].index(named) % 3]
            row = {builder: T, str(launched): N, commissioned.isoformat(): D, refitted[:10]: D,
                   port: T, country: T}  # fmt: skip
            assert values == {v: t for v, t in row.items() if v not in a.values}, sql
            sources = dict(zip(a.attributes, a.attribute_sources, strict=True))
            origin = {builder: "ship.builder", str(launched): "ship.launched", port: "port.name",
                      country: "port.country"}  # fmt: skip
            assert {v: sources[v] for v in origin if v in sources} == {
                v: o for v, o in origin.items() if v not in a.values
            }, sql
            kinds.add("join" if " JOIN " in sql else "single")
        elif named in countries and " JOIN " in sql:
            # an aggregate over the ships of the port the question names: the port's values,
            # then those of a bounded few of the ships whose foreign key names it
            sources = dict(zip(a.attributes, a.attribute_sources, strict=True))
            assert a.attributes[0] == countries[named] and values[countries[named]] is T, sql
            ref = [v for v in a.attributes[1:] if sources[v].startswith("ship.")]
            assert ref == a.attributes[1:], sources
            mine = [n for n, *_ in SHIPS if PORTS[[m for m, *_ in SHIPS].index(n) % 3][0] == named]
            named_ships = [v for v in ref if sources[v] == "ship.name"]
            assert set(named_ships) <= set(mine), (named_ships, mine)
            assert 0 < len(named_ships) <= min(REFERENCING_ROWS, len(mine)), named_ships
            kinds.add("aggregate")
    assert kinds == {"single", "join", "aggregate"}


def test_a_key_two_rows_share_names_no_row_and_the_map_is_bounded() -> None:
    rows = [("A", "x", 1), ("B", "y", 2), ("A", "z", 3), (None, "w", 4)]
    types = (AnswerType.TEXT, AnswerType.NUMBER)
    got = entity_attributes(rows, 1, types)
    assert got is not None
    assert got[("B",)] == (("y", "2"), (AnswerType.TEXT, AnswerType.NUMBER), ())
    assert got[("A",)] == ((), (), ())  # two rows: which one the question is about is unknown
    assert (None,) not in got and ("None",) not in got
    assert entity_attributes(rows, 1, types, limit=1) is None
    assert entity_attributes(rows, 1, types, max_values=3) is None
