"""``groundwatch report``: the GRAMMAR group report from the store or from GRAMMAR result files.

The report is the service layer's (:func:`groundwatch.app.reports.stored_report`: from the store —
the latest cycle of a monitoring series by default, ``--run`` for given runs — or from the
authors' result files, ``--grammar-results``); this module parses the options and hands the
report to the same writer and CI gate as ``run`` (:mod:`groundwatch.cli.outputs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groundwatch.cli.common import DatabaseUrlOpt, one_line_errors, open_store
from groundwatch.cli.outputs import (
    AllGroupsOpt,
    FailUnderOpt,
    HtmlOpt,
    JsonFileOpt,
    JunitOpt,
    MaxOpt,
    finish,
    parse_rules,
)

if TYPE_CHECKING:
    from groundwatch.app.reports import GrammarFile, ReportRequest
    from groundwatch.report.gate import Rule


def _split(spec: str, what: str) -> tuple[str, str]:
    name, sep, value = spec.partition("=")
    if not sep or not name or not value:
        raise typer.BadParameter(f"expected {what}, got {spec!r}")
    return name.strip(), value.strip()


def _pair(spec: str | None, what: str) -> tuple[str, str] | None:
    if spec is None:
        return None
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) != 2 or not all(parts):
        raise typer.BadParameter(f"expected {what} as A,B, got {spec!r}")
    return parts[0], parts[1]


GrammarResultsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--grammar-results",
        "-g",
        help="[TARGET/]COHORT=FILE of a GRAMMAR result file; repeat per cohort.",
    ),
]
RunIdsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--run",
        "-r",
        help="Run id whose stored judgements to report (repeated: pooled;"
        " `groundwatch diff A B` compares two).",
    ),
]
TargetOpt = Annotated[str, typer.Option(help="Target name for imported result files.")]
CompareOpt = Annotated[
    str | None,
    typer.Option(help="Cohorts to test, ROBUST,NON_ROBUST (default: the first two)."),
]
CompareTargetsOpt = Annotated[
    str | None,
    typer.Option(help="Targets to compare, BASELINE,CANDIDATE (default: when two)."),
]
RatingsOpt = Annotated[
    Path | None,
    typer.Option(help="CSV probe_id,rating[,metric…] of human 1–5 ratings (Spearman)."),
]
EvaluatorOpt = Annotated[
    list[str] | None,
    typer.Option(help="NAME=CSV of a reference-free evaluator's verdicts."),
]
AlphaOpt = Annotated[float, typer.Option(min=0.0, max=1.0, help="Significance level.")]
NoTextOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the text report.")]
SeriesOpt = Annotated[
    str | None,
    typer.Option(help="Monitoring series in the store (default: the most recently probed one)."),
]
WindowRunsOpt = Annotated[
    int,
    typer.Option(
        min=0,
        envvar="GW_WINDOW_RUNS",
        help="Each group's status over its last N cycles (1: the latest; 0 pools all).",
    ),
]
CorpusOpt = Annotated[
    Path | None,
    typer.Option(
        help="Corpus of the system under test (JSON {doc_id: text} or a directory):"
        " label each gap group knowledge_gap / retrieval_or_reader (GRAMMAR App. I)."
    ),
]
MrcOpt = Annotated[
    bool,
    typer.Option("--mrc", help="With --corpus: an LLM (GW_LLM_*) reads what BM25 does not find."),
]
BalanceSeedOpt = Annotated[int, typer.Option(help="Seed of the λ-balancing draw (reported).")]


def register(app: typer.Typer) -> None:
    app.command("report")(one_line_errors(report))


def report(
    grammar_results: GrammarResultsOpt = None,
    run: RunIdsOpt = None,
    json_out: JsonFileOpt = None,
    all_groups: AllGroupsOpt = False,
    html_out: HtmlOpt = None,
    junit: JunitOpt = None,
    fail_under: FailUnderOpt = None,
    maximum: MaxOpt = None,
    target: TargetOpt = "grammar",
    compare: CompareOpt = None,
    compare_targets: CompareTargetsOpt = None,
    ratings: RatingsOpt = None,
    evaluator: EvaluatorOpt = None,
    alpha: AlphaOpt = 0.05,
    database_url: DatabaseUrlOpt = None,
    quiet: NoTextOpt = False,
    series: SeriesOpt = None,
    window_runs: WindowRunsOpt = 1,
    corpus: CorpusOpt = None,
    mrc: MrcOpt = False,
    balance_seed: BalanceSeedOpt = 0,
) -> None:
    """The GRAMMAR group report: Acc, Acc_db, R, λ, attribution and the cohort test.

    With neither --grammar-results nor --run, it reports the store's latest cycle of a
    monitoring series (statuses, coverage, transitions, flakiness), from --database-url.
    """
    from groundwatch.app.reports import ReportRequest

    rules = parse_rules(fail_under, maximum)
    request = ReportRequest(
        grammar_files=_grammar_files(grammar_results or [], target),
        runs=run or [],
        series=series,
        window_runs=window_runs,
        compare=_pair(compare, "cohorts"),
        compare_targets=_pair(compare_targets, "targets"),
        evaluators=[_split(s, "NAME=FILE") for s in evaluator or []],
        ratings=ratings,
        alpha=alpha,
        balance_seed=balance_seed,
        corpus=corpus,
        mrc=mrc,
        with_groups=junit is not None or all_groups,
    )
    code = _report(
        request,
        database_url,
        rules,
        json_out=json_out,
        html_out=html_out,
        junit=junit,
        quiet=quiet,
        all_groups=all_groups,
    )
    raise typer.Exit(code)


def _grammar_files(specs: list[str], target: str) -> list[GrammarFile]:
    """``--grammar-results [TARGET/]COHORT=FILE`` each, the target ``--target`` when not named."""
    from groundwatch.app.reports import GrammarFile

    files = []
    for spec in specs:
        label, file = _split(spec, "[TARGET/]COHORT=FILE")
        t, slash, cohort = label.rpartition("/")
        files.append(GrammarFile(t if slash else target, cohort, file))
    return files


def _report(
    request: ReportRequest,
    database_url: str | None,
    rules: list[Rule],
    *,
    json_out: Path | None,
    html_out: Path | None,
    junit: Path | None,
    quiet: bool,
    all_groups: bool,
) -> int:
    """``report``: the report asked for, from the store when it reads one, written and gated;
    the exit code."""
    from groundwatch.app.reports import stored_report

    if request.reads_store:
        with open_store(database_url) as store:
            result, groups = stored_report(request, store)
    else:
        result, groups = stored_report(request, None)
    return finish(
        result,
        rules=rules,
        groups=groups,
        json_out=json_out,
        html_out=html_out,
        junit_out=junit,
        quiet=quiet,
        fail_on_dead_target=False,
        all_groups=all_groups,
    )
