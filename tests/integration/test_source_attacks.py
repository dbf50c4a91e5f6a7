"""The source database stays untouched by construction, on SQLite, PostgreSQL (psycopg and
psycopg2) and MariaDB (PyMySQL).

A dataset file's ``sql`` is untrusted text that the per-cycle answer refresh runs on the source.
Before the read gate it ran behind a read-only transaction only: ``pg_read_file('/etc/passwd')``
became the group's new answer — in ``judgements.expected`` and in the report — and, as superuser,
``lo_export`` wrote a file on the server, ``pg_terminate_backend`` killed another session,
``pg_advisory_lock`` and ``set_config`` ran. Here a dataset whose groups carry the attack list is
probed through the embedded pipeline with answers refreshed from the source — as the cluster's
superuser where there is one, explicitly accepted, so the gate alone has to hold — and:

* every attack is refused by the gate (its reason code is printed), none reaches the server;
* no attack group's expected answer changes, nothing read by an attack is in ``judgements.expected``
  or the report, no answer version is recorded for one; a plain group is still refreshed;
* the server is unchanged (rows, tables, database settings; no large object, no file, no advisory
  lock, the would-be victim session alive);
* ``check_source`` (what ``groundwatch run --source`` runs first) refuses the dataset in one line.

The second walls are tested too: a query the gate accepts but that runs too long is cancelled on
each engine (SQLite by the progress handler — an endless recursive CTE on the raw connection as
well), and a privileged login is refused unless the policy accepts it.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from groundwatch.adapters.db.datasets import read_jsonl, write_jsonl
from groundwatch.adapters.db.evidence import StoreEvidence
from groundwatch.adapters.db.tables import AnswerVersionRow
from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.core.generation.sql_gate import ReadGate, rejection_code
from groundwatch.core.model import AnswerType, Expected, SemanticGroup, TextForm
from groundwatch.errors import ConfigError, UnsafeSQL
from groundwatch.report.build import report_from_tagger
from groundwatch.runtime.refresh import check_source
from groundwatch.stages.runner.lanes import Runner
from tests.conftest import pg_as_reader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROWS = [("acme", "Paris"), ("globex", "Lyon"), ("initech", "Nice")]
PLAIN = "SELECT location FROM {t} WHERE name = :name"
CANARY = "canary"
#: What an attack that ran would have put in an answer (checked absent from store and report).
LEAK_MARKERS = ("root:x:0:0", "PostgreSQL 1", "MariaDB", "CREATE TABLE", "/var/lib/")

COMMON = {
    "stacked delete": "SELECT location FROM {t} WHERE name = :name; DELETE FROM {t}",
    "comment": "SELECT location FROM {t} WHERE name = :name -- and then",
    "recursive CTE": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
    " SELECT count(*) FROM c, {t} WHERE name = :name",
    "locking clause": "SELECT location FROM {t} WHERE name = :name FOR UPDATE",
    "current user": "SELECT current_user FROM {t} WHERE name = :name",
    "set operation": "SELECT location FROM {t} WHERE name = :name UNION SELECT location FROM {t}",
    "stacked select": "SELECT location FROM {t} WHERE name = :name; SELECT 1",
    "block comment": "SELECT location /* x */ FROM {t} WHERE name = :name",
    "CTE with DML": "WITH d AS (DELETE FROM {t} RETURNING name) SELECT name FROM d"
    " WHERE name = :name",
    "update": "UPDATE {t} SET location = 'x' WHERE name = :name",
    "insert from select": "INSERT INTO {t} (name) SELECT name FROM {t} WHERE name = :name",
    "drop": "DROP TABLE {t}",
}
POSTGRES = {
    "pg_read_file": "SELECT pg_read_file('/etc/passwd') FROM {t} WHERE name = :name",
    "pg_read_file in WHERE": "SELECT location FROM {t} WHERE name = :name"
    " AND pg_read_file('/etc/passwd') IS NOT NULL",
    "pg_ls_dir": "SELECT pg_ls_dir('.') FROM {t} WHERE name = :name",
    "lo_export": "SELECT lo_export(lo_from_bytea(0, convert_to('pwned', 'UTF8')),"
    " '{file}') FROM {t} WHERE name = :name",
    "lo_from_bytea": "SELECT lo_from_bytea(0, convert_to('pwned', 'UTF8')) FROM {t}"
    " WHERE name = :name",
    "pg_terminate_backend": "SELECT pg_terminate_backend({victim}) FROM {t} WHERE name = :name",
    "pg_reload_conf": "SELECT pg_reload_conf() FROM {t} WHERE name = :name",
    "pg_logical_emit_message": "SELECT pg_logical_emit_message(true, 'gw', 'pwned') FROM {t}"
    " WHERE name = :name",
    "pg_advisory_lock": "SELECT location FROM {t} WHERE name = :name AND"
    " pg_advisory_lock(424242) IS NOT NULL",
    "set_config": "SELECT set_config('default_transaction_read_only', 'off', false) FROM {t}"
    " WHERE name = :name",
    "dblink": "SELECT dblink('dbname=postgres', 'SELECT 1') FROM {t} WHERE name = :name",
    "current_setting": "SELECT current_setting('data_directory') FROM {t} WHERE name = :name",
    "query_to_xml": "SELECT query_to_xml('SELECT rolpassword FROM pg_authid', true, true, '')"
    " FROM {t} WHERE name = :name",
    "version": "SELECT version() FROM {t} WHERE name = :name",
    "pg_sleep": "SELECT location FROM {t} WHERE name = :name AND pg_sleep(30) IS NOT NULL",
    "txid_current": "SELECT txid_current() FROM {t} WHERE name = :name",
    "generate_series": "SELECT generate_series(1, 1000000000) FROM {t} WHERE name = :name",
    "catalogue pg_shadow": "SELECT passwd FROM pg_shadow WHERE usename = :name",
    "catalogue in a union": "SELECT location FROM {t} WHERE name = :name"
    " UNION SELECT rolname FROM pg_roles",
    "regclass cast": "SELECT CAST('pg_authid' AS regclass) FROM {t} WHERE name = :name",
    "select into": "SELECT location INTO pwned FROM {t} WHERE name = :name",
    "copy to a file": "COPY {t} TO '{file}'",
    "nested comment": "SELECT location FROM {t} WHERE name = :name /* /* */ ; DELETE FROM {t} */",
    "SET": "SET default_transaction_read_only = off",
    "set transaction": "SET TRANSACTION READ WRITE",
    "COPY FROM PROGRAM": "COPY {t} FROM PROGRAM 'id'",
    "pg_read_binary_file": "SELECT pg_read_binary_file('/etc/passwd') FROM {t} WHERE name = :name",
    "DO block": "DO $$ BEGIN PERFORM pg_sleep(30); END $$",
    "pg_advisory_xact_lock": "SELECT location FROM {t} WHERE name = :name AND"
    " pg_advisory_xact_lock(424242) IS NOT NULL",
    "dollar-quoted stacked": "SELECT location FROM {t} WHERE name = $$x$$; DELETE FROM {t}",
    "writable CTE update": "WITH u AS (UPDATE {t} SET location = 'x' RETURNING name)"
    " SELECT name FROM u WHERE name = :name",
}
SQLITE = {
    "load_extension": "SELECT load_extension('/nonexistent/ext') FROM {t} WHERE name = :name",
    "readfile": "SELECT readfile('/etc/passwd') FROM {t} WHERE name = :name",
    "writefile": "SELECT writefile('{file}', 'pwned') FROM {t} WHERE name = :name",
    "sqlite_master": "SELECT sql FROM sqlite_master WHERE name = :name",
    "pragma function": "SELECT name FROM pragma_table_info('{t}') WHERE name = :name",
    "sqlite_version": "SELECT sqlite_version() FROM {t} WHERE name = :name",
    "randomblob": "SELECT length(randomblob(1000000000)) FROM {t} WHERE name = :name",
    "attach": "ATTACH DATABASE '{file}' AS pwned",
    "pragma write": "PRAGMA query_only = OFF",
    "vacuum into": "VACUUM INTO '{file}'",
}
MARIADB = {
    "LOAD_FILE": "SELECT LOAD_FILE('/etc/passwd') FROM {t} WHERE name = :name",
    "INTO OUTFILE": "SELECT location FROM {t} WHERE name = :name INTO OUTFILE '{file}'",
    "sleep": "SELECT location FROM {t} WHERE name = :name AND sleep(30) = 0",
    "benchmark": "SELECT benchmark(100000000, md5('x')) FROM {t} WHERE name = :name",
    "get_lock": "SELECT get_lock('gw_attack_lock', 0) FROM {t} WHERE name = :name",
    "server variable": "SELECT @@datadir FROM {t} WHERE name = :name",
    "version": "SELECT version() FROM {t} WHERE name = :name",
    "user()": "SELECT user() FROM {t} WHERE name = :name",
    "mysql.user": "SELECT authentication_string FROM mysql.user WHERE user = :name",
    "information_schema": "SELECT table_name FROM information_schema.tables"
    " WHERE table_name = :name",
    "executable comment": "SELECT location FROM {t} WHERE name = :name"
    " /*!50000 UNION SELECT @@version */",
    "optimizer hint": "SELECT /*+ MAX_EXECUTION_TIME(0) */ location FROM {t} WHERE name = :name",
    "user variable": "SELECT @a := location FROM {t} WHERE name = :name",
    "pipes (OR on the default sql_mode)": "SELECT location || 'x' FROM {t} WHERE name = :name",
    "SET variable": "SET @a = 1",
    "SET sql_mode": "SET SESSION sql_mode = 'ANSI'",
    "LOAD DATA": "LOAD DATA INFILE '/etc/passwd' INTO TABLE {t}",
    "INTO DUMPFILE": "SELECT location FROM {t} WHERE name = :name INTO DUMPFILE '{file}'",
    "select into variable": "SELECT location INTO @v FROM {t} WHERE name = :name",
    "hash comment": "SELECT location FROM {t} WHERE name = :name # x",
    "HANDLER": "HANDLER {t} OPEN",
    "release_all_locks": "SELECT release_all_locks() FROM {t} WHERE name = :name",
}


@dataclass
class Source:
    """One engine's source database: the URL the pipeline reads it with, its policy, the table,
    the attacks, and a snapshot of everything an attack could change on the server."""

    engine: str
    url: str
    policy: SourcePolicy
    table: str
    attacks: dict[str, str]
    snapshot: Callable[[], Any]
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def _group(gid: str, sql: str, name: str, answer: str) -> SemanticGroup:
    return SemanticGroup(
        group_id=gid,
        dataset_id="attacks",
        sql=sql,
        params={"name": name},
        answer=Expected(values=[answer], types=[AnswerType.TEXT]),
        forms=[TextForm(form_id=f"{gid}-f0", cohort="short", text=f"Where is {name} based?")],
    )


def _sqlite_source(tmp: Path) -> Source:
    path = tmp / "source.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE client (id INTEGER PRIMARY KEY, name TEXT UNIQUE, location TEXT)")
    con.executemany("INSERT INTO client (name, location) VALUES (?, ?)", ROWS)
    con.commit()
    con.close()
    file = tmp / "gw-attack-out"

    def snapshot() -> Any:
        return hashlib.sha256(path.read_bytes()).hexdigest(), file.exists()

    attacks = {k: v.format(t="client", file=file) for k, v in {**COMMON, **SQLITE}.items()}
    return Source("sqlite", f"sqlite:///{path}", SourcePolicy(), "client", attacks, snapshot)


def _postgres_source(url: str) -> Source:
    owner = create_engine(url)
    with owner.begin() as conn:
        conn.execute(text("CREATE TABLE client (id serial PRIMARY KEY, name text, location text)"))
        conn.execute(
            text("INSERT INTO client (name, location) VALUES (:n, :l)"),
            [{"n": n, "l": loc} for n, loc in ROWS],
        )
    victim = owner.raw_connection()
    driver = victim.driver_connection
    assert driver is not None
    victim_pid = driver.info.backend_pid
    file = f"/tmp/gw-attack-{uuid.uuid4().hex}"

    def snapshot() -> Any:
        with owner.connect() as conn:
            rows = conn.execute(text("SELECT string_agg(c::text, '|' ORDER BY id) FROM client c"))
            tables = conn.execute(
                text(
                    "SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY 1, 2)"
                    " FROM information_schema.tables WHERE table_schema NOT IN"
                    " ('pg_catalog', 'information_schema')"
                )
            )
            settings = conn.execute(
                text(
                    "SELECT setconfig FROM pg_db_role_setting WHERE setdatabase ="
                    " (SELECT oid FROM pg_database WHERE datname = current_database())"
                )
            ).all()
            large_objects = conn.execute(text("SELECT count(*) FROM pg_largeobject_metadata"))
            locks = conn.execute(
                text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242")
            )
            state = (
                rows.scalar_one(),
                tables.scalar_one(),
                settings,
                large_objects.scalar_one(),
                locks.scalar_one(),
            )
        cur = victim.cursor()
        cur.execute("SELECT 1")  # the session pg_terminate_backend would have killed
        alive = cur.fetchone() == (1,)
        cur.close()
        victim.rollback()
        return state, alive, Path(file).exists()

    attacks = {
        k: v.format(t="client", file=file, victim=victim_pid)
        for k, v in {**COMMON, **POSTGRES}.items()
    }
    # the cluster's superuser, accepted on purpose: the gate alone must stop every attack
    policy = SourcePolicy(allow_privileged=True)
    source = Source("postgres", url, policy, "client", attacks, snapshot)
    source.cleanup += [victim.close, owner.dispose]
    return source


def _mariadb_source(url: str) -> Source:
    table = f"atk_{uuid.uuid4().hex[:10]}"
    owner = create_engine(url)
    with owner.begin() as conn:
        conn.execute(
            text(
                f"CREATE TABLE {table} (id INT AUTO_INCREMENT PRIMARY KEY,"
                " name VARCHAR(64) UNIQUE, location VARCHAR(64))"
            )
        )
        conn.execute(
            text(f"INSERT INTO {table} (name, location) VALUES (:n, :l)"),
            [{"n": n, "l": loc} for n, loc in ROWS],
        )
    file = f"/tmp/gw-attack-{uuid.uuid4().hex}"

    def snapshot() -> Any:
        with owner.connect() as conn:
            checksum = conn.execute(text(f"CHECKSUM TABLE {table}")).one()[1]
            rows = conn.execute(text(f"SELECT name, location FROM {table} ORDER BY id")).all()
            lock = conn.execute(text("SELECT IS_USED_LOCK('gw_attack_lock')")).scalar_one()
        return checksum, rows, lock, Path(file).exists()

    def drop() -> None:
        with owner.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        owner.dispose()

    attacks = {k: v.format(t=table, file=file) for k, v in {**COMMON, **MARIADB}.items()}
    # user gw may write this database (not FILE, not SUPER): the gate and the read-only session
    # must keep it from doing so
    source = Source("mariadb", url, SourcePolicy(), table, attacks, snapshot)
    source.cleanup.append(drop)
    return source


@pytest.fixture(params=["sqlite", "postgres", "postgres-psycopg2", "mariadb"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Source]:
    if request.param == "sqlite":
        made = _sqlite_source(tmp_path)
    elif request.param.startswith("postgres"):
        made = _postgres_source(request.getfixturevalue("fresh_pg_url")())
        if request.param == "postgres-psycopg2":  # binds on the client, as PyMySQL does
            psycopg2 = make_url(made.url).set(drivername="postgresql+psycopg2")
            made.url = psycopg2.render_as_string(hide_password=False)
            made.engine = request.param
    else:
        writer, _ = request.getfixturevalue("mysql_urls")
        made = _mariadb_source(writer)
    yield made
    for step in made.cleanup:
        step()


async def test_dataset_sql_attacks_are_refused_and_leave_no_trace(
    source: Source, tmp_path: Path
) -> None:
    before = source.snapshot()
    plain = PLAIN.format(t=source.table)
    # the dataset as a file, as an operator would be handed it: one honest group whose answer
    # the source has changed since (the refresh must still work), one group per attack
    groups = [_group("plain", plain, "acme", "Lyon")] + [
        _group(f"attack-{i:02d}", sql, "acme", CANARY)
        for i, sql in enumerate(source.attacks.values())
    ]
    dataset = tmp_path / "dataset.jsonl"
    write_jsonl(groups, dataset)
    groups = list(read_jsonl(dataset))

    # the gate on its own: every attack refused, with its reason
    ro = readonly_engine(source.url, policy=source.policy)
    try:
        with ro.connect() as conn:
            gate = ReadGate(introspect(conn, profile=False))
            assert gate.check(plain)  # the honest query passes
            reasons: dict[str, str] = {}
            for name, sql in source.attacks.items():
                with pytest.raises(UnsafeSQL) as refused:
                    SqlAlchemyPort(conn, gate).rows(sql, {"name": "acme"})
                reasons[name] = rejection_code(refused.value)
    finally:
        ro.dispose()

    # `groundwatch run --source` checks the dataset first: one line, naming the gate
    with pytest.raises(ConfigError, match="refused by the read gate") as stopped:
        check_source(source.url, groups, source.policy)
    assert "\n" not in str(stopped.value)

    # the services' path: each cycle refreshes the answers from the source, then probes
    runner = Runner(
        {"t": CallableTarget(lambda q: {"answer": "Paris"})}, {"t": TargetLimits(concurrency=4)}
    )
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    pipeline = EmbeddedPipeline(
        groups,
        runner,
        database_url=store_url,
        source_url=source.url,
        source_policy=source.policy,
    )
    await pipeline.start()
    try:
        result = await pipeline.run(2, timeout_s=120)
        report = report_from_tagger(
            pipeline.analytics.tagger, evidence=StoreEvidence(pipeline.engine)
        ).model_dump_json(by_alias=True)
        with pipeline.engine.connect() as conn:
            # a judgement row references its expected answer, stored once per version
            expected = conn.execute(
                text(
                    "SELECT j.group_id, COALESCE(j.expected, e.expected) FROM judgements j"
                    " LEFT JOIN expected_answers e ON e.ref = j.expected_ref"
                )
            ).all()
            versions = conn.execute(select(AnswerVersionRow.group_id)).scalars().all()
    finally:
        await pipeline.stop()
    assert result.published == 2 * len(groups)
    by_group: dict[str, set[str]] = {}
    for gid, exp in expected:
        data = exp if isinstance(exp, dict) else orjson.loads(exp)
        by_group.setdefault(gid, set()).add(orjson.dumps(data["values"]).decode())
    attack_ids = {g.group_id for g in groups if g.group_id != "plain"}
    assert {gid: v for gid, v in by_group.items() if gid in attack_ids} == {
        gid: {f'["{CANARY}"]'} for gid in attack_ids
    }
    assert by_group["plain"] >= {'["Paris"]'}  # the honest group was refreshed
    assert set(versions) == {"plain"}
    dumped = orjson.dumps([e for _, e in expected]).decode()
    for marker in LEAK_MARKERS:
        assert marker not in dumped, (marker, dumped[dumped.find(marker) - 200 :][:400])
        assert marker not in report, (marker, report[report.find(marker) - 200 :][:400])

    assert source.snapshot() == before
    codes = sorted(set(reasons.values()))
    print(
        f"\nATTACK-FIGURES {source.engine}: attacks {len(source.attacks)}, refused by the gate"
        f" {len(reasons)}, leaked 0, server unchanged; reasons {codes}"
    )


@pytest.mark.parametrize("engine_name", ["sqlite", "postgres", "mariadb"])
def test_a_long_query_the_gate_accepts_is_cancelled(
    engine_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The statement timeout is a wall of its own: a cross join the gate has no reason to
    refuse runs for hours; each engine cancels it after the policy's timeout."""
    big = [(f"n{i}", f"l{i}") for i in range(3000)]
    if engine_name == "sqlite":
        path = tmp_path / "big.db"
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE big (name TEXT, location TEXT)")
        con.executemany("INSERT INTO big VALUES (?, ?)", big)
        con.commit()
        con.close()
        url, table, done = f"sqlite:///{path}", "big", lambda: None
        policy = SourcePolicy(0.5)
    elif engine_name == "postgres":
        url = request.getfixturevalue("fresh_pg_url")()
        owner = create_engine(url)
        with owner.begin() as conn:
            conn.execute(text("CREATE TABLE big (name text, location text)"))
            conn.execute(
                text("INSERT INTO big VALUES (:n, :l)"), [{"n": n, "l": v} for n, v in big]
            )
        owner.dispose()
        url, table, done = pg_as_reader(url), "big", lambda: None
        policy = SourcePolicy(0.5)
    else:
        writer, reader = request.getfixturevalue("mysql_urls")
        table = f"big_{uuid.uuid4().hex[:10]}"
        owner = create_engine(writer)
        with owner.begin() as conn:
            conn.execute(text(f"CREATE TABLE {table} (name VARCHAR(16), location VARCHAR(16))"))
            conn.execute(
                text(f"INSERT INTO {table} VALUES (:n, :l)"), [{"n": n, "l": v} for n, v in big]
            )

        def done() -> None:
            with owner.begin() as conn:
                conn.execute(text(f"DROP TABLE {table}"))
            owner.dispose()

        url, policy = reader, SourcePolicy(0.5)
    heavy = f"SELECT COUNT(*) FROM {table} AS a, {table} AS b, {table} AS c WHERE a.name <> c.name"
    engine = readonly_engine(url, policy=policy)
    try:
        with engine.connect() as conn:
            started = time.monotonic()
            with pytest.raises(DBAPIError, match=r"(?i)timeout|max_statement_time|interrupted"):
                list(SqlAlchemyPort(conn).rows(heavy))
            took = time.monotonic() - started
    finally:
        engine.dispose()
        done()
    assert took < 30, took  # 2.7e10 rows would take hours
    print(f"\nTIMEOUT-FIGURES {engine_name}: cancelled after {took:.2f} s (timeout 0.5 s)")


def test_an_endless_recursive_cte_on_sqlite_stops(tmp_path: Path) -> None:
    """Past the gate (on the raw connection), SQLite's progress handler still ends it."""
    path = tmp_path / "s.db"
    sqlite3.connect(path).close()
    engine = readonly_engine(f"sqlite:///{path}", statement_timeout_s=0.3)
    raw = engine.raw_connection()
    try:
        driver = raw.driver_connection
        assert driver is not None
        endless = (
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
        )
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            driver.execute(endless).fetchall()
        assert driver.execute("SELECT 1").fetchone() == (1,)  # the connection is still usable
    finally:
        raw.close()
        engine.dispose()


def test_privileged_logins_are_refused_unless_accepted(
    fresh_pg_url: Callable[[], str], mysql_urls: tuple[str, str]
) -> None:
    url = fresh_pg_url()
    role = f"gw_files_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN IN ROLE pg_read_server_files"))
    files_url = make_url(url).set(username=role).render_as_string(hide_password=False)
    writer, reader = mysql_urls
    file_user = make_url(writer).set(username="gw_file").render_as_string(hide_password=False)
    try:
        for login, holds in (
            (url, "superuser"),
            (files_url, "pg_read_server_files"),
            (file_user, "FILE"),
        ):
            refused = readonly_engine(login)
            with pytest.raises(ConfigError, match=holds) as why:
                refused.connect()
            refused.dispose()
            assert "--allow-privileged-source" in str(why.value)
            accepted = readonly_engine(login, policy=SourcePolicy(allow_privileged=True))
            with accepted.connect() as conn:
                assert conn.execute(text("SELECT 1")).scalar_one() == 1
            accepted.dispose()
        for login in (pg_as_reader(url), reader, writer):  # SELECT-only, or one database only
            plain = readonly_engine(login)
            with plain.connect() as conn:
                assert conn.execute(text("SELECT 1")).scalar_one() == 1
            plain.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP OWNED BY {role}"))
            conn.execute(text(f"DROP ROLE {role}"))
        admin.dispose()
