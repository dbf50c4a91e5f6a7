"""The judge's telemetry (the self-audit, the LLM spend), read from the judge at scrape time (the
judge itself is built from the environment by :func:`groundwatch.app.bootstrap.load_judge`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from groundwatch.stages.judge.tiered import TieredJudge


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
