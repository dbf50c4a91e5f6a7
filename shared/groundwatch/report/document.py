"""The group report as typed models: built once, read by every renderer (text, JSON, HTML, API).

Every number is a float/int or ``None`` when undefined (never NaN); every interval is a
``[low, high]`` pair or ``None``. Field names follow the papers (GRAMMAR §4.3: Acc_db, refined
accuracy R, λ; RAGProbe: failure rate per scenario). ``Report.model_dump(by_alias=True)`` is the
JSON document (``schema`` names its version), and FastAPI routes declare these models as their
``response_model`` so the OpenAPI document describes them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

#: Version 3 names the section of what the judge measured beside its verdicts ``scores`` (it was
#: ``judge_quality``).
SCHEMA = "groundwatch.report/3"

#: The columns of :meth:`Report.to_pandas`, in order.
FORM_COLUMNS = (
    "target", "group_id", "group_status", "knowledge_gap", "cohort", "cohort_status", "sql",
    "gold", "form_id", "question", "answer", "verdict", "tier", "reason", "cause", "error_kind",
    "flaky", "cycle", "run_id", "probe_id",
)  # fmt: skip

Interval = tuple[float, float] | None
"""A 95 % interval (Wilson for proportions) or ``None`` when the denominator is 0."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class FormsRange(_Model):
    """Fewest and most text forms per semantic group in one cohort (balanced when equal)."""

    min: int
    max: int


class CohortNumbers(_Model):
    """GRAMMAR's numbers for one (target, cohort).

    Every rate is over the same set, the *decided* groups (gap, robust, non-robust, flaky) and
    their forms, each form counted once (its latest verdict in the window): *examples* are their
    decisively judged forms (correct + incorrect), *groups* their number. Pending groups (no
    cycle complete yet) and unknown groups (no decided verdict: the target erred, the judge
    abstained) enter no rate; errors and undecided verdicts never count as wrong. ``coverage`` =
    decided forms / probed forms over every group: the share of the evidence the rates stand on.
    Each rate's denominator is a field beside it: Acc and λ over ``examples``, Acc_db over
    ``groups``, R over ``refined_n``, retrieval accuracy over ``retrieval_judged`` (examples whose
    retrieval could be judged, in any group; ``retrieval_coverage`` = judged / judged +
    inconclusive), refined retrieval accuracy over ``refined_retrieval_n``.
    """

    examples: int
    correct: int
    incorrect: int
    errors: int
    undecided: int
    probed: int = Field(0, description="Forms with any verdict (every group, each form once).")
    cycle_probes: int = Field(
        0, description="Probes of the target's newest cycle in this cohort (each form once)."
    )
    cycle_errors: int = Field(
        0,
        description="Of those, target errors: what target_error_share is over (an outage holds"
        " the groups' numbers, not this cycle's health).",
    )
    coverage: float | None = Field(None, description="Decided forms / probed forms.")
    groups: int = Field(
        description="Decided groups (gap + non-robust + robust + flaky), the rates' set; pending"
        " and unknown groups are not in it (see pending_groups, unknown_groups)."
    )
    gap_groups: int
    robust_groups: int
    non_robust_groups: int
    flaky_groups: int = Field(
        0, description="Gap or non-robust only through forms whose verdict flips (LM noise)."
    )
    pending_groups: int
    unknown_groups: int = Field(
        0,
        description="Too little decided for a status (one wrong form beside undecided ones), or"
        " no decided verdict ever (the evidence rules).",
    )
    held_groups: int = Field(
        0,
        description="Groups whose status is kept from an older cycle: the later ones had no"
        " decided verdict (target errors, an outage).",
    )
    partial_groups: int = Field(
        0, description="Decided groups some of whose forms erred or were undecided."
    )
    flaky_forms: int = 0
    knowledge_gap_groups: int = Field(
        description="Gap in this cohort and answered in no other cohort of the semantic group."
    )
    cohort_gap_groups: int = Field(
        description="Gap in this cohort while another cohort answered the same semantic group."
    )
    gap_examples: int
    accuracy: float | None
    accuracy_ci: Interval
    acc_db: float | None = Field(description="1 − gap groups / groups (GRAMMAR eq. 1).")
    refined_n: int = Field(0, description="R's denominator: examples − examples in gap groups.")
    refined_accuracy: float | None = Field(
        description="R = correct / (examples − examples in gap groups) (eq. 2)."
    )
    refined_accuracy_ci: Interval
    lambda_: float | None = Field(
        alias="lambda", description="λ = examples in gap groups / examples (eq. 3)."
    )
    retrieval_accuracy: float | None = Field(
        description="Sufficient retrieval / retrieval_judged; None when nothing could be judged."
    )
    retrieval_accuracy_ci: Interval = None
    retrieval_judged: int = Field(
        0, description="Examples whose retrieval was judged (any group, every verdict but error)."
    )
    retrieval_inconclusive: int = Field(
        0, description="Answered examples with no retrieval evidence (no ids, no contexts)."
    )
    retrieval_coverage: float | None = Field(
        None, description="retrieval_judged / (retrieval_judged + retrieval_inconclusive)."
    )
    refined_retrieval_accuracy: float | None
    refined_retrieval_n: int = Field(
        0, description="Retrieval-judged examples of decided groups outside gap groups."
    )
    retrieval_judged_by: dict[str, int] = Field(
        default_factory=dict,
        description="Retrieval judgements by evidence: given, ground_truth, nothing_retrieved,"
        " context_comparison, context_text.",
    )
    attribution: dict[str, int] = Field(default_factory=dict)
    error_kinds: dict[str, int] = Field(
        default_factory=dict, description="Target errors by kind (http_5xx, timeout, …)."
    )
    transitions: dict[str, int] = Field(
        default_factory=dict, description="Status changes between cycles, 'from->to': count."
    )
    regressions: int = Field(
        0,
        description="Transitions to gap from a status with answers (the last conclusive one:"
        " robust → unknown → gap counts).",
    )
    recoveries: int = Field(0, description="Transitions gap → robust (likewise).")
    forms_per_group: FormsRange | None = None
    gap_quality: dict[str, int] = Field(
        default_factory=dict,
        description="This cohort's gap groups by the data-quality check: knowledge_gap (the"
        " corpus lacks the fact), retrieval_or_reader (the corpus has it), unchecked; empty when"
        " no check ran.",
    )


class SideNumbers(_Model):
    """One cohort's (or one target's) numbers over exactly the groups a comparison compares."""

    examples: int
    correct: int
    accuracy: float | None
    accuracy_ci: Interval
    gap_groups: int
    gap_examples: int
    refined_n: int
    refined_accuracy: float | None
    refined_accuracy_ci: Interval
    lambda_: float | None = Field(alias="lambda")
    lambda_all_groups: float | None = None


class PairedTestResult(_Model):
    """Paired test over semantic groups (sign-flip permutation and Wilcoxon)."""

    unit: str
    score: str = ""
    x: str | None = None
    y: str | None = None
    n_pairs: int
    n_nonzero: int
    mean_x: float | None
    mean_y: float | None
    mean_difference: float | None
    p_value: float | None
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None
    rank_biserial: float | None
    x_higher: int
    y_higher: int
    ties: int


class ZTestResult(_Model):
    z: float | None
    p_value: float | None


class EffectSize(_Model):
    cohens_h: float | None
    rank_biserial: float | None
    mean_group_accuracy_difference: float | None


class McNemarResult(_Model):
    """McNemar's exact test over the same text forms judged for two targets."""

    unit: str
    first: str
    second: str
    both_correct: int
    only_first: int
    only_second: int
    both_wrong: int
    p_value: float | None


class Hypothesis(_Model):
    """Cohort a (hypothetically robust) against cohort b over the same semantic groups, mutual
    gap groups and pending groups left out."""

    available: bool
    reason: str | None = None
    target: str | None = None
    cohorts: list[str] = Field(default_factory=list)
    shared_groups: int = 0
    pending_groups_left_out: int = 0
    mutual_gap_groups: int = 0
    groups_compared: int = 0
    sides: dict[str, SideNumbers] = Field(default_factory=dict)
    accuracy_difference: float | None = None
    accuracy_difference_ci: Interval = None
    refined_accuracy_difference: float | None = None
    paired_test: PairedTestResult | None = None
    z_test: ZTestResult | None = None
    refined_z_test: ZTestResult | None = None
    effect_size: EffectSize | None = None
    p_value: float | None = None
    significant: bool = False
    lambda_by_cohort: dict[str, float | None] = Field(default_factory=dict)
    lambda_balanced: bool | None = None
    groups_better_in: dict[str, int] = Field(default_factory=dict)
    groups_better_listed: dict[str, list[str]] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    conclusion: str | None = None


class BalancedCohort(_Model):
    """One cohort after balancing: every shared group weighs the same number of forms. No
    intervals: draws with replacement repeat forms, so an interval over the resampled n would be
    narrower than the data warrant; the unbalanced numbers carry theirs."""

    examples: int = Field(description="Resampled decided examples (Acc's and λ's n).")
    correct: int
    accuracy: float | None
    gap_examples: int = Field(description="Resampled examples in mutual gap groups.")
    lambda_: float | None = Field(alias="lambda")
    refined_n: int
    refined_accuracy: float | None
    retrieval_judged: int = Field(description="Resampled retrieval judgements (RetAcc's n).")
    retrieval_accuracy: float | None


class Balanced(_Model):
    """GRAMMAR's "balance gap examples" (002 Table 3): the compared cohorts resampled to the same
    number of forms in every shared semantic group, so λ over the mutual gap groups is equal."""

    available: bool
    reason: str | None = None
    cohorts: list[str] = Field(default_factory=list)
    seed: int = Field(0, description="Seed of the resampling (the numbers are reproducible).")
    forms_per_group: int = Field(0, description="Forms every shared group contributes (k).")
    groups: int = Field(0, description="Shared groups decided in every cohort (answer numbers).")
    mutual_gap_groups: int = 0
    retrieval_groups: int = Field(
        0, description="Shared groups with a retrieval judgement in every cohort."
    )
    sides: dict[str, BalancedCohort] = Field(default_factory=dict)


class TargetReport(_Model):
    cohorts: dict[str, CohortNumbers]
    hypothesis: Hypothesis
    balanced: Balanced | None = None


class ComparisonCohort(_Model):
    """Baseline against candidate on one cohort's shared, decided semantic groups."""

    groups_compared: int
    sides: dict[str, SideNumbers]
    improved_groups: int
    worsened_groups: int
    unchanged_groups: int
    improved_listed: list[str]
    worsened_listed: list[str]
    status_transitions: dict[str, int]
    status_improved: int
    status_worsened: int
    paired_test: PairedTestResult
    mcnemar: McNemarResult
    p_value: float | None
    significant: bool
    conclusion: str


class TargetComparison(_Model):
    available: bool
    reason: str | None = None
    baseline: str | None = None
    candidate: str | None = None
    cohorts: dict[str, ComparisonCohort] = Field(default_factory=dict)


class EvaluatorReliability(_Model):
    """A reference-free evaluator against the grounded verdicts (GRAMMAR §3, Table 1)."""

    n: int
    abstained: int = 0
    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int
    precision: float | None
    precision_ci: Interval
    recall: float | None
    recall_ci: Interval
    error_precision: float | None
    error_precision_ci: Interval = None
    error_recall: float | None
    error_recall_ci: Interval = None
    agreement: float | None
    agreement_ci: Interval = None
    interval: str = "wilson"
    confidence: float = 0.95
    unmatched: int = Field(0, description="Evaluator verdicts with no decided grounded verdict.")
    unsampled: int = Field(
        0,
        description="Probes not scored for want of samples: the target cannot be sampled"
        " (SelfCheck needs an answer drawn with its randomness on, not a repeat).",
    )


class CorrelationResult(_Model):
    n: int
    rho: float | None
    p_value: float | None


class HumanAgreement(_Model):
    """Spearman's ρ between human ratings and each metric (Oro et al.)."""

    ratings: int
    spearman: dict[str, CorrelationResult]


class ScenarioNumbers(_Model):
    """RAGProbe: one scenario's judgements; failure rate = incorrect / decided."""

    probes: int
    correct: int
    incorrect: int
    errors: int
    undecided: int
    decided: int
    failure_rate: float | None
    failure_rate_ci: Interval


class TransitionEntry(_Model):
    """One status change of a group between cycles of a monitoring series."""

    target: str
    cohort: str
    group_id: str
    from_status: str
    to_status: str
    kind: str = Field(description="regression (→ gap), recovery (gap → robust) or change.")
    series: str = ""
    cycle: int = 0
    at: str | None = None


class DataQualityEntry(_Model):
    """One gap group's data-quality label and its evidence."""

    group_id: str
    label: str = Field(description="knowledge_gap | retrieval_or_reader | unchecked")
    method: str = Field(description="bm25 | bm25+mrc | none")
    reason: str
    doc_id: str | None = Field(None, description="Where the corpus states the answer.")
    excerpt: str | None = Field(None, description="The sentence that states it (bounded).")
    gap_in: list[str] = Field(
        default_factory=list, description="target/cohort pairs where the group is a gap."
    )


class DataQuality(_Model):
    """GRAMMAR 002 Appendix I for the gap groups: can the corpus answer them at all?"""

    corpus_documents: int
    mrc: bool = Field(description="Whether an LLM read the documents for what BM25 did not find.")
    labels: dict[str, int] = Field(description="Distinct gap groups by label.")
    groups: list[DataQualityEntry] = Field(default_factory=list)


class OpenDomainFilter(_Model):
    """GRAMMAR §5.2: groups an LLM-only baseline answers correctly, left out of the report."""

    baseline: str
    groups: int
    group_ids: list[str]


class MetricMean(_Model):
    """One per-answer metric's mean over a group of answers (``None``: defined for none)."""

    mean: float | None
    std_error: float | None
    count: int = Field(description="Answers the metric is defined for.")
    undefined: int = Field(
        0, description="Answers it is undefined for (no gold text, no ranking, nothing relevant)."
    )


class AnswerMetricsGroup(_Model):
    """Oro et al.'s metrics of one target × cohort × scenario: means over its scored answers."""

    answers: int
    metrics: dict[str, MetricMean]


class AuditNumbers(_Model):
    """The self-audit of one rules tier: rule-decided answers the LLM tier judged as well."""

    audited: int
    agree: int
    disagree: int
    unknown: int = Field(0, description="The LLM could not tell (judge error, unreadable).")
    agreement: float | None = Field(description="agree / (agree + disagree).")
    agreement_ci: Interval
    rules_correct_llm_incorrect: int = 0
    rules_incorrect_llm_correct: int = 0


class RagProbeMetricNumbers(_Model):
    """One RAGProbe metric over a scenario's probes; failure rate = failed / all probes."""

    passed: int
    failed: int
    open: int = Field(description="Neither the rules nor an LLM decided it.")
    failure_rate: float | None
    failure_rate_ci: Interval


class RagProbeScenarioMetrics(_Model):
    """A scenario's probes as RAGProbe counts them: failure rate = failed / all probes (the
    paper divides by all questions), errors and undecided probes in their own columns."""

    probes: int
    failed: int
    passed: int
    undecided: int
    errors: int
    failure_rate: float | None
    failure_rate_ci: Interval
    metrics: dict[str, RagProbeMetricNumbers] = Field(default_factory=dict)


class ScoresReport(_Model):
    """What the judge measured beside its verdicts, over the judgements in the window.

    ``answer_metrics``: target → cohort → scenario → metric means; ``audit``: target → rules tier
    → agreement with the LLM tier; ``reference_free``: target → evaluator → its reliability
    against the SQL-grounded verdicts (GRAMMAR §3, Table 1); ``ragprobe_metrics``: target →
    scenario → per-metric failures.
    """

    judgements: int
    answer_metrics: dict[str, dict[str, dict[str, AnswerMetricsGroup]]] = Field(
        default_factory=dict
    )
    audit: dict[str, dict[str, AuditNumbers]] = Field(default_factory=dict)
    reference_free: dict[str, dict[str, EvaluatorReliability]] = Field(default_factory=dict)
    ragprobe_metrics: dict[str, dict[str, RagProbeScenarioMetrics]] = Field(default_factory=dict)


class PersonVerdict(_Model):
    """The newest verdict a person gave one judged answer in the view: the one its group's
    tallies count, shown beside the judge's (which the store keeps unchanged)."""

    verdict: str
    who: str
    at: str = Field(description="When it was given (UTC, ISO 8601).")
    note: str = ""
    judge: str = Field("", description="What the judge said of the same answer.")


class FormResult(_Model):
    """One text form of a group as it was last asked in the window: the question, what the target
    answered, the verdict and why (tier, reason), and the failure's cause."""

    probe_id: str
    form_id: str
    cohort: str
    cycle: int = 0
    run_id: str = ""
    question: str | None = Field(None, description="The text form asked (None: not stored).")
    answer: str | None = Field(None, description="The target's answer (None: it gave none).")
    verdict: str
    tier: str | None = None
    reason: str | None = Field(None, description="Why the judge decided so, or the target error.")
    cause: str | None = Field(
        None,
        description="gap, retrieval, lm, inconclusive, flaky, target_error, stale, undecided, "
        "unknown (wrong in an unknown group) or pending (wrong in a pending group); None for a "
        "correct answer.",
    )
    error_kind: str | None = Field(None, description="http_5xx, timeout, bad_payload, …")
    retrieved_ids: list[str] = Field(default_factory=list)
    flaky: bool = Field(False, description="Its verdict reversed with an unchanged truth.")
    person: PersonVerdict | None = Field(
        None,
        description="A person's verdict on this answer (``verdict`` is then theirs, the one"
        " counted); None: no person gave one.",
    )


class StatusPoint(_Model):
    """A group's GRAMMAR status in one cycle of one cohort (forms of that cycle only)."""

    cohort: str
    cycle: int
    status: str
    correct: int
    incorrect: int
    errors: int = 0
    undecided: int = 0


class StatusSince(_Model):
    """Since when a cohort of a group has its status, and what it was before it became unknown
    (``show``: "unknown since cycle 5, was robust")."""

    cohort: str
    status: str
    since_cycle: int | None = Field(
        None, description="The cycle the status began (None: it has had it from the start)."
    )
    was: str | None = Field(
        None, description="The last conclusive status before it (gap, robust, non_robust, flaky)."
    )


class GroupResult(_Model):
    """One semantic group for one target: its status, its SQL truth and every form's evidence.

    ``cohort`` is None when the row spans every cohort (``status`` is then the semantic group's
    status over all of them, ``cohort_status`` each cohort's); with a cohort it is that cohort's
    row. ``sql``/``params`` come from the stored dataset (None when it was never stored)."""

    target: str
    group_id: str
    cohort: str | None = None
    status: str
    cohort_status: dict[str, str] = Field(default_factory=dict)
    knowledge_gap: bool = Field(
        False, description="Gap in every cohort with a decided status: the fact is missing."
    )
    dataset_id: str = ""
    series: str = ""
    cycle: int = 0
    evidence_cycle: int = Field(
        0, description="The newest cycle with answers: the one the status stands on."
    )
    held: bool = Field(
        False,
        description="Later cycles got no answer (target errors, an outage): the status"
        " is held from evidence_cycle.",
    )
    scenario: str = "factual"
    sql: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    gold: list[str] = Field(default_factory=list, description="The SQL answer's values.")
    gold_text: str | None = None
    correct: int = 0
    incorrect: int = 0
    errors: int = 0
    undecided: int = 0
    forms_expected: int = 0
    forms_judged: int = 0
    coverage: float | None = None
    forms: list[FormResult] = Field(default_factory=list)
    history: list[StatusPoint] = Field(
        default_factory=list, description="Status per cohort and cycle over the window."
    )
    status_since: list[StatusSince] = Field(
        default_factory=list,
        description="Per cohort, since when it has its status and what it was (``show`` only).",
    )


class GroupPage(_Model):
    """A page of :class:`GroupResult` (``/groups``, ``groundwatch groups --json``)."""

    total: int
    offset: int = 0
    limit: int | None = None
    count: int
    series: str | None = Field(
        None,
        description="The monitoring series of the listed groups; null when they are of several.",
    )
    latest_cycle: int | None = None
    groups: list[GroupResult]


class TargetHealth(_Model):
    """Whether a target answered at all in its newest cycle: counts by error kind and the first
    error's message, so an outage or a broken reply path is named instead of hiding in
    ``unknown`` or held groups."""

    cycle: int = Field(
        0, description="The target's newest cycle: the one these probes are from (0: no series)."
    )
    probes: int
    answered: int
    errors: int
    error_kinds: dict[str, int] = Field(default_factory=dict)
    first_error: str | None = Field(None, description="The first target error's message.")
    all_failed: bool = False


class LlmSpend(_Model):
    """What the run's LLM calls (judge tier, evaluators, LLM-derived metrics) spent."""

    model: str
    calls: int = Field(description="Requests sent (retries included).")
    refused: int = Field(
        0, description="Requests the budget stopped: their answers stay undecided."
    )
    budget: int | None = Field(None, description="--max-llm-calls / GW_LLM_BUDGET; None: none.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = Field(
        None, description="From the price table (GW_LLM_PRICES); None when the model has none."
    )

    @property
    def line(self) -> str:
        cost = f"${self.cost_usd:,.4f}" if self.cost_usd is not None else "no price known"
        budget = f" of a budget of {self.budget:,}" if self.budget is not None else ""
        refused = (
            f"; {self.refused:,} not sent (budget spent: what they would decide stays undecided)"
            if self.refused
            else ""
        )
        return (
            f"LLM spend ({self.model}): {self.calls:,} calls{budget}, {self.prompt_tokens:,}"
            f" prompt + {self.completion_tokens:,} completion tokens, {cost}{refused}"
        )


class Report(_Model):
    """The whole group report. ``target`` is the first target (most reports have one)."""

    schema_: str = Field(SCHEMA, alias="schema")
    generated_at: str
    alpha: float
    target: str | None
    targets: dict[str, TargetReport]
    target_comparison: TargetComparison | None = None
    reliability: dict[str, EvaluatorReliability] | None = None
    human_agreement: HumanAgreement | None = None
    scenarios: dict[str, dict[str, ScenarioNumbers]] = Field(default_factory=dict)
    open_domain: OpenDomainFilter | None = None
    data_quality: DataQuality | None = None
    window_runs: int | None = Field(
        None, description="Each group's status is over its last N cycles (None: every cycle)."
    )
    series: list[str] = Field(default_factory=list, description="Monitoring series in the data.")
    latest_cycle: int | None = None
    transitions: list[TransitionEntry] = Field(
        default_factory=list, description="The latest status changes, newest first."
    )
    scores: ScoresReport | None = Field(
        None,
        description=(
            "Answer metrics, self-audit, reference-free reliability and RAGProbe metric failures"
            " (None when the judgements carry no scores, e.g. an imported result)."
        ),
    )
    failing_groups: list[GroupResult] = Field(
        default_factory=list,
        description="Every semantic group that is not robust (gap, non-robust, flaky, unknown),"
        " worst first, with its SQL, gold answer and each form's answer and verdict.",
    )
    failing_groups_total: int = Field(
        0, description="Failing groups in all; failing_groups may hold fewer (capped)."
    )
    target_health: dict[str, TargetHealth] = Field(
        default_factory=dict, description="Per target: answered probes and errors by kind."
    )
    groups: list[GroupResult] = Field(
        default_factory=list,
        description="Every group's results, robust ones too, when asked for"
        " (groundwatch.evaluate); empty otherwise.",
    )
    llm_spend: LlmSpend | None = Field(
        None, description="The run's LLM calls, tokens and cost (None: no LLM was used)."
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cohorts(self) -> dict[str, CohortNumbers]:
        """The first target's cohorts (the common one-target case)."""
        return self.targets[self.target].cohorts if self.target else {}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def hypothesis(self) -> Hypothesis:
        """The first target's cohort test."""
        if self.target is None:
            return Hypothesis(available=False, reason="no data")
        return self.targets[self.target].hypothesis

    def to_json(self) -> dict[str, Any]:
        """The JSON document (aliases as field names: ``schema``, ``lambda``)."""
        return self.model_dump(mode="json", by_alias=True)

    def to_pandas(self) -> Any:
        """One row per asked text form — of every group (``groups``) or, when the report lists
        only the failing ones, of those — with its group's status, SQL and gold answer: the
        per-sample table a notebook filters and plots. Needs pandas (``groundwatch[pandas]``)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Report.to_pandas needs pandas: pip install 'groundwatch[pandas]'"
            ) from None
        rows = [
            {
                "target": g.target,
                "group_id": g.group_id,
                "group_status": g.status,
                "knowledge_gap": g.knowledge_gap,
                "cohort": f.cohort,
                "cohort_status": g.cohort_status.get(f.cohort),
                "sql": g.sql,
                "gold": g.gold_text,
                "form_id": f.form_id,
                "question": f.question,
                "answer": f.answer,
                "verdict": f.verdict,
                "tier": f.tier,
                "reason": f.reason,
                "cause": f.cause,
                "error_kind": f.error_kind,
                "flaky": f.flaky,
                "cycle": f.cycle,
                "run_id": f.run_id,
                "probe_id": f.probe_id,
            }
            for g in (self.groups or self.failing_groups)
            for f in g.forms
        ]
        return pd.DataFrame(rows, columns=FORM_COLUMNS)
