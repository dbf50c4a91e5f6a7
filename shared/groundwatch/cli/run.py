"""``groundwatch run``: probe your own targets with your own dataset, in one process.

For batch use and CI (``--once``: N cycles, print the report, exit) and for a single-machine
continuous monitor (cycles every ``--interval`` seconds, ``/metrics``, ``/groups`` and
``/report`` served). The same workers as the Kafka services run on the embedded bus; to scale
out, run the services.

Judgements, the runs and the dataset's groups (SQL, parameters, answers) go to the store
(``--database-url``, else ``GW_DATABASE_URL``, else ``sqlite:///groundwatch.db``), where
``groundwatch groups``, ``show``, ``runs`` and ``report`` read them afterwards. With ``--once``
the exit code is the CI gate's (:mod:`groundwatch.cli.outputs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groundwatch.cli.common import (
    EXIT_RUNTIME,
    EXIT_THRESHOLD,
    AllowPrivilegedOpt,
    DatabaseUrlOpt,
    QuietOpt,
    SourceTimeoutOpt,
    check_port_free,
    fail,
    interactive,
    one_line_errors,
    open_store,
    progress_bar,
    refuse_options,
    store_url,
)
from groundwatch.cli.outputs import (
    AllGroupsOpt,
    FailUnderOpt,
    HtmlOpt,
    JsonFileOpt,
    JunitOpt,
    MaxLlmCallsOpt,
    MaxOpt,
    MinAnsweredOpt,
    finish,
    parse_rules,
)

if TYPE_CHECKING:
    from groundwatch.app.runs import Console, RunOptions
    from groundwatch.core.compare import Comparison
    from groundwatch.report.document import GroupResult, Report
    from groundwatch.report.gate import Rule


def _console(quiet: bool) -> Console:
    """What the run says: notes on stderr unless ``--quiet``, the result line on stdout,
    warnings always, a progress bar only for a person at a terminal."""
    from groundwatch.app.runs import Console

    def say(message: str) -> None:
        if not quiet:
            typer.echo(message, err=True)

    return Console(
        say=say,
        out=typer.echo,
        warn=lambda message: typer.echo(f"warning: {message}", err=True),
        progress=lambda what: progress_bar(what, enabled=interactive(quiet)),
    )


def _regression_gate(
    comparison: Comparison, code: int, allowed: int | None, significant_only: bool, quiet: bool
) -> int:
    """Say how the run compares with its baseline; exit 1 when ``--fail-on-regression`` is
    broken (a worse code from the report's own gate stands)."""
    from groundwatch.core.compare import gate
    from groundwatch.report.compare_view import render_diff_text, summary_line

    if not quiet:
        typer.echo(render_diff_text(comparison, limit=10), nl=False)
    else:
        typer.echo(summary_line(comparison), err=True)
    if allowed is None:
        return code
    broken = gate(comparison, allowed, significant_only=significant_only)
    if broken is None:
        return code
    typer.echo(f"regression gate: {broken}", err=True)
    return code or EXIT_THRESHOLD


def _cohort_pair(compare: str | None) -> tuple[str, str] | None:
    """The two cohorts ``--compare A,B`` names."""
    if not compare:
        return None
    a, _, b = compare.partition(",")
    if not a or not b:
        raise typer.BadParameter("expected two cohorts as A,B", param_hint="--compare")
    return a.strip(), b.strip()


#: Options only a continuous run reads (its cadence and its HTTP server).
_CONTINUOUS_ONLY = ("interval", "host", "port", "read_token", "api_token")
#: Options only ``--once`` reads (a continuous run probes until stopped).
_ONCE_ONLY = ("runs",)


def _check_mode_flags(ctx: typer.Context, once: bool) -> None:
    """An option the chosen mode ignores is a usage error, not silently dropped."""
    if once:
        refuse_options(ctx, _CONTINUOUS_ONLY, "with a continuous run, not with --once")
    else:
        refuse_options(ctx, _ONCE_ONLY, "with --once")


def _check_gate_flags(
    once: bool, gated: bool, baseline: str | None, fail_on_regression: int | None
) -> None:
    """A gate (thresholds, --junit, --baseline) judges a finished run: only with --once."""
    if (gated or baseline or fail_on_regression is not None) and not once:
        raise typer.BadParameter("thresholds, --junit and --baseline go with --once")
    if fail_on_regression is not None and baseline is None:
        raise typer.BadParameter("--fail-on-regression needs --baseline")


def _run_cycles(
    dataset: Path, targets: Path, opts: RunOptions, rules: list[Rule], timeout: float
) -> tuple[Report, list[GroupResult] | None]:
    """The run's report and groups; a cut or timed-out run is a one-line error."""
    from groundwatch.app.runs import run_cycles
    from groundwatch.runtime.loop import run as run_on_loop

    try:
        # GW_EVENT_LOOP: uvloop when installed (a bad value is a usage error, exit 2)
        return run_on_loop(run_cycles(dataset, targets, opts, _console(opts.quiet), rules))
    except KeyboardInterrupt:
        # --once cut short, or a continuous run's second signal: not a finished run (the
        # first SIGINT/SIGTERM of a continuous run ends it normally, exit 0)
        fail("interrupted: the cycle in flight is recorded as aborted", 130)
    except TimeoutError as exc:
        fail(f"{exc} (--timeout {timeout:g}s)")


def _against_baseline(opts: RunOptions, database_url: str | None) -> Comparison | None:
    """The newest cycle compared with ``--baseline``, group by group (none without one)."""
    if opts.regression_baseline is None or not opts.run_ids:
        return None
    from groundwatch.app.compare import against_baseline

    with open_store(database_url) as store:
        return against_baseline(opts.regression_baseline, opts.run_ids[-1], store)


DatasetOpt = Annotated[
    Path, typer.Option(help="Dataset JSONL from `groundwatch gen`.", exists=True)
]
TargetsOpt = Annotated[
    Path,
    typer.Option(help="Targets file (YAML/TOML): http_json, openai_chat, callable.", exists=True),
]
OnceOpt = Annotated[bool, typer.Option("--once", help="Run --runs cycles, report, exit (CI).")]
RunsOpt = Annotated[int, typer.Option(min=1, help="Cycles with --once.")]
SampleOpt = Annotated[int, typer.Option(min=0, help="Groups per cycle (0 = all).")]
IntervalOpt = Annotated[float, typer.Option(min=0, help="Seconds between cycles (continuous).")]
HostOpt = Annotated[str, typer.Option(help="Bind address (continuous).")]
PortOpt = Annotated[
    int,
    typer.Option(min=1, max=65535, help="Port of /metrics, /groups and /report (continuous)."),
]
CompareOpt = Annotated[str | None, typer.Option(help="Two cohorts to test, e.g. short,long.")]
SeriesOpt = Annotated[
    str | None,
    typer.Option(
        help="Monitoring series (default: the dataset's id). Runs with the same"
        " --database-url and series are consecutive cycles of one series."
    ),
]
WindowRunsOpt = Annotated[
    int,
    typer.Option(
        min=0,
        envvar="GW_WINDOW_RUNS",
        help="A group's status is over its last N cycles (1: the latest; 0 pools all).",
    ),
]
OpenDomainBaselineOpt = Annotated[
    str | None,
    typer.Option(
        help="Target (e.g. an openai_chat LLM-only baseline) whose correctly answered "
        "groups are flagged open-domain and left out of the report (GRAMMAR §5.2)."
    ),
]
TimeoutOpt = Annotated[
    float, typer.Option(min=1.0, help="Give up on a cycle after this many seconds.")
]
ReadTokenOpt = Annotated[
    str | None,
    typer.Option(
        envvar="GW_API_READ_TOKEN",
        help="Bearer token for /groups and /report (continuous); unset: open.",
        show_default=False,
    ),
]
ApiTokenOpt = Annotated[
    str | None,
    typer.Option(
        envvar="GW_API_TOKEN",
        help="Bearer token for POST /traffic and OTLP's POST /v1/traces (continuous:"
        " users' questions grounded and judged as the traffic cohort, each target's"
        " records limited by GW_TRAFFIC_RATE); unset: closed.",
        show_default=False,
    ),
]
CorpusOpt = Annotated[
    Path | None,
    typer.Option(
        help="Corpus your RAG answers from (JSON {doc_id: text} or a directory): label"
        " each gap group knowledge_gap / retrieval_or_reader (GRAMMAR Appendix I).",
    ),
]
MrcOpt = Annotated[
    bool,
    typer.Option("--mrc", help="With --corpus: an LLM (GW_LLM_*) reads what BM25 does not find."),
]
SourceOpt = Annotated[
    str | None,
    typer.Option(
        envvar="GW_SOURCE_URL",
        help="Source database (SQLAlchemy URL, opened read-only) the dataset came from:"
        " each cycle re-reads its answers, so a changed fact is a new answer version and"
        " an answer giving the old value is stale, not a gap. Unset: the dataset's"
        " answers stay as generated.",
        show_default=False,
    ),
]
BaselineOpt = Annotated[
    str | None,
    typer.Option(
        help="Compare this run with a baseline: a file from `groundwatch baseline save`,"
        " or a run id / series:NAME of the store (--once). A baseline of another dataset"
        " version is refused.",
        show_default=False,
    ),
]
FailOnRegressionOpt = Annotated[
    int | None,
    typer.Option(
        "--fail-on-regression",
        min=0,
        help="With --baseline: exit 1 when more than N groups regressed (a decided group"
        " got worse); bare: N = 0. Each regressed group is a JUnit failure.",
        show_default=False,
    ),
]
RegressionSignificantOpt = Annotated[
    bool,
    typer.Option(
        "--regression-significant",
        help="With --fail-on-regression: fail only when the sign test over the groups"
        " decided in both runs finds a significant regression (more worse than better,"
        " two-sided p < 0.05).",
    ),
]


def register(app: typer.Typer) -> None:
    app.command("run")(one_line_errors(run))


def run(
    ctx: typer.Context,
    dataset: DatasetOpt,
    targets: TargetsOpt,
    once: OnceOpt = False,
    runs: RunsOpt = 1,
    sample: SampleOpt = 0,
    interval: IntervalOpt = 60.0,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = 8004,
    database_url: DatabaseUrlOpt = None,
    compare: CompareOpt = None,
    json_out: JsonFileOpt = None,
    every_group: AllGroupsOpt = False,
    html_out: HtmlOpt = None,
    junit: JunitOpt = None,
    fail_under: FailUnderOpt = None,
    maximum: MaxOpt = None,
    min_answered: MinAnsweredOpt = 0.9,
    series: SeriesOpt = None,
    window_runs: WindowRunsOpt = 1,
    open_domain_baseline: OpenDomainBaselineOpt = None,
    timeout: TimeoutOpt = 3600.0,
    quiet: QuietOpt = False,
    read_token: ReadTokenOpt = None,
    api_token: ApiTokenOpt = None,
    corpus: CorpusOpt = None,
    mrc: MrcOpt = False,
    source: SourceOpt = None,
    allow_privileged_source: AllowPrivilegedOpt = False,
    source_timeout: SourceTimeoutOpt = 60.0,
    max_llm_calls: MaxLlmCallsOpt = None,
    baseline: BaselineOpt = None,
    fail_on_regression: FailOnRegressionOpt = None,
    regression_significant: RegressionSignificantOpt = False,
) -> None:
    """Probe targets with a dataset on the embedded bus: once (CI) or continuously.

    Judged by the rules, and by the LLM tier when GW_JUDGE_LLM_ENABLED and GW_LLM_* are set
    (GW_REFERENCE_FREE adds RAGAS-Fact/SelfCheck); the first lines say which judge runs.

    With --baseline the run is compared with a saved baseline or a stored run, group by
    group (as `groundwatch diff`), the comparison printed after the report.

    Exit codes with --once: 0 ok; 1 a --fail-under/--max threshold broken, or more groups
    regressed than --fail-on-regression allows; 2 usage or configuration error (a baseline
    of another dataset version too); 3 a target answered no probe of its newest cycle,
    whatever earlier cycles the store holds (the first error is printed), or probes were
    dead-lettered (not judged: `groundwatch dead-letters` lists them). --max
    target_error_share is over the newest cycle's probes too, and so is --min-answered: a
    target answering less than that share of them (shed by its open circuit or failed)
    exits 1, saying how many were shed and failed.
    """
    _check_mode_flags(ctx, once)
    pair = _cohort_pair(compare)
    rules = parse_rules(fail_under, maximum)
    _check_gate_flags(once, bool(rules or junit), baseline, fail_on_regression)
    from groundwatch.app.runs import RunOptions

    opts = RunOptions(
        once=once,
        runs=runs,
        sample=sample,
        interval=interval,
        host=host,
        port=port,
        database_url=store_url(database_url)[0],
        compare=pair,
        baseline=open_domain_baseline,
        series=series,
        window_runs=window_runs,
        quiet=quiet,
        junit=junit is not None or every_group,
        timeout_s=timeout,
        read_token=read_token,
        api_token=api_token,
        corpus=corpus,
        mrc=mrc,
        source=source,
        source_timeout_s=source_timeout,
        allow_privileged_source=allow_privileged_source,
        max_llm_calls=max_llm_calls,
    )
    outputs = _RunOutputs(
        json_out=json_out,
        html_out=html_out,
        junit=junit,
        every_group=every_group,
        min_answered=min_answered,
        fail_on_regression=fail_on_regression,
        regression_significant=regression_significant,
    )
    raise typer.Exit(_run(dataset, targets, opts, rules, outputs, database_url, baseline))


@dataclass(frozen=True, slots=True)
class _RunOutputs:
    """What a finished run writes and the regression gate it passes."""

    json_out: Path | None
    html_out: Path | None
    junit: Path | None
    every_group: bool
    min_answered: float
    fail_on_regression: int | None
    regression_significant: bool


def _run(
    dataset: Path,
    targets: Path,
    opts: RunOptions,
    rules: list[Rule],
    outputs: _RunOutputs,
    database_url: str | None,
    baseline: str | None,
) -> int:
    """``run``: the targets file, the store and the port checked up front, the cycles run, the
    report written and gated; the exit code."""
    from groundwatch.app.bootstrap import target_names
    from groundwatch.app.runs import dead_letter_line

    target_names(targets)  # a bad targets file stops here, naming the field
    open_store(database_url, create=True).close()  # a bad URL stops here, exit 2
    if not opts.once:
        check_port_free(opts.host, opts.port)
    if baseline is not None:
        from groundwatch.app.compare import load_side, with_digest

        with open_store(database_url) as store:
            opts.regression_baseline = with_digest(load_side(baseline, store), store)
    report, all_groups = _run_cycles(dataset, targets, opts, rules, opts.timeout_s)
    if not opts.once and not report.targets and not report.scenarios:
        # stopped by a signal before a cycle finished: nothing to report, and no failure
        typer.echo("stopped before any cycle finished: no report", err=True)
        raise typer.Exit(0)
    comparison = _against_baseline(opts, database_url)
    code = finish(
        report,
        rules=rules,
        groups=all_groups,
        json_out=outputs.json_out,
        html_out=outputs.html_out,
        junit_out=outputs.junit,
        quiet=opts.quiet,
        min_answered=outputs.min_answered,
        comparison=comparison,
        all_groups=outputs.every_group,
    )
    if comparison is not None:
        code = _regression_gate(
            comparison,
            code,
            outputs.fail_on_regression,
            outputs.regression_significant,
            opts.quiet,
        )
    if opts.dead_letters and code != EXIT_RUNTIME:
        # the outputs are written; the gate must not pass on a partly judged run
        fail(
            "the report is incomplete: "
            + dead_letter_line(opts.dead_letters, [], opts.database_url)
        )
    return code
