"""``groundwatch demo``: the whole pipeline on the embedded bus against the reference RAG.

Builds the demo domain (a fictitious company database and a corpus rendered from it with some
facts deliberately left out), generates semantic groups in short and long cohorts, serves the
reference RAG in-process (keyword-overlap retriever, extractive reader), probes it through the
production runner, judges, tallies, and prints the group report with how well the injected
knowledge gaps were found. RAGProbe scenario probes (S1–S6 with SQL truth, ``--scenarios``) run
in the same stream; the report shows their failure rates per scenario and metric, while the
GRAMMAR numbers and the gap detection are computed over the factual groups only; Oro et al.'s
answer and IR metrics come from the reference RAG's answers and retrieved ids. The judge is
configured by the environment as the judge service is (rules only without an LLM).
``--continuous`` keeps probing and serves ``/metrics``. The demo itself is the service layer's
(:func:`groundwatch.app.demo.run_demo`); this module parses the options and writes the outputs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import orjson
import typer

from groundwatch.cli.common import (
    DatabaseUrlOpt,
    interactive,
    one_line_errors,
    open_store,
    progress_bar,
    refuse_options,
    store_url,
)
from groundwatch.cli.outputs import (
    FailUnderOpt,
    JunitOpt,
    MaxLlmCallsOpt,
    MaxOpt,
    finish,
    parse_rules,
)


def register(app: typer.Typer) -> None:
    @app.command()
    @one_line_errors
    def demo(
        ctx: typer.Context,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the report and gap detection as JSON.")
        ] = None,
        forms: Annotated[int, typer.Option(help="Text forms per group per cohort.")] = 3,
        cohorts: Annotated[
            str, typer.Option(help="Comma-separated cohorts; the first two are compared.")
        ] = "short,long",
        runs: Annotated[int, typer.Option(help="Probing cycles over every group.")] = 1,
        retriever: Annotated[
            str, typer.Option(help="Reference RAG retriever: keyword, bm25 or dense.")
        ] = "keyword",
        continuous: Annotated[
            bool, typer.Option("--continuous", help="Keep probing and serve /metrics until Ctrl-C.")
        ] = False,
        interval: Annotated[
            float, typer.Option(help="Seconds between cycles (--continuous).")
        ] = 30.0,
        host: Annotated[str, typer.Option(help="Bind address (--continuous).")] = "127.0.0.1",
        port: Annotated[
            int, typer.Option(help="Port of /metrics and /report (--continuous).")
        ] = 8004,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")
        ] = False,
        scenarios: Annotated[
            str, typer.Option(help="RAGProbe scenario probes to add: S1,S2,…, all or none.")
        ] = "all",
        html_out: Annotated[
            Path | None, typer.Option("--html", help="Write the HTML report here.")
        ] = None,
        database_url: DatabaseUrlOpt = None,
        fail_under: FailUnderOpt = None,
        maximum: MaxOpt = None,
        junit: JunitOpt = None,
        max_llm_calls: MaxLlmCallsOpt = None,
    ) -> None:
        """Run the whole pipeline on the embedded bus and print the group report.

        The judge is configured as everywhere (`GW_JUDGE_*`, `GW_LLM_*`, GW_REFERENCE_FREE): rules
        only unless an LLM is set; the report adds answer metrics per cohort and scenario.
        Judgements go to the store (--database-url, else GW_DATABASE_URL, else groundwatch.db
        here), where `groundwatch groups`, `show`, `runs` and `report` read them."""
        if not continuous:
            refuse_options(ctx, ("interval", "host", "port"), "with --continuous")
        chosen = tuple(c.strip() for c in cohorts.split(",") if c.strip())
        serve = (interval, host, port) if continuous else None
        rules = parse_rules(fail_under, maximum)
        url, _ = store_url(database_url)
        open_store(database_url, create=True).close()  # a bad URL stops here, exit 2
        from groundwatch.app.demo import run_demo
        from groundwatch.app.runs import Console

        console = Console(
            say=(lambda _m: None) if quiet else typer.echo,
            progress=lambda what: progress_bar(what, enabled=interactive(quiet)),
        )
        try:
            out = asyncio.run(
                run_demo(
                    forms,
                    chosen,
                    runs,
                    retriever,
                    console,
                    serve,
                    scenarios,
                    store=url,
                    with_groups=junit is not None,
                    max_llm_calls=max_llm_calls,
                )
            )
        except KeyboardInterrupt:
            raise typer.Exit(0) from None
        if html_out is not None:
            from groundwatch.report.html import render_html

            html_out.parent.mkdir(parents=True, exist_ok=True)
            html_out.write_text(render_html(out.report), encoding="utf-8")
            if not quiet:
                typer.echo(f"wrote {html_out}")
        if json_out is not None:
            json_out.write_bytes(
                orjson.dumps(out.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
            )
            if not quiet:
                typer.echo(f"wrote {json_out}")
        if rules or junit is not None:
            # the same CI gate as `run --once`: thresholds on any report figure, JUnit per group
            raise typer.Exit(
                finish(
                    out.report,
                    rules=rules,
                    groups=out.groups,
                    junit_out=junit,
                    quiet=True,
                    text=False,
                )
            )
