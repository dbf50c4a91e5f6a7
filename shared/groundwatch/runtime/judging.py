"""The judge as every entry point builds it from the environment, and its self-audit metrics.

The judge service, ``groundwatch run`` and ``groundwatch demo`` all judge with the same settings
(``GW_JUDGE_*``, ``GW_LLM_*``, ``GW_REFERENCE_FREE*``): without an LLM configured the rules
decide alone and what they leave undecided stays undecided (shown as coverage, never guessed);
with one, the LLM tier decides the rest, audits a share of the rules' verdicts, and the
reference-free evaluators run when named.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from groundwatch.adapters.llm.client import LlmSettings
from groundwatch.runtime.settings import load_settings
from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
from groundwatch.stages.judge.tiered import JudgeSettings, TieredJudge, build_judge
from groundwatch.stages.runner.lanes import SelfCheckSampling


def load_judge(database_url: str | None = None, **overrides: Any) -> TieredJudge:
    """The judge the environment configures; the LLM client is made only when needed.
    ``overrides`` are ``JudgeSettings`` fields an entry point knows better (the demo's K is its
    reference RAG's top-k)."""
    settings = load_settings(JudgeSettings, **overrides)
    reference_free = load_settings(ReferenceFreeSettings)
    needs_llm = settings.uses_llm or bool(reference_free.reference_free)
    return build_judge(
        settings,
        llm_settings=(
            load_settings(LlmSettings).require(_feature(settings.uses_llm)) if needs_llm else None
        ),
        database_url=database_url,
        reference_free=reference_free,
    )


def _feature(llm_tier: bool) -> str:
    if llm_tier:
        return "GW_JUDGE_LLM_ENABLED (the LLM judge tier)"
    return "GW_REFERENCE_FREE (the reference-free evaluators)"


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


def register_judge_metrics(registry: CollectorRegistry, judge: TieredJudge) -> None:
    registry.register(AuditCollector(judge))
