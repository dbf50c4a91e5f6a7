"""``groundwatch gen``: semantic groups with SQL truth from a database, as JSONL.

``groundwatch gen (--db URL | --demo | --grammar DIR) [--llm] [--cohorts short,long] [--forms 3]
--out FILE.jsonl`` prints a progress bar and the stage summary (M SQL templates, N text templates,
Q queries, groups, and what was rejected or dropped, with examples; ``--json`` prints it as JSON).
``--dry-run`` prints the templates only and writes nothing (so not with ``--out``). Steering:
``--include-tables``, ``--exclude-tables``, ``--exclude-columns`` (globs), ``--pii``,
``--key-ratio``; ``--allow-list-answers`` keeps fills with several answers as list answers.

``groundwatch gen templates (--db URL | --demo) --out templates.yaml`` writes the SQL and text
templates to edit (GRAMMAR's save / edit / reload); ``gen --templates templates.yaml`` loads,
validates and uses them, reporting every rejected template with its reason.

``groundwatch gen --scenarios S1,S2,…|all (--demo | --corpus DIR [--db URL]) --out FILE.jsonl``
writes RAGProbe scenario items instead (see :mod:`groundwatch.cli.gen_scenarios`).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

from groundwatch.app.datasets import write_dataset
from groundwatch.app.generation import (
    GenOptions,
    check_source_url,
    import_grammar,
    source_errors,
    write_templates,
)
from groundwatch.cli.common import (
    EXIT_USAGE,
    AllowPrivilegedOpt,
    SourceTimeoutOpt,
    fail,
    interactive,
    make_progress,
    one_line_errors,
    progress_bar,
    refuse_options,
)
from groundwatch.errors import GroundwatchError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from groundwatch.core.generation.pipeline import StageSummary
    from groundwatch.core.generation.schema import SchemaInfo
    from groundwatch.core.generation.steering import Steering
    from groundwatch.core.generation.templates import SqlTemplate
    from groundwatch.core.generation.verbalizers import Verbalizer


class _Console:
    """rich's console on stderr, made on first use (rich costs a tenth of a second to import,
    and ``--help`` should not pay it)."""

    _real: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if _Console._real is None:
            from rich.console import Console

            _Console._real = Console(stderr=True)
        return getattr(_Console._real, name)


console: Any = _Console()


def summary_table(summary: StageSummary, k: int) -> Table:
    """The stage summary as the paper's Table 2 row plus the rejection counts."""
    from rich.table import Table

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
    import yaml

    from groundwatch.core.generation.verbalizers import (
        default_verbalizers,
        verbalizers_from_config,
    )

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


PatternsOpt = Annotated[
    list[str] | None,
    typer.Option(help="Glob patterns, comma-separated or repeated (case-insensitive)."),
]


def _steering(
    include_tables: list[str] | None,
    exclude_tables: list[str] | None,
    exclude_columns: list[str] | None,
    pii: bool,
) -> Steering:
    from groundwatch.core.generation.steering import Steering, split_patterns

    return Steering(
        include_tables=split_patterns(include_tables),
        exclude_tables=split_patterns(exclude_tables),
        exclude_columns=split_patterns(exclude_columns),
        pii=pii,
    )


# Options `gen` and `gen templates` both take, with the same help.
DbOpt = Annotated[
    str | None, typer.Option(help="Source database SQLAlchemy URL (opened read-only).")
]
DemoOpt = Annotated[bool, typer.Option(help="Use the built-in demo domain.")]
LlmOpt = Annotated[bool, typer.Option(help="Generate templates with the LLM (GW_LLM_* settings).")]
CohortsOpt = Annotated[str, typer.Option(help="Comma-separated cohorts (linguistic attributes).")]
VerbalizersOpt = Annotated[
    Path | None, typer.Option(help="YAML with extra/overriding verbalizers.")
]
KeyRatioOpt = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help=(
            "Distinct share for a text column to name its rows (a column called a"
            " name needs at most 0.6: fills on a shared name are dropped)."
        ),
    ),
]
SeedOpt = Annotated[int, typer.Option(help="Demo domain seed.")]

# Options of `gen` alone.
GrammarOpt = Annotated[
    Path | None,
    typer.Option(help="Import GRAMMAR tool output (flat files or the repository folders)."),
]
TemplatesOpt = Annotated[
    Path | None,
    typer.Option(help="Use the SQL/text templates of this YAML file (see gen templates)."),
]
FormsOpt = Annotated[int, typer.Option(min=1, help="Text forms per group per cohort (k).")]
OutOpt = Annotated[
    Path | None, typer.Option(help="Output JSONL file, one semantic group per line.")
]
DryRunOpt = Annotated[
    bool,
    typer.Option(
        help="Print the templates only; run no answer queries, write no dataset (not with --out)."
    ),
]
DatasetIdOpt = Annotated[str, typer.Option(help="Dataset id stamped on every group.")]
PiiOpt = Annotated[
    bool,
    typer.Option(
        help="Exclude columns whose names or values look personal (e-mail, phone, "
        "address, birth date, national ids)."
    ),
]
ListAnswersOpt = Annotated[
    bool, typer.Option(help="Keep fills with several answers as list answers.")
]
SummaryJsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the stage summary as JSON on stdout.")
]
UnverifiedReadonlyOpt = Annotated[
    bool,
    typer.Option(
        help="Accept a --db backend whose read-only mode groundwatch cannot enforce"
        " (other than sqlite, postgresql, mysql/mariadb). Connect as a database user"
        " that can only read: nothing else then keeps generation from writing."
    ),
]
NoProgressOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar (also off on CI or a pipe).")
]
DocsOutOpt = Annotated[Path | None, typer.Option(help="With --demo: write the corpus JSON here.")]
ScenariosOpt = Annotated[
    str | None, typer.Option(help="RAGProbe scenario items instead: S1,S2,… or all.")
]
CorpusOpt = Annotated[
    Path | None, typer.Option(help="With --scenarios: documents (a directory or .json).")
]
ScenarioFileOpt = Annotated[
    list[Path] | None, typer.Option(help="With --scenarios: extra scenario YAML files.")
]
PerScenarioOpt = Annotated[
    int | None, typer.Option(min=1, help="With --scenarios: items per scenario.")
]
ScenarioReportOpt = Annotated[
    Path | None,
    typer.Option(
        "--scenario-report",
        "--quality",
        help="With --scenarios: write the scenario report (kept, dropped by reason,"
        " validity) here as JSON (--quality: its former name).",
    ),
]
DocIdsOpt = Annotated[
    Path | None,
    typer.Option(
        "--doc-ids",
        exists=True,
        help="With --db: YAML/JSON map of table to document id ('project-{key}', {key} ="
        " the row's primary key) or to {row key: document id}; each group's relevant"
        " documents are those of the rows its answer reads (for the IR metrics).",
    ),
]

# Options of `gen templates` alone.
TemplatesOutOpt = Annotated[Path, typer.Option(help="YAML file to write the templates to.")]
TemplateFormsOpt = Annotated[int, typer.Option(min=1, help="Text templates wanted per cohort.")]
TemplatesPiiOpt = Annotated[
    bool, typer.Option(help="Exclude columns whose names or values look personal.")
]


def register(app: typer.Typer) -> None:
    gen_app = typer.Typer(
        help="Generate balanced semantic groups (GRAMMAR-Gen) and write them as JSONL.",
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.add_typer(gen_app, name="gen")
    gen_app.callback(invoke_without_command=True)(one_line_errors(gen))
    gen_app.command("templates")(one_line_errors(gen_templates))


def gen(
    ctx: typer.Context,
    db: DbOpt = None,
    demo: DemoOpt = False,
    grammar: GrammarOpt = None,
    templates: TemplatesOpt = None,
    llm: LlmOpt = False,
    cohorts: CohortsOpt = "short,long",
    forms: FormsOpt = 3,
    out: OutOpt = None,
    dry_run: DryRunOpt = False,
    dataset_id: DatasetIdOpt = "default",
    verbalizers: VerbalizersOpt = None,
    include_tables: PatternsOpt = None,
    exclude_tables: PatternsOpt = None,
    exclude_columns: PatternsOpt = None,
    pii: PiiOpt = False,
    key_ratio: KeyRatioOpt = None,
    allow_list_answers: ListAnswersOpt = False,
    as_json: SummaryJsonOpt = False,
    allow_unverified_readonly: UnverifiedReadonlyOpt = False,
    quiet: NoProgressOpt = False,
    allow_privileged_source: AllowPrivilegedOpt = False,
    source_timeout: SourceTimeoutOpt = 60.0,
    seed: SeedOpt = 7,
    docs_out: DocsOutOpt = None,
    scenarios: ScenariosOpt = None,
    corpus: CorpusOpt = None,
    scenario_file: ScenarioFileOpt = None,
    per_scenario: PerScenarioOpt = None,
    scenario_report: ScenarioReportOpt = None,
    doc_ids: DocIdsOpt = None,
) -> None:
    """Generate balanced semantic groups (GRAMMAR-Gen) and write them as JSONL."""
    if ctx.invoked_subcommand is not None:
        return
    if scenarios is not None:
        from groundwatch.cli.gen_scenarios import gen_scenarios

        refuse_options(ctx, ("dry_run",), "with SQL templates, not with --scenarios")

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
            report_out=scenario_report,
            scenario_paths=scenario_file or [],
            source_timeout_s=source_timeout,
            allow_privileged_source=allow_privileged_source,
        )
        return
    _check_gen_sources(
        db, demo, grammar, out, dry_run=dry_run, templates=templates, llm=llm, doc_ids=doc_ids
    )
    cohort_list, vs = _cohorts(cohorts, verbalizers)
    if grammar is not None:
        _gen_grammar(grammar, cohort_list, out, dataset_id, dry_run, as_json, quiet)
        return
    opts = GenOptions(
        llm=llm,
        k=forms,
        cohorts=cohort_list,
        dataset_id=dataset_id,
        verbalizers=vs,
        dry_run=dry_run,
        steering=_steering(include_tables, exclude_tables, exclude_columns, pii),
        key_ratio=key_ratio,
        list_answers=allow_list_answers,
        templates=templates,
        as_json=as_json,
        doc_ids=doc_ids,
        allow_unverified=allow_unverified_readonly,
        quiet=quiet,
        allow_privileged=allow_privileged_source,
        source_timeout_s=source_timeout,
    )
    if db is not None:
        check_source_url(db, "--db")
        if allow_unverified_readonly:
            console.print(
                "warning: --allow-unverified-readonly: groundwatch does not check that this"
                " connection cannot write; the database user must be read-only"
            )
    # --demo builds its database in a temporary directory that lives as long as the command
    with tempfile.TemporaryDirectory(prefix="groundwatch-demo-") as workdir:
        _gen_db(db, demo, seed, workdir, docs_out, opts, out=out)


def _check_gen_sources(
    db: str | None,
    demo: bool,
    grammar: Path | None,
    out: Path | None,
    *,
    dry_run: bool,
    templates: Path | None,
    llm: bool,
    doc_ids: Path | None,
) -> None:
    """``gen``'s one source, its output and the options that go with one source only."""
    sources = sum([db is not None, demo, grammar is not None])
    if sources != 1:
        raise typer.BadParameter("give exactly one of --db, --demo, --grammar")
    if not dry_run and out is None:
        raise typer.BadParameter("--out is required (or use --dry-run)")
    if dry_run and out is not None:
        # an exit 0 with an empty --out would read as "generated nothing", not "wrote nothing"
        raise typer.BadParameter(
            "--out goes without --dry-run (a dry run prints the templates and writes nothing)"
        )
    if out is not None and not out.parent.is_dir():
        raise typer.BadParameter(
            f"directory {str(out.parent)!r} does not exist", param_hint="--out"
        )
    if templates is not None and (llm or grammar is not None):
        raise typer.BadParameter("--templates goes with --db or --demo, without --llm")
    if doc_ids is not None and db is None:
        raise typer.BadParameter(
            "--doc-ids goes with --db (the demo knows its documents)", param_hint="--doc-ids"
        )


def _cohorts(cohorts: str, verbalizers: Path | None) -> tuple[list[str], dict[str, Verbalizer]]:
    """The ``--cohorts`` list and the verbalizers, every cohort one of theirs."""
    cohort_list = [c.strip() for c in cohorts.split(",") if c.strip()]
    vs = _verbalizers(verbalizers)
    unknown = [c for c in cohort_list if c not in vs]
    if unknown:
        raise typer.BadParameter(f"unknown cohorts {unknown}; known: {sorted(vs)}")
    return cohort_list, vs


def gen_templates(
    ctx: typer.Context,
    out: TemplatesOutOpt,
    db: DbOpt = None,
    demo: DemoOpt = False,
    llm: LlmOpt = False,
    cohorts: CohortsOpt = "short,long",
    forms: TemplateFormsOpt = 3,
    verbalizers: VerbalizersOpt = None,
    include_tables: PatternsOpt = None,
    exclude_tables: PatternsOpt = None,
    exclude_columns: PatternsOpt = None,
    pii: TemplatesPiiOpt = False,
    key_ratio: KeyRatioOpt = None,
    allow_privileged_source: AllowPrivilegedOpt = False,
    source_timeout: SourceTimeoutOpt = 60.0,
    seed: SeedOpt = 7,
) -> None:
    """Write the SQL templates (and text templates per cohort) to a YAML file to edit.

    Load the edited file with ``groundwatch gen --db URL --templates FILE --out …``.
    """
    given = _parent_options(ctx, _SHARED_WITH_TEMPLATES)
    db = given.get("db", db)
    demo = given.get("demo", demo)
    llm = given.get("llm", llm)
    cohorts = given.get("cohorts", cohorts)
    forms = given.get("forms", forms)
    verbalizers = given.get("verbalizers", verbalizers)
    include_tables = given.get("include_tables", include_tables)
    exclude_tables = given.get("exclude_tables", exclude_tables)
    exclude_columns = given.get("exclude_columns", exclude_columns)
    pii = given.get("pii", pii)
    key_ratio = given.get("key_ratio", key_ratio)
    seed = given.get("seed", seed)
    if (db is not None) + demo != 1:
        raise typer.BadParameter(
            "give exactly one of --db, --demo" + (" (not both)" if db is not None and demo else ""),
            param_hint="gen templates",
        )
    cohort_list, vs = _cohorts(cohorts, verbalizers)
    opts = GenOptions(
        llm=llm,
        k=forms,
        cohorts=cohort_list,
        verbalizers=vs,
        steering=_steering(include_tables, exclude_tables, exclude_columns, pii),
        key_ratio=key_ratio,
        allow_privileged=allow_privileged_source,
        source_timeout_s=source_timeout,
    )
    n = _write_templates(db, demo, seed, out, opts)
    console.print(f"wrote {n} SQL templates to {out}; edit them, then: gen --templates {out}")


def _write_templates(db: str | None, demo: bool, seed: int, out: Path, opts: GenOptions) -> int:
    """``gen templates``: the templates of the database (or of the demo's, built in a temporary
    directory) written to ``out``; how many SQL templates."""
    with tempfile.TemporaryDirectory(prefix="groundwatch-demo-") as workdir:
        try:
            url = db
            if demo:
                from groundwatch.demo import build_demo

                url = build_demo(seed=seed, workdir=workdir).db_url
            assert url is not None
            return write_templates(url, out, opts, demo=demo)
        except GroundwatchError as e:
            fail(str(e), EXIT_USAGE)  # one line, however long


#: Options `gen` and `gen templates` both take: `gen --db URL templates --out t.yaml` means
#: the same as `gen templates --db URL --out t.yaml`.
_SHARED_WITH_TEMPLATES = (
    "db", "demo", "llm", "cohorts", "forms", "verbalizers", "include_tables", "exclude_tables",
    "exclude_columns", "pii", "key_ratio", "seed",
)  # fmt: skip


def _parent_options(ctx: typer.Context, names: Sequence[str]) -> dict[str, Any]:
    """The options of ``names`` given to the parent command (``gen``) and not to this one."""
    parent = ctx.parent
    if parent is None:
        return {}

    def given(source: Any) -> bool:  # by name: typer may bring its own copy of click's enum
        return source is not None and getattr(source, "name", "") != "DEFAULT"

    out: dict[str, Any] = {}
    for name in names:
        if not given(ctx.get_parameter_source(name)) and given(parent.get_parameter_source(name)):
            out[name] = parent.params[name]
    return out


def _gen_db(
    db: str | None,
    demo: bool,
    seed: int,
    workdir: str,
    docs_out: Path | None,
    opts: GenOptions,
    *,
    out: Path | None,
) -> None:
    from groundwatch.app.generation import dry_run_templates, generate_dataset

    def note(message: str) -> None:
        console.print(message, markup=False)

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
        if opts.dry_run:
            with source_errors("--db" if db is not None else None):
                templates, texts = dry_run_templates(url, opts, demo=demo, note=note)
            _print_templates(templates, texts)
            if not opts.llm:
                _dry_run_summary(templates, texts, opts)
            return
        generate = functools.partial(
            generate_dataset,
            url,
            opts,
            out=out,
            source_option="--db" if db is not None else None,
            domain=domain,
            note=note,
        )
        if opts.llm:
            with console.status("asking the LLM for templates…"):
                made = generate()
        else:
            with _progress(opts.quiet) as progress:
                task = progress.add_task("templates", total=None)

                def on_plan(_schema: SchemaInfo, templates: list[SqlTemplate]) -> None:
                    progress.update(task, total=len(templates))

                def on_template(_t: SqlTemplate, _n: int) -> None:
                    progress.advance(task)

                made = generate(on_plan=on_plan, on_template=on_template)
    except GroundwatchError as e:
        fail(str(e), EXIT_USAGE)  # a source's errors name --db (source_errors)
    summary = made.result.summary
    if not made.groups:
        from groundwatch.core.generation.pipeline import why_empty

        console.print(summary_table(summary, opts.k))
        _print_examples(summary)
        fail(f"no semantic group generated: {why_empty(summary)}", EXIT_USAGE)
    if made.with_docs is not None:
        console.print(
            f"relevant documents from {opts.doc_ids}: {made.with_docs} of {len(made.groups)} groups"
        )
    if made.written is not None:
        console.print(f"wrote {made.written} semantic groups to {out}")
    if domain is not None:
        console.print(
            f"demo: {len(domain.omitted_facts)} facts omitted from the corpus, "
            f"{made.injected_gaps} groups rest on them (injected gaps)"
        )
    console.print(summary_table(summary, opts.k))
    _print_examples(summary)
    if opts.as_json:
        typer.echo(orjson.dumps(summary.as_dict(), default=str).decode())


def _print_examples(summary: StageSummary) -> None:
    """Every rejected template and a few dropped fills per reason, one line each."""
    for reason, items in sorted(summary.rejected_examples.items()):
        for ex in items:
            why = f" ({ex['reason']})" if ex.get("reason") else ""
            console.print(f"rejected template [{reason}]{why}: {ex.get('sql', '')}", markup=False)
    for reason, items in sorted(summary.dropped_examples.items()):
        for ex in items:
            console.print(
                f"dropped fill [{reason}]: {orjson.dumps(ex, default=str).decode()}",
                markup=False,
            )


def _dry_run_summary(
    templates: list[SqlTemplate], texts: dict[str, dict[str, list[str]]], opts: GenOptions
) -> None:
    """What a dry run found, on stderr; none usable for --forms is an error, not silence."""
    usable = [
        t
        for t in templates
        if all(len(set(texts.get(t.template_id, {}).get(c, []))) >= opts.k for c in opts.cohorts)
    ]
    console.print(
        f"{len(templates)} SQL templates, {len(usable)} with at least --forms {opts.k} text"
        f" templates in every cohort ({', '.join(opts.cohorts)}); no answer query was run"
    )
    if not templates:
        fail(
            "no SQL template could be made: no table has a column that names its rows and"
            " another column to ask about (or steering excluded them)",
            EXIT_USAGE,
        )
    if not usable:
        most = max(
            (
                min(len(set(texts.get(t.template_id, {}).get(c, []))) for c in opts.cohorts)
                for t in templates
            ),
            default=0,
        )
        fail(
            f"no SQL template has --forms {opts.k} text templates in every cohort (at most"
            f" {most}); use --forms {max(1, most)} or fewer",
            EXIT_USAGE,
        )


def _gen_grammar(
    directory: Path,
    cohorts: list[str],
    out: Path | None,
    dataset_id: str,
    dry_run: bool,
    as_json: bool = False,
    quiet: bool = False,
) -> None:
    try:
        with progress_bar("importing", enabled=interactive(quiet), total=len(cohorts)) as update:
            imported = import_grammar(directory, cohorts, dataset_id, on_step=update)
            update(len(cohorts), len(cohorts))
    except GroundwatchError as e:
        fail(str(e), EXIT_USAGE)  # one line, however long
    groups = imported.groups
    if dry_run:
        for sql in dict.fromkeys(g.sql for g in groups):
            typer.echo(sql)
    if out is not None and not dry_run:
        n = write_dataset(groups, out)
        console.print(f"wrote {n} semantic groups to {out}")
    counts: dict[str, Any] = {c: sum(len(g.forms_in(c)) for g in groups) for c in cohorts}
    console.print(f"imported {len(groups)} semantic groups; text queries per cohort: {counts}")
    for reason, n in sorted(imported.skipped.items()):
        if n:
            console.print(f"skipped QA entries [{reason}]: {n}", markup=False)
            for ex in imported.examples.get(reason, []):
                console.print(f"    {ex}", markup=False)
    if as_json:
        report = {
            "groups": len(groups),
            "text_queries": counts,
            "skipped": imported.skipped,
            "skipped_examples": imported.examples,
            "files": imported.files,
        }
        typer.echo(orjson.dumps(report).decode())


def _progress(quiet: bool) -> Progress:
    """The templates' progress with an ETA on a terminal; disabled under --quiet, CI or a pipe."""
    progress = make_progress()
    progress.disable = not interactive(quiet)
    return progress
