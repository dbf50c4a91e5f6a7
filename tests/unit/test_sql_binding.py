"""How a checked statement is printed for a driver (``groundwatch.core.generation.sql_binding``).

The markers come from the tree's placeholder nodes: a marker's characters anywhere else (in a
literal, a quoted name, the modulo operator) reach the server as those characters, for every
parameter style; where a style cannot say so, the statement is refused. The servers' side of the
same promise: ``tests/integration/test_source_binding.py``.
"""

from __future__ import annotations

import pytest
import sqlglot

from groundwatch.core.generation.schema import ColumnInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.sql_binding import bind
from groundwatch.core.generation.sql_gate import ReadGate, Rejection, rejection_code
from groundwatch.core.model import AnswerType
from groundwatch.errors import UnsafeSQL

pytestmark = pytest.mark.unit

CLIENT = TableInfo(
    "client",
    (
        ColumnInfo(name="name", kind=AnswerType.TEXT),
        ColumnInfo(name="location", kind=AnswerType.TEXT),
        ColumnInfo(name="n", kind=AnswerType.NUMBER),
    ),
    ("name",),
    (),
)
LITERAL = "SELECT location FROM client WHERE name = ':name' AND location <> '%(name)s %s ? %%'"


def _gate(dialect: str) -> ReadGate:
    return ReadGate(SchemaInfo((CLIENT,), dialect=dialect))


@pytest.mark.parametrize("dialect", ["postgres", "mysql", "sqlite"])
def test_pyformat_doubles_every_percent_but_its_markers(dialect: str) -> None:
    sql = LITERAL + " AND n % 2 = 1 AND (name = :name OR location = :place OR name = :name)"
    bound = _gate(dialect).bound(sql, "pyformat", reader="percent")
    assert bound.names == ("name", "place")
    assert bound.markers == ("p0", "p1", "p0")
    # what the driver sends once it has formatted the string with its parameters
    sent = bound.text % {"p0": "<v0>", "p1": "<v1>"}
    assert "':name'" in sent and "'%(name)s %s ? %%'" in sent and "n % 2" in sent
    assert sent.count("<v0>") == 2 and sent.count("<v1>") == 1
    assert bound.args({"name": "a", "place": "b", "extra": 1}) == {"p0": "a", "p1": "b"}


def test_format_is_positional_in_marker_order() -> None:
    bound = _gate("postgres").bound(
        "SELECT location FROM client WHERE name = :b AND location = :a AND n > :b",
        "format",
        reader="percent",
    )
    assert bound.text.count("%s") == 3
    assert bound.args({"a": 1, "b": 2}) == [2, 1, 2]


def test_sqlite_named_keeps_a_literal_colon_as_text() -> None:
    bound = _gate("sqlite").bound(LITERAL + " AND name = :name", "named", reader="engine")
    assert bound.text.endswith("name = :p0")
    assert "':name'" in bound.text and "%%" in bound.text  # the literal as written


@pytest.mark.parametrize(
    ("style", "marker"),
    [("named", ":p0"), ("qmark", "?"), ("pyformat", "%(p0)s"), ("format", "%s")],
)
def test_an_unknown_driver_gets_no_marker_character_elsewhere(style: str, marker: str) -> None:
    """A driver groundwatch does not know (mysql-connector, pg8000 …) may scan the text its own
    way: a statement holding its marker character anywhere but in a marker is refused."""
    for dialect in ("postgres", "mysql", "sqlite"):
        with pytest.raises(UnsafeSQL, match="may bind on the client"):
            _gate(dialect).bound(LITERAL, style)
        modulo = "SELECT location FROM client WHERE n % 2 = 1 AND name = :x"
        if style in ("pyformat", "format"):
            with pytest.raises(UnsafeSQL, match="may bind on the client"):
                _gate(dialect).bound(modulo, style)
        plain = _gate(dialect).bound("SELECT location FROM client WHERE name = :x", style)
        assert plain.text.endswith(f"= {marker}")
        assert plain.args({"x": "v"}) == ({"p0": "v"} if style in ("named", "pyformat") else ["v"])


def test_a_style_its_reader_cannot_take_is_refused() -> None:
    sql = "SELECT location FROM client WHERE name = :x"
    for style, reader in (("numeric", "unknown"), ("qmark", "engine"), ("named", "percent")):
        with pytest.raises(UnsafeSQL, match="not supported"):
            _gate("sqlite").bound(sql, style, reader=reader)  # type: ignore[arg-type]


def test_values_must_be_present_and_single() -> None:
    bound = _gate("postgres").bound(
        "SELECT location FROM client WHERE name = :x", "pyformat", reader="percent"
    )
    with pytest.raises(UnsafeSQL, match="no value"):
        bound.args({})
    for value in ([1], (1,), {"a": 1}, {1}):
        with pytest.raises(UnsafeSQL, match="not a single value"):
            bound.args({"x": value})
    assert bound.args({"x": None}) == {"p0": None}


def test_a_printing_that_reads_back_differently_is_refused() -> None:
    """The round trip is the last check: a tree whose printing parses to another tree (here one
    sqlglot cannot print back as itself: a Var standing for raw text) never reaches a driver."""
    tree = sqlglot.parse_one("SELECT location FROM client WHERE name = :x", read="postgres")
    tree.find(sqlglot.exp.EQ).set("expression", sqlglot.exp.Var(this="1 OR 1 = 1"))  # type: ignore[union-attr]
    with pytest.raises(UnsafeSQL, match="reads differently"):
        bind(tree, "postgres", "pyformat", reader="percent")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT location || 'x' FROM client WHERE name = :name",
        "SELECT location FROM client WHERE name = :name || 'x'",
    ],
)
def test_pipes_are_refused_on_mysql_and_concatenate_elsewhere(sql: str) -> None:
    with pytest.raises(UnsafeSQL) as refused:
        _gate("mysql").check(sql)
    assert rejection_code(refused.value) == Rejection.DIALECT_OPERATOR
    for dialect in ("postgres", "sqlite"):
        assert "||" in _gate(dialect).check(sql)
    assert "CONCAT(" in _gate("mysql").check(
        sql.replace("location || 'x'", "CONCAT(location, 'x')").replace(
            ":name || 'x'", "CONCAT(:name, 'x')"
        )
    )


def test_the_port_compiles_no_text() -> None:
    """``sqlalchemy.text`` takes a ``:name`` inside a literal for a parameter: the port that hands
    SQL to a source's driver must not use it (nor compile any statement of its own)."""
    import ast
    from pathlib import Path

    port = Path(__file__).resolve().parents[2] / "shared/groundwatch/adapters/sources/port.py"
    tree = ast.parse(port.read_text(encoding="utf-8"))
    imported = {
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy")
        for a in node.names
    }
    assert "text" not in imported
    calls = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert not calls & {"compile", "construct_params", "exec_driver_sql"}
    assert "bound" in calls  # the gate's printing for the driver is what runs
