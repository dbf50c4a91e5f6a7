"""Nothing that comes down the LLM template path can change the source database.

Three walls, each tested on its own: validation (sqlglot, allow-list) refuses anything but one
plain SELECT; the read-only connection refuses writes even if something got past validation; and
placeholder values always travel as bound parameters. The property tests run what validation
accepts on a *writable* connection, so they prove the first wall without help from the second.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from sqlglot import exp

from groundwatch.adapters.sources.connect import readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.grouped import plan
from groundwatch.core.generation.llm import llm_sql_templates
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_checks import validate_sql
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.errors import UnsafeSQL

pytestmark = pytest.mark.unit

# Names chosen to break naive quoting: the bound values must match them exactly and nothing else.
TRICKY_NAMES = [
    "Acme Robotics",
    "O'Brien & Sons",
    'Robert"); DROP TABLE Client; --',
    "x' OR '1'='1",
    "Zürich Ōsaka 東京 🏔",
    "%",
    "_",
    "back\\slash",
    "semi;colon /* not a comment */",
    "-- dash dash",
]


def build_db(path: Path) -> None:
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE Client (
            ClientId INTEGER PRIMARY KEY, Name TEXT NOT NULL UNIQUE, Location TEXT, Industry TEXT
        );
        CREATE TABLE Project (
            ProjectId INTEGER PRIMARY KEY, Title TEXT NOT NULL UNIQUE, Budget INTEGER,
            ClientId INTEGER REFERENCES Client(ClientId)
        );
        """
    )
    con.executemany(
        "INSERT INTO Client (Name, Location, Industry) VALUES (?, ?, ?)",
        [(n, f"City{i}", "Retail" if i % 2 else "Mining") for i, n in enumerate(TRICKY_NAMES)],
    )
    con.executemany(
        "INSERT INTO Project (Title, Budget, ClientId) VALUES (?, ?, ?)",
        [(f"Project {i}", 1000 * i, i % len(TRICKY_NAMES) + 1) for i in range(20)],
    )
    con.commit()
    con.close()


def fingerprint(path: Path) -> str:
    """File bytes plus a logical dump: any write at all changes one of them."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        dump = "\n".join(con.iterdump())
        version = con.execute("PRAGMA user_version").fetchone()
    finally:
        con.close()
    return hashlib.sha256(path.read_bytes() + dump.encode() + repr(version).encode()).hexdigest()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlsafety") / "source.db"
    build_db(path)
    return path


@pytest.fixture(scope="module")
def schema(db: Path) -> SchemaInfo:
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        return introspect(engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def writable(db: Path) -> Iterator[Any]:
    """A READ-WRITE connection: what runs here is protected by validation alone."""
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        yield conn
    engine.dispose()


VALID = [
    "SELECT Location FROM Client WHERE Name = :name",
    "SELECT Industry FROM Client WHERE Name = '[Client.Name]'",
    "SELECT Budget FROM Project WHERE Title = :title",
    "SELECT c.Location FROM Client AS c JOIN Project AS p ON p.ClientId = c.ClientId "
    "WHERE p.Title = :title",
]

# Each of these must be refused outright, in every dialect the generator supports.
DANGEROUS = {
    "dml_delete": "DELETE FROM Client WHERE Name = :name",
    "dml_update": "UPDATE Client SET Location = 'x' WHERE Name = :name",
    "dml_insert": "INSERT INTO Client (Name) VALUES (:name)",
    "dml_insert_select": "INSERT INTO Client (Name) SELECT Title FROM Project WHERE Title = :t",
    "dml_replace": "REPLACE INTO Client (Name) VALUES (:name)",
    "dml_upsert": "INSERT INTO Client (Name) VALUES (:n) ON CONFLICT (Name) DO UPDATE SET Name = 'y'",
    "dml_cte_delete": "WITH d AS (DELETE FROM Client RETURNING Name) SELECT Name FROM d WHERE Name = :n",
    "dml_truncate": "TRUNCATE TABLE Client",
    "ddl_drop": "DROP TABLE Client",
    "ddl_create_as": "CREATE TABLE Leak AS SELECT Location FROM Client WHERE Name = :name",
    "ddl_alter": "ALTER TABLE Client ADD COLUMN Pwned TEXT",
    "ddl_index": "CREATE INDEX ix ON Client (Name)",
    "ddl_trigger": "CREATE TRIGGER t AFTER INSERT ON Client BEGIN DELETE FROM Client; END",
    "ddl_view": "CREATE VIEW v AS SELECT Location FROM Client",
    "select_into": "SELECT Location INTO Leak FROM Client WHERE Name = :name",
    "stacked_drop": "SELECT Location FROM Client WHERE Name = :name; DROP TABLE Client",
    "stacked_delete": "SELECT Location FROM Client WHERE Name = :name;DELETE FROM Client",
    "stacked_newline": "SELECT Location FROM Client WHERE Name = :name\n;\nUPDATE Client SET Name = 'x'",
    "stacked_first": "DELETE FROM Client; SELECT Location FROM Client WHERE Name = :name",
    "comment_hides_nothing": "/* just a select */ DELETE FROM Client WHERE Name = :name",
    "comment_then_stacked": "SELECT Location FROM Client WHERE Name = :name /* x */; DROP TABLE Client --",
    "line_comment_then_stacked": "SELECT Location FROM Client WHERE Name = :name --\n; DELETE FROM Client",
    "comment_inside_stacked": "SELECT Location FROM Client WHERE Name = :name;/**/DROP/**/TABLE/**/Client",
    "pragma": "PRAGMA writable_schema = 1",
    "pragma_query_only_off": "PRAGMA query_only = 0",
    "pragma_stacked": "SELECT Location FROM Client WHERE Name = :name; PRAGMA journal_mode = WAL",
    "pragma_function": "SELECT name FROM pragma_table_info('Client') WHERE name = :name",
    "attach": "ATTACH DATABASE '/tmp/gw-pwned.db' AS pwned",
    "attach_stacked": "SELECT Location FROM Client WHERE Name = :name; ATTACH '/tmp/gw-pwned.db' AS p",
    "detach": "DETACH DATABASE main",
    "vacuum_into": "VACUUM INTO '/tmp/gw-pwned.db'",
    "transaction": "BEGIN; DELETE FROM Client; COMMIT",
    "set_read_write": "SET TRANSACTION READ WRITE",
    "set_session": "SET default_transaction_read_only = off",
    "copy": "COPY Client TO '/tmp/gw-pwned.csv'",
    "grant": "GRANT ALL ON Client TO PUBLIC",
    "lock": "LOCK TABLE Client IN ACCESS EXCLUSIVE MODE",
    "for_update": "SELECT Location FROM Client WHERE Name = :name FOR UPDATE",
    "function_call": "SELECT load_extension('evil') FROM Client WHERE Name = :name",
    "function_in_where": "SELECT Location FROM Client WHERE Name = :name AND writefile('x', Location)",
    "subquery_write": "SELECT Location FROM Client WHERE Name = (SELECT Name FROM Client WHERE Name = :n)",
    "union": "SELECT Location FROM Client WHERE Name = :name UNION SELECT sql FROM sqlite_master",
    "system_table": "SELECT sql FROM sqlite_master WHERE name = :name",
    "other_schema": "SELECT Location FROM pwned.Client WHERE Name = :name",
    "sleep": "SELECT pg_sleep(10) FROM Client WHERE Name = :name",
}


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
@pytest.mark.parametrize("sql", list(DANGEROUS.values()), ids=list(DANGEROUS))
def test_dangerous_sql_is_rejected(schema: SchemaInfo, sql: str, dialect: str) -> None:
    with pytest.raises(UnsafeSQL):
        validate_sql(sql, SchemaInfo(schema.tables, dialect=dialect), origin="llm")


@pytest.mark.parametrize("sql", VALID)
def test_plain_select_templates_are_accepted(schema: SchemaInfo, sql: str) -> None:
    t = validate_sql(sql, schema, origin="llm")
    assert isinstance(sqlglot.parse_one(t.sql.replace(":", "@"), read="sqlite"), exp.Select)


# --------------------------------------------------------------------------- property: wall one
FRAGMENTS = [
    "DROP TABLE Client",
    "DELETE FROM Client",
    "DELETE FROM Project WHERE 1=1",
    "UPDATE Client SET Location = 'pwned'",
    "INSERT INTO Client (Name) VALUES ('pwned')",
    "CREATE TABLE Pwned (x)",
    "ALTER TABLE Client RENAME TO Gone",
    "PRAGMA writable_schema = 1",
    "PRAGMA user_version = 99",
    "ATTACH DATABASE 'pwned.db' AS pwned",
    "VACUUM",
    "REPLACE INTO Client (Name) VALUES ('pwned')",
    "SELECT load_extension('x')",
    "BEGIN",
    "COMMIT",
    "SAVEPOINT s",
    "Location = 'x' OR 1=1",
    "UNION SELECT sql FROM sqlite_master",
    "INTO Pwned",
    "RETURNING *",
    "(SELECT Name FROM Client)",
    "'",
    '"',
    "`",
    ")",
]
SEPARATORS = [";", "; ", ";\n", " ", "\n", "/**/", "/* ; */", "-- x\n", "--\n;", "*/", "/*"]


def _mangle(sql: str, flips: list[bool]) -> str:
    out = []
    for i, ch in enumerate(sql):
        out.append(ch.swapcase() if flips and flips[i % len(flips)] else ch)
    return "".join(out)


@st.composite
def llm_lines(draw: st.DrawFn) -> str:
    """A plausible template with injections before, inside or after it."""
    base = draw(st.sampled_from(VALID))
    injected = draw(st.lists(st.sampled_from(FRAGMENTS), max_size=3))
    seps = draw(
        st.lists(st.sampled_from(SEPARATORS), min_size=len(injected), max_size=len(injected))
    )
    pieces = [s + f for s, f in zip(seps, injected, strict=True)]
    where = draw(st.sampled_from(["after", "before", "inside"]))
    if where == "after":
        sql = base + "".join(pieces)
    elif where == "before":
        sql = "".join(p.lstrip(";") + ";" for p in pieces) + base
    else:
        cut = draw(st.integers(0, len(base)))
        sql = base[:cut] + "".join(pieces) + base[cut:]
    return _mangle(sql, draw(st.lists(st.booleans(), max_size=5)))


def queries_run_for(t: SqlTemplate, schema: SchemaInfo) -> list[str]:
    """Every SQL text the generation pipeline runs for a validated template."""
    p = plan(t, schema)
    return [
        t.sql,
        *p.distinct_sql.values(),
        *p.values_sql.values(),
        *(q for q in (p.sql, p.multi_sql) if q),
    ]


def assert_read_only_sql(sql: str) -> None:
    (stmt,) = [s for s in sqlglot.parse(sql.replace(":", "@"), read="sqlite") if s is not None]
    assert isinstance(stmt, exp.Select), sql
    forbidden = (
        exp.Insert,
        exp.Update,
        exp.Delete,
        exp.Create,
        exp.Drop,
        exp.Alter,
        exp.Command,
        exp.Pragma,
        exp.Anonymous,
        exp.Into,
    )
    assert not any(isinstance(n, forbidden) for n in stmt.walk()), sql


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(line=llm_lines())
def test_whatever_validation_accepts_cannot_write(
    line: str, schema: SchemaInfo, writable: Any, db: Path
) -> None:
    try:
        t = validate_sql(line, schema, origin="llm")
    except UnsafeSQL:
        return
    before = fingerprint(db)
    port = SqlAlchemyPort(writable)
    for sql in queries_run_for(t, schema):
        assert_read_only_sql(sql)
        params = {name: TRICKY_NAMES[0] for name in t.params} if sql == t.sql else {}
        list(port.rows(sql, params))
    writable.rollback()
    assert fingerprint(db) == before, f"accepted {line!r} changed the database"


class ScriptedLlm:
    """A 'model' that answers the SQL prompts with whatever the test hands it."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        return [self.reply]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(llm_lines(), min_size=1, max_size=6), fence=st.booleans())
def test_llm_replies_through_the_generator_leave_the_database_unchanged(
    lines: list[str], fence: bool, schema: SchemaInfo, db: Path
) -> None:
    """The whole path: model reply → line parsing → validation → grouped queries, read-only."""
    from groundwatch.adapters.sources.generate import generate_groups

    reply = "\n".join(["```sql", *lines, "```"] if fence else [f"- {ln}" for ln in lines])
    result = asyncio.run(llm_sql_templates(ScriptedLlm(reply), schema))
    assume(result.proposed > 0)
    before = fingerprint(db)
    if result.templates:
        generate_groups(f"sqlite:///{db}", templates=result.templates, k=1)
    assert fingerprint(db) == before


# --------------------------------------------------------------------------- property: binding
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.one_of(st.sampled_from(TRICKY_NAMES), st.text(max_size=40)))
def test_placeholder_values_are_bound_never_spliced(
    value: str, schema: SchemaInfo, writable: Any, db: Path
) -> None:
    t = validate_sql("SELECT Location FROM Client WHERE Name = :name", schema, origin="llm")
    (param,) = t.params
    expected = [f"City{i}" for i, n in enumerate(TRICKY_NAMES) if n == value]
    # read-write connection: only binding stands between the value and the database
    assert [r[0] for r in SqlAlchemyPort(writable).rows(t.sql, {param: value})] == expected
    writable.rollback()
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            assert [r[0] for r in SqlAlchemyPort(conn).rows(t.sql, {param: value})] == expected
    finally:
        engine.dispose()
    assert writable.execute(text("SELECT count(*) FROM Client")).scalar_one() == len(TRICKY_NAMES)


# --------------------------------------------------------------------------- wall two: read-only
WRITES = [
    "INSERT INTO Client (Name) VALUES ('pwned')",
    "UPDATE Client SET Location = 'pwned'",
    "DELETE FROM Client",
    "REPLACE INTO Client (Name) VALUES ('Acme Robotics')",
    "CREATE TABLE Pwned (x)",
    "DROP TABLE Project",
    "ALTER TABLE Client ADD COLUMN Pwned TEXT",
    "CREATE INDEX ix_pwned ON Client (Location)",
    "PRAGMA user_version = 99",
    "VACUUM",
]


@pytest.mark.parametrize("sql", WRITES)
def test_read_only_sqlite_connection_refuses_writes(db: Path, sql: str) -> None:
    before = fingerprint(db)
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with (
            engine.connect() as conn,
            pytest.raises(
                Exception,
                match=r"readonly|read-only|query_only|attempt to write|not authorized|authorization",
            ),
        ):
            conn.exec_driver_sql(sql)
            conn.commit()
    finally:
        engine.dispose()
    assert fingerprint(db) == before


def test_read_only_sqlite_cannot_be_switched_back_or_attach_a_new_file(
    db: Path, tmp_path: Path
) -> None:
    before = fingerprint(db)
    target = tmp_path / "attached.db"
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            with pytest.raises(Exception, match=r"not authorized"):
                conn.exec_driver_sql("PRAGMA query_only = OFF")  # refused by the authorizer
            with pytest.raises(Exception, match=r"readonly|read-only|not authorized"):
                conn.exec_driver_sql("DELETE FROM Client")
            try:
                conn.exec_driver_sql(f"ATTACH DATABASE '{target}' AS pwned")
                conn.exec_driver_sql("CREATE TABLE pwned.t (x)")
            except Exception:
                pass
    finally:
        engine.dispose()
    assert not target.exists() or target.stat().st_size == 0, "ATTACH wrote a new database file"
    assert fingerprint(db) == before


def test_port_runs_exactly_one_statement(db: Path, writable: Any) -> None:
    """The third wall: even on a writable connection the port's read gate refuses stacked
    statements, before anything is sent (``rows`` raises, not the first ``next``)."""
    before = fingerprint(db)
    with pytest.raises(UnsafeSQL, match="not_exactly_one_statement"):
        SqlAlchemyPort(writable).rows("SELECT 1; DROP TABLE Client")
    writable.rollback()
    assert fingerprint(db) == before


def test_the_port_is_the_only_way_sql_text_reaches_a_source() -> None:
    """The read gate stands in ``SqlAlchemyPort.rows``; no other module that opens a source (or
    lives beside the port) may hand a text to a connection: no ``sqlalchemy.text``, no
    ``exec_driver_sql``, no raw or driver connection. ``connect`` (the session setup's fixed
    statements) and ``port`` itself are the two exceptions. Introspection builds its statements
    with SQLAlchemy Core from reflected names, which this allows."""
    import ast

    root = Path(__file__).resolve().parents[2] / "shared" / "groundwatch"
    allowed = {root / "adapters/sources/connect.py", root / "adapters/sources/port.py"}
    offenders: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        near = path.parent == root / "adapters/sources"
        if path in allowed or not (near or "readonly_engine" in source):
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("sqlalchemy")
                and any(a.name == "text" for a in node.names)
            ):
                offenders.append(f"{path.relative_to(root)}: imports sqlalchemy.text")
            if isinstance(node, ast.Attribute) and node.attr in (
                "exec_driver_sql",
                "raw_connection",
                "driver_connection",
            ):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}: {node.attr}")
    assert offenders == []
