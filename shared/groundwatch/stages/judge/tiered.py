"""The tiered judge the judge service calls: deterministic tiers first, the LLM only if undecided.

Cheap rules decide most responses (dates as dates, numbers as numbers, containment, refusals);
an LLM call is spent only on what they leave ``undecided`` and only when the deployment enables
it. Tiers are configured per deployment with ``GW_JUDGE_TIERS`` (a comma list of
:data:`groundwatch.core.judging.TIERS` names, optionally ending in ``llm``) and
``GW_JUDGE_LLM_ENABLED``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from groundwatch.adapters.llm.cache import VerdictCache, cache_key
from groundwatch.adapters.llm.client import LlmClient, LlmLedger
from groundwatch.contracts import RagResponse
from groundwatch.core.answer_scoring import DEFAULT_K
from groundwatch.core.judging import (
    DEFAULT_TIERS,
    JUDGE_ERROR,
    Decision,
    judge_deterministic,
    validate_tiers,
)
from groundwatch.core.judging.gold import gold_key
from groundwatch.core.judging.memo import Memo
from groundwatch.core.llm import estimate_tokens
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.ragprobe_metrics import (
    MetricResult,
    RagProbeMetric,
    deterministic_metrics,
    probe_verdict,
)
from groundwatch.core.sampling import in_share
from groundwatch.core.scores import AuditScore, RagProbeOutcomes, Scores
from groundwatch.errors import ConfigError
from groundwatch.stages.judge.llm_tier import (
    PROMPT_VERSION,
    LlmJudge,
    render_prompt,
)
from groundwatch.stages.judge.ragprobe_llm import RagProbeJudge
from groundwatch.stages.judge.reference_free import ReferenceFreeJudge, ReferenceFreeSettings
from groundwatch.stages.judge.semantic import SemanticScorer, SemanticSettings, build_semantic
from groundwatch.stages.judge.stage import (
    Annotator,
    AnswerScorer,
    JudgeFn,
    JudgeStage,
    ScenarioJudgeFn,
)

LLM_TIER = "llm"
#: Tiers of a RAGProbe scenario probe: its metrics decided by the rules only, or with the LLM.
RAGPROBE_TIER = "ragprobe"
RAGPROBE_LLM_TIER = "ragprobe_llm"
#: What one verdict costs in completion tokens ("Correct" / "Incorrect" and an end token or two).
VERDICT_TOKENS = 3

#: The "true answer" the GRAMMAR prompt gets for an unanswerable probe (RAGProbe S6).
UNANSWERABLE_GOLD = (
    "The documents do not contain the answer; only a response that explicitly says it does not "
    "know or cannot answer, and does not go on to answer the question anyway, is correct."
)


class JudgeSettings(BaseSettings):
    """Which tiers run, in order, and whether the LLM tier may spend calls (``GW_JUDGE_*``)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_JUDGE_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    tiers: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: [*DEFAULT_TIERS, LLM_TIER],
        description="Tier order, comma separated; 'llm' may only come last.",
    )
    llm_enabled: bool = Field(False, description="Ask the LLM about what stays undecided.")
    llm_cache: bool = Field(True, description="Cache LLM verdicts in the database.")
    audit_share: float = Field(
        0.02,
        ge=0.0,
        le=1.0,
        description=(
            "Share of rule-decided answers also asked of the LLM tier (self-audit of the rules;"
            " needs the LLM tier)."
        ),
    )
    answer_metrics: bool = Field(
        True,
        description=(
            "Score every answer: EM, token F1, ROUGE-L, BLEU against the SQL gold; Recall,"
            " Precision, AP, RR, nDCG at K when the target reports retrieved ids."
        ),
    )
    metrics_k: int = Field(
        DEFAULT_K, ge=1, le=1000, description="K of Recall, Precision, AP and nDCG@K."
    )

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
    """Judgements by tier and verdict, and the self-audit by rules tier and agreement, for the
    service's metrics."""

    judgements: int = 0
    by_tier: Counter[str] = field(default_factory=Counter)
    by_verdict: Counter[str] = field(default_factory=Counter)
    judge_errors: int = 0
    #: (rules tier, "true" | "false" | "unknown") → audited answers
    audit: Counter[tuple[str, str]] = field(default_factory=Counter)

    def record(self, d: Decision) -> None:
        self.judgements += 1
        self.by_tier[d.tier] += 1
        self.by_verdict[d.verdict.value] += 1
        # d.code == JUDGE_ERROR without splitting every reason
        reason = d.reason
        if reason.startswith(JUDGE_ERROR) and (
            len(reason) == len(JUDGE_ERROR) or reason[len(JUDGE_ERROR)] == ":"
        ):
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
    """Deterministic tiers, then (optionally) the cached LLM tier. Safe to share across tasks.

    With the LLM tier on, ``audit_share`` of the answers the rules decided are asked of the LLM
    as well (the self-audit): the rules' verdict stands, and whether the LLM agreed travels with
    the judgement (its scores' ``audit``) so that the report and ``/metrics`` show when
    the rules drift on an endpoint's phrasing. Which answers are audited is a hash of (query,
    gold, response): reproducible, and a repeated answer is a cache hit, not a new call.
    """

    def __init__(
        self,
        settings: JudgeSettings | None = None,
        llm: LlmJudge | None = None,
        *,
        reference_free: ReferenceFreeJudge | None = None,
        semantic: SemanticScorer | None = None,
    ) -> None:
        # model_construct: the defaults without reading GW_JUDGE_* (only entry points read the
        # environment; a service passes the settings it loaded)
        self.settings = settings or JudgeSettings.model_construct()
        self.llm = llm if self.settings.uses_llm else None
        self._tiers = self.settings.deterministic_tiers
        self._audit_share = self.settings.audit_share
        self.counters = JudgeCounters()
        #: the rules' decisions by (question, gold, answer): pure, so repeats are lookups
        self.rules_memo: Memo[Decision] = Memo()
        self._ragprobe = (
            RagProbeJudge(self.llm.client, self.llm.cache) if self.llm is not None else None
        )
        self.reference_free = reference_free
        #: Oro et al.'s semantic and LLM-derived answer metrics (None: none configured)
        self.semantic = semantic
        self.scorer = (
            AnswerScorer(self.settings.metrics_k) if self.settings.answer_metrics else None
        )

    def stage(
        self,
        *,
        concurrency: int = 64,
        wrap: Callable[[JudgeFn], JudgeFn] | None = None,
        wrap_scenario: Callable[[ScenarioJudgeFn], ScenarioJudgeFn] | None = None,
    ) -> JudgeStage:
        """The judge stage over this judge: factual probes to :meth:`judge`, scenario probes to
        :meth:`judge_scenario`, answer metrics and reference-free evaluators on each response.
        ``wrap``/``wrap_scenario`` instrument the two (the judge service's metrics)."""
        judge: JudgeFn = self.judge
        scenario: ScenarioJudgeFn = self.judge_scenario
        return JudgeStage(
            wrap(judge) if wrap else judge,
            concurrency=concurrency,
            scenario_judge=wrap_scenario(scenario) if wrap_scenario else scenario,
            scorer=self.scorer,
            annotate=self._annotate(),
        )

    def _annotate(self) -> Annotator | None:
        """The reference-free evaluators and the semantic metrics as one annotator."""
        parts = [a for a in (self.reference_free, self.semantic) if a is not None]
        if len(parts) <= 1:
            return parts[0] if parts else None

        async def both(response: RagResponse, decision: Decision) -> Scores:
            first, second = await asyncio.gather(*(a(response, decision) for a in parts))
            return first.merged(second)

        return both

    @property
    def describe(self) -> str:
        """One line for a person starting a run: what decides a verdict."""
        if self.llm is None:
            rf = ""
            if self.reference_free is not None:
                rf = f"; reference-free: {', '.join(self.reference_free.settings.reference_free)}"
            return (
                "judge: rules only (no LLM tier configured); what they leave undecided is shown"
                f" as undecided and in the coverage{rf}{self._metrics_note}"
            )
        audit = f", {self._audit_share:.0%} of rule-decided answers audited by it"
        extra = ""
        if self.reference_free is not None:
            rfs = self.reference_free.settings
            extra = (
                f"; reference-free: {', '.join(rfs.reference_free)} on"
                f" {rfs.reference_free_share:.0%} of factual probes"
            )
        return (
            f"judge: rules, then the LLM tier ({self.llm.client.model}){audit}{extra}"
            f"{self._metrics_note}"
        )

    @property
    def _metrics_note(self) -> str:
        return self.semantic.describe if self.semantic is not None else ""

    async def judge(self, query: str, expected: Expected, response: str | None) -> Decision:
        key = (query, gold_key(expected), response)
        rules = self.rules_memo.get(key)
        if rules is None:
            rules = judge_deterministic(query, expected, response, tiers=self._tiers)
            self.rules_memo.put(key, rules)
        # a copy: callers replace the scores, the memo's decision must not change (the scores
        # themselves are immutable, so they are shared)
        decision = Decision.made(rules.verdict, rules.tier, rules.reason, rules.scores)
        if self.llm is not None and response:
            if decision.verdict is Verdict.UNDECIDED:
                decision = await self._llm_decides(query, expected, response, decision)
            elif self._audit_share > 0 and self._audited(query, expected, response):
                decision = await self._audit(query, expected, response, decision)
        self.counters.record(decision)
        return decision

    async def _llm_decides(
        self, query: str, expected: Expected, response: str, rules: Decision
    ) -> Decision:
        assert self.llm is not None
        llm_decision = await self.llm.judge(query, gold_text(expected), response)
        # keep what the rules saw next to what the LLM said
        scores = llm_decision.scores.merged(rules.scores)
        return Decision(
            llm_decision.verdict,
            llm_decision.tier,
            f"{llm_decision.reason}; rules: {rules.reason}",
            scores,
            llm_decision.prompt_version,
        )

    def _audited(self, query: str, expected: Expected, response: str) -> bool:
        assert self.llm is not None
        return in_share(self.llm.key(query, gold_text(expected), response), self._audit_share)

    async def _audit(
        self, query: str, expected: Expected, response: str, rules: Decision
    ) -> Decision:
        assert self.llm is not None
        second = await self.llm.judge(query, gold_text(expected), response)
        agree: bool | None = None
        if second.verdict is Verdict.CORRECT or second.verdict is Verdict.INCORRECT:
            agree = second.verdict is rules.verdict
        label = "unknown" if agree is None else str(agree).lower()
        self.counters.audit[(rules.tier, label)] += 1
        said = {
            None: f"could not tell ({second.code})",
            True: "agrees",
            False: f"disagrees ({second.verdict.value})",
        }[agree]
        return Decision(
            rules.verdict,
            rules.tier,
            f"{rules.reason}; audit: the LLM {said}",
            rules.scores.merged(Scores(audit=AuditScore(rules.tier, agree))),
            rules.prompt_version,
        )

    async def judge_scenario(
        self, scenario: str, query: str, expected: Expected, response: str | None
    ) -> Decision:
        """A RAGProbe scenario probe on its scenario's metrics (RAGProbe §3.1): the rules decide
        what they can, the LLM (when configured) what they leave open; the probe fails if any
        metric fails, passes if all pass, and is undecided otherwise. Each metric's outcome
        travels in the judgement's scores (``ragprobe``: passed, failed or open)."""
        asked = False
        if self._ragprobe is not None:
            evaluation = await self._ragprobe.evaluate(scenario, query, expected, response)
            results = evaluation.metrics
            asked = evaluation.llm_calls + evaluation.cache_hits + len(evaluation.judge_errors) > 0
            verdict = evaluation.verdict
        else:
            results = deterministic_metrics(scenario, query, expected, response)
            verdict = probe_verdict({m: r.passed for m, r in results.items()})
        decision = Decision(
            verdict,
            RAGPROBE_LLM_TIER if asked else RAGPROBE_TIER,
            _ragprobe_reason(verdict, results),
            Scores(ragprobe=RagProbeOutcomes.of({m: r.passed for m, r in results.items()})),
            self._ragprobe.prompt_version if asked and self._ragprobe is not None else None,
        )
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

    @property
    def ledger(self) -> LlmLedger | None:
        """The LLM spend of this judge's client (the LLM tier's or the evaluators'), if any."""
        for client in (
            self.llm.client if self.llm is not None else None,
            self.reference_free.client if self.reference_free is not None else None,
            self.semantic.client if self.semantic is not None else None,
        ):
            ledger = getattr(client, "ledger", None)
            if isinstance(ledger, LlmLedger):
                return ledger
        return None

    def snapshot(self) -> dict[str, float]:
        """Flat counters (judge, self-audit, LLM tier, LLM client) for metrics and logs."""
        out: dict[str, float] = {
            "judgements": self.counters.judgements,
            "judge_errors": self.counters.judge_errors,
        }
        out.update({f"tier_{k}": v for k, v in self.counters.by_tier.items()})
        out.update({f"verdict_{k}": v for k, v in self.counters.by_verdict.items()})
        out.update({f"audit_{t}_{a}": n for (t, a), n in self.counters.audit.items()})
        if self.llm is not None:
            out.update({f"llm_{k}": v for k, v in self.llm.counters.snapshot().items()})
            client_counters = getattr(self.llm.client, "counters", None)
            if client_counters is not None:
                out.update({f"llm_client_{k}": v for k, v in client_counters.snapshot().items()})
        return out

    async def aclose(self) -> None:
        clients = [c.client for c in (self.llm, self.reference_free) if c is not None]
        for client in {id(c): c for c in clients}.values():
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()


def _ragprobe_reason(verdict: Verdict, results: dict[RagProbeMetric, MetricResult]) -> str:
    failed = [m.value for m, r in results.items() if r.passed is False]
    open_ = [m.value for m, r in results.items() if r.passed is None]
    if failed:
        first = next(r for r in results.values() if r.passed is False)
        return f"ragprobe_failed: {', '.join(failed)} ({first.reason[:200]})"
    if open_:
        return f"ragprobe_open: {', '.join(open_)} (no reader decided)"
    return f"ragprobe_passed: {', '.join(m.value for m in results)}"


def build_judge(
    settings: JudgeSettings,
    *,
    client: LlmClient | None = None,
    cache: VerdictCache | None = None,
    reference_free: ReferenceFreeSettings | None = None,
    semantic: SemanticSettings | None = None,
) -> TieredJudge:
    """The judge a service runs, from settings its entry point loaded (``GW_JUDGE_*``,
    ``GW_REFERENCE_FREE*``, ``GW_SEMANTIC_*``/``GW_LLM_METRICS*``) and what the composition root
    (:mod:`groundwatch.app.bootstrap`) made for it: the LLM ``client`` and the LLM tier's verdict
    ``cache``. A rules-only judge is given neither, so it needs neither network nor database.
    """
    wants_rf = reference_free is not None and bool(reference_free.reference_free)
    wants_metrics = semantic is not None and bool(semantic.llm_metrics)
    if not settings.uses_llm and not wants_rf and not wants_metrics:
        scorer = build_semantic(semantic) if semantic is not None else None
        return TieredJudge(settings, semantic=scorer)
    if client is None:
        what = (
            "GW_JUDGE_LLM_ENABLED: the LLM tier is on"
            if settings.uses_llm
            else "GW_REFERENCE_FREE: reference-free evaluators are on"
            if wants_rf
            else "GW_LLM_METRICS: LLM-derived answer metrics are on"
        )
        raise ConfigError(f"{what} but no LLM settings (GW_LLM_*) were given")
    scorer = build_semantic(semantic, client) if semantic is not None else None
    rf_judge = (
        ReferenceFreeJudge(reference_free, client)
        if wants_rf and reference_free is not None
        else None
    )
    if not settings.uses_llm:
        return TieredJudge(settings, reference_free=rf_judge, semantic=scorer)
    return TieredJudge(settings, LlmJudge(client, cache), reference_free=rf_judge, semantic=scorer)
