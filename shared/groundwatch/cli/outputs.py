"""What ``run`` and ``report`` do with a finished report: files, the text, the CI gate.

One place decides the exit code: 3 when a target answered no probe of its newest cycle (the report's
``target_health``, from that cycle's probes only: a reused store's held statuses do not make a dead
endpoint pass; the first error and the counts by kind say why), else 1 when a ``--fail-under`` or
``--max`` threshold is broken or a target answered less than ``--min-answered`` of that cycle's
probes (each broken one printed, with how many were shed and failed), else 0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groundwatch.cli.common import EXIT_OK, EXIT_RUNTIME, EXIT_THRESHOLD, EXIT_USAGE

if TYPE_CHECKING:
    from groundwatch.core.compare import Comparison
    from groundwatch.report.document import GroupResult, Report
    from groundwatch.report.gate import Rule

FailUnderOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-under",
        help="Exit 1 when FIGURE falls below VALUE for any target × cohort, e.g. acc_db=0.9 or"
        " long:refined_accuracy=0.95 (repeatable; any report figure or share).",
        show_default=False,
    ),
]
MaxOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--max",
        help="Exit 1 when FIGURE exceeds VALUE, e.g. non_robust_share=0.1,"
        " target_error_share=0.05 (repeatable).",
        show_default=False,
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option(help="Write JUnit XML: one test case per semantic group, plus the thresholds."),
]
HtmlOpt = Annotated[Path | None, typer.Option("--html", help="Write the HTML report here.")]
MinAnsweredOpt = Annotated[
    float,
    typer.Option(
        "--min-answered",
        min=0.0,
        max=1.0,
        envvar="GW_MIN_ANSWERED",
        help="Exit 1 when a target answered less than this share of its newest cycle's probes"
        " (shed by the open circuit or failed): a gate must not pass on a fraction of the"
        " evidence. 0: off.",
    ),
]
MaxLlmCallsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-llm-calls",
        min=0,
        help="Send at most N LLM requests (judge tier, evaluators, LLM metrics); then stop asking:"
        " what they would decide stays undecided. Default: GW_LLM_BUDGET, else no limit.",
        show_default=False,
    ),
]
JsonFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--json",
        help="Write the report as JSON: the numbers, and the groups that are not robust"
        " (failing_groups, worst first); --all-groups adds every group's row under groups.",
    ),
]
AllGroupsOpt = Annotated[
    bool,
    typer.Option(
        "--all-groups",
        help="Put every semantic group's row (robust ones too: status, SQL, gold, each form's"
        " answer and verdict) under groups in the --json report.",
    ),
]


def parse_rules(fail_under: Sequence[str] | None, maximum: Sequence[str] | None) -> list[Rule]:
    """The thresholds, or a usage error (exit 2) naming the bad one — checked before probing."""
    from groundwatch.report.gate import parse_rule

    rules = []
    for specs, kind, opt in ((fail_under, "min", "--fail-under"), (maximum, "max", "--max")):
        for spec in specs or ():
            try:
                rules.append(parse_rule(spec, kind))
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint=opt) from None
    return rules


#: The file name that means standard output (``report --json -``, as ``groups --json -``).
STDOUT = Path("-")


def _write(path: Path, data: bytes) -> None:
    if path == STDOUT:
        sys.stdout.buffer.write(data + (b"" if data.endswith(b"\n") else b"\n"))
        sys.stdout.flush()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def finish(
    report: Report,
    *,
    rules: Sequence[Rule] = (),
    groups: Sequence[GroupResult] | None = None,
    json_out: Path | None = None,
    html_out: Path | None = None,
    junit_out: Path | None = None,
    quiet: bool = False,
    text: bool = True,
    fail_on_dead_target: bool = True,
    min_answered: float | None = None,
    comparison: Comparison | None = None,
    all_groups: bool = False,
) -> int:
    """Write the requested files, print the text report, evaluate the gate; the exit code.
    With ``comparison`` (``run --baseline``) the JUnit file lists the regressed groups as
    failures too, and the HTML report ends with the comparison. ``all_groups``: the report's
    ``groups`` holds every group's row (``groups``). ``fail_on_dead_target``: the gate reads the
    targets' health of this run (a dead target exits 3, one answering less than ``min_answered``
    of its probes — default :data:`~groundwatch.report.gate.DEFAULT_MIN_ANSWERED` — breaks it)."""
    import orjson

    from groundwatch.report.gate import (
        DEFAULT_MIN_ANSWERED,
        AnsweredCheck,
        Check,
        answered_checks,
        evaluate,
        junit_xml,
        scope_errors,
    )
    from groundwatch.report.groups import health_lines

    if report.targets:
        misnamed = scope_errors(rules, {t: list(r.cohorts) for t, r in report.targets.items()})
        if misnamed:
            typer.echo(f"error: {misnamed[0]}", err=True)
            return EXIT_USAGE
    checks: list[Check | AnsweredCheck] = list(evaluate(report, rules))
    if fail_on_dead_target:
        floor = DEFAULT_MIN_ANSWERED if min_answered is None else min_answered
        checks += answered_checks(report.target_health, floor)
    if all_groups and groups is not None:
        report = report.model_copy(update={"groups": list(groups)})
    if json_out is not None:
        _write(
            json_out,
            orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS),
        )
    if html_out is not None:
        from groundwatch.report.html import render_html

        page = render_html(report)
        if comparison is not None:
            from groundwatch.report.compare_view import with_comparison

            page = with_comparison(page, comparison)
        _write(html_out, page.encode())
    if junit_out is not None:
        _write(
            junit_out,
            junit_xml(
                groups if groups is not None else report.failing_groups,
                checks,
                report.target_health,
                regressions=comparison.regressions if comparison is not None else None,
                baseline=comparison.a if comparison is not None else "",
            ),
        )
    if STDOUT in (json_out, html_out, junit_out):
        text = False  # standard output carries that file, not the text report
    if text and not quiet:
        from groundwatch.report.text import render_text

        typer.echo(render_text(report), nl=False)
    for path in (json_out, html_out, junit_out):
        if path is not None and path != STDOUT:
            typer.echo(f"wrote {path}", err=True)
    dead = [t for t, h in report.target_health.items() if h.all_failed]
    if dead and fail_on_dead_target:
        for line in health_lines({t: report.target_health[t] for t in dead}):
            typer.echo(f"error: {line}", err=True)
        return EXIT_RUNTIME
    if not report.targets and not report.scenarios:
        typer.echo("error: nothing was evaluated (no judgements)", err=True)
        return EXIT_USAGE
    broken = [c for c in checks if not c.ok]
    for c in broken:
        typer.echo(f"threshold broken: {c.line}", err=True)
    if broken:
        return EXIT_THRESHOLD
    if rules and not quiet:
        typer.echo(f"all {len(checks)} threshold checks passed", err=True)
    return EXIT_OK
