"""The judge as every entry point builds it from the environment, and its telemetry (the
self-audit, the LLM spend).

The judge service, ``groundwatch run`` and ``groundwatch demo`` all judge with the same settings
(``GW_JUDGE_*``, ``GW_LLM_*``, ``GW_REFERENCE_FREE*``): without an LLM configured the rules
decide alone and what they leave undecided stays undecided (shown as coverage, never guessed);
with one, the LLM tier decides the rest, audits a share of the rules' verdicts, and the
reference-free evaluators run when named.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from groundwatch.adapters.llm.client import LlmLedger, LlmSettings
from groundwatch.core.model import SemanticGroup
from groundwatch.report.model import LlmSpend
from groundwatch.runtime.settings import load_settings
from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
from groundwatch.stages.judge.semantic import SemanticSettings
from groundwatch.stages.judge.spend import LlmEstimate, estimate_llm_calls
from groundwatch.stages.judge.tiered import JudgeSettings, TieredJudge, build_judge
from groundwatch.stages.runner.lanes import SelfCheckSampling


def load_judge(
    database_url: str | None = None, *, ledger: LlmLedger | None = None, **overrides: Any
) -> TieredJudge:
    """The judge the environment configures; the LLM client is made only when needed.
    ``overrides`` are ``JudgeSettings`` fields an entry point knows better (the demo's K is its
    reference RAG's top-k)."""
    settings = load_settings(JudgeSettings, **overrides)
    reference_free = load_settings(ReferenceFreeSettings)
    semantic = load_settings(SemanticSettings)
    needs_llm = (
        settings.uses_llm or bool(reference_free.reference_free) or bool(semantic.llm_metrics)
    )
    return build_judge(
        settings,
        llm_settings=(
            load_settings(LlmSettings).require(
                _feature(settings.uses_llm, bool(reference_free.reference_free))
            )
            if needs_llm
            else None
        ),
        database_url=database_url,
        reference_free=reference_free,
        ledger=ledger,
        semantic=semantic,
    )


def llm_plan(
    groups: Sequence[SemanticGroup],
    targets: int,
    *,
    cycles: int = 1,
    sample: int = 0,
    max_calls: int | None = None,
    sampled_targets: int | None = None,
) -> tuple[LlmLedger, LlmEstimate]:
    """The run's LLM ledger (its budget: ``max_calls``, else ``GW_LLM_BUDGET``) and the estimate
    of its calls and cost, from the settings the judge will be built with."""
    llm = load_settings(LlmSettings)
    budget = max_calls if max_calls is not None else llm.budget
    judge = load_settings(JudgeSettings)
    estimate = estimate_llm_calls(
        groups,
        targets,
        judge=judge,
        reference_free=load_settings(ReferenceFreeSettings),
        cycles=cycles,
        sample=sample,
        sampled_targets=sampled_targets,
        semantic=load_settings(SemanticSettings),
        model=llm.model,
        price=llm.price,
        budget=budget,
    )
    return LlmLedger(budget), estimate


def spend_of(ledger: LlmLedger, model: str) -> LlmSpend | None:
    """The report's LLM-spend section from the run's ledger (None when nothing was asked)."""
    if not ledger.calls and not ledger.refused:
        return None
    priced = ledger.unpriced == 0
    return LlmSpend(
        model=model,
        calls=ledger.calls,
        refused=ledger.refused,
        budget=ledger.max_calls,
        prompt_tokens=ledger.prompt_tokens,
        completion_tokens=ledger.completion_tokens,
        cost_usd=ledger.cost_usd if priced else None,
    )


def _feature(llm_tier: bool, reference_free: bool = True) -> str:
    if llm_tier:
        return "GW_JUDGE_LLM_ENABLED (the LLM judge tier)"
    if reference_free:
        return "GW_REFERENCE_FREE (the reference-free evaluators)"
    return "GW_LLM_METRICS (the LLM-derived answer metrics)"


def load_selfcheck_sampling() -> SelfCheckSampling | None:
    """The runner's SelfCheck sampling when ``GW_REFERENCE_FREE`` names selfcheck, else None."""
    rf = load_settings(ReferenceFreeSettings)
    if not rf.selfcheck:
        return None
    return SelfCheckSampling(rf.reference_free_share, rf.selfcheck_samples)


class AuditCollector(Collector):
    """``groundwatch_judge_audit_total{tier,agree}``: rule-decided answers the LLM tier was also
    asked about (the self-audit), by the rules tier that decided and whether the LLM agreed
    (``true``, ``false``, ``unknown`` when it could not tell). Read from the judge's counters at
    scrape time; bounded labels (tier names)."""

    def __init__(self, judge: TieredJudge) -> None:
        self._judge = judge

    def collect(self) -> Iterator[CounterMetricFamily]:
        fam = CounterMetricFamily(
            "groundwatch_judge_audit",
            "Rule-decided answers also judged by the LLM tier, by rules tier and agreement.",
            labels=["tier", "agree"],
        )
        for (tier, agree), n in sorted(self._judge.counters.audit.items()):
            fam.add_metric([tier, agree], float(n))
        yield fam
        rf = CounterMetricFamily(
            "groundwatch_reference_free_evaluations",
            "Responses the reference-free evaluators were run on, by evaluator.",
            labels=["evaluator"],
        )
        if self._judge.reference_free is not None:
            c = self._judge.reference_free.counters
            rf.add_metric(["ragas_fact"], float(c.ragas_fact))
            rf.add_metric(["selfcheck"], float(c.selfcheck))
        yield rf


class LlmSpendCollector(Collector):
    """The LLM's spend and health at scrape time: requests, tokens and their cost (from the
    price table), the budget and what it stopped, cache hits, 429s and failures. All zero when
    the judge runs rules only, so dashboards and alerts still find the series."""

    FIELDS: ClassVar[dict[str, tuple[str, str]]] = {
        "llm_cache_hits": ("groundwatch_llm_cache_hits", "LLM verdicts served from the cache."),
        "llm_client_rate_limited": ("groundwatch_llm_rate_limited", "HTTP 429 answers received."),
        "llm_client_errors": ("groundwatch_llm_errors", "LLM calls that failed after every retry."),
        "judge_errors": (
            "groundwatch_llm_judge_errors",
            "Unparseable or failed LLM verdicts (undecided, judge_error).",
        ),
    }

    def __init__(self, judge: TieredJudge) -> None:
        self._judge = judge

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = self._judge.snapshot()
        ledger = self._judge.ledger
        spend = ledger.snapshot() if ledger is not None else {}
        for name, doc, value in (
            ("groundwatch_llm_calls", "LLM requests sent, retries included.", spend.get("calls")),
            ("groundwatch_llm_prompt_tokens", "Prompt tokens spent.", spend.get("prompt_tokens")),
            (
                "groundwatch_llm_completion_tokens",
                "Completion tokens spent.",
                spend.get("completion_tokens"),
            ),
            (
                "groundwatch_llm_cost_usd",
                "What the LLM requests cost, from the price table (GW_LLM_PRICES).",
                spend.get("cost_usd"),
            ),
            (
                "groundwatch_llm_budget_refused",
                "LLM requests not sent because the budget (GW_LLM_BUDGET) was spent.",
                spend.get("refused"),
            ),
        ):
            fam = CounterMetricFamily(name, doc)
            fam.add_metric([], float(value or 0))
            yield fam
        for key, (name, doc) in self.FIELDS.items():
            fam = CounterMetricFamily(name, doc)
            fam.add_metric([], float(stats.get(key, 0)))
            yield fam


class LlmBudgetCollector(Collector):
    """``groundwatch_llm_budget_calls``: the budget (``GW_LLM_BUDGET``), when one is set."""

    def __init__(self, judge: TieredJudge) -> None:
        self._judge = judge

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ledger = self._judge.ledger
        if ledger is not None and ledger.max_calls is not None:
            budget = GaugeMetricFamily(
                "groundwatch_llm_budget_calls", "The LLM budget: requests allowed in all."
            )
            budget.add_metric([], float(ledger.max_calls))
            yield budget


def register_judge_telemetry(registry: CollectorRegistry, judge: TieredJudge) -> None:
    registry.register(AuditCollector(judge))
    registry.register(LlmSpendCollector(judge))
    registry.register(LlmBudgetCollector(judge))
