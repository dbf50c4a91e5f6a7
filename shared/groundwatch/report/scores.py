"""The scores section of the report: what the judge measured beside its verdicts, tallied.

Built over the same judgements as the rest of the report (the tagger's window, every judgement in
it): Oro et al.'s answer metrics per target × cohort × scenario, the rules' self-audit against
the LLM tier, the reference-free evaluators' reliability against the SQL-grounded verdicts, and
RAGProbe's failures per scenario and metric over all probes. Every rate has a 95 % Wilson
interval and is ``None`` (never 0) when its denominator is 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

from groundwatch.core.score_tallies import ScoredJudgement, ScoreTallies
from groundwatch.core.stats import proportion, reliability_from_counts, wilson_ci
from groundwatch.report.document import (
    AnswerMetricsGroup,
    AuditNumbers,
    EvaluatorReliability,
    MetricMean,
    RagProbeMetricNumbers,
    RagProbeScenarioMetrics,
    ScoresReport,
)


def scores_section(judgements: Iterable[ScoredJudgement]) -> ScoresReport | None:
    """The section over ``judgements``; None when none carries a score of any kind (results
    imported from elsewhere, or judged before the judge shipped them)."""
    return scores_report(ScoreTallies.of(judgements))


def scores_report(q: ScoreTallies) -> ScoresReport | None:
    if not (len(q.means) or q.audit or q.evaluators or _scored_ragprobe(q)):
        return None
    means: dict[str, dict[str, dict[str, AnswerMetricsGroup]]] = {}
    groups: dict[tuple[str, ...], dict[str, MetricMean]] = {}
    answers: dict[tuple[str, ...], int] = {}
    for row in q.means.rows():
        key = (row["target"], row["cohort"], row["scenario"])
        answers[key] = row["answers"]
        groups.setdefault(key, {})[row["metric"]] = MetricMean(
            mean=row["mean"],
            std_error=row["std_error"],
            count=row["count"],
            undefined=row["undefined"],
        )
    for (target, cohort, scenario), metrics in groups.items():
        means.setdefault(target, {}).setdefault(cohort, {})[scenario] = AnswerMetricsGroup(
            answers=answers[(target, cohort, scenario)], metrics=metrics
        )
    audit: dict[str, dict[str, AuditNumbers]] = {}
    for (target, tier), a in sorted(q.audit.items()):
        audit.setdefault(target, {})[tier] = AuditNumbers(
            audited=a.decided + a.unknown,
            agree=a.agree,
            disagree=a.disagree,
            unknown=a.unknown,
            agreement=proportion(a.agree, a.decided),
            agreement_ci=wilson_ci(a.agree, a.decided),
            rules_correct_llm_incorrect=a.rules_correct_llm_incorrect,
            rules_incorrect_llm_correct=a.rules_incorrect_llm_correct,
        )
    reference_free: dict[str, dict[str, EvaluatorReliability]] = {}
    for (target, name), c in sorted(q.evaluators.items()):
        r = reliability_from_counts(
            c.true_positive, c.false_positive, c.false_negative, c.true_negative, c.abstained
        )
        reference_free.setdefault(target, {})[name] = EvaluatorReliability(
            **asdict(r), unmatched=c.unmatched, unsampled=c.unsampled
        )
    ragprobe: dict[str, dict[str, RagProbeScenarioMetrics]] = {}
    for (target, scenario), p in sorted(q.ragprobe.items()):
        ragprobe.setdefault(target, {})[scenario] = RagProbeScenarioMetrics(
            probes=p.probes,
            failed=p.failed,
            passed=p.passed,
            undecided=p.undecided,
            errors=p.errors,
            failure_rate=proportion(p.failed, p.probes),
            failure_rate_ci=wilson_ci(p.failed, p.probes),
            metrics={
                name: RagProbeMetricNumbers(
                    passed=m.passed,
                    failed=m.failed,
                    open=m.open,
                    failure_rate=proportion(m.failed, p.probes),
                    failure_rate_ci=wilson_ci(m.failed, p.probes),
                )
                for name, m in sorted(p.metrics.items())
            },
        )
    return ScoresReport(
        judgements=q.judgements,
        answer_metrics=means,
        audit=audit,
        reference_free=reference_free,
        ragprobe_metrics=ragprobe,
    )


def _scored_ragprobe(q: ScoreTallies) -> bool:
    """Scenario probes count only when the per-metric evaluator judged them (a result imported
    without scores has verdicts, not metrics)."""
    return any(p.metrics for p in q.ragprobe.values())
