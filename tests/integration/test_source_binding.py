"""Parameters reach a source as real bind parameters on every driver groundwatch reads with.

SQLAlchemy's ``text()`` takes a ``:name`` written inside a string literal for a parameter too, and
the drivers that fill parameters in on the client (psycopg2, PyMySQL) then splice the value into
the literal's place: ``WHERE name = ':name'`` with ``name = "' UNION SELECT … -- "`` ran the
UNION. Here, on SQLite, PostgreSQL through psycopg and through psycopg2, and MariaDB through
PyMySQL, with a table that holds rows named like the markers themselves:

* a marker of any style written inside a literal (``':name'``, ``'%(name)s'``, ``'%s'``, ``'?'``,
  ``'$1'``) is that literal's text: the query returns the row so named, and the payload in the
  parameters runs nowhere (no extra row, nothing it would read);
* a value holding quotes, backslashes or markers is one value: it matches nothing;
* the issue's exact dataset group passes ``check_source`` and refreshes to no leaked answer;
* ``%`` in a literal or as the modulo operator means what it says;
* a session left dirty (a lock, a user variable, a setting) by one use of a source engine is gone
  at the next: source connections are not pooled;
* ``||`` on MariaDB is refused, since it is OR or concatenation by the server's ``sql_mode``.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.adapters.sources.refresh import refresh_answers
from groundwatch.core.generation.sql_gate import Rejection, rejection_code
from groundwatch.core.model import AnswerType, Expected, SemanticGroup, TextForm
from groundwatch.errors import ConfigError, UnsafeSQL
from groundwatch.runtime.refresh import check_source
from tests.conftest import pg_as_reader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Rows named like the markers of every parameter style: a literal in a query finds its own row.
MARKER_ROWS = [
    ("acme", "Paris"),
    (":name", "colon"),
    ("%(name)s", "pyformat"),
    ("%s", "format"),
    ("?", "qmark"),
    ("$1", "dollar"),
    ("50% off", "percent"),
]
#: What an injected UNION would return (never in any result).
PWNED = "pwned"
#: The first three have no quote of their own, so a driver's escaping of the value cannot spoil
#: them: spliced after a literal's opening quote they close it and run (MariaDB, PostgreSQL, SQLite).
PAYLOADS = [
    " UNION SELECT CONCAT(CHAR(112), CHAR(119), CHAR(110), CHAR(101), CHAR(100)) -- ",
    " UNION SELECT CHR(112) || CHR(119) || CHR(110) || CHR(101) || CHR(100) -- ",
    " UNION SELECT char(112, 119, 110, 101, 100) -- ",
    f" UNION SELECT '{PWNED}' -- ",
    f"' UNION SELECT '{PWNED}' -- ",
    f"' UNION SELECT '{PWNED}' #",
    f"\\' UNION SELECT '{PWNED}' -- ",
    f"') UNION SELECT ('{PWNED}') -- ",
    "x' OR '1'='1",
    "%(name)s",
    "%s",
    ":name",
    "acme' --",
]


@dataclass
class Driver:
    name: str
    url: str
    table: str
    policy: SourcePolicy = field(default_factory=SourcePolicy)
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def _server_table(url: str) -> tuple[str, Callable[[], None]]:
    table = f"bind_{uuid.uuid4().hex[:10]}"
    owner = create_engine(url)
    with owner.begin() as conn:
        conn.execute(text(f"CREATE TABLE {table} (name VARCHAR(64), location VARCHAR(64), n INT)"))
        conn.execute(
            text(f"INSERT INTO {table} (name, location, n) VALUES (:a, :b, :n)"),
            [{"a": a, "b": b, "n": i} for i, (a, b) in enumerate(MARKER_ROWS)],
        )

    def drop() -> None:
        with owner.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        owner.dispose()

    return table, drop


@pytest.fixture(params=["sqlite", "psycopg", "psycopg2", "pymysql"])
def driver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    if request.param == "sqlite":
        path = tmp_path / "src.db"
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE client (name TEXT, location TEXT, n INTEGER)")
        con.executemany(
            "INSERT INTO client VALUES (?, ?, ?)",
            [(a, b, i) for i, (a, b) in enumerate(MARKER_ROWS)],
        )
        con.commit()
        con.close()
        yield Driver("sqlite", f"sqlite:///{path}", "client")
        return
    if request.param == "pymysql":
        writer, reader = request.getfixturevalue("mysql_urls")
        table, drop = _server_table(writer)
        made = Driver("pymysql", reader, table)
    else:
        url = request.getfixturevalue("fresh_pg_url")()
        table, drop = _server_table(url)
        reader_url = make_url(pg_as_reader(url)).set(drivername=f"postgresql+{request.param}")
        made = Driver(request.param, reader_url.render_as_string(hide_password=False), table)
    made.cleanup.append(drop)
    yield made
    for step in made.cleanup:
        step()


def _rows(d: Driver, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    engine = readonly_engine(d.url, policy=d.policy)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in SqlAlchemyPort(conn).rows(sql.format(t=d.table), params)]
    finally:
        engine.dispose()


def test_a_marker_inside_a_literal_is_text_and_the_payload_runs_nowhere(driver: Driver) -> None:
    """Every marker style written inside a string literal finds the row of that name, whatever
    the parameters hold; across 13 payloads × 5 literals, no injected row comes back."""
    ran = 0
    for literal, location in MARKER_ROWS[1:6]:
        quoted = literal.replace("'", "''")
        sql = f"SELECT location FROM {{t}} WHERE name = '{quoted}'"
        for payload in PAYLOADS:
            assert _rows(driver, sql, {"name": payload}) == [(location,)], (literal, payload)
            ran += 1
        # the literal beside a real parameter: both mean what they say
        both = f"SELECT location FROM {{t}} WHERE name = '{quoted}' OR name = :name"
        got = sorted(_rows(driver, both, {"name": "acme"}))
        assert got == sorted([(location,), ("Paris",)]), literal
    print(f"\nBINDING-FIGURES {driver.name}: {ran} literal-marker queries, 0 injected rows")


def test_a_hostile_value_is_one_value(driver: Driver) -> None:
    for payload in PAYLOADS:
        got = _rows(driver, "SELECT location FROM {t} WHERE name = :name", {"name": payload})
        expected = [(loc,) for name, loc in MARKER_ROWS if name == payload]
        assert got == expected, payload
    # the same placeholder twice, and a percent sign as data, an operator and a LIKE pattern
    sql = (
        "SELECT location, n % 4 FROM {t} WHERE (name = :name OR location = :name)"
        " AND name LIKE '%' AND location <> '%'"
    )
    assert _rows(driver, sql, {"name": "50% off"}) == [("percent", 6 % 4)]
    assert _rows(driver, "SELECT location FROM {t} WHERE name LIKE '50%'", {}) == [("percent",)]


def test_a_value_that_is_not_one_scalar_is_refused(driver: Driver) -> None:
    for value in (["acme", "x"], {"a": 1}, ("acme",)):
        with pytest.raises(UnsafeSQL, match="not a single value"):
            _rows(driver, "SELECT location FROM {t} WHERE name = :name", {"name": value})
    with pytest.raises(UnsafeSQL, match="no value for placeholder :name"):
        _rows(driver, "SELECT location FROM {t} WHERE name = :name", {})


def test_the_issues_dataset_group_leaks_nothing(driver: Driver) -> None:
    """The reported group: a ``:name`` in quotes and a UNION in the value. On MariaDB the value
    read the login, version and data directory into the gold answer."""
    if driver.name == "pymysql":
        union = "' UNION SELECT CONCAT(USER(), @@version, @@datadir, SLEEP(1)) -- "
    else:
        union = f" UNION SELECT '{PWNED}' -- "
    group = SemanticGroup(
        group_id="g",
        dataset_id="d",
        sql=f"SELECT location FROM {driver.table} WHERE name = ':name'",
        params={"name": union},
        answer=Expected(values=["canary"], types=[AnswerType.TEXT]),
        forms=[TextForm(form_id="f", cohort="short", text="Where?")],
    )
    check_source(driver.url, [group], driver.policy)  # a read of a known table: it passes
    engine = readonly_engine(driver.url, policy=driver.policy)
    try:
        result = refresh_answers(engine, [group])
    finally:
        engine.dispose()
    (refreshed,) = result.groups
    # the literal's row, never what the UNION would have read
    assert refreshed.answer.values == ["colon"], refreshed.answer
    assert result.refused == {}


def test_a_dirty_session_does_not_reach_the_next_use(driver: Driver) -> None:
    """A lock, a user variable and a session setting taken on one connection of a source engine
    are gone on the next (set on the raw connection: the gate would refuse each)."""
    if driver.name == "sqlite":
        pytest.skip("SQLite has no server session: every connection is a new one (NullPool)")
    engine = readonly_engine(driver.url, policy=driver.policy)
    mysql = driver.name == "pymysql"
    dirty = (
        [
            "SELECT GET_LOCK('gw_pool_lock', 0)",
            "SET @gw_var = 42",
            "SET SESSION sql_mode = 'ANSI'",
        ]
        if mysql
        else [
            "SELECT pg_advisory_lock(424243)",
            "SELECT set_config('application_name', 'gw-dirty', false)",
        ]
    )
    probe = (
        "SELECT @gw_var, @@SESSION.sql_mode LIKE '%ANSI%', IS_USED_LOCK('gw_pool_lock')"
        " = CONNECTION_ID()"
        if mysql
        else "SELECT current_setting('application_name') = 'gw-dirty',"
        " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424243"
        " AND pid = pg_backend_pid())"
    )
    try:
        first = engine.raw_connection()
        try:
            cur = first.cursor()
            for stmt in dirty:
                cur.execute(stmt)
                cur.fetchall() if cur.description else None
            cur.execute(probe)
            before = tuple(cur.fetchone())
            cur.close()
            first.commit()  # a setting made in a transaction that is rolled back would not last
        finally:
            first.close()
        second = engine.raw_connection()
        try:
            cur = second.cursor()
            cur.execute(probe)
            after = tuple(cur.fetchone())
            cur.close()
        finally:
            second.close()
    finally:
        engine.dispose()
    if mysql:
        assert before == (42, 1, 1)
        assert after[0] is None and after[1] == 0 and not after[2], after
    else:
        assert before == (True, 1)
        assert after == (False, 0), after


def test_pipes_on_mariadb_are_refused(mysql_urls: tuple[str, str]) -> None:
    """``||`` is OR on MariaDB's default ``sql_mode``: a refreshed text answer became ``0``."""
    writer, reader = mysql_urls
    table, drop = _server_table(writer)
    try:
        d = Driver("pymysql", reader, table)
        with pytest.raises(UnsafeSQL) as refused:
            _rows(d, "SELECT location || 'x' FROM {t} WHERE name = :name", {"name": "acme"})
        assert rejection_code(refused.value) == Rejection.DIALECT_OPERATOR
        assert "CONCAT()" in str(refused.value)
        assert _rows(
            d, "SELECT CONCAT(location, 'x') FROM {t} WHERE name = :name", {"name": "acme"}
        ) == [("Parisx",)]
        group = SemanticGroup(
            group_id="g",
            dataset_id="d",
            sql=f"SELECT location || 'x' FROM {table} WHERE name = :name",
            params={"name": "acme"},
            answer=Expected(values=["Parisx"], types=[AnswerType.TEXT]),
            forms=[TextForm(form_id="f", cohort="short", text="Where?")],
        )
        with pytest.raises(ConfigError, match="operator_meaning_depends_on_server") as stopped:
            check_source(reader, [group])
        assert "\n" not in str(stopped.value)
    finally:
        drop()


DEMO_TABLES = ("projects", "clients", "employees")  # children first, for dropping


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["sqlite", "psycopg", "psycopg2", "pymysql"])
def test_the_demos_queries_run_on_every_driver(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The legitimate queries still work: the demo database built on each driver, its dataset
    generated there (every template, grouped query and answer through the port), then every
    group's SQL re-read by the answer refresh: none refused, none vanished, none changed."""
    from groundwatch.demo.domain import DEMO_SOURCE, demo_dataset

    cleanup: Callable[[], None] = lambda: None  # noqa: E731
    if name == "sqlite":
        url = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    elif name == "pymysql":
        writer, _ = request.getfixturevalue("mysql_urls")
        url = writer
        owner = create_engine(writer)

        def cleanup() -> None:
            with owner.begin() as conn:
                for t in DEMO_TABLES:
                    conn.execute(text(f"DROP TABLE IF EXISTS {t}"))
            owner.dispose()

        cleanup()  # a run that died left them (the test database has no other user of these names)
        owner = create_engine(writer)
    else:
        made = make_url(request.getfixturevalue("fresh_pg_url")())
        url = made.set(drivername=f"postgresql+{name}").render_as_string(hide_password=False)
    try:
        _, groups = demo_dataset(k=1, url=url)
        assert len(groups) >= 20
        check_source(url, groups, DEMO_SOURCE)
        engine = readonly_engine(url, policy=DEMO_SOURCE)
        try:
            result = refresh_answers(engine, groups)
        finally:
            engine.dispose()
    finally:
        cleanup()
    assert result.refused == {} and result.vanished == [] and result.changed == []
    templates = {g.sql for g in groups}
    print(f"\nDEMO-FIGURES {name}: {len(groups)} groups, {len(templates)} distinct queries re-read")


def test_a_mariadb_session_reads_text_as_the_gate_printed_it(mysql_urls: tuple[str, str]) -> None:
    """A login whose sessions start with ``ANSI`` and ``NO_BACKSLASH_ESCAPES`` (here by the
    driver's init command; a server's global or a user's default does the same): the source
    session drops the modes that change how text is read, so a backslash in a literal and a
    quote in a value mean what sqlglot and PyMySQL's escaping take them to mean."""
    writer, reader = mysql_urls
    table, drop = _server_table(writer)
    owner = create_engine(writer)
    with owner.begin() as conn:
        conn.execute(
            text(f"INSERT INTO {table} (name, location, n) VALUES (:a, 'backslash', 99)"),
            {"a": "a\\b"},
        )
    owner.dispose()
    lexical = "ANSI,NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT,ANSI_QUOTES"
    url = make_url(reader).update_query_dict({"init_command": f"SET SESSION sql_mode='{lexical}'"})
    d = Driver("pymysql", url.render_as_string(hide_password=False), table)
    try:
        raw = create_engine(d.url)
        with raw.connect() as conn:  # the init command does take effect without the source setup
            assert (
                "NO_BACKSLASH_ESCAPES"
                in conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar_one()
            )
        raw.dispose()
        engine = readonly_engine(d.url)
        try:
            with engine.connect() as conn:
                mode = str(conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar_one())
        finally:
            engine.dispose()
        assert not set(mode.split(",")) & set(lexical.split(",")), mode
        assert _rows(d, "SELECT location FROM {t} WHERE name = 'a\\\\b'", {}) == [("backslash",)]
        assert _rows(d, "SELECT location FROM {t} WHERE name = :name", {"name": "a\\b"}) == [
            ("backslash",)
        ]
        for payload in PAYLOADS:
            assert _rows(d, "SELECT location FROM {t} WHERE name = ':name'", {"name": payload}) == [
                ("colon",)
            ]
    finally:
        drop()
