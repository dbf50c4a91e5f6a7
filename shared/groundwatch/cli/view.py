"""``groundwatch view``: the live view of a store in the browser, where people also correct
the judge; ``groundwatch view export-labels``: their verdicts as a file ``judge-agreement``
reads, so every correction becomes a check of the judge.

The view serves the groups table (paged, filtered, searched, refreshing itself), each
group's page (SQL, gold, every form's answer per cycle with the judge's verdict, tier and
reason, and a person's verdict beside it, counted in the tallies), the per-target trends over
the series' runs, two runs compared (``diff``) and the dead letters — the rows ``groups``,
``show``, ``diff`` and ``dead-letters`` print. A person's verdict needs the view's token
(``--token`` or ``GW_VIEW_TOKEN``; a fresh one is made and printed when neither is given).
"""

from __future__ import annotations

import getpass
import secrets
from pathlib import Path
from typing import Annotated

import typer

from groundwatch.cli.common import (
    EXIT_USAGE,
    DatabaseUrlOpt,
    check_port_free,
    fail,
    one_line_errors,
    open_store,
)
from groundwatch.cli.groups import SeriesOpt, WindowOpt

view = typer.Typer(
    help="The live view of the store in the browser (groups, a group's answers, trends, two"
    " runs compared, dead letters), where people mark the judge's verdicts right or wrong;"
    " a person's verdict counts in the tallies.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@view.callback()
@one_line_errors
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8765,
    reviewer: Annotated[
        str | None,
        typer.Option(help="The name verdicts are given under (default: your login name)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="GW_VIEW_TOKEN",
            help="Bearer token a verdict needs (default: a fresh one, printed at start).",
            show_default=False,
        ),
    ] = None,
    series: SeriesOpt = None,
    window_runs: WindowOpt = 1,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Serve the view at http://HOST:PORT/ui/ until Ctrl-C."""
    if ctx.invoked_subcommand is not None:
        return
    from groundwatch.app.view import has_human_verdicts, serve_view, view_app
    from groundwatch.runtime.view import ViewAuth

    if token is not None and len(token) < 16:
        fail("--token: at least 16 characters (a guessable token guards nothing)", EXIT_USAGE)
    if port:
        check_port_free(host, port)
    given = token or secrets.token_urlsafe(18)
    name = reviewer or getpass.getuser()
    with open_store(database_url, writable=True) as store:
        auth = ViewAuth(write_token=given, reviewer=name)
        app = view_app(store, auth, series=series, window_runs=window_runs)
        shown = "localhost" if host in ("127.0.0.1", "::1") else host
        typer.echo(f"groundwatch view: http://{shown}:{port}/ui/ (Ctrl-C stops it)")
        if token is None:
            typer.echo(f"  verdicts as {name}: open http://{shown}:{port}/ui/#token={given}")
        if not has_human_verdicts(store):
            typer.echo(
                "  this store keeps no people's verdicts yet: `groundwatch db-upgrade` adds them"
            )
        serve_view(app, host, port)


@view.command("export-labels")
@one_line_errors
def export_labels(
    out: Annotated[Path, typer.Option(help="JSON file to write.")] = Path("labels.json"),
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Write people's verdicts as a result file `groundwatch judge-agreement FILE` reads:
    each judged answer a person marked, with its question, expected answer and their verdict."""
    from groundwatch.app.view import export_labels as export

    with open_store(database_url) as store:
        n = export(store, out)
    typer.echo(f"wrote {n} people's verdicts to {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(view, name="view")
