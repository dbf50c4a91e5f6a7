"""The one way groundwatch talks to a chat model: the ``openai`` SDK, limited, retried, counted.

Any OpenAI-compatible server works (``base_url``). Every call passes a concurrency limit (a
semaphore) and a token-bucket rate limit, and is retried with exponential backoff and jitter on
429, 5xx, timeouts and connection errors — the SDK's own retries are switched off so that there is
exactly one retry policy and every 429 is counted. Everything is plain ``async``: the client runs
inside whatever event loop the caller already has (a service, a notebook, pytest), and never calls
``asyncio.run`` or patches the loop.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from groundwatch.adapters.throttle import TokenBucket

if TYPE_CHECKING:
    # the SDK is imported when a client is first made (~15 MB): a run whose judge asks no LLM
    # never loads it
    from openai import AsyncOpenAI
from groundwatch.errors import BudgetExhausted, ConfigError, GroundwatchError
from groundwatch.secrets import reject_placeholder

log = logging.getLogger(__name__)


class LlmError(GroundwatchError):
    """The model could not be reached or kept failing after every retry."""


class LlmBudgetExhausted(LlmError, BudgetExhausted):
    """The run's LLM budget (``--max-llm-calls`` / ``GW_LLM_BUDGET``) is spent: nothing was
    sent. What the model would have decided stays undecided."""


#: USD per million (prompt, completion) tokens, as OpenAI listed them in 2025. ``GW_LLM_PRICES``
#: adds or replaces models (a local server's model has no price: its spend is counted in tokens).
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-3.5-turbo": (0.50, 1.50),
}


class LlmSettings(BaseSettings):
    """Connection and limits of the judge's LLM (``GW_LLM_*``)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_LLM_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    base_url: str | None = Field(
        None, description="OpenAI-compatible API base URL, e.g. http://vllm:8000/v1; None = OpenAI."
    )
    api_key: SecretStr | None = Field(None, description="API key (local servers accept any).")
    model: str = Field("gpt-4o-mini", min_length=1, description="Model name sent with each call.")
    timeout: float = Field(30.0, gt=0, le=600, description="Deadline of one attempt, seconds.")
    max_concurrency: int = Field(8, ge=1, le=1024, description="Calls in flight at once.")
    requests_per_second: float = Field(
        5.0, ge=0, description="Token-bucket rate of attempts (retries included); 0 = no limit."
    )
    burst: int | None = Field(None, ge=1, description="Bucket depth; default: max_concurrency.")
    max_retries: int = Field(4, ge=0, le=20, description="Extra attempts on 429/5xx/timeouts.")
    backoff_initial: float = Field(0.5, ge=0, description="First backoff sleep, seconds.")
    backoff_max: float = Field(20.0, ge=0, description="Cap of one backoff sleep, seconds.")
    budget: int | None = Field(
        None,
        ge=0,
        description="Most LLM requests one run (a service: since it started) sends; then it"
        " stops asking and what the model would decide stays undecided. Unset: no limit.",
    )
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES),
        description="USD per million prompt and completion tokens by model, JSON"
        ' {"model": [prompt, completion]}, added to the built-in table (gpt-4o-mini, gpt-4o,'
        " gpt-4.1*): the cost in the run's estimate, the report and /metrics.",
    )

    @field_validator("prices", mode="before")
    @classmethod
    def _over_defaults(cls, v: Any) -> Any:
        if isinstance(v, str):
            import json

            v = json.loads(v)
        return {**DEFAULT_PRICES, **v} if isinstance(v, dict) else v

    @property
    def price(self) -> tuple[float, float] | None:
        """USD per million (prompt, completion) tokens of ``model``; None when unknown."""
        return self.prices.get(self.model)

    @field_validator("api_key")
    @classmethod
    def _no_placeholder(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None:
            reject_placeholder(v.get_secret_value())
        return v

    @property
    def configured(self) -> bool:
        """Whether a model can be reached at all: a server (``GW_LLM_BASE_URL``) or an OpenAI
        key (``GW_LLM_API_KEY``). Without either every call would fail only after its retries
        (a 401 from OpenAI, tens of seconds per item), so a feature that needs the model refuses
        to start instead (:meth:`require`)."""
        return self.base_url is not None or self.api_key is not None

    def require(self, feature: str) -> LlmSettings:
        """These settings, or a :class:`ConfigError` saying that ``feature`` needs a model."""
        if not self.configured:
            raise ConfigError(
                f"{feature} needs an LLM, and none is configured: set GW_LLM_BASE_URL (any"
                " OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1) or GW_LLM_API_KEY"
                " (OpenAI), and GW_LLM_MODEL"
            )
        return self


@dataclass
class LlmCounters:
    """What the client has spent and suffered, for metrics and the dry-run comparison."""

    calls: int = 0  # successful API responses
    attempts: int = 0  # requests sent, retries included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0  # calls that failed after every retry
    rate_limited: int = 0  # 429 responses
    retries: int = 0
    timeouts: int = 0

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class LlmLedger:
    """What the evaluation's LLM calls cost, and the budget they are held to.

    One ledger is shared by every client of a run (the judge's tier, its evaluators, the
    data-quality reader), so ``max_calls`` bounds the run, not each feature. A request counts
    when it is sent (retries included: a retried 429 is a request too); ``refused`` counts those
    the budget stopped."""

    max_calls: int | None = None
    calls: int = 0
    refused: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    #: requests of a model with no price in the table (their cost is not in ``cost_usd``)
    unpriced: int = 0

    def take(self) -> bool:
        """One request's permit; False when the budget is spent."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            self.refused += 1
            return False
        self.calls += 1
        return True

    def spend(self, prompt: int, completion: int, price: tuple[float, float] | None) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        if price is None:
            self.unpriced += 1
        else:
            self.cost_usd += (prompt * price[0] + completion * price[1]) / 1e6

    @property
    def exhausted(self) -> bool:
        return self.max_calls is not None and self.calls >= self.max_calls

    def snapshot(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "refused": self.refused,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "unpriced": self.unpriced,
        }


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408
    return isinstance(exc, openai.APITimeoutError | openai.APIConnectionError)


def _retry_after(exc: BaseException | None) -> float | None:
    """The server's ``Retry-After`` (seconds), when a 429/503 carries one."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return None
    raw = exc.response.headers.get("retry-after")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


class _PerLoop:
    """Client, semaphore and bucket of one event loop.

    asyncio primitives and the SDK's HTTP connection pool belong to the loop they were made in;
    a library used from a service, a CLI's ``asyncio.run`` and a test runner's loops in turn must
    not carry them across.
    """

    def __init__(self, settings: LlmSettings, client: AsyncOpenAI | None) -> None:
        self.loop = asyncio.get_running_loop()
        self.semaphore = asyncio.Semaphore(settings.max_concurrency)
        rate = settings.requests_per_second
        depth = settings.burst or settings.max_concurrency
        self.bucket = TokenBucket(rate, depth) if rate > 0 else None
        from openai import AsyncOpenAI

        self.client = client or AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key.get_secret_value() if settings.api_key else "unused",
            timeout=settings.timeout,
            max_retries=0,  # one retry policy: ours, so every 429 is seen and counted
        )


class LlmClient:
    """Chat completions through ``AsyncOpenAI`` with limits, retries and counters.

    Construct it anywhere (no loop needed); the SDK client and the limits are made on first use
    inside the running loop. An injected ``client`` is used as is, in whatever loop calls it.
    """

    def __init__(
        self,
        settings: LlmSettings,
        *,
        client: AsyncOpenAI | None = None,
        ledger: LlmLedger | None = None,
    ) -> None:
        self.settings = settings
        self.model = settings.model
        self.counters = LlmCounters()
        #: spend and budget; pass one ledger to every client a run makes
        self.ledger = ledger if ledger is not None else LlmLedger(settings.budget)
        self._injected = client
        self._per_loop: _PerLoop | None = None
        base_wait = wait_exponential_jitter(
            multiplier=settings.backoff_initial,
            max=settings.backoff_max,
            jitter=settings.backoff_initial,
        )

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            hinted = _retry_after(exc)
            w = float(base_wait(state))
            return min(max(w, hinted), settings.backoff_max) if hinted is not None else w

        self._wait = wait

    def _loop_parts(self) -> _PerLoop:
        loop = asyncio.get_running_loop()
        if self._per_loop is None or self._per_loop.loop is not loop:
            self._per_loop = _PerLoop(self.settings, self._injected)
        return self._per_loop

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        """``n`` completions of one prompt (an empty system prompt sends only the user message).

        Servers that ignore ``n`` are asked again until ``n`` answers are collected. Raises
        :class:`LlmError` when the call still fails after every retry.
        """
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": user})
        out: list[str] = []
        for _ in range(n):  # bounded: at most n requests even if the server returns 1 each time
            out.extend(await self._create(messages, temperature, n - len(out), max_tokens))
            if len(out) >= n:
                break
        return out[:n]

    async def _create(
        self,
        messages: list[dict[str, str]],
        temperature: float,
        n: int,
        max_tokens: int | None,
    ) -> list[str]:
        limits = self._loop_parts()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
        }
        if n != 1:
            kwargs["n"] = n
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        import openai  # loaded with the first client (_PerLoop)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if self.ledger.exhausted:  # before the rate limit: a refusal never waits
                        self.ledger.refused += 1
                        self._refuse()
                    if limits.bucket is not None:
                        await limits.bucket.acquire()
                    async with limits.semaphore:
                        if not self.ledger.take():
                            self._refuse()
                        self.counters.attempts += 1
                        try:
                            resp = await limits.client.chat.completions.create(**kwargs)
                        except openai.APIStatusError as exc:
                            if exc.status_code == 429:
                                self.counters.rate_limited += 1
                            raise
                        except openai.APITimeoutError:
                            self.counters.timeouts += 1
                            raise
        except (openai.OpenAIError, TimeoutError, ValueError) as exc:
            # ValueError: a body that is not JSON (a broken proxy) is not retried, only reported
            self.counters.errors += 1
            raise LlmError(f"LLM call to {self.model} failed: {type(exc).__name__}: {exc}") from exc
        self.counters.calls += 1
        if resp.usage is not None:
            prompt, completion = resp.usage.prompt_tokens or 0, resp.usage.completion_tokens or 0
            self.counters.prompt_tokens += prompt
            self.counters.completion_tokens += completion
            self.ledger.spend(prompt, completion, self.settings.price)
        return [(c.message.content or "") if c.message else "" for c in resp.choices or []]

    def _refuse(self) -> NoReturn:
        """A request the budget stops (``LlmLedger.refused`` counts it)."""
        raise LlmBudgetExhausted(
            f"the LLM budget of {self.ledger.max_calls} calls is spent"
            " (--max-llm-calls / GW_LLM_BUDGET): not asked"
        )

    def _before_sleep(self, state: RetryCallState) -> None:
        self.counters.retries += 1
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "LLM attempt %d failed (%s); retrying", state.attempt_number, type(exc).__name__
        )

    async def aclose(self) -> None:
        """Close the SDK client this loop made (an injected client is its owner's to close)."""
        parts, self._per_loop = self._per_loop, None
        if parts is None or self._injected is not None:
            return
        if parts.loop is asyncio.get_running_loop():
            await parts.client.close()
