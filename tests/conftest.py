"""Shared fixtures: the real Kafka broker and PostgreSQL started by scripts/test.sh.

Under ``CI=true`` a test that needs a server fails when the server is missing; elsewhere it skips
with the reason, so a developer without the servers can still run the unit tier.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import hypothesis
import pytest

pytest_plugins = (
    "tests.fakes",  # the local OpenAI-compatible server fixtures
    "tests.unit_guard",  # a unit test that starts a process fails
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
IN_CI = os.environ.get("CI", "").lower() == "true"

# Property tests explore new examples on a developer's machine (that is how they find bugs), but a
# CI run must judge the commit, not the draw: under CI the examples are the same on every run.
hypothesis.settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis.settings.register_profile("dev", print_blob=True)
hypothesis.settings.load_profile("ci" if IN_CI else "dev")


def need(reason: str) -> None:
    """Skip, or fail under CI: a missing server must never pass CI silently."""
    if IN_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


async def _kafka_alive(bootstrap: str) -> str | None:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        await asyncio.wait_for(admin.start(), 10)
        await asyncio.wait_for(admin.list_topics(), 10)
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        await admin.close()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """Bootstrap address of the local real Kafka broker (scripts/kafka.sh)."""
    bootstrap = os.environ.get("GW_TEST_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    # A thread of its own: this session fixture may be first requested from inside a running loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        error = pool.submit(asyncio.run, _kafka_alive(bootstrap)).result()
    if error:
        log = os.environ.get("GW_TEST_KAFKA_LOG") or "see scripts/kafka.sh logs"
        need(f"no Kafka broker at {bootstrap} ({error}); broker log: {log}")
    return bootstrap


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """SQLAlchemy URL of this test run's own database on the throw-away PostgreSQL cluster
    (scripts/postgres.sh): two runs at once (two checkouts) share the cluster, never a database,
    so the tables one run's tests make are not the other's. Dropped when the run ends."""
    url = os.environ.get("GW_TEST_DATABASE_URL", "")
    if not url:
        need("GW_TEST_DATABASE_URL is not set (run through `make test`)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"gw_run_{uuid.uuid4().hex[:12]}"
    try:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        need(f"PostgreSQL at {url} unreachable: {exc}")
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _product_variables() -> frozenset[str]:
    """Every ``GW_*`` variable the product reads: the settings classes' fields (what `groundwatch
    settings` lists) and every ``GW_`` name written in the library's and services' source (the
    few read directly, e.g. ``GW_DEBUG``). The test harness's own (``GW_TEST_*``, the ports and
    homes scripts/*.sh read) are not among them, so a developer's servers stay reachable."""
    from groundwatch.cli.settings_doc import rows

    names = {row[0] for row in rows()}
    for folder in (ROOT / "shared" / "groundwatch", ROOT / "services"):
        for path in folder.rglob("*.py"):
            names.update(re.findall(r"\bGW_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    return frozenset(n for n in names if not n.startswith("GW_TEST_"))


PRODUCT_VARIABLES = _product_variables()


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test in a directory of its own with the product's default settings.

    The working directory is a fresh one (`make demo` leaves groundwatch.db in the checkout, and
    a command run with no --database-url would read it), and no ``GW_*`` setting of the shell
    that started pytest reaches the test: a test sets what it needs with ``monkeypatch`` or a
    subprocess's ``env``. Subprocesses inherit both.
    """
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    for name in PRODUCT_VARIABLES & os.environ.keys():
        monkeypatch.delenv(name)


@pytest.fixture
def unique_prefix() -> str:
    """A fresh topic prefix per test (quix-streams style), so tests never share state."""
    return f"t{uuid.uuid4().hex[:10]}."


@pytest.fixture
def fresh_pg_url(pg_url: str) -> Iterator[Callable[[], str]]:
    """Factory of fresh PostgreSQL schemas: each call makes a new database and returns its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    made: list[str] = []
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")

    def factory() -> str:
        name = f"gw_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        made.append(name)
        return make_url(pg_url).set(database=name).render_as_string(hide_password=False)

    yield factory
    with admin.connect() as conn:
        for name in made:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


#: The PostgreSQL login tests read sources as: no superuser, no server-file roles, SELECT only.
PG_READER = "gw_source_reader"


def pg_as_reader(url: str) -> str:
    """``url``'s database as :data:`PG_READER`, the login an operator gives groundwatch for a
    source (a superuser is refused: ``groundwatch.adapters.sources.connect``). Grants SELECT on
    the tables there now and on those its owner makes later; the role is made once per cluster."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    owner = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with owner.connect() as conn:
            conn.execute(
                text(
                    f"DO $$ BEGIN CREATE ROLE {PG_READER} LOGIN; EXCEPTION WHEN duplicate_object"
                    " OR unique_violation THEN NULL; END $$"
                )
            )
            conn.execute(text(f'GRANT CONNECT ON DATABASE "{parsed.database}" TO {PG_READER}'))
            conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {PG_READER}"))
            conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {PG_READER}"))
            conn.execute(
                text(
                    f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {PG_READER}"
                )
            )
    finally:
        owner.dispose()
    return parsed.set(username=PG_READER, password=None).render_as_string(hide_password=False)


@pytest.fixture
async def memory_bus() -> AsyncIterator[object]:
    from groundwatch.adapters.bus.memory import MemoryBus

    bus = MemoryBus(partitions=6)
    await bus.start()
    yield bus
    await bus.stop()


@pytest.fixture(scope="session")
def mysql_urls() -> Iterator[tuple[str, str]]:
    """(writer URL, read-only user's URL) of this test run's own database (``gwt_run_*``) on the
    throw-away MariaDB (scripts/mariadb.sh, which lets the read-only logins read ``gwt_*``): two
    runs at once share the server, never a database. Dropped when the run ends."""
    url = os.environ.get("GW_TEST_MYSQL_URL", "")
    reader = os.environ.get("GW_TEST_MYSQL_READER_URL", "")
    if not url or not reader:
        need("GW_TEST_MYSQL_URL / GW_TEST_MYSQL_READER_URL are not set (run through `make test`)")
    try:
        import pymysql  # noqa: F401
    except ImportError:
        need("PyMySQL is not installed (pip install -e '.[test]' or 'groundwatch[mysql]')")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"gwt_run_{uuid.uuid4().hex[:12]}"
    try:
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(
                text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
            )
    except Exception as exc:
        need(f"MariaDB at {url} unreachable: {exc}")
    own = [
        make_url(u).set(database=name).render_as_string(hide_password=False) for u in (url, reader)
    ]
    try:
        yield own[0], own[1]
    finally:
        with engine.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
        engine.dispose()


@pytest.fixture
def fresh_mysql_url(mysql_urls: tuple[str, str]) -> Iterator[Callable[[], str]]:
    """Factory of fresh MariaDB databases (``gwt_*``, which scripts/mariadb.sh lets the test
    user make): each call makes one and returns its URL; all are dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    made: list[str] = []
    admin = create_engine(mysql_urls[0], isolation_level="AUTOCOMMIT")

    def factory() -> str:
        name = f"gwt_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(
                text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
            )
        made.append(name)
        return make_url(mysql_urls[0]).set(database=name).render_as_string(hide_password=False)

    yield factory
    with admin.connect() as conn:
        for name in made:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
    admin.dispose()


@pytest.fixture(scope="session")
def phoenix_url() -> str:
    """Base URL of the throw-away Phoenix server (scripts/phoenix.sh), checked alive."""
    url = os.environ.get("GW_TEST_PHOENIX_URL", "")
    if not url:
        need("GW_TEST_PHOENIX_URL is not set (run through `make test`)")
    import httpx

    try:
        httpx.get(f"{url}/healthz", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        need(f"Phoenix at {url} unreachable: {exc}")
    return url
