"""``groundwatch groups``, ``show`` and ``runs``: which facts fail, and the runs in the store.

They read the store ``run``/``demo`` wrote (``--database-url``, else ``GW_DATABASE_URL``, else
``sqlite:///groundwatch.db``): the judgements of the latest monitoring series (or ``--series``)
replayed through the tagger with the same window as the live services, so a group's status here
is the one ``/groups`` and the report show. Questions, answers and reasons come from the stored
judgements; SQL and parameters from the dataset stored beside them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from groundwatch.cli.common import (
    EXIT_USAGE,
    DatabaseUrlOpt,
    fail,
    one_line_errors,
    open_store,
)

if TYPE_CHECKING:
    from groundwatch.app.store import GroupListing, Store
    from groundwatch.core.tagging import GroupStatus
    from groundwatch.report.document import FormResult, GroupResult

STATUSES = ("gap", "non_robust", "flaky", "unknown", "pending", "robust")

SeriesOpt = Annotated[
    str | None,
    typer.Option(help="Monitoring series (default: the most recently probed one)."),
]
WindowOpt = Annotated[
    int,
    typer.Option(
        min=0,
        envvar="GW_WINDOW_RUNS",
        help="Each group's status over its last N cycles (1: latest; 0: all).",
    ),
]
#: The stages that consume messages and so may dead-letter one (the service names they carry).
DEAD_LETTER_STAGES = ("rag-runner", "judge", "analytics")

JsonOpt = Annotated[
    str | None,
    typer.Option(
        "--json",
        help="Write JSON to FILE ('-' or no value: standard output) instead of the table.",
        show_default=False,
    ),
]


def _listing(store: Store, **query: Any) -> GroupListing:
    """The store's groups, or (none stored) one line naming what to run first."""
    from groundwatch.app.store import NothingStored, list_groups

    try:
        return list_groups(store, **query)
    except NothingStored as exc:
        fail(f"{exc}; run `groundwatch run --once` or `groundwatch demo` first")


def _statuses(spec: str | None) -> list[GroupStatus] | None:
    from groundwatch.core.tagging import GroupStatus
    from groundwatch.report.groups import FAILING

    if spec is None:
        return None
    out: list[GroupStatus] = []
    for part in (p.strip().lower().replace("-", "_") for p in spec.split(",")):
        if part == "failing":
            out += sorted(FAILING, key=str)
        elif part in STATUSES:
            out.append(GroupStatus(part))
        elif part:
            raise typer.BadParameter(
                f"unknown status {part!r}; one of {', '.join(STATUSES)} or failing",
                param_hint="--status",
            )
    return out


def _write_json(dest: str, payload: Any) -> None:
    import orjson

    data = orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    if dest == "-":
        typer.echo(data.decode())
        return
    path = Path(dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data + b"\n")


def _gap_kind(g: GroupResult) -> str:
    """What a knowledge gap is here: a fact missing, or one the target still knows by its
    previous value (every wrong form's cause ``stale``: the source changed, its corpus did not)."""
    wrong = [f for f in g.forms if f.verdict == "incorrect"]
    if wrong and all(f.cause == "stale" for f in wrong):
        return "the fact is outdated (the target answers its previous value)"
    return "the fact is missing"


def render_group(g: GroupResult) -> str:
    """One group as text: status, SQL truth, then every form with its answer and verdict."""
    from groundwatch.report.text import table

    head = [
        f"group {g.group_id} · target {g.target}"
        + (f" · cohort {g.cohort}" if g.cohort else "")
        + f" · series {g.series or '–'} cycle {g.cycle}",
        f"status: {g.status}"
        + (f"  ({', '.join(f'{c}: {s}' for c, s in g.cohort_status.items())})")
        + (f"  — knowledge gap: {_gap_kind(g)}" if g.knowledge_gap else "")
        + (
            f"  — held: kept from cycle {g.evidence_cycle}; the target answered none of its"
            f" forms since (target errors)"
            if g.held
            else ""
        ),
        *_since_lines(g),
        f"SQL:    {g.sql or '– (dataset not stored)'}",
    ]
    if g.params:
        head.append("params: " + ", ".join(f"{k}={v!r}" for k, v in g.params.items()))
    head.append(f"gold:   {g.gold_text if g.gold_text is not None else '–'}")
    head.append(
        f"forms:  {g.correct} correct, {g.incorrect} incorrect, {g.errors} errors,"
        f" {g.undecided} undecided of {g.forms_judged} judged ({g.forms_expected} expected)"
    )
    cycles = sorted({f.cycle for f in g.forms})
    if cycles:
        shown = ", ".join(map(str, cycles))
        head.append(
            f"answers: of cycle {shown}"
            + (f" (the group's newest cycle is {g.cycle})" if cycles[-1] != g.cycle else "")
        )
    marked = [f for f in g.forms if f.person is not None]
    if marked:
        differ = sum(
            1 for f in marked if f.person is not None and f.person.verdict != f.person.judge
        )
        head.append(
            f"people: {len(marked)} answer{'' if len(marked) == 1 else 's'} marked in the view"
            f" ({differ} unlike the judge);"
            " a person's verdict is the one counted"
        )
    rows = []
    for f in g.forms:
        judge = f.person.judge if f.person is not None and f.person.judge else f.verdict
        row = [
            f.cohort,
            str(f.cycle) + (" (held)" if g.held and f.cycle < g.cycle else ""),
            judge + (" (flaky)" if f.flaky else ""),
            f.cause or "",
            f.tier or "",
            _one_line(f.question, 70),
            _one_line(f.answer if f.answer is not None else f.error_kind, 50),
            _one_line(f.reason, 40),
        ]
        if marked:
            row.insert(3, _person(f))
        rows.append(row)
    header = ["cohort", "cycle", "verdict", "cause", "tier", "question", "answer", "reason"]
    if marked:  # the verdict column is the judge's, the person's beside it (as the view)
        header[2:3] = ["judge", "person"]
    body = table(header, rows, names=len(header))
    notes = [
        f"  {f.cohort} {f.form_id}: {f.person.who}: {' '.join(f.person.note.split())}"
        for f in marked
        if f.person is not None and f.person.note.strip()
    ]
    hist = ", ".join(f"{h.cohort}@{h.cycle}: {h.status}" for h in g.history)
    tail = ["", "notes:", *notes] if notes else []
    return "\n".join([*head, "", body, *tail, "", f"history (window): {hist or '–'}"])


def _person(f: FormResult) -> str:
    """A person's verdict on the form as the view shows it: which, by whom, when."""
    p = f.person
    return "–" if p is None else f"{p.verdict} ({p.who}, {p.at})"


def _since_lines(g: GroupResult) -> list[str]:
    """ "unknown since cycle 5, was robust", per cohort, for statuses that are not conclusive
    (what the group was is the news there) — from the stored status changes."""
    out = []
    for s in g.status_since:
        if s.status not in ("unknown", "pending"):
            continue
        since = f" since cycle {s.since_cycle}" if s.since_cycle is not None else ""
        was = f", was {s.was}" if s.was is not None else ""
        out.append(f"        {s.cohort}: {s.status}{since}{was}")
    return out


def _question(g: GroupResult) -> str | None:
    from groundwatch.report.text import _question as shortest

    return shortest(g)


def _one_line(text: str | None, n: int) -> str:
    if not text:
        return "–"
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def register(app: typer.Typer) -> None:
    """The store's readers: its groups, one group, its cycles and its dead letters."""
    _register_groups(app)
    _register_show(app)
    _register_runs(app)
    _register_dead_letters(app)


def _register_groups(app: typer.Typer) -> None:
    @app.command("groups")
    @one_line_errors
    def groups(
        status: Annotated[
            str | None,
            typer.Option(
                help="Only these statuses, comma-separated: gap, non_robust, flaky, unknown,"
                " pending, robust, or failing (all but robust and pending). Without --cohort a"
                " group's status is over every cohort: gap = missing in all of them. Default:"
                " every status, worst first."
            ),
        ] = None,
        target: Annotated[str | None, typer.Option(help="Only this target.")] = None,
        cohort: Annotated[
            str | None, typer.Option(help="One row per group in this cohort, with its status.")
        ] = None,
        scenario: Annotated[
            str,
            typer.Option(help="factual (GRAMMAR groups), a RAGProbe scenario (S1…S6) or all."),
        ] = "factual",
        limit: Annotated[int | None, typer.Option(min=1, help="At most this many rows.")] = None,
        offset: Annotated[int, typer.Option(min=0, help="Skip this many rows.")] = 0,
        json_out: JsonOpt = None,
        series: SeriesOpt = None,
        window_runs: WindowOpt = 1,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """List semantic groups with their status, worst first (latest cycle of the store)."""
        from groundwatch.report.document import GroupPage
        from groundwatch.report.text import table

        wanted = _statuses(status)
        with open_store(database_url) as store:
            listing = _listing(
                store,
                series=series,
                window_runs=window_runs,
                target=target,
                cohort=cohort,
                status=wanted,
                scenario=None if scenario.lower() == "all" else scenario,
                offset=offset,
                limit=limit,
            )
        name, cycle, total, rows = listing.series, listing.cycle, listing.total, listing.rows
        if json_out is not None:
            page = GroupPage(
                total=total,
                offset=offset,
                limit=limit,
                count=len(rows),
                series=name,
                latest_cycle=cycle,
                groups=rows,
            )
            _write_json(json_out, page.model_dump(mode="json"))
            if json_out != "-":
                typer.echo(f"wrote {len(rows)} of {total} groups to {json_out}", err=True)
            return
        table_rows = [
            [
                g.target,
                g.group_id,
                g.status + (f" (held since {g.evidence_cycle})" if g.held else ""),
                " ".join(f"{c}:{s}" for c, s in g.cohort_status.items()),
                _one_line(g.gold_text, 24),
                _one_line(_question(g), 60),
            ]
            for g in rows
        ]
        typer.echo(
            f"series {name}, cycle {cycle}: {total} groups"
            + (f" with status {status}" if status else "")
            + (f", showing {len(rows)}" if len(rows) != total else "")
        )
        if rows:
            typer.echo(
                table(
                    ["target", "group", "status", "by cohort", "gold", "question"],
                    table_rows,
                    names=6,
                )
            )


def _register_show(app: typer.Typer) -> None:
    @app.command("show")
    @one_line_errors
    def show(
        group_id: Annotated[str, typer.Argument(help="Group id (or a unique prefix of one).")],
        target: Annotated[str | None, typer.Option(help="Only this target.")] = None,
        cohort: Annotated[str | None, typer.Option(help="Only this cohort.")] = None,
        json_out: JsonOpt = None,
        series: SeriesOpt = None,
        window_runs: WindowOpt = 1,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """One semantic group: SQL, gold answer, each form's question, answer (with the cycle it
        is from), verdict and cause; whether the status is held, and since when it is unknown."""
        from groundwatch.app.store import with_people
        from groundwatch.report.groups import status_since

        with open_store(database_url) as store:
            listing = _listing(
                store,
                series=series,
                window_runs=window_runs,
                target=target,
                cohort=cohort,
                scenario=None,
                group_id=group_id,
            )
            total, rows = listing.total, listing.rows
            ids = sorted({g.group_id for g in rows})
            if not rows:
                fail(f"no group {group_id!r} in the store's latest cycle", EXIT_USAGE)
            if len(ids) > 1:
                fail(f"{group_id!r} matches {len(ids)} groups ({', '.join(ids[:5])}…)", EXIT_USAGE)
            rows = [
                g.model_copy(
                    update={
                        "status_since": status_since(
                            g, store.status_changes(listing.series, g.target, g.group_id)
                        )
                    }
                )
                for g in rows
            ]
            rows = with_people(store, rows)
        if json_out is not None:
            payload: Any = (
                rows[0].model_dump(mode="json")
                if total == 1
                else [r.model_dump(mode="json") for r in rows]
            )
            _write_json(json_out, payload)
            return
        typer.echo("\n\n".join(render_group(g) for g in rows))


def _register_runs(app: typer.Typer) -> None:
    @app.command("runs")
    @one_line_errors
    def runs(
        series: Annotated[str | None, typer.Option(help="Only this monitoring series.")] = None,
        limit: Annotated[int, typer.Option(min=1, help="Newest N runs.")] = 20,
        json_out: JsonOpt = None,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """The runs (cycles) stored, newest first, with their judgements by verdict."""
        from dataclasses import asdict

        from groundwatch.report.text import table

        with open_store(database_url) as store:
            found = store.runs(series=series, limit=limit)
        if json_out is not None:
            _write_json(
                json_out,
                [
                    asdict(r)
                    | {
                        "started_at": r.started_at.isoformat(),
                        "finished_at": r.finished_at.isoformat() if r.finished_at else None,
                    }
                    for r in found
                ],
            )
            return
        if not found:
            typer.echo("no runs stored")
            return
        rows = [
            [
                r.run_id,
                r.series,
                str(r.cycle),
                r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
                r.status,
                str(r.probes),
                " ".join(f"{v}:{n}" for v, n in sorted(r.verdicts.items())),
                ",".join(r.targets),
            ]
            for r in found
        ]
        typer.echo(
            table(
                ["run", "series", "cycle", "started (UTC)", "status", "probes", "verdicts",
                 "targets"],
                rows,
                names=5,
            )
        )  # fmt: skip


def _register_dead_letters(app: typer.Typer) -> None:
    @app.command("dead-letters")
    @one_line_errors
    def dead_letters(
        service: Annotated[
            str | None,
            typer.Option(help=f"Only those of this stage: {', '.join(DEAD_LETTER_STAGES)}."),
        ] = None,
        limit: Annotated[int, typer.Option(min=1, help="Newest N dead letters.")] = 20,
        json_out: JsonOpt = None,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """Messages no stage could process, newest first: stage, error, probe and group.

        With --json, each message's raw bytes too (base64).
        """
        if service is not None and service not in DEAD_LETTER_STAGES:
            fail(
                f"--service {service!r}: not a stage that dead-letters"
                f" ({', '.join(DEAD_LETTER_STAGES)})",
                EXIT_USAGE,
            )

        from groundwatch.report.text import table

        with open_store(database_url) as store:
            letters = store.dead_letters(service=service, limit=limit)
        if letters is None:
            typer.echo(
                "this store keeps no dead letters yet (it predates them):"
                " `groundwatch db-upgrade` adds the table"
            )
            return
        found, total, everywhere = letters.newest, letters.total, letters.everywhere
        if json_out is not None:
            _write_json(
                json_out,
                [
                    {
                        "id": d.id,
                        "service": d.service,
                        "source_topic": d.source_topic,
                        "partition": d.partition,
                        "offset": d.offset,
                        "group_id": d.group_id,
                        "probe_id": d.probe_id,
                        "key": d.key,
                        "error": d.error,
                        "failed_at": d.failed_at.isoformat(),
                        "raw_b64": d.raw_b64,
                    }
                    for d in found
                ],
            )
            return
        if not found:
            typer.echo(
                f"no dead letters from {service} ({everywhere} from other stages; drop --service)"
                if everywhere
                else "no dead letters stored"
            )
            return
        rows = [
            [
                str(d.id),
                d.failed_at.strftime("%Y-%m-%d %H:%M:%S"),
                d.service,
                f"{d.source_topic}[{d.partition}]@{d.offset}",
                (d.group_id or "")[:16],
                d.probe_id or "",
                d.error.splitlines()[0][:160] if d.error else "",
            ]
            for d in found
        ]
        typer.echo(
            table(["id", "failed (UTC)", "stage", "from", "group", "probe", "error"], rows, names=7)
        )
        if total > len(found):
            typer.echo(f"{len(found)} newest of {total} (--limit N shows more)")
