"""What every command shares: exit codes, the store's URL, one-line errors, progress bars.

Kept light on purpose (no SQLAlchemy, scipy or HTTP client at import): ``groundwatch --help``
imports every command module, and a CLI that takes seconds to print its help is not used.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from rich.progress import Progress
    from sqlalchemy import Engine

#: Exit codes, documented in the README and ``groundwatch --help``.
EXIT_OK = 0
EXIT_THRESHOLD = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3

#: The store every command reads and writes unless told otherwise (the services' default too).
DEFAULT_DATABASE_URL = "sqlite:///groundwatch.db"

DatabaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="Store of judgements (SQLAlchemy URL). Default: GW_DATABASE_URL, else"
        f" {DEFAULT_DATABASE_URL} in the current directory.",
        show_default=False,
    ),
]
AllowPrivilegedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-privileged-source",
        help="Accept a source database login that can reach the server's files or other"
        " sessions (a PostgreSQL superuser or member of pg_read_server_files,"
        " pg_write_server_files, pg_execute_server_program; a MySQL user with FILE or SUPER),"
        " with a warning. Without it such a login is refused.",
    ),
]
SourceTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--source-timeout",
        min=0.001,
        help="Seconds one statement on the source database may run (one batch of rows of a"
        " streamed one) before the database cancels it.",
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress bars or text report (errors still print)."),
]


def fail(message: str, code: int = EXIT_RUNTIME) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (one line, no traceback)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def check_named(option: str, names: tuple[str, str] | None, known: set[str], what: str) -> None:
    """A usage error (exit 2) when ``option`` names a cohort or target the data does not have:
    a typo would otherwise print "no observations" and exit 0, and a CI gate would pass."""
    if names is None:
        return
    missing = [n for n in names if n not in known]
    if missing:
        fail(
            f"{option}: no {what} {missing[0]!r} in these judgements; {what}s:"
            f" {', '.join(sorted(known)) or 'none'}",
            EXIT_USAGE,
        )


def store_url(option: str | None) -> tuple[str, str]:
    """(URL, the name to blame in an error): the option, else ``GW_DATABASE_URL``, else the
    default file."""
    if option:
        return option, "--database-url"
    env = os.environ.get("GW_DATABASE_URL")
    if env:
        return env, "GW_DATABASE_URL"
    return DEFAULT_DATABASE_URL, "--database-url"


def open_store(option: str | None, *, create: bool = False) -> Engine:
    """The store's engine, connected; with ``create`` the schema is brought to the newest
    migration, else a store without our tables is an error naming the option."""
    from groundwatch.adapters.db.engine import open_engine
    from groundwatch.errors import ConfigError

    url, name = store_url(option)
    if not create:
        _no_new_sqlite_file(url, name, default=not option and name == "--database-url")
    try:
        # reading never writes: a file that is no store stays byte for byte as it was
        engine = open_engine(url, name, read_only=not create)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    if create:
        from groundwatch.adapters.db import create_schema

        try:
            create_schema(engine)
        except Exception as exc:  # a read-only file, a user without DDL rights
            engine.dispose()
            fail(f"{name}: cannot create the groundwatch tables ({_first_line(exc)})", EXIT_USAGE)
        return engine
    from sqlalchemy import inspect

    if not inspect(engine).has_table("judgements"):
        engine.dispose()
        where = "the default store" if name == "--database-url" and not option else name
        fail(
            f"{where} ({_shown(url)}) holds no groundwatch judgements; run `groundwatch run"
            " --once` or `groundwatch demo` first, or point --database-url at their store",
            EXIT_USAGE,
        )
    return engine


def _no_new_sqlite_file(url: str, name: str, *, default: bool) -> None:
    """Reading a SQLite store that is not there must not create an empty one as a side effect
    (SQLite makes the file on connect): say where the store was looked for instead."""
    from pathlib import Path

    from groundwatch.adapters.db.engine import database_url_problem

    if database_url_problem(url) is not None:
        return  # open_engine names the problem
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    db = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or db in ("", ":memory:") or db.startswith("file:"):
        return
    if not Path(db).exists():
        where = "the default store" if default else name
        fail(
            f"{where}: cannot connect (no such database file {Path(db).resolve()}); run"
            " `groundwatch run --once` or `groundwatch demo` first, or point --database-url"
            " at their store",
            EXIT_USAGE,
        )


def _shown(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def shown_url(url: str) -> str:
    """A URL as it may be printed (password hidden)."""
    return _shown(url)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {text[0] if text else ''}"[:300]


def interactive(quiet: bool) -> bool:
    """Progress bars only for a person at a terminal: never with ``--quiet``, under CI or into a
    pipe (a CI log full of redrawn bars helps nobody)."""
    if quiet or os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return False
    return sys.stderr.isatty()


def make_progress(*, transient: bool = False) -> Progress:
    """A rich progress bar on stderr with count, elapsed time and ETA."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=transient,
    )


@contextmanager
def progress_bar(
    description: str, *, enabled: bool, total: int | None = None
) -> Iterator[Callable[[int, int], None]]:
    """``update(done, total)`` for a bar shown only when ``enabled`` (else a no-op)."""
    if not enabled:
        yield lambda _done, _total: None
        return
    with make_progress() as progress:
        task = progress.add_task(description, total=total)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update
