"""``groundwatch run``: probe your own targets with your own dataset, in one process.

For batch use and CI (``--once``: N cycles, print the report, exit) and for a single-machine
continuous monitor (cycles every ``--interval`` seconds, ``/metrics`` and ``/report`` served).
The same workers as the Kafka services run on the embedded bus; to scale out, run the services.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import orjson
import typer

from groundwatch.report.model import Report

if TYPE_CHECKING:
    from groundwatch.stages.analytics.data_quality import DataQualityChecker


async def _run(
    dataset: Path,
    targets_file: Path,
    once: bool,
    runs: int,
    sample: int,
    interval: float,
    host: str,
    port: int,
    database_url: str | None,
    compare: tuple[str, str] | None,
    baseline: str | None = None,
    series: str | None = None,
    window_runs: int = 1,
    read_token: str | None = None,
    corpus: Path | None = None,
    mrc: bool = False,
) -> Report:
    from groundwatch.adapters.db.datasets import read_jsonl
    from groundwatch.adapters.targets import make_http_client
    from groundwatch.core.tagging import Window
    from groundwatch.report.build import report_from_tagger
    from groundwatch.report.text import render_text
    from groundwatch.runtime.embedded import EmbeddedPipeline, run_continuously
    from groundwatch.runtime.judging import load_judge, load_selfcheck_sampling
    from groundwatch.stages.runner.factory import make_runner

    groups = list(read_jsonl(dataset))
    quality = _data_quality(corpus, mrc) if corpus is not None else None
    judge = load_judge(database_url)
    http = make_http_client(max_connections=512)
    runner = make_runner(http, targets_file=targets_file, selfcheck=load_selfcheck_sampling())
    typer.echo(
        f"{len(groups)} semantic groups from {dataset}; targets: {', '.join(runner.targets)}"
    )
    typer.echo(judge.describe)
    pipeline = EmbeddedPipeline(
        groups,
        runner,
        judge=judge,
        database_url=database_url,
        sample=sample,
        on_stop=[http.aclose],
        series=series,
        window=Window(runs=window_runs or None),
        data_quality=quality,
        open_domain_baseline=baseline,
    )
    await pipeline.start()
    try:
        if once:
            first = pipeline.generator.next_cycle
            result = await pipeline.run(runs)
            last = pipeline.generator.next_cycle - 1
            cycles = f"cycle {last}" if first == last else f"cycles {first}–{last}"
            typer.echo(
                f"series {pipeline.generator.series!r}, {cycles} (run {', '.join(result.run_ids)}):"
                f" {result.published} probes in {result.elapsed_s:.1f}s"
            )
        else:
            typer.echo(
                f"probing every {interval:g}s; http://{host}:{port}/metrics (Ctrl-C to stop)"
            )
            await run_continuously(
                pipeline,
                interval_s=interval,
                host=host,
                port=port,
                on_cycle=lambda r: typer.echo(f"cycle: {r.published} probes in {r.elapsed_s:.1f}s"),
                read_token=read_token,
            )
        await pipeline.analytics.check_all_gaps()
        results = quality.results() if quality is not None else None
        tagger = pipeline.analytics.tagger
        tagger.refresh_causes()
        # with a baseline the tagger reports the closed domain, as /metrics does live
        report = report_from_tagger(tagger, compare=compare, data_quality=results)
        if baseline is not None:
            typer.echo(
                f"open-domain filter: {len(tagger.open_domain_groups())} groups answered by"
                f" {baseline} without retrieval are left out of the report and the metrics"
            )
    finally:
        await pipeline.stop()
    typer.echo(render_text(report))
    return report


def _data_quality(corpus: Path, mrc: bool) -> DataQualityChecker:
    """The gap groups' data-quality check over ``corpus``; with ``mrc``, the LLM configured by
    ``GW_LLM_*`` reads the best documents for what BM25 does not find."""
    from groundwatch.adapters.corpus_files import load_corpus
    from groundwatch.stages.analytics.data_quality import DataQualityChecker

    documents = load_corpus(corpus, "--corpus")
    if not mrc:
        return DataQualityChecker(documents)
    from groundwatch.adapters.llm.client import LlmClient, LlmSettings
    from groundwatch.adapters.llm.reader import LlmReader
    from groundwatch.runtime.settings import load_settings

    return DataQualityChecker(
        documents, reader=LlmReader(LlmClient(load_settings(LlmSettings))).read
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        dataset: Annotated[
            Path, typer.Option(help="Dataset JSONL from `groundwatch gen`.", exists=True)
        ],
        targets: Annotated[
            Path,
            typer.Option(
                help="Targets file (YAML/TOML): http_json, openai_chat, callable.", exists=True
            ),
        ],
        once: Annotated[
            bool, typer.Option("--once", help="Run --runs cycles, report, exit.")
        ] = False,
        runs: Annotated[int, typer.Option(help="Cycles with --once.")] = 1,
        sample: Annotated[int, typer.Option(help="Groups per cycle (0 = all).")] = 0,
        interval: Annotated[
            float, typer.Option(help="Seconds between cycles (continuous).")
        ] = 60.0,
        host: Annotated[str, typer.Option(help="Bind address (continuous).")] = "127.0.0.1",
        port: Annotated[
            int, typer.Option(help="Port of /metrics and /report (continuous).")
        ] = 8004,
        database_url: Annotated[
            str | None,
            typer.Option(help="Keep the judgements in this database (default: a temp SQLite)."),
        ] = None,
        compare: Annotated[
            str | None, typer.Option(help="Two cohorts to test, e.g. short,long.")
        ] = None,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the report as JSON.")
        ] = None,
        series: Annotated[
            str | None,
            typer.Option(
                help="Monitoring series (default: the dataset's name). Runs with the same"
                " --database-url and series are consecutive cycles of one series."
            ),
        ] = None,
        window_runs: Annotated[
            int,
            typer.Option(
                min=0,
                help="A group's status is over its last N cycles (1: the latest; 0 pools all).",
            ),
        ] = 1,
        open_domain_baseline: Annotated[
            str | None,
            typer.Option(
                help="Target (e.g. an openai_chat LLM-only baseline) whose correctly answered "
                "groups are flagged open-domain and left out of the report (GRAMMAR §5.2)."
            ),
        ] = None,
        read_token: Annotated[
            str | None,
            typer.Option(
                envvar="GW_API_READ_TOKEN",
                help="Bearer token for /groups and /report (continuous); unset: open.",
                show_default=False,
            ),
        ] = None,
        corpus: Annotated[
            Path | None,
            typer.Option(
                help="Corpus your RAG answers from (JSON {doc_id: text} or a directory): label"
                " each gap group knowledge_gap / retrieval_or_reader (GRAMMAR Appendix I).",
            ),
        ] = None,
        mrc: Annotated[
            bool,
            typer.Option(
                "--mrc", help="With --corpus: an LLM (GW_LLM_*) reads what BM25 does not find."
            ),
        ] = False,
    ) -> None:
        """Probe targets with a dataset on the embedded bus: once (CI) or continuously.

        Judged by the rules, and by the LLM tier when GW_JUDGE_LLM_ENABLED and GW_LLM_* are set
        (GW_REFERENCE_FREE adds RAGAS-Fact/SelfCheck); the first lines say which judge runs.
        """
        if database_url is not None:
            from groundwatch.adapters.db.engine import check_database_url

            check_database_url(database_url, "--database-url")  # exit 2 with one line
        pair = None
        if compare:
            a, _, b = compare.partition(",")
            if not a or not b:
                raise typer.BadParameter("expected two cohorts as A,B", param_hint="--compare")
            pair = (a.strip(), b.strip())
        try:
            report = asyncio.run(
                _run(
                    dataset,
                    targets,
                    once,
                    runs,
                    sample,
                    interval,
                    host,
                    port,
                    database_url,
                    pair,
                    open_domain_baseline,
                    series,
                    window_runs,
                    read_token,
                    corpus,
                    mrc,
                )
            )
        except KeyboardInterrupt:
            raise typer.Exit(0) from None
        if json_out is not None:
            json_out.write_bytes(
                orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
            )
