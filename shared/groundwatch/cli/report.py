"""``groundwatch report``: the GRAMMAR group report from the store or from GRAMMAR result files.

The report is the service layer's (:func:`groundwatch.app.reports.stored_report`: from the store —
the latest cycle of a monitoring series by default, ``--run`` for given runs — or from the
authors' result files, ``--grammar-results``); this module parses the options and hands the
report to the same writer and CI gate as ``run`` (:mod:`groundwatch.cli.outputs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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


def register(app: typer.Typer) -> None:
    @app.command("report")
    @one_line_errors
    def report(
        grammar_results: Annotated[
            list[str] | None,
            typer.Option(
                "--grammar-results",
                "-g",
                help="[TARGET/]COHORT=FILE of a GRAMMAR result file; repeat per cohort.",
            ),
        ] = None,
        run: Annotated[
            list[str] | None,
            typer.Option(
                "--run",
                "-r",
                help="Run id whose stored judgements to report (repeated: pooled;"
                " `groundwatch diff A B` compares two).",
            ),
        ] = None,
        json_out: JsonFileOpt = None,
        all_groups: AllGroupsOpt = False,
        html_out: HtmlOpt = None,
        junit: JunitOpt = None,
        fail_under: FailUnderOpt = None,
        maximum: MaxOpt = None,
        target: Annotated[
            str, typer.Option(help="Target name for imported result files.")
        ] = "grammar",
        compare: Annotated[
            str | None,
            typer.Option(help="Cohorts to test, ROBUST,NON_ROBUST (default: the first two)."),
        ] = None,
        compare_targets: Annotated[
            str | None,
            typer.Option(help="Targets to compare, BASELINE,CANDIDATE (default: when two)."),
        ] = None,
        ratings: Annotated[
            Path | None,
            typer.Option(help="CSV probe_id,rating[,metric…] of human 1–5 ratings (Spearman)."),
        ] = None,
        evaluator: Annotated[
            list[str] | None,
            typer.Option(help="NAME=CSV of a reference-free evaluator's verdicts."),
        ] = None,
        alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Significance level.")] = 0.05,
        database_url: DatabaseUrlOpt = None,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="Do not print the text report.")
        ] = False,
        series: Annotated[
            str | None,
            typer.Option(
                help="Monitoring series in the store (default: the most recently probed one)."
            ),
        ] = None,
        window_runs: Annotated[
            int,
            typer.Option(
                min=0,
                envvar="GW_WINDOW_RUNS",
                help="Each group's status over its last N cycles (1: the latest; 0 pools all).",
            ),
        ] = 1,
        corpus: Annotated[
            Path | None,
            typer.Option(
                help="Corpus of the system under test (JSON {doc_id: text} or a directory):"
                " label each gap group knowledge_gap / retrieval_or_reader (GRAMMAR App. I)."
            ),
        ] = None,
        mrc: Annotated[
            bool,
            typer.Option(
                "--mrc", help="With --corpus: an LLM (GW_LLM_*) reads what BM25 does not find."
            ),
        ] = False,
        balance_seed: Annotated[
            int, typer.Option(help="Seed of the λ-balancing draw (reported).")
        ] = 0,
    ) -> None:
        """The GRAMMAR group report: Acc, Acc_db, R, λ, attribution and the cohort test.

        With neither --grammar-results nor --run, it reports the store's latest cycle of a
        monitoring series (statuses, coverage, transitions, flakiness), from --database-url.
        """
        from groundwatch.app.reports import GrammarFile, ReportRequest, stored_report

        rules = parse_rules(fail_under, maximum)
        files = []
        for spec in grammar_results or []:
            label, file = _split(spec, "[TARGET/]COHORT=FILE")
            t, slash, cohort = label.rpartition("/")
            files.append(GrammarFile(t if slash else target, cohort, file))
        request = ReportRequest(
            grammar_files=files,
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
        if request.reads_store:
            with open_store(database_url) as store:
                result, groups = stored_report(request, store)
        else:
            result, groups = stored_report(request, None)
        code = finish(
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
        raise typer.Exit(code)
