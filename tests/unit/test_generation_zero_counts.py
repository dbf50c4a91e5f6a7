"""A count of nothing is an answer: "how many visits has patient X had" of a patient with none is
0, as the paper's bound query returns, not a fill without an answer. The grouped query reads
only the rows that exist, so a one-placeholder count also reads its placeholder column's values.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from groundwatch.adapters.sources import generate_groups
from groundwatch.core.generation.pipeline import GenerationResult

pytestmark = pytest.mark.unit

#: owners with 2, 1 and 0 pets; two share a name, neither with a pet
_OWNERS = [(1, "Ada Holm"), (2, "Bo Lind"), (3, "Cai Berg"), (4, "Eva Rask"), (5, "Eva Rask")]
_PETS = [(1, "Rex", 1, 12.5), (2, "Mio", 1, 4.0), (3, "Tass", 2, 30.0)]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("zero") / "pets.db"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE owner (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL);"
        "CREATE TABLE pet (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " owner_id INTEGER NOT NULL REFERENCES owner(id), weight_kg REAL NOT NULL);"
    )
    con.executemany("INSERT INTO owner VALUES (?, ?)", _OWNERS)
    con.executemany("INSERT INTO pet VALUES (?, ?, ?, ?)", _PETS)
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def result(db: Path) -> GenerationResult:
    return generate_groups(f"sqlite:///{db}", k=3)


def _counts(result: GenerationResult) -> dict[str, dict[str, str]]:
    """Per one-placeholder count template, each owner asked about and the gold."""
    out: dict[str, dict[str, str]] = {}
    for g in result.groups:
        if g.sql.upper().startswith("SELECT COUNT(") and len(g.params) == 1:
            out.setdefault(g.sql, {})[str(next(iter(g.params.values())))] = g.answer.values[0]
    return out


def test_an_owner_with_no_pets_is_asked_how_many_and_the_gold_is_zero(
    result: GenerationResult,
) -> None:
    by_owner = [c for c in _counts(result).values() if "Cai Berg" in c]
    assert by_owner, _counts(result)
    for counts in by_owner:
        assert counts["Cai Berg"] == "0"
        assert counts["Ada Holm"] == "2" and counts["Bo Lind"] == "1"
        # a name two owners share would pool both into one count: not asked, even at 0
        assert "Eva Rask" not in counts
    zero = [g for g in result.groups if "Cai Berg" in g.params.values() and "COUNT" in g.sql]
    assert zero and all(any("Cai Berg" in f.text for f in g.forms) for g in zero)


def test_every_count_is_what_the_bound_query_returns(db: Path, result: GenerationResult) -> None:
    """Algorithm 1's own answers: one bound query per distinct value, the gold of each kept
    fill equal to it, and every value naming one owner kept."""
    con = sqlite3.connect(db)
    try:
        counts = _counts(result)
        assert counts
        for sql, kept in counts.items():
            (param,) = {p for g in result.groups if g.sql == sql for p in g.params}
            for owner, gold in kept.items():
                (bound,) = con.execute(sql.replace(f":{param}", "?"), (owner,)).fetchall()
                assert str(bound[0]) == gold, (sql, owner)
        per_owner = [k for k in counts.values() if "Ada Holm" in k]
        named_once = {n for _, n in _OWNERS if sum(m == n for _, m in _OWNERS) == 1}
        assert all(set(k) == named_once for k in per_owner)
    finally:
        con.close()


def test_a_sum_of_nothing_is_no_answer(result: GenerationResult) -> None:
    """SUM, AVG, MIN and MAX of no rows are NULL to the bound query: no zero is made up."""
    for g in result.groups:
        if any(f in g.sql.upper() for f in ("SUM(", "AVG(", "MIN(", "MAX(")):
            assert "Cai Berg" not in g.params.values(), g.sql
