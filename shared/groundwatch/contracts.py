"""Every topic's message contract, in one place.

The handler's typed signature is the contract: services parse raw bytes into these models where
messages arrive (the consumer adapter) and hand typed objects to the domain. Each model forbids
extra fields and carries ``schema_version`` so that a producer on a newer schema is detected at the
edge (and dead-lettered) instead of being half-understood.

Message key on every topic is ``group_id``: all text forms of a semantic group share a partition,
so the analytics instance owning the partition owns the group's state.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from groundwatch.core.model import Expected, Verdict
from groundwatch.errors import PoisonMessage

#: Version 2 added the monitoring series and cycle of every probe; version-1 messages are still
#: read (they belong to no series: cycle 0).
SCHEMA_VERSION: Literal[2] = 2

#: Text fields are capped so that one oversize reply cannot blow up a partition or the store.
MAX_TEXT = 20_000
MAX_CONTEXTS = 50

Text = Annotated[str, Field(max_length=MAX_TEXT)]


def utcnow() -> datetime:
    return datetime.now(UTC)


class TargetStatus(StrEnum):
    """Whether the target produced an answer at all; an error is never judged as wrong."""

    OK = "ok"
    ERROR = "error"


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1, 2] = Field(SCHEMA_VERSION, description="Contract version.")

    def to_bytes(self) -> bytes:
        # pydantic's own JSON serializer straight to bytes: the same output as dumping
        # ``model_dump(mode="json")`` with orjson, without building the intermediate dict.
        return self.__pydantic_serializer__.to_json(self)


class _ProbeKeyed(_Contract):
    """Fields every probe-derived message carries, so each stage is stateless."""

    probe_id: uuid.UUID = Field(description="Unique per asked text form per run.")
    run_id: str = Field(description="Probing cycle (batch run or continuous window).")
    series: str = Field(
        "", description="Monitoring series the cycle belongs to (default: the dataset's name)."
    )
    cycle: int = Field(
        0, ge=0, description="Sequence number of the cycle in its series; orders cycles."
    )
    cycle_started_at: datetime | None = Field(None, description="When the cycle started.")
    dataset_id: str = Field(description="Dataset the semantic group belongs to.")
    group_id: str = Field(description="Stable id of the semantic group (hash of SQL + params).")
    form_id: str = Field(description="Stable id of the text form within the group.")
    cohort: str = Field(description="Linguistic attribute of the form, e.g. short or long.")
    scenario: str = Field("factual", description="RAGProbe scenario (S1..S6) or 'factual'.")
    target: str = Field(description="Name of the RAG endpoint being probed.")
    query: Text = Field(description="The natural-language text query asked.")
    expected: Expected = Field(description="SQL ground truth with its type.")
    group_forms: int = Field(
        1, ge=1, description="Forms of this group in this cohort, for pending detection."
    )
    relevant_doc_ids: list[str] = Field(
        default_factory=list, description="Ground-truth document ids, when the dataset has them."
    )
    probe_created_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> bytes:
        return self.group_id.encode()

    def carried(self) -> dict[str, Any]:
        """The probe fields a downstream message copies forward (already validated values)."""
        values = self.__dict__
        return {name: values[name] for name in _CARRIED}


#: The fields :meth:`_ProbeKeyed.carried` copies, in declaration order.
_CARRIED: tuple[str, ...] = tuple(_ProbeKeyed.model_fields)


class Probe(_ProbeKeyed):
    """One text form of one semantic group, to be asked to one target (topic ``probes``)."""

    topic: ClassVar[str] = "probes"


class RagResponse(_ProbeKeyed):
    """What the target answered, or why it could not (topic ``responses``)."""

    topic: ClassVar[str] = "responses"

    status: TargetStatus
    error_kind: str | None = Field(
        None, description="timeout, http_5xx, bad_payload, circuit_open…"
    )
    error_detail: Annotated[str, Field(max_length=2000)] | None = Field(
        None,
        description="The target error's message (which key was missing, which status, what"
        " opened the circuit), so a failing target says why.",
    )
    answer: Text | None = None
    answer_truncated: bool = False
    retrieved_ids: list[str] = Field(default_factory=list)
    contexts: list[Text] = Field(default_factory=list, max_length=MAX_CONTEXTS)
    latency_s: float = 0.0
    responded_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def for_probe(cls, probe: Probe, **fields: Any) -> RagResponse:
        return cls(**probe.carried(), **fields)


class Judgement(_ProbeKeyed):
    """A verdict on one response (topic ``judgements``)."""

    topic: ClassVar[str] = "judgements"

    verdict: Verdict
    tier: str = Field(description="Which judging tier decided (exact, typed, contains, llm…).")
    reason: str = ""
    scores: dict[str, float] = Field(default_factory=dict)
    prompt_version: str | None = None
    answer: Text | None = None
    retrieved_ids: list[str] = Field(default_factory=list)
    error_kind: str | None = None
    judge_latency_s: float = 0.0
    judged_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def for_response(cls, response: RagResponse, **fields: Any) -> Judgement:
        return cls(
            **response.carried(),
            answer=response.answer,
            retrieved_ids=response.retrieved_ids,
            error_kind=response.error_kind,
            **fields,
        )


class DeadLetter(_Contract):
    """A message no handler could take, kept whole so nothing is lost (topic ``dead-letter``)."""

    topic: ClassVar[str] = "dead-letter"

    error: str
    source_topic: str
    partition: int
    offset: int
    key: str | None = None
    raw_b64: str = Field(description="The original message bytes, base64.")
    service: str
    probe_id: uuid.UUID | None = None
    group_id: str | None = None
    failed_at: datetime = Field(default_factory=utcnow)

    @property
    def raw(self) -> bytes:
        return base64.b64decode(self.raw_b64)

    @property
    def msg_key(self) -> bytes:
        return (self.key or "").encode()


M = TypeVar("M", bound=_Contract)


class Topic(Generic[M]):
    """Ties a topic name (with the deployment's prefix) to its contract and (de)serializer."""

    def __init__(self, model: type[M], prefix: str = "") -> None:
        self.model = model
        self.name = f"{prefix}{model.topic}"  # type: ignore[attr-defined]
        # ``model_validate_json`` without its per-call Python wrapper: same validator, same errors
        self._validate_json: Callable[[bytes], M] = model.__pydantic_validator__.validate_json

    def decode(self, raw: bytes) -> M:
        """Parse where bytes arrive; anything unparseable becomes a :class:`PoisonMessage`."""
        try:
            return self._validate_json(raw)
        except ValidationError as exc:
            raise PoisonMessage(f"{self.name}: {_short(exc)}") from exc
        except ValueError as exc:  # pragma: no cover - pydantic wraps JSON errors already
            raise PoisonMessage(f"{self.name}: {exc}") from exc

    @staticmethod
    def encode(message: M) -> bytes:
        return message.to_bytes()

    def __repr__(self) -> str:
        return f"Topic({self.name!r})"


def _short(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in errors[:5]]
    more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


class Topics:
    """The four topics of a deployment, named with its prefix."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.probes = Topic(Probe, prefix)
        self.responses = Topic(RagResponse, prefix)
        self.judgements = Topic(Judgement, prefix)
        self.dead_letter = Topic(DeadLetter, prefix)

    def all(self) -> list[str]:
        return [t.name for t in (self.probes, self.responses, self.judgements, self.dead_letter)]
