"""GRAMMAR-Gen, pure: SQL templates, text templates per cohort, fills with SQL answers, balancing.

The database side (reflection, read-only connections, running the grouped queries) lives in
:mod:`groundwatch.adapters.sources`; the LLM side in :mod:`groundwatch.core.generation.llm`.
"""

from groundwatch.core.generation.pipeline import (
    GenerationResult,
    GroupRecord,
    QueryPort,
    StageSummary,
    build_groups,
    iter_group_records,
    iter_groups,
    offline_text_templates,
)
from groundwatch.core.generation.realize import fill_text, realize
from groundwatch.core.generation.rules import RuleConfig, rule_templates
from groundwatch.core.generation.schema import ColumnInfo, ForeignKeyInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.sql_checks import Rejection, validate_sql
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.verbalizers import (
    DEFAULT_VERBALIZERS,
    Verbalizer,
    default_verbalizers,
    verbalizers_from_config,
)

__all__ = [
    "DEFAULT_VERBALIZERS",
    "ColumnInfo",
    "ForeignKeyInfo",
    "GenerationResult",
    "GroupRecord",
    "QueryPort",
    "Rejection",
    "RuleConfig",
    "SchemaInfo",
    "SqlTemplate",
    "StageSummary",
    "TableInfo",
    "Verbalizer",
    "build_groups",
    "default_verbalizers",
    "fill_text",
    "iter_group_records",
    "iter_groups",
    "offline_text_templates",
    "realize",
    "rule_templates",
    "validate_sql",
    "verbalizers_from_config",
]
