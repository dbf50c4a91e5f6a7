"""The tiered judge the judge service calls: deterministic tiers first, the LLM only if undecided.

Cheap rules decide most responses (dates as dates, numbers as numbers, containment, refusals);
an LLM call is spent only on what they leave ``undecided`` and only when the deployment enables
it. Tiers are configured per deployment with ``GW_JUDGE_TIERS`` (a comma list of
:data:`groundwatch.core.judging.TIERS` names, optionally ending in ``llm``) and
``GW_JUDGE_LLM_ENABLED``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from groundwatch.adapters.llm.cache import VerdictCache, cache_key
from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.adapters.llm.llm_judge import (
    PROMPT_VERSION,
    LlmJudge,
    estimate_tokens,
    render_prompt,
)
from groundwatch.core.judging import (
    DEFAULT_TIERS,
    JUDGE_ERROR,
    Decision,
    judge_deterministic,
    validate_tiers,
)
from groundwatch.core.model import Expected, Verdict
from groundwatch.errors import ConfigError

LLM_TIER = "llm"
#: What one verdict costs in completion tokens ("Correct" / "Incorrect" and an end token or two).
VERDICT_TOKENS = 3

#: The "true answer" the GRAMMAR prompt gets for an unanswerable probe (RAGProbe S6).
UNANSWERABLE_GOLD = (
    "The documents do not contain the answer; only a response that explicitly says it does not "
    "know or cannot answer, and does not go on to answer the question anyway, is correct."
)


class JudgeSettings(BaseSettings):
    """Which tiers run, in order, and whether the LLM tier may spend calls (``GW_JUDGE_*``)."""

    model_config = SettingsConfigDict(env_prefix="GW_JUDGE_", extra="ignore", env_file=None)

    tiers: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: [*DEFAULT_TIERS, LLM_TIER],
        description="Tier order, comma separated; 'llm' may only come last.",
    )
    llm_enabled: bool = Field(False, description="Ask the LLM about what stays undecided.")
    llm_cache: bool = Field(True, description="Cache LLM verdicts in the database.")

    @field_validator("tiers", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [t.strip() for t in v.split(",") if t.strip()]
        return v

    @field_validator("tiers")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        if LLM_TIER in v[:-1]:
            raise ValueError("'llm' can only be the last tier")
        validate_tiers([t for t in v if t != LLM_TIER])
        return v

    @property
    def deterministic_tiers(self) -> tuple[str, ...]:
        return tuple(t for t in self.tiers if t != LLM_TIER)

    @property
    def uses_llm(self) -> bool:
        return self.llm_enabled and LLM_TIER in self.tiers


@dataclass
class JudgeCounters:
    """Judgements by tier and verdict, for the service's metrics."""

    judgements: int = 0
    by_tier: Counter[str] = field(default_factory=Counter)
    by_verdict: Counter[str] = field(default_factory=Counter)
    judge_errors: int = 0

    def record(self, d: Decision) -> None:
        self.judgements += 1
        self.by_tier[d.tier] += 1
        self.by_verdict[d.verdict.value] += 1
        if d.code == JUDGE_ERROR:
            self.judge_errors += 1


def gold_text(expected: Expected) -> str:
    """The true answer as the GRAMMAR prompt shows it."""
    if not expected.answerable:
        return UNANSWERABLE_GOLD
    text = expected.text
    if expected.options:
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        for i, opt in enumerate(expected.options[: len(letters)]):
            if text.strip() in (letters[i], opt):
                return f"{letters[i]}) {opt}"
    return text


def estimate_llm_spend(
    items: Iterable[tuple[str, Expected, str | None]],
    tiers: Sequence[str] | None = None,
    *,
    model: str = "",
    prompt_version: str = PROMPT_VERSION,
) -> tuple[int, int]:
    """(LLM calls, tokens) the LLM tier would spend on ``items``, spending nothing.

    Runs the deterministic tiers for real (they are free) and counts the undecided items the LLM
    tier would be asked about, once per distinct cache key — repeats within the run would be cache
    hits. Verdicts already in the database cache are not looked up, so this is an upper bound.
    Tokens are estimated at ~4 characters per token (prompt + a one-word verdict).
    """
    keys: set[str] = set()
    tokens = 0
    for query, expected, response in items:
        if not response:
            continue
        d = judge_deterministic(query, expected, response, tiers=tiers)
        if d.verdict is not Verdict.UNDECIDED:
            continue
        gold = gold_text(expected)
        key = cache_key(query, gold, response, model, prompt_version)
        if key in keys:
            continue
        keys.add(key)
        tokens += estimate_tokens(render_prompt(query, gold, response)) + VERDICT_TOKENS
    return len(keys), tokens


class TieredJudge:
    """Deterministic tiers, then (optionally) the cached LLM tier. Safe to share across tasks."""

    def __init__(self, settings: JudgeSettings | None = None, llm: LlmJudge | None = None) -> None:
        # model_construct: the defaults without reading GW_JUDGE_* (only entry points read the
        # environment; a service passes the settings it loaded)
        self.settings = settings or JudgeSettings.model_construct()
        self.llm = llm if self.settings.uses_llm else None
        self._tiers = self.settings.deterministic_tiers
        self.counters = JudgeCounters()

    async def judge(self, query: str, expected: Expected, response: str | None) -> Decision:
        decision = judge_deterministic(query, expected, response, tiers=self._tiers)
        if decision.verdict is Verdict.UNDECIDED and self.llm is not None and response:
            llm_decision = await self.llm.judge(query, gold_text(expected), response)
            if llm_decision.verdict is Verdict.UNDECIDED:
                # keep what the rules saw next to why the LLM could not help
                llm_decision.scores.update(decision.scores)
                decision = Decision(
                    llm_decision.verdict,
                    llm_decision.tier,
                    f"{llm_decision.reason}; rules: {decision.reason}",
                    llm_decision.scores,
                    llm_decision.prompt_version,
                )
            else:
                llm_decision.scores.update(decision.scores)
                decision = llm_decision
        self.counters.record(decision)
        return decision

    def dry_run_estimate(
        self, items: Iterable[tuple[str, Expected, str | None]]
    ) -> tuple[int, int]:
        """(LLM calls, tokens) judging ``items`` would spend, without spending them.

        Zero when the LLM tier is disabled; otherwise :func:`estimate_llm_spend` with this
        judge's tiers, model and prompt version.
        """
        if self.llm is None:
            return 0, 0
        return estimate_llm_spend(
            items, self._tiers, model=self.llm.client.model, prompt_version=self.llm.prompt_version
        )

    def snapshot(self) -> dict[str, float]:
        """Flat counters (judge, LLM tier, LLM client) for metrics and logs."""
        out: dict[str, float] = {
            "judgements": self.counters.judgements,
            "judge_errors": self.counters.judge_errors,
        }
        out.update({f"tier_{k}": v for k, v in self.counters.by_tier.items()})
        out.update({f"verdict_{k}": v for k, v in self.counters.by_verdict.items()})
        if self.llm is not None:
            out.update({f"llm_{k}": v for k, v in self.llm.counters.snapshot().items()})
            client_counters = getattr(self.llm.client, "counters", None)
            if client_counters is not None:
                out.update({f"llm_client_{k}": v for k, v in client_counters.snapshot().items()})
        return out

    async def aclose(self) -> None:
        if self.llm is not None:
            close = getattr(self.llm.client, "aclose", None)
            if close is not None:
                await close()


def build_judge(
    settings: JudgeSettings,
    *,
    llm_settings: LlmSettings | None = None,
    database_url: str | None = None,
) -> TieredJudge:
    """The judge a service runs, from settings its entry point loaded (``GW_JUDGE_*``,
    ``GW_LLM_*``).

    The LLM client and the database engine for the verdict cache are made only when the LLM
    tier is enabled, so a rules-only judge needs neither network nor database.
    """
    if not settings.uses_llm:
        return TieredJudge(settings)
    if llm_settings is None:
        raise ConfigError("GW_JUDGE_LLM_ENABLED: the LLM tier is on but no LLM settings were given")
    cache: VerdictCache | None = None
    if settings.llm_cache and database_url:
        from groundwatch.adapters.db.engine import make_engine
        from groundwatch.adapters.llm.cache import SqlVerdictCache

        cache = SqlVerdictCache(make_engine(database_url))
    elif settings.llm_cache:
        from groundwatch.adapters.llm.cache import MemoryVerdictCache

        cache = MemoryVerdictCache()
    return TieredJudge(settings, LlmJudge(LlmClient(llm_settings), cache))
