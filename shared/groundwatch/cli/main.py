"""The ``groundwatch`` command line: one typer app, one module per subcommand group.

Exit codes: 0 ok; 1 a ``--fail-under``/``--max`` threshold was broken; 2 a usage, configuration or
input error (bad option, bad URL, unreachable database, nothing to generate or probe); 3 a runtime
error (every probe of a target failed, an unexpected failure). Every error is one line on stderr,
never a traceback (``GW_DEBUG=1`` shows it).

Command modules import their heavy dependencies (SQLAlchemy, scipy, the HTTP and LLM clients)
inside the commands, so ``--help`` and light commands start in well under a second.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from groundwatch import __version__
from groundwatch.cli.common import exit_code_of

app = typer.Typer(
    name="groundwatch",
    help="Grounded, continuous evaluation of production RAG systems.\n\n"
    "Exit codes: 0 ok, 1 a --fail-under/--max threshold broken, 2 usage or configuration error,"
    " 3 runtime error.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Docstrings are wrapped at 100 columns in the source: Markdown re-flows each paragraph to
    # the terminal's width, where Rich markup keeps every source line break (ragged --help).
    rich_markup_mode="markdown",
)

#: Subcommand modules; each exposes ``register(app)``.
MODULES = (
    "gen",
    "judge_agreement",
    "report",
    "demo",
    "run",
    "groups",
    "ops",
    "store",
    "settings_doc",
    "diff",
    "traffic",
    "view",
)

#: Commands whose ``--json`` may be given without a file (standard output).
_JSON_TO_STDOUT = ("groups", "show", "runs", "dead-letters")


def _register() -> None:
    for name in MODULES:
        module = importlib.import_module(f"groundwatch.cli.{name}")
        module.register(app)


@app.command()
def version() -> None:
    """Print the groundwatch version."""
    typer.echo(__version__)


_register()


def _json_without_file(argv: list[str]) -> list[str]:
    """``groups --json`` means ``groups --json -`` (JSON on standard output)."""
    if not argv or argv[0] not in _JSON_TO_STDOUT:
        return argv
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        last = i + 1 == len(argv)
        if arg == "--json" and (last or (argv[i + 1].startswith("-") and argv[i + 1] != "-")):
            out.append("-")
    return out


#: Options whose value may be left out (``--fail-on-regression`` alone: 0), as ``OPT=N``.
_OPTIONAL_VALUE = {"--fail-on-regression": "0"}


def _optional_values(argv: list[str]) -> list[str]:
    """``--fail-on-regression`` alone means ``--fail-on-regression=0``; ``… 3`` is ``=3``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _OPTIONAL_VALUE:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and nxt.isdigit():
                out.append(f"{arg}={nxt}")
                i += 2
                continue
            out.append(f"{arg}={_OPTIONAL_VALUE[arg]}")
        else:
            out.append(arg)
        i += 1
    return out


#: Commands that read ``GW_*`` settings: a misspelt variable is warned about before they run.
_READS_SETTINGS = frozenset(
    {"run", "demo", "gen", "report", "groups", "show", "runs", "diff", "baseline"}
)


#: Commands that read no ``GW_*`` setting (the settings table is how a bad one is looked up).
_READS_NO_SETTINGS = frozenset({"version", "settings"})


def _checks_settings(argv: list[str]) -> bool:
    """Whether every set ``GW_*`` variable is validated before the command starts: any command
    but those reading none, and never for ``--help``."""
    return bool(argv) and argv[0] not in _READS_NO_SETTINGS and "--help" not in argv


def main() -> None:
    """Console entry ``groundwatch``: errors end the command with one line and the documented
    exit code (see the module docstring), never with a traceback."""
    from groundwatch.errors import GroundwatchError

    argv = _optional_values(_json_without_file(sys.argv[1:]))
    if argv and argv[0] in _READS_SETTINGS and any(n.startswith("GW_") for n in os.environ):
        from groundwatch.cli.settings_doc import unknown_variables

        for line in unknown_variables(os.environ):
            typer.echo(f"warning: {line}", err=True)
    from groundwatch.cli.settings_doc import may_set_settings

    if _checks_settings(argv) and may_set_settings(os.environ):
        from groundwatch.app.settings import check_environment
        from groundwatch.errors import ConfigError

        try:
            check_environment()
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise SystemExit(2) from None
    # typer's own click (vendored): its usage errors, printed here in one line instead of
    # typer's five-line box
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    try:
        code = app(args=argv, prog_name="groundwatch", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()  # the help, as `groundwatch` alone always printed it
        raise SystemExit(exc.exit_code) from None
    except ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        typer.echo(f"error: {' '.join(exc.format_message().split())}{where}", err=True)
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        raise SystemExit(1) from None
    except GroundwatchError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(exit_code_of(exc)) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as exc:
        if os.environ.get("GW_DEBUG"):
            raise
        text = " ".join(str(exc).split())[:500]
        typer.echo(
            f"error: {type(exc).__name__}: {text} (GW_DEBUG=1 shows the traceback)", err=True
        )
        raise SystemExit(3) from None
    if isinstance(code, int) and not isinstance(code, bool) and code:
        raise SystemExit(code)  # a command's typer.Exit(code), returned when not standalone
