"""GRAMMAR-Gen against a real database: the wiring of core and adapters.

``generate_groups(url)`` opens the database read-only, introspects it, proposes rule-based SQL
templates, realizes text templates per cohort, and runs one grouped query per template inside a
single read-only transaction (a consistent snapshot for every answer). ``generate_groups_llm``
is the LLM path: the model writes the SQL and text templates
(:mod:`groundwatch.core.generation.llm`), the same grouped queries answer them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence

from sqlalchemy import Connection

from groundwatch.adapters.lexicon import wordnet
from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.llm import LlmSqlResult, llm_sql_templates, llm_text_templates
from groundwatch.core.generation.pipeline import (
    GenerationResult,
    GroupRecord,
    StageSummary,
    TextTemplates,
    build_groups,
    iter_group_records,
    iter_groups,
    offline_text_templates,
)
from groundwatch.core.generation.rules import RuleConfig, rule_templates
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.steering import Steering
from groundwatch.core.generation.template_file import TemplateSet
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.verbalizers import Verbalizer, default_verbalizers
from groundwatch.core.llm import ChatModel
from groundwatch.core.model import SemanticGroup


def offline_templates(schema: SchemaInfo, config: RuleConfig | None = None) -> list[SqlTemplate]:
    """Rule-based SQL templates for an introspected schema."""
    return rule_templates(schema, config)


def generate_groups(
    engine_url: str,
    *,
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    dataset_id: str = "default",
    templates: Sequence[SqlTemplate] | None = None,
    text_templates: TextTemplates | None = None,
    verbalizers: Mapping[str, Verbalizer] | None = None,
    rule_config: RuleConfig | None = None,
    on_template: Callable[[SqlTemplate, int], None] | None = None,
    on_plan: Callable[[SchemaInfo, list[SqlTemplate]], None] | None = None,
    steering: Steering | None = None,
    list_answers: bool = False,
    load_templates: Callable[[SchemaInfo], TemplateSet] | None = None,
    allow_unverified: bool = False,
    policy: SourcePolicy | None = None,
) -> GenerationResult:
    """Semantic groups with SQL truth from the database at ``engine_url`` (opened read-only).

    ``templates``/``text_templates`` override the rule generator and the realizer (e.g. with LLM
    or imported ones); ``load_templates`` builds them from the introspected schema instead (a
    template file, validated against it), and what it rejected is counted in the summary.
    ``on_plan`` sees the schema and templates before any answer query runs. ``steering`` keeps
    tables and columns out of generation; ``list_answers`` keeps fills with several answers as
    list answers (see :func:`~groundwatch.core.generation.pipeline.iter_groups`).
    ``allow_unverified`` accepts a backend whose read-only mode cannot be checked
    (:func:`~groundwatch.adapters.sources.connect.readonly_engine`); ``policy`` sets the
    statement timeout and whether a privileged login is accepted.
    """
    cfg = rule_config or RuleConfig()
    engine = readonly_engine(engine_url, allow_unverified=allow_unverified, policy=policy)
    try:
        with engine.connect() as conn, conn.begin():
            schema = introspect(conn, steering=steering, key_ratio=cfg.key_ratio)
            loaded = load_templates(schema) if load_templates is not None else None
            if loaded is not None:
                tpls = list(loaded.templates)
                text_templates = loaded.text_templates
            else:
                tpls = list(templates) if templates is not None else rule_templates(schema, cfg)
            texts = {tid: dict(v) for tid, v in (text_templates or {}).items()}
            missing = [
                t for t in tpls if any(c not in texts.get(t.template_id, {}) for c in cohorts)
            ]
            if missing:
                realized = offline_text_templates(
                    missing, verbalizers or default_verbalizers(), cohorts, schema, wordnet()
                )
                for tid, per_cohort in realized.items():
                    have = texts.setdefault(tid, {})
                    for c, items in per_cohort.items():
                        have.setdefault(c, items)
            if on_plan:
                on_plan(schema, tpls)
            result = build_groups(
                SqlAlchemyPort(conn, schema),
                schema,
                tpls,
                texts,
                k=k,
                cohorts=cohorts,
                dataset_id=dataset_id,
                on_template=on_template,
                list_answers=list_answers,
            )
            result.summary.source_tables = len(schema.tables)
            result.summary.source_rows = sum(t.rows for t in schema.tables)
            if loaded is not None:
                s = result.summary
                s.sql_templates_proposed += len(loaded.rejected)
                for r in loaded.rejected:
                    s.reject(r.code, {"sql": r.sql, "reason": r.detail})
            return result
    finally:
        engine.dispose()


def stream_groups(
    conn: Connection,
    schema: SchemaInfo,
    templates: Sequence[SqlTemplate],
    text_templates: TextTemplates,
    *,
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    dataset_id: str = "default",
    summary: StageSummary | None = None,
) -> Iterator[SemanticGroup]:
    """Groups one at a time over an open (read-only) connection: for outputs too big to hold."""
    return iter_groups(
        SqlAlchemyPort(conn, schema),
        schema,
        templates,
        text_templates,
        k=k,
        cohorts=cohorts,
        dataset_id=dataset_id,
        summary=summary,
    )


def stream_group_records(
    conn: Connection,
    schema: SchemaInfo,
    templates: Sequence[SqlTemplate],
    text_templates: TextTemplates,
    *,
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    dataset_id: str = "default",
    summary: StageSummary | None = None,
) -> Iterator[GroupRecord]:
    """:func:`stream_groups` as JSON-ready records, for writing a file straight away
    (:func:`~groundwatch.adapters.db.datasets.write_group_records`): the same lines, no model
    validated and serialized again per group."""
    return iter_group_records(
        SqlAlchemyPort(conn, schema),
        schema,
        templates,
        text_templates,
        k=k,
        cohorts=cohorts,
        dataset_id=dataset_id,
        summary=summary,
    )


async def generate_groups_llm(
    engine_url: str,
    client: ChatModel,
    *,
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    dataset_id: str = "default",
    num_generations: int | None = None,
    verbalizers: Mapping[str, Verbalizer] | None = None,
    sql_templates: Sequence[SqlTemplate] | None = None,
    steering: Steering | None = None,
    list_answers: bool = False,
    policy: SourcePolicy | None = None,
) -> GenerationResult:
    """The LLM path end to end: schema → model SQL templates (validated) → model text templates →
    groups from one grouped query per template (via
    :func:`generate_groups`); the prompts and their checks are
    :mod:`groundwatch.core.generation.llm`'s.

    ``sql_templates`` skips the SQL step (e.g. rule-based templates with LLM text templates).
    ``steering`` keeps tables and columns out of the schema the model sees and of the answers;
    ``policy`` is how the source is opened (statement timeout, privileged logins).
    """
    engine = readonly_engine(engine_url, policy=policy)
    try:
        with engine.connect() as conn, conn.begin():
            schema = introspect(conn, steering=steering)
    finally:
        engine.dispose()
    sql_result = LlmSqlResult(templates=list(sql_templates or []))
    if sql_templates is None:
        sql_result = await llm_sql_templates(client, schema)
    texts, text_rejected = await llm_text_templates(
        client,
        sql_result.templates,
        cohorts,
        verbalizers=verbalizers,
        num_generations=num_generations or max(k, 3),
    )
    result = await asyncio.to_thread(
        generate_groups,
        engine_url,
        k=k,
        cohorts=cohorts,
        dataset_id=dataset_id,
        templates=sql_result.templates,
        text_templates=texts,
        steering=steering,
        list_answers=list_answers,
        policy=policy,
    )
    s = result.summary
    s.sql_templates_proposed += sql_result.proposed - len(sql_result.templates)
    s.rejected_templates.update(sql_result.rejected)
    s.rejected_templates.update({f"text_{k_}": v for k_, v in text_rejected.items()})
    return result
