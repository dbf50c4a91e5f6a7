"""``groundwatch traffic …``: users' questions against a dataset's semantic groups.

``traffic unmatched DATASET FILE`` grounds every question of a file of traffic records (JSON
lines, one :class:`~groundwatch.contracts.TrafficRecord` a line, or a bare question a line) in
the dataset, and prints the match rate, why the rest was not matched, and the most frequent
shapes of the unmatched questions (names as ``{}``, numbers as ``#``): what users ask that no
template covers yet. ``--url`` reads the same from a running ``groundwatch run``
(``GET /traffic/unmatched``) instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from groundwatch.cli.common import EXIT_USAGE, fail, one_line_errors


def _questions(path: Path) -> list[str]:
    from pydantic import ValidationError

    from groundwatch.contracts import TrafficRecord

    out: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: {exc}", EXIT_USAGE)
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if not text.startswith("{"):
            out.append(text)
            continue
        try:
            out.append(TrafficRecord.model_validate_json(text).question)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(map(str, first["loc"])) or "record"
            fail(f"{path}:{n}: {where}: {first['msg']}", EXIT_USAGE)
    return out


def register(app: typer.Typer) -> None:
    traffic = typer.Typer(help="Users' questions grounded in a dataset: match rate, unmatched.")
    app.add_typer(traffic, name="traffic")

    @traffic.command("unmatched")
    @one_line_errors
    def unmatched(
        dataset: Annotated[
            Path | None, typer.Argument(help="Dataset (JSONL of semantic groups).")
        ] = None,
        records: Annotated[
            Path | None,
            typer.Argument(help="Traffic records (JSON lines) or questions, one a line."),
        ] = None,
        url: Annotated[
            str | None,
            typer.Option(
                help="A running `groundwatch run`, or the generator service of a deployment,"
                " to ask instead (its /traffic/unmatched)."
            ),
        ] = None,
        read_token: Annotated[
            str | None,
            typer.Option(
                envvar="GW_API_READ_TOKEN", help="Bearer token for --url.", show_default=False
            ),
        ] = None,
        top: Annotated[int, typer.Option(min=1, max=1000, help="Shapes to list.")] = 20,
        min_confidence: Annotated[
            float, typer.Option(min=0.0, max=1.0, help="Abstain below this match confidence.")
        ] = 0.5,
        json_out: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    ) -> None:
        """Match rate and the most frequent shapes of questions no semantic group answers."""
        from groundwatch.app.traffic import unmatched_of_file, unmatched_of_run

        if url is not None:
            view = unmatched_of_run(url, top, read_token)
        elif dataset is None or records is None:
            fail("give DATASET and RECORDS, or --url of a running `groundwatch run`", EXIT_USAGE)
        else:
            view = unmatched_of_file(dataset, _questions(records), top, min_confidence)
        if json_out:
            typer.echo(json.dumps(view, indent=2))
            return
        typer.echo(
            f"{view['matched']} of {view['records']} questions matched a semantic group"
            f" ({100 * view['match_rate']:.1f} %)"
        )
        if view["reasons"]:
            typer.echo("not matched: " + ", ".join(f"{k} {v}" for k, v in view["reasons"].items()))
        for row in view["shapes"]:
            typer.echo(f"{row['count']:>7}  {row['shape']}")
