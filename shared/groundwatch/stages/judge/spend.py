"""The LLM calls a run will make, and what they cost, said before it starts.

With the defaults one ``run --once`` over a small dataset with the reference-free evaluators on
every probe made 3,939 calls and had not finished after 500 s, and nothing had warned. Before a
run ``groundwatch run`` prints this estimate: per feature, how many calls at most (the LLM tier
is asked only about what the rules leave undecided, so its figure is a bound, usually far above
what is spent) and, from the price table (``GW_LLM_PRICES``), what they cost at most. With a
budget (``--max-llm-calls`` / ``GW_LLM_BUDGET``) the run stops asking when it is spent.

Token counts are estimated from the prompts the features send (about four characters a token),
with the dataset's own questions and answers: an estimate to decide with, not an invoice —
the report and ``/metrics`` give what was actually spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from groundwatch.core.model import SemanticGroup
from groundwatch.core.scores import RAGAS_FACT, SELFCHECK
from groundwatch.core.tagging import FACTUAL
from groundwatch.stages.judge.evaluators import (
    CLAIMS_PROMPT,
    RAGAS_NLI_PROMPT,
    SELFCHECK_QA_PROMPT,
)
from groundwatch.stages.judge.llm_metrics import (
    ANSWER_CORRECTNESS_PROMPT,
    ANSWER_RELEVANCE_PROMPT,
    CONTEXT_RELEVANCE_PROMPT,
)
from groundwatch.stages.judge.llm_tier import render_prompt
from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
from groundwatch.stages.judge.semantic import (
    ANSWER_CORRECTNESS,
    ANSWER_RELEVANCE,
    CONTEXT_RELEVANCE,
    SemanticSettings,
)
from groundwatch.stages.judge.tiered import JudgeSettings

#: Characters per token of English text, the usual rule of thumb for GPT tokenizers.
CHARS_PER_TOKEN = 4.0
#: Statements RAGAS-Fact expects in a short factual answer (one NLI call each).
RAGAS_CLAIMS = 2
#: RAGProbe metrics asked of the LLM per scenario probe at most.
RAGPROBE_METRICS = 4
#: Context characters an NLI prompt carries (the target's contexts, cut to 12,000).
CONTEXT_CHARS = 1500


@dataclass(frozen=True)
class FeatureCalls:
    """One feature's calls: ``calls`` at most, each with about these many tokens."""

    feature: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    bound: bool  # True: an upper bound (depends on what the rules decide); False: expected


@dataclass
class LlmEstimate:
    """Calls and cost of a run, by feature."""

    features: list[FeatureCalls] = field(default_factory=list)
    model: str = ""
    price: tuple[float, float] | None = None
    budget: int | None = None

    @property
    def calls(self) -> int:
        return sum(f.calls for f in self.features)

    @property
    def prompt_tokens(self) -> int:
        return sum(f.calls * f.prompt_tokens for f in self.features)

    @property
    def completion_tokens(self) -> int:
        return sum(f.calls * f.completion_tokens for f in self.features)

    @property
    def cost_usd(self) -> float | None:
        if self.price is None:
            return None
        return (self.prompt_tokens * self.price[0] + self.completion_tokens * self.price[1]) / 1e6

    def lines(self) -> list[str]:
        """What ``run`` prints: the total, the features, the cost and the budget."""
        if not self.features:
            return []
        parts = ", ".join(
            f"{f.feature} {'≤ ' if f.bound else ''}{f.calls:,}" for f in self.features if f.calls
        )
        out = [f"LLM calls this run: at most {self.calls:,} ({parts or 'none'})"]
        cost = self.cost_usd
        tokens = f"≈ {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens"
        if cost is not None:
            out.append(f"LLM cost at {self.model} prices: at most ≈ ${cost:,.2f} ({tokens})")
        else:
            out.append(
                f"LLM cost: {tokens}; no price for model {self.model!r} (add it to"
                ' GW_LLM_PRICES as {"model": [USD per 1M prompt, per 1M completion tokens]})'
            )
        if self.budget is not None:
            stops = (
                f"; it stops the run's LLM use after {self.budget:,} of them: the rest stays"
                " undecided"
                if self.budget < self.calls
                else ""
            )
            out.append(f"LLM budget: {self.budget:,} calls{stops}")
        return out


def _tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN))


def estimate_llm_calls(
    groups: Sequence[SemanticGroup],
    targets: int,
    *,
    judge: JudgeSettings,
    reference_free: ReferenceFreeSettings | None,
    cycles: int = 1,
    sample: int = 0,
    sampled_targets: int | None = None,
    semantic: SemanticSettings | None = None,
    extra: Sequence[FeatureCalls] = (),
    model: str = "",
    price: tuple[float, float] | None = None,
    budget: int | None = None,
) -> LlmEstimate:
    """The LLM calls of ``cycles`` cycles over ``groups`` for ``targets`` targets (``sample``
    groups per cycle when set) with the judge and evaluators configured; ``sampled_targets`` of
    the targets can be sampled for SelfCheck (default: all); ``extra`` adds other features'
    calls per cycle."""
    # one pass, keeping only counts: a dataset streamed from its file is never held whole
    n_groups = factual_forms = scenario_forms = gold_chars = 0
    query = ""
    for g in groups:
        n_groups += 1
        if g.scenario != FACTUAL:
            scenario_forms += len(g.forms)
            continue
        factual_forms += len(g.forms)
        gold_chars += len(", ".join(g.answer.values)) * len(g.forms)
        for f in g.forms:
            if len(f.text) > len(query):
                query = f.text
    share_of_groups = min(1.0, sample / n_groups) if sample and n_groups else 1.0

    def probes(forms: int) -> int:
        return round(forms * targets * cycles * share_of_groups)

    n_factual, n_scenario = probes(factual_forms), probes(scenario_forms)
    query = query[:300]
    gold = gold_chars // factual_forms if factual_forms else 0
    answer = "x" * max(20, 3 * gold)  # answers run longer than their gold value
    out = LlmEstimate(model=model, price=price, budget=budget)
    if judge.uses_llm:
        judge_prompt = _tokens(render_prompt(query, "x" * gold, answer))
        out.features.append(FeatureCalls("LLM judge tier", n_factual, judge_prompt, 5, True))
        if judge.audit_share > 0:
            audited = round(n_factual * judge.audit_share)
            out.features.append(FeatureCalls("self-audit", audited, judge_prompt, 5, True))
        if n_scenario:
            ragprobe = RAGPROBE_METRICS * n_scenario
            out.features.append(FeatureCalls("RAGProbe metrics", ragprobe, judge_prompt, 5, True))
    rf = reference_free
    if rf is not None and rf.reference_free:
        picked = round(n_factual * rf.reference_free_share)
        if RAGAS_FACT in rf.reference_free:
            claims = _tokens(CLAIMS_PROMPT + query + answer)
            nli = _tokens(RAGAS_NLI_PROMPT + "x" * CONTEXT_CHARS + answer)
            per_probe = 1 + RAGAS_CLAIMS
            avg = (claims + RAGAS_CLAIMS * nli) // per_probe
            out.features.append(FeatureCalls("RAGAS-Fact", picked * per_probe, avg, 20, False))
        if SELFCHECK in rf.reference_free:
            qa = _tokens(SELFCHECK_QA_PROMPT + query + 2 * answer)
            sampled = targets if sampled_targets is None else sampled_targets
            calls = round(picked * sampled / targets) * rf.selfcheck_samples if targets else 0
            out.features.append(FeatureCalls("SelfCheck", calls, qa, 3, False))
    if semantic is not None and semantic.llm_metrics:
        picked = round(n_factual * semantic.llm_metrics_share)
        prompts = {
            ANSWER_CORRECTNESS: _tokens(ANSWER_CORRECTNESS_PROMPT + query + answer) + gold // 4,
            ANSWER_RELEVANCE: _tokens(ANSWER_RELEVANCE_PROMPT + answer),
            CONTEXT_RELEVANCE: _tokens(CONTEXT_RELEVANCE_PROMPT + query + "x" * CONTEXT_CHARS),
        }
        for name in semantic.llm_metrics:
            bound = name == CONTEXT_RELEVANCE  # only answers that come with contexts
            out.features.append(FeatureCalls(name, picked, prompts[name], 60, bound))
    out.features.extend(
        FeatureCalls(
            f.feature, round(f.calls * cycles), f.prompt_tokens, f.completion_tokens, f.bound
        )
        for f in extra
    )
    return out
