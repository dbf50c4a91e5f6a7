"""``groundwatch report``: the GRAMMAR group report from a stored run or from GRAMMAR result files.

The report itself is the pure core's (:mod:`groundwatch.report.build`); this module only gathers
observations — from the database (``--run``, through SQLAlchemy) or from the authors' result files
(``--grammar-results``) — and writes JSON, HTML and the text table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import orjson
import typer

from groundwatch.adapters.db.observations import observations_for_runs
from groundwatch.adapters.grammar_files import (
    ImportFormatError,
    load_evaluator_verdicts,
    load_grammar_results,
    load_grammar_specs,
    load_likert_ratings,
)
from groundwatch.core.data_quality import GroupSpec, QualityResults
from groundwatch.core.tagging import GroupStatus, Observation, Tagger, Window
from groundwatch.errors import ConfigError
from groundwatch.report.build import report_from_tagger
from groundwatch.report.model import Report
from groundwatch.report.text import render_text


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


def _grammar_observations(specs: Sequence[str], target: str) -> list[Observation]:
    out: list[Observation] = []
    for spec in specs:
        label, file = _split(spec, "[TARGET/]COHORT=FILE")
        t, slash, cohort = label.rpartition("/")
        out += load_grammar_results(file, cohort, t if slash else target)
    return out


def data_quality(
    tagger: Tagger, specs: dict[str, GroupSpec], corpus: Path, mrc: bool
) -> QualityResults:
    """Label the report's gap groups from ``corpus`` (GRAMMAR Appendix I); with ``mrc`` an LLM
    (``GW_LLM_*``) reads the documents for what BM25 does not find."""
    import asyncio

    from groundwatch.adapters.corpus_files import load_corpus
    from groundwatch.stages.analytics.data_quality import DataQualityChecker

    reader = None
    if mrc:
        from groundwatch.adapters.llm.client import LlmClient, LlmSettings
        from groundwatch.adapters.llm.reader import LlmReader
        from groundwatch.runtime.settings import load_settings

        reader = LlmReader(LlmClient(load_settings(LlmSettings))).read
    checker = DataQualityChecker(load_corpus(corpus, "--corpus"), reader=reader)
    gaps = sorted({t.group_id for t in tagger.tallies(status=GroupStatus.GAP)})
    asyncio.run(checker.check_many([specs[g] for g in gaps if g in specs]))
    return checker.results()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def register(app: typer.Typer) -> None:
    @app.command("report")
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
            typer.Option("--run", "-r", help="Run id whose stored judgements to report."),
        ] = None,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the report JSON here.")
        ] = None,
        html_out: Annotated[
            Path | None, typer.Option("--html", help="Write the HTML report here.")
        ] = None,
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
        database_url: Annotated[
            str | None,
            typer.Option("--database-url", help="SQLAlchemy URL (default: GW_DATABASE_URL)."),
        ] = None,
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
        grammar_results = grammar_results or []
        run = run or []
        evaluator = evaluator or []
        if database_url is not None:
            from groundwatch.adapters.db.engine import check_database_url

            check_database_url(database_url, "--database-url")  # exit 2 with one line
        window: Window | None = None
        specs: dict[str, GroupSpec] = {}
        try:
            observations = _grammar_observations(grammar_results, target)
            if corpus is not None and grammar_results:
                specs.update(
                    load_grammar_specs(_split(g, "COHORT=FILE")[1] for g in grammar_results)
                )
            if run:
                observations += _load_runs(run, database_url)
                if corpus is not None:
                    specs.update(_load_specs(run, database_url))
            if not grammar_results and not run:
                observations = _load_series(series, database_url)
                window = Window(runs=window_runs or None)
                if corpus is not None:
                    runs = sorted({o.run_id for o in observations})
                    specs.update(_load_specs(runs, database_url))
            evaluators = {
                name: load_evaluator_verdicts(file)
                for name, file in (_split(s, "NAME=FILE") for s in evaluator)
            }
            human, metrics = load_likert_ratings(ratings) if ratings else ({}, {})
        except (ImportFormatError, OSError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        if not observations:
            typer.echo("error: no judgements found", err=True)
            raise typer.Exit(1)
        tagger = Tagger(window)
        tagger.apply_many(observations)
        quality = None
        if corpus is not None:
            try:
                quality = data_quality(tagger, specs, corpus, mrc)
            except ConfigError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(2) from None
        result = report_from_tagger(
            tagger,
            compare=_pair(compare, "cohorts"),
            compare_targets=_pair(compare_targets, "targets"),
            evaluators=evaluators or None,
            human_ratings=human or None,
            metric_scores=metrics or None,
            alpha=alpha,
            balance_seed=balance_seed,
            data_quality=quality,
        )
        if json_out is not None:
            _write(json_out, report_json(result))
        if html_out is not None:
            from groundwatch.report.html import render_html

            _write(html_out, render_html(result).encode())
        if not quiet:
            typer.echo(render_text(result), nl=False)


def _load_runs(run_ids: Sequence[str], url: str | None) -> list[Observation]:
    from groundwatch.adapters.db import make_engine, make_sessionmaker
    from groundwatch.errors import ConfigError
    from groundwatch.runtime.settings import CommonSettings, load_settings

    if url is None:
        try:
            url = load_settings(CommonSettings).database_url
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            return observations_for_runs(session, run_ids)
    finally:
        engine.dispose()


def _load_specs(run_ids: Sequence[str], url: str | None) -> dict[str, GroupSpec]:
    from groundwatch.adapters.db import make_engine, make_sessionmaker
    from groundwatch.adapters.db.observations import specs_for_runs

    engine = make_engine(url or _database_url())
    try:
        with make_sessionmaker(engine)() as session:
            return specs_for_runs(session, run_ids)
    finally:
        engine.dispose()


def _load_series(series: str | None, url: str | None) -> list[Observation]:
    """The stored judgements of ``series`` (default: the latest probed), in cycle order."""
    from groundwatch.adapters.db import make_engine, make_sessionmaker
    from groundwatch.adapters.db.observations import observations_for_series
    from groundwatch.adapters.db.runs import latest_cycle

    url = url or _database_url()
    engine = make_engine(url)
    try:
        if series is None:
            latest = latest_cycle(engine)
            if latest is None:
                typer.echo(
                    f"error: no monitoring cycles stored in {url}; run `groundwatch run --once"
                    " --database-url URL` first, or give --run/--grammar-results",
                    err=True,
                )
                raise typer.Exit(1)
            series = latest[0]
        with make_sessionmaker(engine)() as session:
            return observations_for_series(session, series)
    finally:
        engine.dispose()


def _database_url() -> str:
    from groundwatch.errors import ConfigError
    from groundwatch.runtime.settings import CommonSettings, load_settings

    try:
        return load_settings(CommonSettings).database_url
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def report_json(result: Report) -> bytes:
    """The report as the CLI writes it (indented JSON)."""
    return orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2)
