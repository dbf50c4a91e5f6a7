"""Generating a dataset (GRAMMAR-Gen): semantic groups with SQL truth from a source database —
by the rules or the LLM, from edited templates or not — the templates alone (``gen templates``,
``--dry-run``), the relevant documents of each group, and the import of GRAMMAR's own output.

``groundwatch gen`` parses its options into :class:`GenOptions`, calls these and prints what they
return; notes the person should see as they happen (a rejected template) go through ``note``.
A source that cannot be read is a :class:`~groundwatch.errors.ConfigError` naming ``--db``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from groundwatch.errors import ConfigError

if TYPE_CHECKING:
    from groundwatch.adapters.db.datasets import GrammarImport
    from groundwatch.adapters.sources.connect import SourcePolicy
    from groundwatch.core.generation.pipeline import GenerationResult
    from groundwatch.core.generation.rules import RuleConfig
    from groundwatch.core.generation.schema import SchemaInfo
    from groundwatch.core.generation.steering import Steering
    from groundwatch.core.generation.template_file import TemplateSet
    from groundwatch.core.generation.templates import SqlTemplate
    from groundwatch.core.generation.verbalizers import Verbalizer
    from groundwatch.core.model import SemanticGroup
    from groundwatch.demo.domain import DemoDomain

Note = Callable[[str], None]
#: SQL templates and, per template id, its text templates per cohort.
Templates = tuple[list["SqlTemplate"], dict[str, dict[str, list[str]]]]


@dataclass(slots=True)
class GenOptions:
    """What ``gen`` and ``gen templates`` were asked for, past the source."""

    llm: bool = False
    k: int = 3
    cohorts: list[str] = field(default_factory=lambda: ["short", "long"])
    dataset_id: str = "default"
    verbalizers: dict[str, Verbalizer] = field(default_factory=dict)
    dry_run: bool = False
    steering: Steering | None = None
    key_ratio: float | None = None
    list_answers: bool = False
    templates: Path | None = None
    as_json: bool = False
    doc_ids: Path | None = None
    allow_unverified: bool = False
    quiet: bool = False
    allow_privileged: bool = False
    source_timeout_s: float = 60.0

    def policy(self) -> SourcePolicy:
        """How the source database is opened (``--source-timeout``,
        ``--allow-privileged-source``)."""
        from groundwatch.adapters.sources.connect import SourcePolicy

        return SourcePolicy(self.source_timeout_s, self.allow_privileged)

    def rules(self, demo: bool) -> RuleConfig:
        from groundwatch.core.generation.rules import RuleConfig
        from groundwatch.demo.domain import DEMO_RULES

        base = DEMO_RULES if demo else RuleConfig()
        return base if self.key_ratio is None else replace(base, key_ratio=self.key_ratio)


def check_source_url(url: str, option: str = "--db") -> None:
    """A URL SQLAlchemy cannot open is a ConfigError naming ``option``, before any work."""
    from groundwatch.adapters.db.engine import check_database_url

    check_database_url(url, option)


@contextlib.contextmanager
def source_errors(source_option: str | None = "--db") -> Iterator[None]:
    """A database error while reading the source becomes one ConfigError naming ``--db``, and
    a ConfigError about the source names ``source_option`` (unless it names its own option
    already: ``--templates``, ``--verbalizers``…)."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except ConfigError as exc:
        if source_option is None or str(exc).startswith("--"):
            raise
        raise ConfigError(f"{source_option}: {exc}") from None
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None) or exc
        lines = [ln.strip() for ln in str(orig).splitlines() if ln.strip()]
        detail = next(
            (ln for ln in lines if "refused" in ln or "does not exist" in ln),
            lines[0] if lines else "",
        )
        raise ConfigError(
            f"--db: cannot read the source database ({type(orig).__name__}: {detail[:300]})"
        ) from None


def introspect_source(url: str, opts: GenOptions, demo: bool) -> SchemaInfo:
    """The source's schema (steered), read on a read-only connection."""
    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.adapters.sources.introspect import introspect

    engine = readonly_engine(url, allow_unverified=opts.allow_unverified, policy=opts.policy())
    try:
        with engine.connect() as conn, conn.begin():
            return introspect(conn, steering=opts.steering, key_ratio=opts.rules(demo).key_ratio)
    finally:
        engine.dispose()


def offline_texts(
    templates: Sequence[SqlTemplate], opts: GenOptions, schema: SchemaInfo
) -> dict[str, dict[str, list[str]]]:
    """Text templates per cohort from the verbalizers and WordNet (no LLM)."""
    from groundwatch.adapters.lexicon import wordnet
    from groundwatch.core.generation.pipeline import offline_text_templates

    return offline_text_templates(
        list(templates), opts.verbalizers, opts.cohorts, schema, wordnet()
    )


def write_templates(url: str, out: Path, opts: GenOptions, *, demo: bool) -> int:
    """The source's SQL and text templates written as YAML to edit; how many SQL templates."""
    from groundwatch.adapters.template_files import dump_templates
    from groundwatch.core.generation.rules import rule_templates

    schema = introspect_source(url, opts, demo)
    if opts.llm:
        templates, texts = asyncio.run(llm_templates(schema, opts))
    else:
        templates = rule_templates(schema, opts.rules(demo))
        texts = offline_texts(templates, opts, schema)
    out.write_text(dump_templates(templates, texts, dialect=schema.dialect), encoding="utf-8")
    return len(templates)


async def llm_templates(schema: SchemaInfo, opts: GenOptions) -> Templates:
    """SQL and text templates the LLM ``GW_LLM_*`` configures proposes for ``schema``."""
    from groundwatch.app.bootstrap import llm_client
    from groundwatch.core.generation.llm import llm_sql_templates, llm_text_templates

    client = llm_client("gen --llm")
    try:
        sql = await llm_sql_templates(client, schema)
        texts, _ = await llm_text_templates(
            client,
            sql.templates,
            opts.cohorts,
            verbalizers=opts.verbalizers,
            num_generations=max(opts.k, 3),
        )
        return sql.templates, texts
    finally:
        await client.aclose()


def template_loader(opts: GenOptions, note: Note) -> Callable[[SchemaInfo], TemplateSet] | None:
    """The loader of ``--templates`` (each rejected template noted), or None without it."""
    if opts.templates is None:
        return None
    from groundwatch.adapters.template_files import read_template_file
    from groundwatch.core.generation.template_file import load_templates

    entries = read_template_file(opts.templates)

    def load(schema: SchemaInfo) -> TemplateSet:
        loaded = load_templates(entries, schema)
        for r in loaded.rejected:
            note(f"rejected {r.line()}")
        if loaded.rejected_texts:
            note(
                f"{loaded.rejected_texts} text templates dropped: their placeholders do not "
                "match their SQL template's"
            )
        if not loaded.templates:
            raise ConfigError(f"{opts.templates}: no valid template left")
        return loaded

    return load


def dry_run_templates(url: str, opts: GenOptions, *, demo: bool, note: Note) -> Templates:
    """The templates a generation would use, without running an answer query."""
    if opts.llm:
        schema = introspect_source(url, opts, False)
        return asyncio.run(llm_templates(schema, opts))
    from groundwatch.core.generation.rules import rule_templates

    schema = introspect_source(url, opts, demo)
    load = template_loader(opts, note)
    if load is None:
        templates = rule_templates(schema, opts.rules(demo))
        return templates, offline_texts(templates, opts, schema)
    loaded = load(schema)
    templates, texts = loaded.templates, dict(loaded.text_templates)
    missing = [t for t in templates if t.template_id not in texts]
    texts.update(offline_texts(missing, opts, schema))
    return templates, texts


def generate(
    url: str,
    opts: GenOptions,
    *,
    demo: bool,
    note: Note,
    on_plan: Callable[[SchemaInfo, list[SqlTemplate]], None] | None = None,
    on_template: Callable[[SqlTemplate, int], None] | None = None,
) -> GenerationResult:
    """Semantic groups with their SQL answers from the source at ``url``: the rules' templates
    (or ``--templates``), or the LLM's with ``opts.llm``."""
    if opts.llm:
        return asyncio.run(generate_llm(url, opts))
    from groundwatch.adapters.sources.generate import generate_groups

    return generate_groups(
        url,
        k=opts.k,
        cohorts=opts.cohorts,
        dataset_id=opts.dataset_id,
        verbalizers=opts.verbalizers,
        rule_config=opts.rules(demo),
        steering=opts.steering,
        list_answers=opts.list_answers,
        load_templates=template_loader(opts, note),
        on_template=on_template,
        on_plan=on_plan,
        allow_unverified=opts.allow_unverified,
        policy=opts.policy(),
    )


async def generate_llm(url: str, opts: GenOptions) -> GenerationResult:
    """Groups from the templates the LLM proposes (``gen --llm``)."""
    from groundwatch.adapters.sources.generate import generate_groups_llm
    from groundwatch.app.bootstrap import llm_client

    client = llm_client("gen --llm")
    try:
        return await generate_groups_llm(
            url,
            client,
            k=opts.k,
            cohorts=opts.cohorts,
            dataset_id=opts.dataset_id,
            verbalizers=opts.verbalizers,
            steering=opts.steering,
            list_answers=opts.list_answers,
            policy=opts.policy(),
        )
    finally:
        await client.aclose()


def with_doc_ids(
    url: str, groups: list[SemanticGroup], doc_ids: Path, opts: GenOptions
) -> list[SemanticGroup]:
    """Each group's relevant documents: those of the rows its answer reads (``--doc-ids``)."""
    from groundwatch.adapters.sources.doc_ids import annotate_doc_ids, read_doc_id_map

    return annotate_doc_ids(url, groups, read_doc_id_map(doc_ids), policy=opts.policy())


def import_grammar(
    directory: Path,
    cohorts: list[str],
    dataset_id: str,
    on_step: Callable[[int, int], None] | None = None,
) -> GrammarImport:
    """GRAMMAR's own output (flat files or the repository's folders) as semantic groups."""
    from groundwatch.adapters.db.datasets import read_grammar_dir

    return read_grammar_dir(directory, cohorts, dataset_id=dataset_id, on_step=on_step)


@dataclass
class Generated:
    """What a generation made: the result (its stage summary), the groups (none: the summary
    says why), how many were written, how many got relevant documents (``--doc-ids``) and, for
    the demo, how many rest on the facts it left out of the corpus (the injected gaps)."""

    result: GenerationResult
    groups: list[SemanticGroup]
    written: int | None = None
    with_docs: int | None = None
    injected_gaps: int | None = None


def generate_dataset(
    url: str,
    opts: GenOptions,
    *,
    out: Path | None,
    source_option: str | None = "--db",
    domain: DemoDomain | None = None,
    note: Note,
    on_plan: Callable[[SchemaInfo, list[SqlTemplate]], None] | None = None,
    on_template: Callable[[SqlTemplate, int], None] | None = None,
) -> Generated:
    """A dataset from the source at ``url``: the groups generated (:func:`generate`), the demo
    domain's annotations when it is the demo's, each group's relevant documents with
    ``opts.doc_ids``, written to ``out`` as JSONL. A ConfigError about the source names
    ``source_option`` (unless it names its own option already: ``--templates``…)."""
    with source_errors(source_option):
        result = generate(
            url, opts, demo=domain is not None, note=note, on_plan=on_plan,
            on_template=on_template,
        )  # fmt: skip
    groups = domain.annotate(result.groups) if domain is not None else result.groups
    if not groups:
        return Generated(result, [])
    with_docs = None
    if opts.doc_ids is not None:
        groups = with_doc_ids(url, groups, opts.doc_ids, opts)
        with_docs = sum(1 for g in groups if g.relevant_doc_ids)
    written = None
    if out is not None:
        from groundwatch.adapters.db.datasets import write_jsonl

        written = write_jsonl(groups, out)
    injected = len(domain.injected_gap_group_ids(groups)) if domain is not None else None
    return Generated(result, groups, written, with_docs, injected)
