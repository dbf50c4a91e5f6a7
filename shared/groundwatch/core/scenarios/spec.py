"""RAGProbe's evaluation-scenario schema (§3.1), as pydantic models a YAML file fills in.

A scenario has the paper's six constructs — document sampling, chunking, chunk sampling, a
scenario-specific prompt, a prompting strategy and the acceptable evaluation metrics — plus two
things this project needs: the shape of the expected answer (``answer``: what the generated
outputs are validated as) and a ``grounded`` block saying how the same scenario is built from a
database with SQL truth instead of an LLM. A user adds a scenario by writing one more YAML file;
the shipped S1–S6 are such files (``groundwatch/scenario_specs/*.yaml``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from groundwatch.core.ragprobe_metrics import (
    ANSWERABLE_METRICS,
    UNANSWERABLE_METRICS,
    RagProbeMetric,
)
from groundwatch.errors import ConfigError
from groundwatch.pydantic_errors import validation_line

#: The package directory holding the shipped scenario files.


class AnswerShape(StrEnum):
    """What a scenario's expected answer is, and so how generated items are validated."""

    NUMBER = "number"
    DATETIME = "datetime"
    TEXT = "text"
    MULTIPLE_CHOICE = "multiple_choice"
    MULTI_PART = "multi_part"
    UNANSWERABLE = "unanswerable"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DocumentSampling(_Strict):
    """Which documents questions are made from: ``random`` N of them, or ``iterative`` (all)."""

    strategy: Literal["random", "iterative"] = "random"
    n: int = Field(10, ge=1, description="Documents drawn by the random strategy.")


class Chunking(_Strict):
    """A character text splitter: split on ``separator``, merge pieces up to ``chunk_size``
    characters, carry ``chunk_overlap`` characters over into the next chunk."""

    strategy: Literal["character"] = "character"
    separator: str = "\n"
    chunk_size: int = Field(3000, ge=1)
    chunk_overlap: int = Field(150, ge=0)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Chunking:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return self


class ChunkSampling(_Strict):
    """Which chunks a question is made from.

    ``strategy``: ``random`` (``per_document`` chunks of each sampled document) or ``iterative``
    (every chunk). ``filter``: keep only chunks that contain a number or a date/time.
    ``combine``: ``single`` (one chunk per question), ``same_document`` (``count`` chunks of one
    document, RAGProbe S4) or ``across_documents`` (``count`` chunks of different documents, S5).
    """

    strategy: Literal["random", "iterative"] = "random"
    per_document: int = Field(1, ge=1)
    filter: Literal["none", "number", "datetime"] = "none"
    combine: Literal["single", "same_document", "across_documents"] = "single"
    count: int = Field(1, ge=1, le=10)

    @model_validator(mode="after")
    def _count_fits_combine(self) -> ChunkSampling:
        if self.combine == "single" and self.count != 1:
            raise ValueError("combine 'single' takes count 1")
        if self.combine != "single" and self.count < 2:
            raise ValueError(f"combine {self.combine!r} needs count >= 2")
        return self


class PromptStep(_Strict):
    """One prompt. ``user`` may use ``{context}``, ``{examples}``, ``{count}``, ``{options}`` and,
    in the later steps of a sequential strategy, ``{question}`` and ``{passages}``."""

    system: str = ""
    user: str


class Example(_Strict):
    """A worked example shown to the model: a context and the JSON it should answer with."""

    context: str
    output: dict[str, Any]


class Prompting(_Strict):
    """The prompting strategy: one-shot (one example), three-shot (three) or sequential (a
    generating step, then steps that get the previous result in their context)."""

    strategy: Literal["one_shot", "three_shot", "sequential"]
    steps: tuple[PromptStep, ...] = Field(min_length=1)
    examples: tuple[Example, ...] = ()

    @model_validator(mode="after")
    def _shape(self) -> Prompting:
        want = {"one_shot": 1, "three_shot": 3}.get(self.strategy)
        if want is not None and len(self.examples) != want:
            raise ValueError(f"{self.strategy} needs exactly {want} example(s)")
        if self.strategy == "sequential" and len(self.steps) < 2:
            raise ValueError("sequential needs at least two steps")
        if self.strategy != "sequential" and len(self.steps) != 1:
            raise ValueError(f"{self.strategy} takes exactly one step")
        return self


class GroundedKind(StrEnum):
    """How a scenario is built from a database with SQL truth (no LLM)."""

    NUMBER = "number"
    DATE = "date"
    TEXT = "text"
    MULTIPLE_CHOICE = "multiple_choice"
    MULTI_SAME_ENTITY = "multi_same_entity"
    MULTI_CROSS_ENTITY = "multi_cross_entity"
    ABSENT_ENTITY = "absent_entity"


class Grounded(_Strict):
    """The SQL-truth variant: ``kind``, the number of ``options`` (multiple choice) and the
    number of ``parts`` combined into one question (2–3 in RAGProbe's S4/S5)."""

    kind: GroundedKind
    options: int = Field(4, ge=2, le=8)
    parts: tuple[int, int] = (2, 3)

    @model_validator(mode="after")
    def _parts(self) -> Grounded:
        lo, hi = self.parts
        if not 2 <= lo <= hi <= 5:
            raise ValueError("parts must be (min, max) with 2 <= min <= max <= 5")
        return self


_SHAPE_FOR_KIND = {
    GroundedKind.NUMBER: {AnswerShape.NUMBER},
    GroundedKind.DATE: {AnswerShape.DATETIME},
    GroundedKind.TEXT: {AnswerShape.TEXT},
    GroundedKind.MULTIPLE_CHOICE: {AnswerShape.MULTIPLE_CHOICE},
    GroundedKind.MULTI_SAME_ENTITY: {AnswerShape.MULTI_PART},
    GroundedKind.MULTI_CROSS_ENTITY: {AnswerShape.MULTI_PART},
    GroundedKind.ABSENT_ENTITY: {AnswerShape.UNANSWERABLE},
}


class ScenarioSpec(_Strict):
    """One evaluation scenario (RAGProbe §3.1) with its answer shape and grounded variant."""

    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$", description="e.g. S1")
    name: str
    description: str = ""
    answer: AnswerShape
    cohort: str | None = Field(None, description="Cohort of the text forms; default: the id.")
    max_items: int = Field(30, ge=1, description="Items generated per run (RAGProbe: 30).")
    document_sampling: DocumentSampling = DocumentSampling()
    chunking: Chunking = Chunking()
    chunk_sampling: ChunkSampling = ChunkSampling()
    prompting: Prompting
    acceptable_metrics: tuple[RagProbeMetric, ...] = Field(min_length=1)
    grounded: Grounded | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ScenarioSpec:
        allowed = (
            UNANSWERABLE_METRICS if self.answer is AnswerShape.UNANSWERABLE else ANSWERABLE_METRICS
        )
        wrong = [m.value for m in self.acceptable_metrics if m not in allowed]
        if wrong:
            # the metrics are defined for answerable or unanswerable expectations, not both
            raise ValueError(
                f"metrics {wrong} do not apply to answer {self.answer.value!r}; "
                f"choose from {[m.value for m in allowed]}"
            )
        multi = self.chunk_sampling.combine != "single"
        if multi != (self.answer is AnswerShape.MULTI_PART):
            raise ValueError("multi_part answers go with combined chunks, and only they")
        if self.grounded is not None and self.answer not in _SHAPE_FOR_KIND[self.grounded.kind]:
            raise ValueError(
                f"grounded kind {self.grounded.kind.value!r} does not give {self.answer.value!r}"
            )
        return self

    @property
    def form_cohort(self) -> str:
        return self.cohort or self.id


def parse_scenario(data: Any, source: str = "<scenario>") -> ScenarioSpec:
    """A scenario from parsed YAML/JSON; :class:`ConfigError` names the file and the field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a scenario must be a mapping, got {type(data).__name__}")
    try:
        return ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {validation_line(exc, ScenarioSpec)}") from exc
