"""The one bootstrap: what every entry point builds from settings — the judge, its LLM plan,
the runner's SelfCheck sampling — so the judge service, ``groundwatch run``, ``groundwatch demo``
and ``groundwatch.evaluate`` build each the same way.

The judge service, ``groundwatch run`` and ``groundwatch demo`` all judge with the same settings
(``GW_JUDGE_*``, ``GW_LLM_*``, ``GW_REFERENCE_FREE*``): without an LLM configured the rules
decide alone and what they leave undecided stays undecided (shown as coverage, never guessed);
with one, the LLM tier decides the rest, audits a share of the rules' verdicts, and the
reference-free evaluators run when named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
