"""The ``groundwatch`` command line: one typer app, one module per subcommand group."""

from __future__ import annotations

import importlib

import typer

from groundwatch import __version__
from groundwatch.errors import GroundwatchError

app = typer.Typer(
    name="groundwatch",
    help="Grounded, continuous evaluation of production RAG systems.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Subcommand modules; each exposes ``register(app)``.
MODULES = ("gen", "judge_agreement", "report", "demo", "run", "ops", "settings_doc")


def _register() -> None:
    for name in MODULES:
        module = importlib.import_module(f"groundwatch.cli.{name}")
        module.register(app)


@app.command()
def version() -> None:
    """Print the groundwatch version."""
    typer.echo(__version__)


_register()


def main() -> None:
    """Console entry ``groundwatch``: a GroundwatchError (bad config, unsafe SQL, bad input file)
    ends the command with its message and exit code 2, not a traceback."""
    try:
        app()
    except GroundwatchError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
