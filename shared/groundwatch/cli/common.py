"""What every command shares: exit codes, the store's URL, one-line errors, progress bars.

Kept light on purpose (no SQLAlchemy, scipy or HTTP client at import): ``groundwatch --help``
imports every command module, and a CLI that takes seconds to print its help is not used.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast

import typer

if TYPE_CHECKING:
    from rich.progress import Progress

    from groundwatch.app.store import Store
    from groundwatch.errors import GroundwatchError

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


def check_port_free(host: str, port: int) -> None:
    """A port already taken (or a host that is not this machine's) is a usage error named up
    front, before the command prints its addresses or probes (uvicorn would log it after the
    first banner and exit 3): a continuous ``run`` and ``view`` serve HTTP."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        fail(f"--host {host}: {exc.strerror or exc}", EXIT_USAGE)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            fail(
                f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})", EXIT_USAGE
            )


def typed_options(ctx: typer.Context, names: Sequence[str]) -> list[str]:
    """The options of ``names`` (parameter names) given on the command line, as ``--flag``s:
    a default or a value from an environment variable is no choice the person made here."""
    typed = []
    for name in names:
        source = ctx.get_parameter_source(name)
        # by name: typer may bring its own copy of click's enum
        if source is not None and getattr(source, "name", "") == "COMMANDLINE":
            typed.append("--" + name.replace("_", "-"))
    return typed


def refuse_options(ctx: typer.Context, names: Sequence[str], mode: str) -> None:
    """A usage error (exit 2, one line) when an option of ``names`` was typed although the
    mode the command runs in (``mode``: "goes with …") ignores it: a contradiction accepted
    silently leaves the person believing an option acted that did not."""
    typed = typed_options(ctx, names)
    if typed:
        verb = "goes" if len(typed) == 1 else "go"
        raise typer.BadParameter(f"{', '.join(typed)} {verb} {mode}")


def check_named(option: str, names: tuple[str, str] | None, known: set[str], what: str) -> None:
    """A usage error (exit 2) when ``option`` names a cohort or target the data does not have:
    a typo would otherwise print "no observations" and exit 0, and a CI gate would pass."""
    from groundwatch.app.reports import unknown_name

    problem = unknown_name(option, names, known, what)
    if problem is not None:
        fail(problem, EXIT_USAGE)


def store_url(option: str | None) -> tuple[str, str]:
    """(URL, the name to blame in an error): the option, else ``GW_DATABASE_URL``, else the
    default file."""
    if option:
        return option, "--database-url"
    env = os.environ.get("GW_DATABASE_URL")
    if env:
        return env, "GW_DATABASE_URL"
    return DEFAULT_DATABASE_URL, "--database-url"


def open_store(option: str | None, *, create: bool = False, writable: bool = False) -> Store:
    """The store the option, ``GW_DATABASE_URL`` or the default names, connected; with
    ``create`` its schema brought to the newest migration (:func:`groundwatch.app.store.open_store`:
    a bad URL or a store without our tables is a usage error naming the option)."""
    from groundwatch.app.store import open_store as open_

    url, name = store_url(option)
    return open_(
        url,
        name,
        create=create,
        default=not option and name == "--database-url",
        writable=writable,
    )


def shown_url(url: str) -> str:
    """A URL as it may be printed (password hidden)."""
    from groundwatch.app.store import shown_url as shown

    return shown(url)


def exit_code_of(exc: GroundwatchError) -> int:
    """The exit code of an error a use case raised: 2 for a usage, configuration or input
    error (a bad option, URL, file or SQL text), else 3."""
    from groundwatch.errors import ConfigError, UnsafeSQL

    usage = isinstance(exc, ConfigError | UnsafeSQL) or type(exc).__name__.endswith("FormatError")
    return EXIT_USAGE if usage else EXIT_RUNTIME


F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(command: F) -> F:
    """``command`` with the errors its use cases raise (:class:`GroundwatchError`) turned into
    one ``error:`` line and the exit code of :func:`exit_code_of`: the use cases raise typed
    errors, and only the entry point decides how a failure ends the process."""
    from groundwatch.errors import GroundwatchError

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except GroundwatchError as exc:
            fail(str(exc), exit_code_of(exc))

    return cast(F, run)


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
