"""MySQL/MariaDB through the ``groundwatch[mysql]`` extra (PyMySQL), against a real MariaDB from
Debian's packages (``scripts/mariadb.sh``, started by ``scripts/test.sh``): generation from a
MySQL source read through a read-only session, and the judgements stored in MySQL, read back by
``groups`` and ``report``."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.db.tables import Base
from tests.integration._http_rag import answers_of, serve

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CLI = str(Path(sys.executable).with_name("groundwatch"))


#: groundwatch's tables, dropped after each test (the MariaDB database is shared by the run):
#: every table of the models, so a new migration's table is not left behind for the next test's
#: migration to trip over (a hand-kept list missed series_epochs: "Table already exists"),
#: children before the tables they reference
STORE_TABLES = (*(t.name for t in reversed(Base.metadata.sorted_tables)), "alembic_version")


@pytest.fixture
def source(mysql_urls: tuple[str, str]) -> Iterator[tuple[str, str]]:
    """A people table with rows (writer and read-only URLs); dropped afterwards."""
    url, reader = mysql_urls
    table = f"people_{uuid.uuid4().hex[:8]}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                f"CREATE TABLE {table} (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64),"
                " city VARCHAR(64), team VARCHAR(64))"
            )
        )
        cities = ["Espoo", "Lisbon", "Valletta", "Ghent", "Tartu", "Porto"]
        teams = ["Finance", "Research", "Sales", "Support", "Legal"]
        conn.execute(
            text(f"INSERT INTO {table} (name, city, team) VALUES (:n, :c, :t)"),
            [
                {"n": f"Person {chr(65 + i % 26)}{i}", "c": cities[i % 6], "t": teams[i % 5]}
                for i in range(30)
            ],
        )
    try:
        yield url, reader
    finally:
        with engine.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
            for t in STORE_TABLES:
                conn.execute(text(f"DROP TABLE IF EXISTS {t}"))
        engine.dispose()


def gw(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, timeout=240, cwd=cwd, env=env
    )


def test_generate_from_mysql_probe_and_store_in_mysql(
    source: tuple[str, str], tmp_path: Path
) -> None:
    url, reader = source
    dataset = tmp_path / "groups.jsonl"
    gen = gw("gen", "--db", reader, "--out", str(dataset), cwd=tmp_path)
    assert gen.returncode == 0, gen.stderr[-3000:]
    groups = [orjson.loads(line) for line in dataset.read_bytes().splitlines()]
    assert len(groups) >= 20
    assert all("SELECT" in g["sql"] for g in groups)

    def knows(gid: str) -> bool:
        return int(gid, 16) % 3 != 0

    with serve(answers_of(dataset, knows)) as endpoint:
        targets = tmp_path / "t.yaml"
        targets.write_text(f"targets:\n  - {{name: mine, type: http_json, url: '{endpoint}'}}\n")
        run = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--once",
                 "--database-url", url, "--quiet", cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    listed = gw("groups", "--status", "gap", "--json", "--database-url", url, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr[-3000:]
    page = orjson.loads(listed.stdout)
    assert {g["group_id"] for g in page["groups"]} == {
        g["group_id"] for g in groups if not knows(g["group_id"])
    }
    assert all(g["sql"] and g["forms"][0]["question"] for g in page["groups"])
    report = gw("report", "--database-url", url, "--quiet", "--fail-under", "acc_db=0.5",
                cwd=tmp_path)  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]


def test_mysql_source_session_cannot_write(source: tuple[str, str]) -> None:
    """The generator's engine is read-only even for a user that may write."""
    from groundwatch.adapters.sources.connect import readonly_engine

    url, _ = source
    engine = readonly_engine(url)
    try:
        with pytest.raises(Exception, match=r"READ ONLY|read-only|read only"), engine.begin() as c:
            c.execute(text("CREATE TABLE gw_should_not_exist (x INT)"))
    finally:
        engine.dispose()


def test_a_dead_letter_of_the_largest_size_is_stored_whole(source: tuple[str, str]) -> None:
    """A letter keeps up to 512 KiB of raw bytes (~700 KB of base64): MySQL's TEXT stops at
    64 KB, so the column is LONGTEXT there; what the contract accepts, the store takes."""
    import base64

    from groundwatch.adapters.db import create_schema, make_engine
    from groundwatch.adapters.db.dead_letters import DeadLetterStore
    from groundwatch.contracts import MAX_DEAD_LETTER_RAW, DeadLetter

    url, _ = source
    engine = make_engine(url)
    create_schema(engine)
    raw = bytes(range(256)) * (MAX_DEAD_LETTER_RAW // 256)
    letter = DeadLetter(
        error="judge: RuntimeError: x",
        source_topic="gw.responses",
        partition=0,
        offset=2**40,  # Kafka offsets are 64-bit
        raw_b64=base64.b64encode(raw).decode(),
        service="judge",
    )
    store = DeadLetterStore(engine)
    store.save([letter])
    store.save([letter])  # redelivered: a no-op
    (row,) = store.newest()
    engine.dispose()
    assert row.offset == 2**40
    assert base64.b64decode(row.raw_b64) == raw
