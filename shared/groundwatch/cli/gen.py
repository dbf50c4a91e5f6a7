"""``groundwatch gen``: semantic groups with SQL truth from a database, as JSONL.

``groundwatch gen (--db URL | --demo | --grammar DIR) [--llm] [--cohorts short,long] [--forms 3]
--out FILE.jsonl`` prints a progress bar and the stage summary (M SQL templates, N text templates,
Q queries, groups, and what was rejected). ``--dry-run`` prints the templates only.

``groundwatch gen --scenarios S1,S2,…|all (--demo | --corpus DIR [--db URL]) --out FILE.jsonl``
writes RAGProbe scenario items instead (see :mod:`groundwatch.cli.gen_scenarios`).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from groundwatch.core.generation.pipeline import GenerationResult, StageSummary
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.verbalizers import (
    Verbalizer,
    default_verbalizers,
    verbalizers_from_config,
)
from groundwatch.errors import GroundwatchError

console = Console(stderr=True)


def summary_table(summary: StageSummary, k: int) -> Table:
    """The stage summary as the paper's Table 2 row plus the rejection counts."""
    t = Table(title="GRAMMAR-Gen stage summary", show_header=True)
    t.add_column("stage")
    t.add_column("count", justify="right")
    t.add_row("SQL templates proposed", str(summary.sql_templates_proposed))
    t.add_row("SQL templates used (M)", str(summary.sql_templates))
    for c, n in summary.text_templates.items():
        t.add_row(f"text templates {c} (N)", str(n))
    t.add_row("value combinations", str(summary.combinations))
    t.add_row("SQL queries with one answer (Q)", str(summary.queries))
    t.add_row("semantic groups", str(summary.groups))
    for c, n in summary.text_queries.items():
        t.add_row(f"text queries {c} (balanced, k={k})", str(n))
    for reason, n in sorted(summary.rejected_templates.items()):
        t.add_row(f"rejected template: {reason}", str(n))
    for reason, n in sorted(summary.dropped_fills.items()):
        t.add_row(f"dropped fill: {reason}", str(n))
    t.add_row("SQL statements run", str(summary.sql_statements))
    return t


def _verbalizers(path: Path | None) -> dict[str, Verbalizer]:
    if path is None:
        return default_verbalizers()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise typer.BadParameter("verbalizer file must hold a mapping of cohort → spec")
    return verbalizers_from_config(data)


def _print_templates(templates: list[SqlTemplate], texts: dict[str, dict[str, list[str]]]) -> None:
    for t in templates:
        typer.echo(f"[{t.kind}/{t.origin}] {t.sql}")
        for cohort, items in texts.get(t.template_id, {}).items():
            for text in items:
                typer.echo(f"    {cohort}: {text}")


def register(app: typer.Typer) -> None:
    @app.command("gen")
    def gen(
        db: Annotated[
            str | None, typer.Option(help="Source database SQLAlchemy URL (opened read-only).")
        ] = None,
        demo: Annotated[bool, typer.Option(help="Use the built-in demo domain.")] = False,
        grammar: Annotated[
            Path | None, typer.Option(help="Import a GRAMMAR tool output directory.")
        ] = None,
        llm: Annotated[
            bool, typer.Option(help="Generate templates with the LLM (GW_LLM_* settings).")
        ] = False,
        cohorts: Annotated[
            str, typer.Option(help="Comma-separated cohorts (linguistic attributes).")
        ] = "short,long",
        forms: Annotated[int, typer.Option(min=1, help="Text forms per group per cohort (k).")] = 3,
        out: Annotated[
            Path | None, typer.Option(help="Output JSONL file, one semantic group per line.")
        ] = None,
        dry_run: Annotated[
            bool, typer.Option(help="Print the templates only; run no answer queries.")
        ] = False,
        dataset_id: Annotated[
            str, typer.Option(help="Dataset id stamped on every group.")
        ] = "default",
        verbalizers: Annotated[
            Path | None, typer.Option(help="YAML with extra/overriding verbalizers.")
        ] = None,
        seed: Annotated[int, typer.Option(help="Demo domain seed.")] = 7,
        docs_out: Annotated[
            Path | None, typer.Option(help="With --demo: write the corpus JSON here.")
        ] = None,
        scenarios: Annotated[
            str | None, typer.Option(help="RAGProbe scenario items instead: S1,S2,… or all.")
        ] = None,
        corpus: Annotated[
            Path | None, typer.Option(help="With --scenarios: documents (a directory or .json).")
        ] = None,
        scenario_file: Annotated[
            list[Path] | None, typer.Option(help="With --scenarios: extra scenario YAML files.")
        ] = None,
        per_scenario: Annotated[
            int | None, typer.Option(min=1, help="With --scenarios: items per scenario.")
        ] = None,
        quality: Annotated[
            Path | None, typer.Option(help="With --scenarios: write the quality report here.")
        ] = None,
    ) -> None:
        """Generate balanced semantic groups (GRAMMAR-Gen) and write them as JSONL."""
        if scenarios is not None:
            from groundwatch.cli.gen_scenarios import gen_scenarios

            gen_scenarios(
                scenarios,
                demo=demo,
                db=db,
                corpus_path=corpus,
                out=out,
                llm=llm,
                seed=seed,
                dataset_id=dataset_id,
                max_items=per_scenario,
                quality_out=quality,
                scenario_paths=scenario_file or [],
            )
            return
        sources = sum([db is not None, demo, grammar is not None])
        if sources != 1:
            raise typer.BadParameter("give exactly one of --db, --demo, --grammar")
        if not dry_run and out is None:
            raise typer.BadParameter("--out is required (or use --dry-run)")
        cohort_list = [c.strip() for c in cohorts.split(",") if c.strip()]
        vs = _verbalizers(verbalizers)
        unknown = [c for c in cohort_list if c not in vs]
        if unknown:
            raise typer.BadParameter(f"unknown cohorts {unknown}; known: {sorted(vs)}")
        if grammar is not None:
            _gen_grammar(grammar, cohort_list, out, dataset_id, dry_run)
            return
        # --demo builds its database in a temporary directory that lives as long as the command
        with tempfile.TemporaryDirectory(prefix="groundwatch-demo-") as workdir:
            _gen_db(
                db,
                demo,
                seed,
                workdir,
                docs_out,
                llm=llm,
                k=forms,
                cohorts=cohort_list,
                dataset_id=dataset_id,
                verbalizers=vs,
                dry_run=dry_run,
                out=out,
            )


def _gen_db(
    db: str | None,
    demo: bool,
    seed: int,
    workdir: str,
    docs_out: Path | None,
    *,
    llm: bool,
    k: int,
    cohorts: list[str],
    dataset_id: str,
    verbalizers: dict[str, Verbalizer],
    dry_run: bool,
    out: Path | None,
) -> None:
    url = db
    domain = None
    try:
        if demo:
            from groundwatch.demo import build_demo

            domain = build_demo(seed=seed, workdir=workdir)
            url = domain.db_url
            if docs_out is not None:
                docs_out.write_bytes(orjson.dumps(domain.documents, option=orjson.OPT_INDENT_2))
        assert url is not None
        result = _run(
            url,
            llm=llm,
            k=k,
            cohorts=cohorts,
            dataset_id=dataset_id,
            verbalizers=verbalizers,
            dry_run=dry_run,
        )
    except GroundwatchError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    if result is None:
        return
    groups = domain.annotate(result.groups) if domain is not None else result.groups
    if out is not None:
        from groundwatch.adapters.db.datasets import write_jsonl

        n = write_jsonl(groups, out)
        console.print(f"wrote {n} semantic groups to {out}")
    if domain is not None:
        gaps = domain.injected_gap_group_ids(groups)
        console.print(
            f"demo: {len(domain.omitted_facts)} facts omitted from the corpus, "
            f"{len(gaps)} groups rest on them (injected gaps)"
        )
    console.print(summary_table(result.summary, k))


def _run(
    url: str,
    *,
    llm: bool,
    k: int,
    cohorts: list[str],
    dataset_id: str,
    verbalizers: dict[str, Verbalizer],
    dry_run: bool,
) -> GenerationResult | None:
    from groundwatch.adapters.sources.generate import generate_groups
    from groundwatch.core.generation.pipeline import offline_text_templates

    if llm:
        return asyncio.run(
            _run_llm(
                url,
                k=k,
                cohorts=cohorts,
                dataset_id=dataset_id,
                verbalizers=verbalizers,
                dry_run=dry_run,
            )
        )
    if dry_run:
        from groundwatch.adapters.sources.connect import readonly_engine
        from groundwatch.adapters.sources.introspect import introspect
        from groundwatch.core.generation.rules import rule_templates

        engine = readonly_engine(url)
        try:
            with engine.connect() as conn, conn.begin():
                templates = rule_templates(introspect(conn))
        finally:
            engine.dispose()
        _print_templates(templates, offline_text_templates(templates, verbalizers, cohorts))
        return None
    with _progress() as progress:
        task = progress.add_task("templates", total=None)

        def on_plan(_schema: SchemaInfo, templates: list[SqlTemplate]) -> None:
            progress.update(task, total=len(templates))

        def on_template(_t: SqlTemplate, _n: int) -> None:
            progress.advance(task)

        return generate_groups(
            url,
            k=k,
            cohorts=cohorts,
            dataset_id=dataset_id,
            verbalizers=verbalizers,
            on_template=on_template,
            on_plan=on_plan,
        )


async def _run_llm(
    url: str,
    *,
    k: int,
    cohorts: list[str],
    dataset_id: str,
    verbalizers: dict[str, Verbalizer],
    dry_run: bool,
) -> GenerationResult | None:
    from groundwatch.adapters.llm.client import LlmClient, LlmSettings
    from groundwatch.adapters.llm.generation import (
        generate_groups_llm,
        llm_sql_templates,
        llm_text_templates,
    )
    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.adapters.sources.introspect import introspect

    client = LlmClient(LlmSettings())
    try:
        if dry_run:
            engine = readonly_engine(url)
            try:
                with engine.connect() as conn, conn.begin():
                    schema = introspect(conn)
            finally:
                engine.dispose()
            sql = await llm_sql_templates(client, schema)
            texts, _ = await llm_text_templates(
                client, sql.templates, cohorts, verbalizers=verbalizers, num_generations=max(k, 3)
            )
            _print_templates(sql.templates, texts)
            console.print(f"LLM proposed {sql.proposed} SQL lines; rejected: {dict(sql.rejected)}")
            return None
        with console.status("asking the LLM for templates…"):
            return await generate_groups_llm(
                url, client, k=k, cohorts=cohorts, dataset_id=dataset_id, verbalizers=verbalizers
            )
    finally:
        await client.aclose()


def _gen_grammar(
    directory: Path, cohorts: list[str], out: Path | None, dataset_id: str, dry_run: bool
) -> None:
    from groundwatch.adapters.db.datasets import import_grammar_dir, write_jsonl

    groups = import_grammar_dir(directory, cohorts, dataset_id=dataset_id)
    if dry_run:
        for sql in dict.fromkeys(g.sql for g in groups):
            typer.echo(sql)
    if out is not None and not dry_run:
        n = write_jsonl(groups, out)
        console.print(f"wrote {n} semantic groups to {out}")
    counts: dict[str, Any] = {c: sum(len(g.forms_in(c)) for g in groups) for c in cohorts}
    console.print(f"imported {len(groups)} semantic groups; text queries per cohort: {counts}")


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
