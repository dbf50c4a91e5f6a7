"""The evaluation-scenario schema (RAGProbe §3.1): the shipped S1–S6 are YAML files that load,
a user adds a scenario by writing one, and a wrong one is refused naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from groundwatch.adapters.scenario_files import builtin_scenarios, load_scenarios, select_scenarios
from groundwatch.core.ragprobe_metrics import SCENARIO_METRICS
from groundwatch.core.scenarios.spec import AnswerShape, GroundedKind, parse_scenario
from groundwatch.errors import ConfigError

pytestmark = pytest.mark.unit

SHIPPED = Path(__file__).resolve().parents[2] / "shared" / "groundwatch" / "scenario_specs"


def test_shipped_scenarios_are_yaml_files_with_ragprobe_constructs() -> None:
    files = sorted(p.stem for p in SHIPPED.glob("*.yaml"))
    assert files == ["S1", "S2", "S3", "S4", "S5", "S6"]
    specs = builtin_scenarios()
    assert sorted(specs) == files
    shapes = {s: specs[s].answer for s in specs}
    assert shapes == {
        "S1": AnswerShape.NUMBER,
        "S2": AnswerShape.DATETIME,
        "S3": AnswerShape.MULTIPLE_CHOICE,
        "S4": AnswerShape.MULTI_PART,
        "S5": AnswerShape.MULTI_PART,
        "S6": AnswerShape.UNANSWERABLE,
    }
    # the paper's constructs, as §3.2 lists them per scenario
    assert specs["S1"].chunk_sampling.filter == "number"
    assert specs["S2"].chunk_sampling.filter == "datetime"
    assert specs["S3"].prompting.strategy == "three_shot"
    assert len(specs["S3"].prompting.examples) == 3
    assert specs["S4"].chunk_sampling.combine == "same_document"
    assert specs["S5"].chunk_sampling.combine == "across_documents"
    assert specs["S6"].prompting.strategy == "sequential"
    assert specs["S6"].chunk_sampling.strategy == "iterative"
    for s in specs.values():
        assert s.chunking.chunk_size == 3000 and s.chunking.chunk_overlap == 150
        assert s.chunking.separator == "\n"
        assert s.document_sampling.strategy == "random" and s.document_sampling.n == 10
        assert s.grounded is not None


def test_shipped_acceptable_metrics_are_the_judges_metric_sets() -> None:
    for sid, spec in builtin_scenarios().items():
        assert spec.acceptable_metrics == SCENARIO_METRICS[sid], sid


def _spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "S7",
        "name": "Percentages",
        "answer": "number",
        "prompting": {
            "strategy": "one_shot",
            "examples": [
                {"context": "Turnout was 64%.", "output": {"question": "q", "answer": "64%"}}
            ],
            "steps": [{"user": "Passage: {context}"}],
        },
        "acceptable_metrics": ["correctness", "completeness"],
        "grounded": {"kind": "number"},
    }
    base.update(over)
    return base


def test_a_user_scenario_is_one_more_yaml_file(tmp_path: Path) -> None:
    (tmp_path / "s7.yaml").write_text(yaml.safe_dump(_spec()))
    extra = load_scenarios([tmp_path])
    assert list(extra) == ["S7"]
    available = {**builtin_scenarios(), **extra}
    chosen = select_scenarios("S7,S1", available)
    assert [s.id for s in chosen] == ["S7", "S1"]
    assert chosen[0].form_cohort == "S7" and chosen[0].max_items == 30
    assert [s.id for s in select_scenarios("all", available)][-1] == "S7"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"answer": "unanswerable"}, "metrics"),  # correctness does not apply to S6-like items
        ({"acceptable_metrics": ["explicitness"]}, "metrics"),
        ({"prompting": {"strategy": "three_shot", "steps": [{"user": "x"}]}}, "3 example"),
        ({"prompting": {"strategy": "sequential", "steps": [{"user": "x"}]}}, "two steps"),
        ({"chunking": {"chunk_size": 100, "chunk_overlap": 100}}, "chunk_overlap"),
        ({"chunk_sampling": {"combine": "across_documents", "count": 1}}, "count"),
        ({"grounded": {"kind": "absent_entity"}}, "grounded kind"),
        ({"typo_field": 1}, "typo_field"),
        ({"id": "has space"}, "id"),
    ],
)
def test_invalid_scenarios_are_refused_naming_the_problem(
    change: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError, match=field):
        parse_scenario(_spec(**change), "s7.yaml")


def test_duplicate_ids_and_unknown_selections_are_errors(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(_spec()))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(_spec()))
    with pytest.raises(ConfigError, match="defined twice"):
        load_scenarios([tmp_path])
    with pytest.raises(ConfigError, match="unknown scenarios"):
        select_scenarios("S1,S9")
    (tmp_path / "bad.yml").write_text("id: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_scenarios([tmp_path / "bad.yml"])


def test_grounded_kinds_cover_the_six_scenarios() -> None:
    kinds = {s: spec.grounded.kind for s, spec in builtin_scenarios().items() if spec.grounded}
    assert kinds == {
        "S1": GroundedKind.NUMBER,
        "S2": GroundedKind.DATE,
        "S3": GroundedKind.MULTIPLE_CHOICE,
        "S4": GroundedKind.MULTI_SAME_ENTITY,
        "S5": GroundedKind.MULTI_CROSS_ENTITY,
        "S6": GroundedKind.ABSENT_ENTITY,
    }
