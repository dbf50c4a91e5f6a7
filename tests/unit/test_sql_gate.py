"""The read gate (``groundwatch.core.generation.sql_gate``) on its own, without a server.

It must let through every query groundwatch itself runs — templates, the grouped queries derived
from them, scenario items, provenance — unchanged, on several schemas and dialects, and refuse
what a dataset file could smuggle in: a function call, a catalogue, a second statement, a comment,
a recursive CTE, a locking clause. The integration test (``tests/integration/test_source_attacks``)
runs the attack list on the three engines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot

from groundwatch.adapters.sources.connect import readonly_engine
from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.core.generation import sql_gate
from groundwatch.core.generation.schema import ColumnInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.sql_gate import ReadGate, rejection_code
from groundwatch.core.model import AnswerType
from groundwatch.errors import UnsafeSQL
from tests.unit import gen_schemas

pytestmark = pytest.mark.unit

CLIENT = TableInfo(
    "client",
    (
        ColumnInfo(name="name", kind=AnswerType.TEXT),
        ColumnInfo(name="location", kind=AnswerType.TEXT),
        ColumnInfo(name="user", kind=AnswerType.TEXT),
    ),
    ("name",),
    (),
)


@pytest.mark.parametrize("name", sorted(gen_schemas.SCHEMAS))
def test_every_query_generation_runs_passes_unchanged(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the generator runs is already the gate's printing of itself: the canonical text is
    the text (no query changes meaning on its way through the gate)."""
    seen: dict[str, str] = {}
    bound = ReadGate.bound

    def recording(self: ReadGate, sql: str, paramstyle: str, *, reader: Any = "unknown") -> Any:
        seen[sql] = self.check(sql)
        return bound(self, sql, paramstyle, reader=reader)

    monkeypatch.setattr(ReadGate, "bound", recording)
    url = gen_schemas.build(name, tmp_path)
    result = generate_groups(url, k=1, list_answers=True)
    assert result.groups and len(seen) > 5
    assert {sql: out for sql, out in seen.items() if out != sql} == {}


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "mysql"])
@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("SELECT pg_read_file('/etc/passwd') FROM client", "function_not_allowed"),
        ("SELECT location FROM client WHERE sleep(5) = 0", "function_not_allowed"),
        ("SELECT location FROM client WHERE name = (SELECT version())", "function_not_allowed"),
        ("SELECT current_user FROM client", "function_not_allowed"),
        ("SELECT user FROM client", "function_not_allowed"),  # the role, not the column
        ("SELECT location FROM client; SELECT 1", "not_exactly_one_statement"),
        ("SELECT location FROM client -- x", "comment"),
        ("SELECT /*+ hint */ location FROM client", "comment"),
        ("SELECT location FROM client UNION SELECT name FROM client", "not_a_select"),
        ("SELECT location FROM pg_shadow", "unknown_table"),
        ("SELECT location FROM other.client", "unknown_table"),
        ("SELECT secret FROM client", "unknown_column"),
        ("SELECT * FROM client", "select_star"),
        ("SELECT location FROM client FOR UPDATE", "forbidden_construct"),
        ("DELETE FROM client", "not_a_select"),
        (
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
            "recursive_cte",
        ),
        ("SELECT location FROM client WHERE name = ?", "placeholder_not_column_equality"),
        ("SELECT location FROM client WHERE name = 'a\x00'", "forbidden_construct"),
    ],
)
def test_what_a_dataset_could_smuggle_is_refused(sql: str, code: str, dialect: str) -> None:
    gate = ReadGate(SchemaInfo((CLIENT,), dialect=dialect))
    with pytest.raises(UnsafeSQL) as refused:
        gate.check(sql)
    assert rejection_code(refused.value) == code, str(refused.value)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT location FROM client WHERE name = :name",
        'SELECT "user" FROM client WHERE name = :name',
        "SELECT COUNT(DISTINCT location) AS n FROM client GROUP BY name HAVING COUNT(*) > 1",
        "WITH c AS (SELECT name AS n FROM client) SELECT n FROM c ORDER BY n LIMIT 5",
        "SELECT d.n FROM (SELECT name AS n FROM client) AS d WHERE d.n IS NOT NULL",
        "SELECT (SELECT MAX(location) FROM client WHERE name = :a) AS part_1",
        "SELECT CASE WHEN location IS NULL THEN 'none' ELSE LOWER(location) END FROM client",
        "SELECT 1 WHERE 1 = 0",
    ],
)
def test_reads_of_the_tables_pass(sql: str) -> None:
    gate = ReadGate(SchemaInfo((CLIENT,), dialect="postgres"))
    canonical = gate.check(sql)
    assert sqlglot.parse_one(canonical.replace(":", "@"), read="postgres") is not None


def test_what_runs_is_the_gates_printing_not_the_text() -> None:
    """A text a database could read differently from sqlglot runs as sqlglot read it: here a
    backslash before a quote, which MySQL reads as an escape, comes out with the quote doubled,
    one string literal for MySQL, PostgreSQL (standard_conforming_strings, which the source
    connection sets) and SQLite alike."""
    gate = ReadGate(SchemaInfo((CLIENT,), dialect="mysql"))
    text = "SELECT location FROM client WHERE name = 'a\\' OR sleep(1) = 0 OR '"
    canonical = gate.check(text)
    assert canonical != text and "''" in canonical
    (stmt,) = sqlglot.parse(canonical, read="mysql")
    assert stmt is not None and not list(stmt.find_all(sqlglot.exp.Anonymous))


def test_accepted_texts_are_remembered_refused_ones_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    parse = sql_gate.parse_statement

    def counting(sql: str, dialect: str) -> sqlglot.exp.Expression:
        calls.append(sql)
        return parse(sql, dialect)

    monkeypatch.setattr(sql_gate, "parse_statement", counting)
    gate = ReadGate(SchemaInfo((CLIENT,), dialect="sqlite"), cache=2)
    for _ in range(3):
        gate.check("SELECT location FROM client")
        with pytest.raises(UnsafeSQL):
            gate.check("SELECT sqlite_version() FROM client")
    assert calls.count("SELECT location FROM client") == 1
    assert calls.count("SELECT sqlite_version() FROM client") == 3
    for i in range(3):  # bounded: the oldest text is forgotten
        gate.check(f"SELECT location FROM client LIMIT {i}")
    gate.check("SELECT location FROM client")
    assert calls.count("SELECT location FROM client") == 2


def test_the_gate_of_a_real_source_knows_its_tables(tmp_path: Path) -> None:
    url = gen_schemas.build("shop", tmp_path)
    engine = readonly_engine(url)
    try:
        with engine.connect() as conn:
            gate = ReadGate(introspect(conn, profile=False))
    finally:
        engine.dispose()
    assert gate.check("SELECT city FROM customers WHERE name = :name")
    with pytest.raises(UnsafeSQL, match="unknown_table"):
        gate.check("SELECT sql FROM sqlite_master")
