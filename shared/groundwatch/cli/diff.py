"""``groundwatch diff A B`` and ``groundwatch baseline save``: compare two evaluations group by
group, and keep one as a portable baseline for ``run --baseline``.

The comparison is the service layer's (:mod:`groundwatch.app.compare`); this module parses the
options and writes the text, JSON and HTML views (:mod:`groundwatch.report.compare_view`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from groundwatch.cli.common import DatabaseUrlOpt, one_line_errors, open_store

SIDE_HELP = (
    "A run id (`groundwatch runs`), series:NAME (its newest run), series:NAME~K (K runs"
    " before it) or a file from `groundwatch baseline save`."
)


def register(app: typer.Typer) -> None:
    @app.command("diff")
    @one_line_errors
    def diff(
        a: Annotated[str, typer.Argument(help="Before (the baseline). " + SIDE_HELP)],
        b: Annotated[str, typer.Argument(help="After (the candidate). " + SIDE_HELP)],
        database_url: DatabaseUrlOpt = None,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the comparison as JSON ('-': stdout).")
        ] = None,
        html_out: Annotated[
            Path | None, typer.Option("--html", help="Write the comparison as an HTML page.")
        ] = None,
        alpha: Annotated[
            float,
            typer.Option(min=0.0, max=1.0, help="Significance level of the (two-sided) sign test."),
        ] = 0.05,
        limit: Annotated[
            int, typer.Option(min=0, help="Changed groups the text lists (JSON/HTML: all).")
        ] = 20,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="Do not print the text comparison.")
        ] = False,
    ) -> None:
        """Compare two evaluations of one dataset, group by group.

        Per target and cohort: Acc_db, R, λ and coverage on each side with B − A and its 95 %
        interval; every group whose status changed, worst first (regression, lost evidence,
        gained evidence, recovery) with the forms whose verdict or answer changed; and the
        exact sign test over the groups decided on both sides. Exit 0 (a comparison is no
        gate: `run --baseline … --fail-on-regression` is).
        """
        from groundwatch.app.compare import comparison_json
        from groundwatch.app.compare import diff as compare_sides
        from groundwatch.report.compare_view import render_diff_html, render_diff_text

        needs_store = not (Path(a).is_file() and Path(b).is_file())
        if needs_store:
            with open_store(database_url) as store:
                comparison = compare_sides(a, b, store, alpha=alpha)
        else:
            comparison = compare_sides(a, b, None, alpha=alpha)
        text = True
        if json_out is not None:
            data = comparison_json(comparison)
            if str(json_out) == "-":
                typer.echo(data.decode())
                text = False
            else:
                json_out.parent.mkdir(parents=True, exist_ok=True)
                json_out.write_bytes(data)
                typer.echo(f"wrote {json_out}", err=True)
        if html_out is not None:
            html_out.parent.mkdir(parents=True, exist_ok=True)
            html_out.write_text(render_diff_html(comparison), encoding="utf-8")
            typer.echo(f"wrote {html_out}", err=True)
        if text and not quiet:
            typer.echo(render_diff_text(comparison, limit=limit), nl=False)

    baseline = typer.Typer(
        help="Portable baselines: a run's statuses and verdicts, for `run --baseline`.",
        no_args_is_help=True,
    )
    app.add_typer(baseline, name="baseline")

    @baseline.command("save")
    @one_line_errors
    def save(
        run: Annotated[
            str, typer.Argument(help="A run id, series:NAME or series:NAME~K (see `diff`).")
        ],
        out: Annotated[Path, typer.Option("--out", "-o", help="The baseline file to write.")],
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """Write a run as a portable baseline: the dataset's id and digest, every group's status,
        each cohort's counts and per-form verdicts, and the figures."""
        from groundwatch.app.compare import save_baseline

        with open_store(database_url) as store:
            side, n = save_baseline(store, run, out)
        typer.echo(
            f"wrote {out}: baseline of run {side.run_ids[0]}, {n} groups of dataset"
            f" {side.dataset_id!r}"
        )
