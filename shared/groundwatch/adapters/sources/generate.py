"""GRAMMAR-Gen's offline path against a real database: the wiring of core and adapters.

``generate_groups(url)`` opens the database read-only, introspects it, proposes rule-based SQL
templates, realizes text templates per cohort, and runs one grouped query per template inside a
single read-only transaction (a consistent snapshot for every answer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from sqlalchemy import Connection

from groundwatch.adapters.sources.connect import readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.pipeline import (
    GenerationResult,
    StageSummary,
    TextTemplates,
    build_groups,
    iter_groups,
    offline_text_templates,
)
from groundwatch.core.generation.rules import RuleConfig, rule_templates
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.verbalizers import Verbalizer, default_verbalizers
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
) -> GenerationResult:
    """Semantic groups with SQL truth from the database at ``engine_url`` (opened read-only).

    ``templates``/``text_templates`` override the rule generator and the realizer (e.g. with LLM
    or imported ones). ``on_plan`` sees the schema and templates before any answer query runs.
    """
    engine = readonly_engine(engine_url)
    try:
        with engine.connect() as conn, conn.begin():
            schema = introspect(conn)
            tpls = list(templates) if templates is not None else rule_templates(schema, rule_config)
            texts = (
                text_templates
                if text_templates is not None
                else offline_text_templates(tpls, verbalizers or default_verbalizers(), cohorts)
            )
            if on_plan:
                on_plan(schema, tpls)
            return build_groups(
                SqlAlchemyPort(conn),
                schema,
                tpls,
                texts,
                k=k,
                cohorts=cohorts,
                dataset_id=dataset_id,
                on_template=on_template,
            )
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
        SqlAlchemyPort(conn),
        schema,
        templates,
        text_templates,
        k=k,
        cohorts=cohorts,
        dataset_id=dataset_id,
        summary=summary,
    )
