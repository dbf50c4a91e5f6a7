"""The LLM-only baseline: a chat model asked the query with no retrieval at all.

GRAMMAR §5.2 (Table 4) runs it to find open-domain questions: a group the bare model answers
correctly is answerable from public knowledge, so its status says nothing about the retrieval
database and can be left out of gap statistics. The model goes through the
:class:`~groundwatch.reference_rag.llm_reader.LlmClient` port (the real client wraps the ``openai``
SDK and works with any OpenAI-compatible server).
"""

from __future__ import annotations

from groundwatch.adapters.targets.base import (
    SAMPLE_TEMPERATURE,
    ErrorKind,
    TargetError,
    TargetReply,
    reply_from,
)
from groundwatch.core.llm import ChatModel
from groundwatch.core.model import DONT_KNOW
from groundwatch.errors import GroundwatchError, RetryLater

BASELINE_SYSTEM_PROMPT = (
    "Answer the question from your own knowledge, as briefly as possible (a name, number, date "
    "or short phrase). If you do not know the answer, reply exactly: " + DONT_KNOW
)


class OpenAIChatTarget:
    """Answers with the model alone; ``retrieved_ids`` and ``contexts`` are always empty."""

    #: the GenAI operation a trace span of a probe names (OpenTelemetry GenAI conventions)
    otel_operation = "chat"

    def __init__(
        self,
        client: ChatModel,
        *,
        system_prompt: str = BASELINE_SYSTEM_PROMPT,
        max_tokens: int | None = 256,
        temperature: float = 0.0,
        sample_temperature: float = SAMPLE_TEMPERATURE,
    ) -> None:
        self._client = client
        self.system_prompt = system_prompt
        self.max_tokens = max_tokens
        self.temperature = temperature
        #: SelfCheck's samples: the same prompt at this temperature (1.0, as the paper samples)
        self.sample_temperature = sample_temperature
        self.can_sample = sample_temperature > 0.0

    def __repr__(self) -> str:
        return "OpenAIChatTarget()"

    async def ask(self, query: str) -> TargetReply:
        return await self._complete(query, self.temperature)

    async def sample(self, query: str) -> TargetReply:
        """One stochastic answer for SelfCheck, at ``sample_temperature``."""
        return await self._complete(query, self.sample_temperature)

    async def _complete(self, query: str, temperature: float) -> TargetReply:
        import openai  # here, not at import: ~15 MB a run with no chat target never uses

        try:
            replies = await self._client.complete(
                self.system_prompt,
                query,
                temperature=temperature,
                max_tokens=self.max_tokens,
            )
        except TargetError:
            raise
        except (openai.OpenAIError, GroundwatchError, TimeoutError) as exc:
            raise llm_failure(exc) from None
        if not replies:
            raise TargetError(ErrorKind.BAD_PAYLOAD, "the model returned no choices")
        return reply_from(replies[0].strip())


def llm_failure(exc: BaseException) -> TargetError:
    """The failure kind of an LLM call; a wrapped error (``LlmError`` after the client's own
    retries) is judged by its cause."""
    import openai  # imported by the client that raised ``exc`` already

    cause = exc
    while not isinstance(cause, openai.OpenAIError) and cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, openai.APITimeoutError | TimeoutError):
        return TargetError(ErrorKind.TIMEOUT, "LLM request timed out")
    if isinstance(cause, openai.APIConnectionError):
        return TargetError(ErrorKind.CONNECTION, str(cause))
    if isinstance(cause, openai.RateLimitError):
        return TargetError(ErrorKind.RATE_LIMITED, "HTTP 429", status_code=429)
    if isinstance(cause, openai.APIStatusError):
        code = cause.status_code
        kind = ErrorKind.HTTP_5XX if code >= 500 else ErrorKind.HTTP_4XX
        return TargetError(kind, f"HTTP {code}", status_code=code)
    if isinstance(cause, RetryLater):
        return TargetError(ErrorKind.CONNECTION, str(cause))
    if isinstance(cause, openai.OpenAIError | ValueError):
        return TargetError(ErrorKind.BAD_PAYLOAD, f"{type(cause).__name__}: {cause}")
    return TargetError(ErrorKind.EXCEPTION, f"{type(exc).__name__}: {exc}")
