"""RAGProbe evaluation scenarios: the schema (loadable from YAML), chunking and sampling, the
checks generated items must pass, the grounded variants with SQL truth, and the validity report.

The LLM path (items from a corpus through a chat model) is
:mod:`groundwatch.core.scenarios.generate`; the database wiring of the grounded variants is
:mod:`groundwatch.adapters.sources.scenarios`."""

from groundwatch.core.scenarios.chunking import Chunk, chunk_corpus, sample_contexts, split_text
from groundwatch.core.scenarios.grounded import GroundedBuilder, GroundedSource
from groundwatch.core.scenarios.item_checks import Drop, extract_json_object, supported
from groundwatch.core.scenarios.items import (
    EXPECTED_REFUSAL,
    ScenarioRun,
    combine_sql,
    scenario_group,
    scenario_group_id,
)
from groundwatch.core.scenarios.scenario_judge import scenario_metrics, scenario_verdict
from groundwatch.core.scenarios.spec import (
    AnswerShape,
    GroundedKind,
    ScenarioSpec,
    parse_scenario,
)
from groundwatch.core.scenarios.validity import scenario_report, validity

__all__ = [
    "EXPECTED_REFUSAL",
    "AnswerShape",
    "Chunk",
    "Drop",
    "GroundedBuilder",
    "GroundedKind",
    "GroundedSource",
    "ScenarioRun",
    "ScenarioSpec",
    "chunk_corpus",
    "combine_sql",
    "extract_json_object",
    "parse_scenario",
    "sample_contexts",
    "scenario_group",
    "scenario_group_id",
    "scenario_metrics",
    "scenario_report",
    "scenario_verdict",
    "split_text",
    "supported",
    "validity",
]
