"""Two-condition templates ("which crew member has first name X and depot Y") on a schema of
this test's own: a table of people whose first names, family names, cities and depots repeat."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlglot
from sqlalchemy import create_engine
from sqlglot import exp

from groundwatch.adapters.sources.introspect import introspect
from groundwatch.core.generation.rules import rule_templates

pytestmark = pytest.mark.unit

_FIRST = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fay", "Gus", "Hana"]
_LAST = ["Berg", "Cole", "Dunn", "Ek", "Falk", "Gray", "Holm"]
_CITY = ["Oslo", "Lima", "Riga", "Kyiv", "Bern"]
_DEPOT = ["North", "South", "East"]


def _crew_db(tmp_path: Path) -> str:
    path = tmp_path / "crew.db"
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE crew (crew_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,"
        " last_name TEXT NOT NULL, home_city TEXT NOT NULL, depot TEXT NOT NULL)"
    )
    rows = [
        # a first name and a city single out one person; each alone, several
        (_FIRST[i % 8], _LAST[(i * 3) % 7], _CITY[(i // 8) % 5], _DEPOT[i % 3])
        for i in range(40)
    ]
    con.executemany(
        "INSERT INTO crew (first_name, last_name, home_city, depot) VALUES (?, ?, ?, ?)", rows
    )
    con.commit()
    con.close()
    return f"sqlite:///{path}"


def _conditions(where: exp.Expression) -> list[exp.Expression]:
    return list(where.flatten()) if isinstance(where, exp.And) else [where]


def test_no_pair_template_asks_for_a_column_it_is_given(tmp_path: Path) -> None:
    schema = introspect(create_engine(_crew_db(tmp_path)))
    templates = rule_templates(schema)
    pairs = [t for t in templates if t.kind == "pair"]
    assert pairs, [t.sql for t in templates]  # two conditions still single out a person
    for t in templates:
        tree = sqlglot.parse_one(t.sql, read="sqlite")
        where = tree.args.get("where")
        if where is None:
            continue
        conds = _conditions(where.this)
        # every condition compares a column with something: none is a bare column
        assert all(isinstance(c, exp.Predicate) for c in conds), t.sql
        given = {c.this.name for c in conds if isinstance(c.this, exp.Column)}
        asked = {s.column for s in t.selected if s.table == "crew"}
        assert not asked & given, t.sql


def test_a_pair_template_keeps_its_fills(tmp_path: Path) -> None:
    from groundwatch.adapters.sources import generate_groups

    result = generate_groups(_crew_db(tmp_path), k=3)
    pairs = {t.template_id for t in result.templates if t.kind == "pair"}
    grouped = [g for g in result.groups if str(g.template_id) in pairs]
    assert pairs and grouped
    # the answer is never one the question already gives
    for g in grouped:
        assert all(str(v) not in g.params.values() for v in g.answer.values), g
