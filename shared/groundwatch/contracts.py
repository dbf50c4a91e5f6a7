"""Every topic's message contract, in one place.

The handler's typed signature is the contract: services parse raw bytes into these models where
messages arrive (the consumer adapter) and hand typed objects to the domain. Each model forbids
extra fields and carries ``schema_version`` so that a producer on a newer schema is detected at the
edge (and dead-lettered) instead of being half-understood.

Message key on every probe-derived topic and on ``human-verdicts`` is ``group_id``: all text
forms of a semantic group share a partition, so the analytics instance owning the partition owns
the group's state.
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    create_model,
    model_validator,
)

from groundwatch.core.model import ID_PATTERN, Expected, Verdict
from groundwatch.core.score_json import is_flat, scores_from_flat
from groundwatch.core.scores import NO_SCORES, Scores
from groundwatch.errors import PoisonMessage

#: Version 2 added the monitoring series and cycle of every probe; version-1 messages are still
#: read (they belong to no series: cycle 0). Version 3 added to the expected answer the answer
#: column's whole domain, the asked row's other values (with their types) and the gold's
#: alternatives (issue 29); messages of versions 1 and 2 are still read (they carry none of them:
#: the judge falls back to the bounded candidates). Version 4 types a judgement's scores (one
#: object per family: :mod:`groundwatch.core.scores`); the flat ``{name: number}`` scores of
#: versions 1-3 are still read, into the same families. Version 5 adds the series' epoch, when the
#: generator's numbering of the series began: a restarted numbering is told by it, never guessed
#: from a message's cycle number (messages of versions 1-4 carry none: analytics falls back to
#: the cycles' start times).
SCHEMA_VERSION: Literal[5] = 5

#: Text fields are capped so that one oversize reply cannot blow up a partition or the store.
MAX_TEXT = 20_000
MAX_CONTEXTS = 50
#: Document ids (retrieved by the target, or ground truth): how many a message carries, how long.
MAX_DOC_IDS = 200
MAX_DOC_ID = 512
#: Entries of the expected answer (values, options, stale versions) and of a judgement's flat
#: scores (schema versions 1-3).
MAX_VALUES = 64
MAX_SCORES = 64
#: Forms of one group; far above any dataset, far below the 32-bit integer column.
MAX_GROUP_FORMS = 100_000
#: SelfCheck samples a runner may ship with one response (GRAMMAR §3 uses four).
MAX_SAMPLES = 8

# ---------------------------------------------------------------------------- storable strings
# Every bound below is the column it is stored in (adapters/db/tables.py) or below it: whatever a
# contract accepts, SQLite and PostgreSQL store (tests/integration/test_contracts_storable.py).

#: Characters no store takes: NUL (PostgreSQL refuses it in text and JSON) and lone surrogates
#: (not encodable as UTF-8, so neither the bus, SQLite nor PostgreSQL can carry them).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: What an unstorable character becomes in free text: U+FFFD, the Unicode replacement character.
REPLACEMENT = "\ufffd"


_ONLY_STR = frozenset({str})
_ONLY_FLOAT = frozenset({float})


def has_unstorable(text: str) -> bool:
    """Whether ``text`` holds a character no store accepts (NUL or a lone surrogate)."""
    if text.isascii():  # the common case, and cheap: only NUL can be wrong here
        return "\x00" in text
    return _UNSTORABLE.search(text) is not None


def storable(text: str) -> str:
    """Free text with each unstorable character replaced by U+FFFD (same length, so the caps hold).

    Answers and contexts come from the endpoint under test: one NUL in a reply must not make the
    judgement unstorable (on PostgreSQL it stalled analytics), and dropping the reply would lose
    it, so the character is replaced and the message says so (``answer_sanitized``).
    """
    return _UNSTORABLE.sub(REPLACEMENT, text) if has_unstorable(text) else text


#: Free text (queries, answers, contexts, reasons): capped, unstorable characters replaced.
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(storable)]
#: A document id: arbitrary text from a dataset or a target, so replaced rather than refused.
DocId = Annotated[str, Field(max_length=MAX_DOC_ID), AfterValidator(storable)]

#: Identifiers are refused unless they are short and plain (:data:`ID_PATTERN`): they are keys,
#: columns, metric labels and URL path segments, so there is nothing to escape and nothing to guess.


def _id(max_length: int) -> StringConstraints:
    return StringConstraints(min_length=1, max_length=max_length, pattern=ID_PATTERN)


RunId = Annotated[str, _id(64)]  # runs.run_id, judgements.run_id
DatasetId = Annotated[str, _id(64)]  # judgements.dataset_id, group_tallies.dataset_id
GroupId = Annotated[str, _id(64)]  # semantic_groups.group_id, judgements.group_id
FormId = Annotated[str, _id(64)]  # text_forms.form_id
Cohort = Annotated[str, _id(64)]  # judgements.cohort
Scenario = Annotated[str, _id(32)]  # judgements.scenario
TargetName = Annotated[str, _id(128)]  # judgements.target
Tier = Annotated[str, _id(32)]  # judgements.tier
ErrorKind = Annotated[str, _id(64)]  # judgements.error_kind
PromptVersion = Annotated[str, _id(32)]  # llm_cache.prompt_version
ScoreName = Annotated[str, _id(64)]
#: A monitoring series is a name (by default the dataset's), possibly empty: capped and storable.
SeriesName = Annotated[str, Field(max_length=128), AfterValidator(storable)]  # judgements.series
#: Integer columns are 32-bit on PostgreSQL.
MAX_INT32 = 2**31 - 1
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


def _in_range(at: datetime) -> datetime:
    """Years 2..9998: any UTC offset keeps the instant inside what Python (and so the reload of
    the stored row) can represent."""
    if not 1 < at.year < 9999:
        raise ValueError("timestamp outside the years 2..9998")
    return at


Timestamp = Annotated[datetime, AfterValidator(_in_range)]

#: A judgement's scores as schema versions 1-3 carried them: a flat dict of named numbers.
FlatScores = Annotated[dict[ScoreName, FiniteFloat], Field(max_length=MAX_SCORES)]
_FLAT = TypeAdapter(FlatScores)


def _typed_scores(value: Any) -> Any:
    """Scores as the families of :mod:`groundwatch.core.scores`: empty is :data:`NO_SCORES`, a
    flat dict of an older judge is validated as it was then (names, finite numbers, at most
    :data:`MAX_SCORES`) and read into the families; anything else is validated as families."""
    if type(value) is Scores:
        return value
    if not value:
        return NO_SCORES
    if is_flat(value):
        return scores_from_flat(_FLAT.validate_python(value))
    return value


#: A judgement's scores: typed families, or the flat dict of schema versions 1-3 read into them.
JudgementScores = Annotated[Scores, BeforeValidator(_typed_scores)]


def _bounded_expected(expected: Expected) -> Expected:
    """The ground truth within the caps, its strings storable (values come from source data)."""
    if (
        len(expected.values) > MAX_VALUES
        or len(expected.types) > MAX_VALUES
        or len(expected.stale_values) > MAX_VALUES
        or any(len(v) > MAX_VALUES for v in expected.stale_values)
        or len(expected.options or ()) > MAX_VALUES
    ):
        raise ValueError(f"expected answer: more than {MAX_VALUES} values, options or versions")
    if not 0 <= expected.version <= MAX_INT32:  # stored as judgements.truth_version
        raise ValueError(f"expected answer: version outside 0..{MAX_INT32}")
    strings = [*expected.values, *(s for v in expected.stale_values for s in v)]
    strings.extend(expected.options or ())
    strings.extend(a for alts in expected.alternatives for a in alts)
    if any(len(s) > MAX_TEXT for s in strings):
        raise ValueError(f"expected answer: a value longer than {MAX_TEXT} characters")
    if not any(has_unstorable(s) for s in strings):
        return expected
    return expected.model_copy(
        update={
            "values": [storable(v) for v in expected.values],
            "stale_values": [[storable(s) for s in v] for v in expected.stale_values],
            "options": None
            if expected.options is None
            else [storable(o) for o in expected.options],
            "alternatives": [[storable(a) for a in alts] for alts in expected.alternatives],
        }
    )


BoundedExpected = Annotated[Expected, AfterValidator(_bounded_expected)]


def _flag_unstorable(data: Any) -> Any:
    """Set ``answer_sanitized`` when the raw answer, a context or a retrieved id is unstorable
    (the field validators then replace the characters)."""
    if not isinstance(data, dict) or data.get("answer_sanitized") is True:
        return data
    answer, contexts, ids = data.get("answer"), data.get("contexts"), data.get("retrieved_ids")
    dirty = isinstance(answer, str) and has_unstorable(answer)
    for seq in (contexts, ids):
        if not dirty and isinstance(seq, list):
            dirty = any(isinstance(s, str) and has_unstorable(s) for s in seq)
    return {**data, "answer_sanitized": True} if dirty else data


def utcnow() -> datetime:
    return datetime.now(UTC)


class TargetStatus(StrEnum):
    """Whether the target produced an answer at all; an error is never judged as wrong."""

    OK = "ok"
    ERROR = "error"


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1, 2, 3, 4, 5] = Field(SCHEMA_VERSION, description="Contract version.")

    def to_bytes(self) -> bytes:
        # pydantic's own JSON serializer straight to bytes: the same output as dumping
        # ``model_dump(mode="json")`` with orjson, without building the intermediate dict.
        return self.__pydantic_serializer__.to_json(self)


class _ProbeKeyed(_Contract):
    """Fields every probe-derived message carries, so each stage is stateless."""

    probe_id: uuid.UUID = Field(
        description="Unique per asked text form per run; the generator makes time-ordered"
        " version 7 UUIDs (any UUID is accepted)."
    )
    run_id: RunId = Field(description="Probing cycle (batch run or continuous window).")
    series: SeriesName = Field(
        "", description="Monitoring series the cycle belongs to (default: the dataset's id)."
    )
    cycle: int = Field(
        0,
        ge=0,
        le=MAX_INT32,
        description="Sequence number of the cycle in its series; orders cycles.",
    )
    cycle_started_at: Timestamp | None = Field(None, description="When the cycle started.")
    series_epoch: Timestamp | None = Field(
        None,
        description="When the generator's numbering of the series began (its first cycle's"
        " start, kept in its store): a later epoch is a restarted numbering.",
    )
    dataset_id: DatasetId = Field(description="Dataset the semantic group belongs to.")
    group_id: GroupId = Field(description="Stable id of the semantic group (hash of SQL + params).")
    form_id: FormId = Field(description="Stable id of the text form within the group.")
    cohort: Cohort = Field(description="Linguistic attribute of the form, e.g. short or long.")
    scenario: Scenario = Field("factual", description="RAGProbe scenario (S1..S6) or 'factual'.")
    target: TargetName = Field(description="Name of the RAG endpoint being probed.")
    query: Text = Field(description="The natural-language text query asked.")
    expected: BoundedExpected = Field(description="SQL ground truth with its type.")
    group_forms: int = Field(
        1,
        ge=1,
        le=MAX_GROUP_FORMS,
        description="Forms of this group in this cohort, for pending detection.",
    )
    relevant_doc_ids: list[DocId] = Field(
        default_factory=list,
        max_length=MAX_DOC_IDS,
        description="Ground-truth document ids, when the dataset has them.",
    )
    probe_created_at: Timestamp = Field(default_factory=utcnow)
    trace_context: (
        Annotated[str, StringConstraints(max_length=49, pattern=r"^[0-9a-f]{32}-[0-9a-f]{16}$")]
        | None
    ) = Field(
        None,
        description="The span this judgement belongs to, 'TRACEID-SPANID' in hex, when it is"
        " not the probe's own (a user's span, for traffic that came as spans); None: the probe's"
        " span, named by its probe id.",
    )

    @property
    def key(self) -> bytes:
        return self.group_id.encode()

    def carried(self) -> dict[str, Any]:
        """The probe fields a downstream message copies forward (already validated values)."""
        if type(self) is Probe:  # a probe is exactly its carried fields, in their order
            return dict(self.__dict__)
        values = self.__dict__
        return {name: values[name] for name in _CARRIED}


#: The fields :meth:`_ProbeKeyed.carried` copies, in declaration order.
_CARRIED: tuple[str, ...] = tuple(_ProbeKeyed.model_fields)
_CARRIED_SET = frozenset(_CARRIED)


class Probe(_ProbeKeyed):
    """One text form of one semantic group, to be asked to one target (topic ``probes``)."""

    topic: ClassVar[str] = "probes"

    @staticmethod
    def validate_fields(**fields: Any) -> dict[str, Any]:
        """``fields`` validated as ``Probe`` validates them (errors too), for :meth:`sibling`."""
        return _validate_subset(Probe, fields)

    def sibling(self, validated: dict[str, Any]) -> Probe:
        """This probe with the ``validated`` values (from :meth:`validate_fields`, or values
        valid by construction: a fresh UUID, the current UTC time) in place of its own.

        Why: a cycle makes a probe per form per target, and all of a group's probes share its
        ground truth, ids, run and cycle; validating all of it again for every form, every
        cycle, was most of the generator's cost per probe."""
        values = dict(self.__dict__)
        values.update(validated)
        return _constructed(Probe, values)


class RagResponse(_ProbeKeyed):
    """What the target answered, or why it could not (topic ``responses``)."""

    topic: ClassVar[str] = "responses"

    status: TargetStatus
    error_kind: ErrorKind | None = Field(
        None, description="timeout, http_5xx, bad_payload, circuit_open…"
    )
    error_detail: Annotated[str, Field(max_length=2000)] | None = Field(
        None,
        description="The target error's message (which key was missing, which status, what"
        " opened the circuit), so a failing target says why.",
    )
    answer: Text | None = None
    answer_truncated: bool = False
    answer_sanitized: bool = Field(
        False,
        description="The answer, a context or a retrieved id held NUL or a lone surrogate, "
        "replaced by U+FFFD.",
    )
    retrieved_ids: list[DocId] = Field(default_factory=list, max_length=MAX_DOC_IDS)
    contexts: list[Text] = Field(default_factory=list, max_length=MAX_CONTEXTS)
    samples: list[Text] = Field(
        default_factory=list,
        max_length=MAX_SAMPLES,
        description="More answers of the target to the same query, for SelfCheck (optional).",
    )
    latency_s: FiniteFloat = 0.0
    responded_at: Timestamp = Field(default_factory=utcnow)

    _flag = model_validator(mode="before")(_flag_unstorable)

    @classmethod
    def for_probe(cls, probe: Probe, **fields: Any) -> RagResponse:
        """The response to ``probe``: the probe's fields are carried as they are (validated when
        the probe was), only the response's own fields are validated here."""
        return _with_carried(cls, probe, _validate_own(cls, fields))

    @classmethod
    def answered(
        cls,
        probe: Probe,
        answer: str,
        retrieved_ids: list[str],
        contexts: list[str],
        samples: list[str],
        latency_s: float,
        answer_truncated: bool = False,
    ) -> RagResponse:
        """An ``ok`` response to ``probe``, the same as :meth:`for_probe` would build.

        The runner's answers were already cut to the caps (``TargetReply.bounded``), so the
        usual answer — text only, within every cap, no unstorable character, a finite latency —
        is checked here in a few C-level passes and stored without pydantic validating each
        string again; anything else goes through :meth:`for_probe` (replaced characters,
        errors and all)."""
        if (
            type(answer) is str
            and len(answer) <= MAX_TEXT
            and len(retrieved_ids) <= MAX_DOC_IDS
            and len(contexts) <= MAX_CONTEXTS
            and len(samples) <= MAX_SAMPLES
            and set(map(type, retrieved_ids)).union(map(type, contexts), map(type, samples))
            <= _ONLY_STR
            and (not retrieved_ids or max(map(len, retrieved_ids)) <= MAX_DOC_ID)
            and (not contexts or max(map(len, contexts)) <= MAX_TEXT)
            and (not samples or max(map(len, samples)) <= MAX_TEXT)
            and not has_unstorable("".join((answer, *retrieved_ids, *contexts, *samples)))
            and type(latency_s) is float
            and math.isfinite(latency_s)
            and type(answer_truncated) is bool
        ):
            own = {  # every own field, in declaration order (a test holds it to for_probe's)
                "status": TargetStatus.OK,
                "error_kind": None,
                "error_detail": None,
                "answer": answer,
                "answer_truncated": answer_truncated,
                "answer_sanitized": False,
                "retrieved_ids": list(retrieved_ids),
                "contexts": list(contexts),
                "samples": list(samples),
                "latency_s": latency_s,
                "responded_at": utcnow(),
            }
            return _with_carried(cls, probe, own)
        return cls.for_probe(
            probe,
            status=TargetStatus.OK,
            answer=answer,
            retrieved_ids=retrieved_ids,
            contexts=contexts,
            samples=samples,
            latency_s=latency_s,
            answer_truncated=answer_truncated,
        )


class Judgement(_ProbeKeyed):
    """A verdict on one response (topic ``judgements``)."""

    topic: ClassVar[str] = "judgements"

    verdict: Verdict
    tier: Tier = Field(description="Which judging tier decided (exact, typed, contains, llm…).")
    reason: Text = ""
    scores: JudgementScores = Field(
        NO_SCORES,
        description="What the judge measured beside the verdict, one object per family (answer"
        " and IR metrics, semantic and LLM-derived metrics, reference-free calls, self-audit,"
        " RAGProbe metric outcomes, the rules' and the LLM tier's detail); a flat name → number"
        " dict (schema versions 1-3) is read into them.",
    )
    prompt_version: PromptVersion | None = None
    answer: Text | None = None
    answer_sanitized: bool = Field(
        False, description="The judged answer held characters no store takes (see RagResponse)."
    )
    retrieved_ids: list[DocId] = Field(default_factory=list, max_length=MAX_DOC_IDS)
    context_has_answer: bool | None = Field(
        None,
        description="The retrieved contexts state the gold answer (true), do not contain it"
        " (false), or cannot tell / there were none (null): context comparison's text evidence,"
        " so the contexts themselves need not travel past the judge.",
    )
    error_kind: ErrorKind | None = None
    judge_latency_s: FiniteFloat = 0.0
    judged_at: Timestamp = Field(default_factory=utcnow)

    _flag = model_validator(mode="before")(_flag_unstorable)

    @classmethod
    def for_response(cls, response: RagResponse, **fields: Any) -> Judgement:
        """The judgement of ``response``: probe fields and the answer carried as validated, only
        the judge's own fields validated here."""
        values = response.__dict__
        if _FROM_RESPONSE_SET.isdisjoint(fields):
            # The response's answer, ids and error kind were validated (caps, storable
            # characters, the sanitized flag) when the response was built or decoded: carried
            # as they are, only the judge's own fields validated.
            own = _judge_fields_as_they_are(fields, values)
            if own is None:
                own = _validate_own(cls, fields)
                own.update({name: values[name] for name in _FROM_RESPONSE})
        else:  # the caller replaces one of them: validate the four together, as one message
            own = _validate_own(cls, {**{n: values[n] for n in _FROM_RESPONSE}, **fields})
        judgement = _with_carried(cls, response, own)
        expected = values["expected"]
        if expected.domain or expected.entity_domain is not None:
            # the judge has read the column's domain: analytics and the store, which keep the
            # expected answer of every judgement, need not carry thousands of values each
            judgement.__dict__["expected"] = _without_domain(expected)
        return judgement


#: Expected answers without their domains, by the identity of the one with them (every form of
#: a group shares its expected answer): one copy per group, not per judgement. Bounded.
_STRIPPED: dict[int, tuple[Expected, Expected]] = {}


def _without_domain(expected: Expected) -> Expected:
    hit = _STRIPPED.get(id(expected))
    if hit is not None and hit[0] is expected:
        return hit[1]
    stripped = expected.model_copy(update={"domain": [], "entity_domain": None})
    if len(_STRIPPED) >= 4096:
        _STRIPPED.clear()
    _STRIPPED[id(expected)] = (expected, stripped)
    return stripped


#: The fields a judgement takes from its response as they are (already validated there).
_FROM_RESPONSE = ("answer", "answer_sanitized", "retrieved_ids", "error_kind")
_FROM_RESPONSE_SET = frozenset(_FROM_RESPONSE)

#: The judge's own fields the plain case gives (the rest take their defaults).
_JUDGE_GIVEN = frozenset(
    {"verdict", "tier", "reason", "scores", "prompt_version", "context_has_answer",
     "judge_latency_s"}
)  # fmt: skip
_ID_RE = re.compile(ID_PATTERN)
#: Identifiers (tiers, score names, prompt versions) seen valid, by their column's length cap:
#: a judge uses a few dozen, so each is checked by the pattern once, not per judgement.
_VALID_IDS: dict[str, int] = {}
_MAX_VALID_IDS = 4096


def _plain_id(value: object, max_length: int) -> bool:
    """``value`` is an identifier within ``max_length`` (what ``_id(max_length)`` accepts)."""
    if type(value) is not str:
        return False
    known = _VALID_IDS.get(value)
    if known is not None:
        return known <= max_length
    if not 0 < len(value) <= 128 or _ID_RE.match(value) is None:
        return False
    if len(_VALID_IDS) < _MAX_VALID_IDS:
        _VALID_IDS[value] = len(value)
    return len(value) <= max_length


def _judge_fields_as_they_are(
    fields: dict[str, Any], response: dict[str, Any]
) -> dict[str, Any] | None:
    """A judgement's own fields, as validation would make them, when they are the judge's
    usual plain values — checked here in a few comparisons instead of a pydantic model per
    judgement (a tenth of the judge stage's cost per probe); None for anything else, which
    then goes through validation (errors, coercions, replaced characters and all)."""
    if not fields.keys() <= _JUDGE_GIVEN:
        return None
    verdict = fields.get("verdict")
    reason = fields.get("reason", "")
    scores = fields.get("scores", NO_SCORES)
    prompt_version = fields.get("prompt_version")
    context = fields.get("context_has_answer")
    latency = fields.get("judge_latency_s", 0.0)
    if not (
        type(verdict) is Verdict
        and _plain_id(fields.get("tier"), 32)
        and type(reason) is str
        and len(reason) <= MAX_TEXT
        and not has_unstorable(reason)
        # the judge's families are finite by construction and their names are the model's own
        and type(scores) is Scores
        and (scores.audit is None or _plain_id(scores.audit.tier, 32))
        and (prompt_version is None or _plain_id(prompt_version, 32))
        and (context is None or type(context) is bool)
        and type(latency) is float
        and math.isfinite(latency)
    ):
        return None
    return {  # every own field, in declaration order (a test holds it to validation's)
        "verdict": verdict,
        "tier": fields["tier"],
        "reason": reason,
        "scores": scores,
        "prompt_version": prompt_version,
        "answer": response["answer"],
        "answer_sanitized": response["answer_sanitized"],
        "retrieved_ids": response["retrieved_ids"],
        "context_has_answer": context,
        "error_kind": response["error_kind"],
        "judge_latency_s": latency,
        "judged_at": utcnow(),
    }


# ------------------------------------------------------------ validation done once per field
# A response copies its probe's fields, a judgement its response's: those were validated when
# the message was built or decoded. Validating them again (a third of a message's build cost)
# proved nothing, so a derived message validates only the fields it adds, with a model of just
# those fields (same annotations, constraints and validators), and carries the rest as they are.

_OWN: dict[type[BaseModel], type[BaseModel]] = {}


def _own_model(cls: type[_ProbeKeyed]) -> type[BaseModel]:
    own = _OWN.get(cls)
    if own is None:
        fields: dict[str, Any] = {
            name: (info.annotation, info)
            for name, info in cls.model_fields.items()
            if name not in _CARRIED_SET
        }
        validators: dict[str, Any] = {"flag": model_validator(mode="before")(_flag_unstorable)}
        own = create_model(
            f"_{cls.__name__}Own",
            __config__=ConfigDict(extra="forbid", frozen=True),
            __validators__=validators,
            **fields,
        )
        _OWN[cls] = own
    return own


_SUBSETS: dict[tuple[type[BaseModel], frozenset[str]], type[BaseModel]] = {}


def _validate_subset(cls: type[_ProbeKeyed], fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` validated with a model of just those fields of ``cls`` (same annotations,
    constraints and defaults); a name ``cls`` does not have is refused as ``cls`` refuses it."""
    key = (cls, frozenset(fields))
    model = _SUBSETS.get(key)
    if model is None:
        unknown = key[1] - set(cls.model_fields)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
        definitions: dict[str, Any] = {
            name: (cls.model_fields[name].annotation, cls.model_fields[name]) for name in key[1]
        }
        model = create_model(
            f"_{cls.__name__}Subset",
            __config__=ConfigDict(extra="forbid", frozen=True),
            **definitions,
        )
        _SUBSETS[key] = model
    return model.__pydantic_validator__.validate_python(fields).__dict__  # type: ignore[no-any-return]


def _validate_own(cls: type[_ProbeKeyed], fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` validated as ``cls`` would (errors too), without the carried fields."""
    own = _own_model(cls).__pydantic_validator__.validate_python(fields)
    return own.__dict__  # type: ignore[no-any-return]


_P = TypeVar("_P", bound="_ProbeKeyed")


def _with_carried(cls: type[_P], source: _ProbeKeyed, own: dict[str, Any]) -> _P:
    """``cls`` from already validated values: what ``model_construct`` does for a complete set
    of fields, without its per-field default handling (every field is given)."""
    values = source.carried()
    values.update(own)
    return _constructed(cls, values)


def _constructed(cls: type[_P], values: dict[str, Any]) -> _P:
    """``cls`` around ``values``, every field given and valid: no validation, no defaults."""
    message = cls.__new__(cls)
    _set = object.__setattr__
    _set(message, "__dict__", values)
    _set(message, "__pydantic_fields_set__", set(values))
    _set(message, "__pydantic_extra__", None)
    _set(message, "__pydantic_private__", None)
    return message


#: A dead letter's error text and the key it copies (a poison key may be anything, of any size).
MAX_DEAD_LETTER_ERROR = 4000
MAX_DEAD_LETTER_KEY = 1024
#: Raw bytes a dead letter keeps. Base64 adds a third, so a poison message near the broker's
#: 1 MB limit would make a letter the producer refuses, and the loop would die on it.
MAX_DEAD_LETTER_RAW = 512 * 1024


class DeadLetter(_Contract):
    """A message no handler could take, kept whole so nothing is lost (topic ``dead-letter``)."""

    topic: ClassVar[str] = "dead-letter"

    error: Annotated[str, Field(max_length=MAX_DEAD_LETTER_ERROR), AfterValidator(storable)]
    source_topic: Annotated[str, Field(max_length=249)]  # Kafka's longest topic name
    partition: int
    offset: int
    key: Annotated[str, Field(max_length=MAX_DEAD_LETTER_KEY), AfterValidator(storable)] | None = (
        None
    )
    raw_b64: str = Field(
        max_length=4 * -(-MAX_DEAD_LETTER_RAW // 3),
        description="The original message bytes (the first 512 KiB), base64.",
    )
    service: Annotated[str, Field(max_length=128)]
    probe_id: uuid.UUID | None = None
    group_id: (
        Annotated[str, Field(max_length=MAX_DEAD_LETTER_KEY), AfterValidator(storable)] | None
    ) = None
    failed_at: datetime = Field(default_factory=utcnow)

    @property
    def raw(self) -> bytes:
        return base64.b64decode(self.raw_b64)

    @property
    def msg_key(self) -> bytes:
        return (self.key or "").encode()


#: The verdicts a person gives (the judge's own words for right and wrong).
PersonVerdict = Literal["correct", "incorrect"]


class HumanVerdict(_Contract):
    """A person's verdict on one judged answer, marked in the view (topic ``human-verdicts``).

    Analytics counts it in the answer's group instead of the judge's verdict (the judge's stays
    in the store beside it). Keyed by ``group_id`` like the judgements, so it lands on the
    partition of the analytics instance that owns the group. ``revision`` orders the verdicts of
    one answer (the store's row id of the verdict): a redelivered or older one changes nothing,
    a later one replaces it; ``verdict`` None withdraws the person's and the judge's counts
    again."""

    topic: ClassVar[str] = "human-verdicts"

    probe_id: uuid.UUID = Field(description="The judged answer (its probe).")
    dataset_id: DatasetId
    target: TargetName
    cohort: Cohort
    group_id: GroupId
    verdict: PersonVerdict | None = Field(
        description="The person's verdict; null withdraws it (the judge's counts again)."
    )
    revision: int = Field(
        ge=1,
        le=2**63 - 1,
        description="Orders one answer's verdicts: the higher stands (the store's row id).",
    )
    who: Annotated[str, Field(min_length=1, max_length=128), AfterValidator(storable)]
    at: Timestamp = Field(default_factory=utcnow, description="When the person gave it.")

    @property
    def key(self) -> bytes:
        return self.group_id.encode()


#: Trace and span ids as OpenTelemetry writes them (32 and 16 hex digits); any short plain id
#: from another tracer is kept too, so a record can always be found again in the user's traces.
TraceId = Annotated[str, _id(64)]
#: A traffic question's cap: far above what a person types, far below the store's text column.
MAX_TRAFFIC_QUESTION = 4000
#: The cohort users' grounded questions are judged and tallied in (the store keeps its windows as
#: cycles of their own series, so retention prunes them as it prunes probe cycles).
TRAFFIC_COHORT = "traffic"
#: The ``runs`` status of a window of users' traffic: open-ended, never running nor finished.
TRAFFIC_WINDOW_STATUS = "traffic"


class TrafficRecord(_Contract):
    """One question a user really asked a target, with its answer (topic ``traffic``).

    Not a probe: nothing here says which semantic group it belongs to. The grounding matcher
    finds that (or abstains), and only then is it judged against the group's SQL truth, as the
    ``traffic`` cohort of that group. The key is the trace id when there is one, so the records
    of one trace share a partition."""

    topic: ClassVar[str] = "traffic"

    target: TargetName = Field(description="Name of the RAG endpoint that answered.")
    question: Annotated[str, Field(min_length=1, max_length=MAX_TRAFFIC_QUESTION)] = Field(
        description="The question as the user typed it."
    )
    answer: Text | None = Field(None, description="What the endpoint answered (None: no answer).")
    retrieved_ids: list[DocId] = Field(default_factory=list, max_length=MAX_DOC_IDS)
    contexts: list[Text] = Field(default_factory=list, max_length=MAX_CONTEXTS)
    asked_at: Timestamp = Field(default_factory=utcnow, description="When the user asked.")
    trace_id: TraceId | None = Field(None, description="The request's trace, when traced.")
    span_id: TraceId | None = Field(None, description="The span that carried the answer.")
    dataset_id: DatasetId | None = Field(
        None, description="The dataset to ground it in; None: the one the receiver serves."
    )

    @model_validator(mode="after")
    def _has_words(self) -> TrafficRecord:
        if not self.question.strip():
            raise ValueError("question is blank")
        if has_unstorable(self.question):
            raise ValueError("question holds NUL or a lone surrogate")
        return self

    @property
    def key(self) -> bytes:
        return (self.trace_id or self.target).encode()


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


#: The topic prefix a deployment has unless ``GW_TOPIC_PREFIX`` says otherwise: its consumer
#: groups keep their bare names (``judge``), as deployments made before groups were scoped have
#: their offsets committed under them.
DEFAULT_PREFIX = "gw."


class Topics:
    """The topics of a deployment, named with its prefix, and its consumer groups."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.probes = Topic(Probe, prefix)
        self.responses = Topic(RagResponse, prefix)
        self.judgements = Topic(Judgement, prefix)
        self.dead_letter = Topic(DeadLetter, prefix)
        self.traffic = Topic(TrafficRecord, prefix)
        self.human_verdicts = Topic(HumanVerdict, prefix)

    def group(self, name: str) -> str:
        """Consumer group ``name`` of this deployment. Two deployments on one cluster (a staging
        and a production prefix, two test runs) have groups of their own: a member joining or
        leaving one never makes the other's rebalance. Under the default prefix the bare name."""
        return name if self.prefix in ("", DEFAULT_PREFIX) else f"{self.prefix}{name}"

    def all(self) -> list[str]:
        topics = (
            self.probes,
            self.responses,
            self.judgements,
            self.dead_letter,
            self.traffic,
            self.human_verdicts,
        )
        return [t.name for t in topics]
