"""What a target is to groundwatch: something that answers a query, or fails with a kind.

A RAG endpoint's failure (timeout, 5xx, garbage payload, open circuit) must never be mistaken for
a wrong answer: the runner turns a :class:`TargetError` into ``status=error`` with its kind, and an
error is never judged. Only a :class:`TargetReply` reaches the judge.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

from groundwatch.contracts import MAX_CONTEXTS, MAX_DOC_ID, MAX_DOC_IDS, MAX_TEXT
from groundwatch.errors import GroundwatchError

#: Retrieved ids kept per reply; a reply listing more is cut (ids are small but unbounded).
MAX_RETRIEVED_IDS = MAX_DOC_IDS
MAX_ID_CHARS = MAX_DOC_ID


class ErrorKind(StrEnum):
    """Why a target produced no answer; ``RagResponse.error_kind`` carries the value."""

    TIMEOUT = "timeout"
    HTTP_4XX = "http_4xx"
    HTTP_5XX = "http_5xx"
    BAD_PAYLOAD = "bad_payload"
    CONNECTION = "connection"
    CIRCUIT_OPEN = "circuit_open"
    RATE_LIMITED = "rate_limited"
    EXCEPTION = "exception"
    UNKNOWN_TARGET = "unknown_target"
    #: an HTTP 3xx: the endpoint sent the request elsewhere instead of answering (a moved URL, a
    #: login page); its body is not an answer and is never judged
    REDIRECT = "redirect"


#: Failures worth retrying (with jitter) and counted by the circuit breaker. A 4xx or a bad
#: payload will fail the same way again, so retrying it only adds load to the target.
TRANSIENT: frozenset[ErrorKind] = frozenset(
    {ErrorKind.TIMEOUT, ErrorKind.HTTP_5XX, ErrorKind.CONNECTION, ErrorKind.RATE_LIMITED}
)


class TargetError(GroundwatchError):
    """The target did not answer. ``retry_after`` is the target's own hint (HTTP Retry-After)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str = "",
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{kind.value}: {message}" if message else kind.value)
        self.kind = kind
        self.status_code = status_code
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        return self.kind in TRANSIENT


@dataclass(frozen=True, slots=True)
class TargetReply:
    """A target's answer with the evidence it used.

    ``truncated`` says the answer was cut to fit the message contract (the judge must not take a
    cut answer for a complete one); ``contexts_truncated`` says contexts or ids were cut.
    """

    answer: str
    retrieved_ids: list[str] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)
    truncated: bool = False
    contexts_truncated: bool = False

    def bounded(
        self,
        max_answer_chars: int = MAX_TEXT,
        max_contexts: int = MAX_CONTEXTS,
        max_context_chars: int = MAX_TEXT,
    ) -> TargetReply:
        """This reply cut to the contract's limits, with the flags set when anything was cut."""
        ids, contexts = self.retrieved_ids, self.contexts
        if (  # the common case, checked in C (max over map): called for every reply, twice
            len(self.answer) <= max_answer_chars
            and len(ids) <= MAX_RETRIEVED_IDS
            and len(contexts) <= max_contexts
            and (not ids or max(map(len, ids)) <= MAX_ID_CHARS)
            and (not contexts or max(map(len, contexts)) <= max_context_chars)
        ):
            return self
        answer = self.answer[:max_answer_chars]
        ids = [i[:MAX_ID_CHARS] for i in self.retrieved_ids[:MAX_RETRIEVED_IDS]]
        contexts = [c[:max_context_chars] for c in self.contexts[:max_contexts]]
        cut_answer = len(answer) < len(self.answer)
        cut_rest = (
            len(self.retrieved_ids) > MAX_RETRIEVED_IDS
            or len(self.contexts) > max_contexts
            or any(len(a) != len(b) for a, b in zip(ids, self.retrieved_ids, strict=False))
            or any(len(a) != len(b) for a, b in zip(contexts, self.contexts, strict=False))
        )
        if not cut_answer and not cut_rest:
            return self
        return TargetReply(
            answer,
            ids,
            contexts,
            truncated=self.truncated or cut_answer,
            contexts_truncated=self.contexts_truncated or cut_rest,
        )


class JsonNumber(float):
    """A JSON number as the endpoint wrote it: a float for whatever compares numbers (a JSONPath
    filter), and ``text``, the number's own characters, for what becomes text. ``1e400`` is
    ``inf`` as a float and stays ``"1e400"`` as text; ``1e-400`` stays ``"1e-400"``, not
    ``"0.0"``; ``12345678901234567890123`` keeps every digit."""

    __slots__ = ("text",)

    text: str

    def __new__(cls, text: str) -> JsonNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number


def number_text(value: object) -> str:
    """A number from a reply as text: the endpoint's own characters when they are known
    (:class:`JsonNumber`), else Python's shortest round-trip form."""
    return value.text if isinstance(value, JsonNumber) else str(value)


def reply_from(
    answer: object, retrieved_ids: Sequence[object] = (), contexts: Sequence[object] = ()
) -> TargetReply:
    """Build a bounded reply from loosely typed values (numbers become text), or fail as
    ``bad_payload``: a target that returns a dict for its answer has broken its contract.

    A null answer is the endpoint saying it has none: an empty answer (judged ``empty_response``,
    wrong), not an endpoint error — as an error its group was ``unknown`` and a knowledge gap
    hid behind it. A missing answer key is still ``bad_payload`` (the path does not match)."""
    if type(answer) is not str:
        if answer is None:
            answer = ""
        elif isinstance(answer, bool) or not isinstance(answer, str | int | float):
            raise TargetError(ErrorKind.BAD_PAYLOAD, f"answer is {type(answer).__name__}, not text")
        answer = number_text(answer)
    return TargetReply(
        answer, _texts("retrieved_ids", retrieved_ids), _texts("contexts", contexts)
    ).bounded()


_ONLY_STR = frozenset({str})


def _texts(name: str, values: Sequence[object]) -> list[str]:
    """``values`` as a new list of text; all strings (the usual reply) is checked in C."""
    if set(map(type, values)) <= _ONLY_STR:
        return list(values)  # type: ignore[arg-type]  # every value is a str
    for v in values:
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise TargetError(ErrorKind.BAD_PAYLOAD, f"{name} holds a {type(v).__name__}, not text")
    return [v if isinstance(v, str) else number_text(v) for v in values]


@runtime_checkable
class Target(Protocol):
    """A RAG system (or LLM-only baseline) under evaluation."""

    async def ask(self, query: str) -> TargetReply: ...


#: SelfCheck's samples are drawn at this temperature (Manakul et al., 2023; GRAMMAR §3), unless a
#: target's configuration says how it samples.
SAMPLE_TEMPERATURE = 1.0


def sampler_of(target: object) -> Callable[[str], Awaitable[TargetReply]] | None:
    """How to draw a *sample* from ``target`` — another answer to the same query with its
    randomness on — or None when it has no way to.

    SelfCheck compares the answer with such samples: asked the ordinary way (temperature 0, or an
    endpoint with no knob at all) a deterministic target repeats itself, every sample agrees,
    and SelfCheck calls every answer right. So only a target that says it can sample
    (``can_sample``, with an async ``sample(query)``) is sampled; the others are reported as
    not sampled, never scored on repeats."""
    sample = getattr(target, "sample", None)
    if not callable(sample) or not getattr(target, "can_sample", False):
        return None
    fn: Callable[[str], Awaitable[TargetReply]] = sample
    return fn
