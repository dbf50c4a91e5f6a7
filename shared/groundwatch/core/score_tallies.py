"""Running tallies of the judgements' scores (:mod:`.scores`): what the report's scores section
and ``/metrics`` show beside the verdicts.

:class:`ScoreTallies` aggregates per target × cohort × scenario (answer-metric means and
histograms), per target × rules tier (the self-audit's agreement), per target × evaluator (a
reference-free evaluator's calls against the grounded verdicts: GRAMMAR's Table 1) and per
target × scenario × metric (RAGProbe's failures). It holds counts and running means only, never
the judgements; the report and ``/metrics`` build one over the judgements in the window.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from groundwatch.core.answer_scoring import MetricMeans
from groundwatch.core.model import Verdict
from groundwatch.core.scores import (
    NO_SCORES,
    AuditScore,
    EvaluatorCall,
    MetricOutcome,
    RagProbeOutcomes,
    ReferenceFreeScores,
    Scores,
)
from groundwatch.core.tagging import FACTUAL


@dataclass(slots=True)
class AuditCounts:
    """The self-audit of one rules tier: how often the LLM tier agreed with it."""

    agree: int = 0
    disagree: int = 0
    unknown: int = 0  # the LLM could not tell (judge error, unreadable verdict)
    #: disagreements by direction: the rules said correct and the LLM incorrect, and back
    rules_correct_llm_incorrect: int = 0
    rules_incorrect_llm_correct: int = 0

    @property
    def decided(self) -> int:
        return self.agree + self.disagree


@dataclass(slots=True)
class EvaluatorCounts:
    """A reference-free evaluator's calls against the grounded verdicts (positive = right)."""

    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0
    true_negative: int = 0
    abstained: int = 0
    #: calls on judgements without a decided grounded verdict (error or undecided): no truth
    unmatched: int = 0
    #: probes the evaluator could not score for want of samples (SelfCheck, unsampleable target)
    unsampled: int = 0


@dataclass(slots=True)
class MetricOutcomes:
    passed: int = 0
    failed: int = 0
    open: int = 0


@dataclass(slots=True)
class RagProbeCounts:
    """A scenario's probes: every probe (errors and undecided included, as RAGProbe divides by
    all questions) and each metric's outcomes."""

    probes: int = 0
    failed: int = 0
    passed: int = 0
    undecided: int = 0
    errors: int = 0
    metrics: dict[str, MetricOutcomes] = field(default_factory=dict)


class ScoredJudgement(Protocol):
    """What the tallies read of a judgement (a tagger ``Observation`` has it)."""

    @property
    def target(self) -> str: ...
    @property
    def cohort(self) -> str: ...
    @property
    def scenario(self) -> str: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def scores(self) -> Scores: ...


#: Upper bounds of the metric histograms (every per-answer metric is in [0, 1]).
BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class ScoreTallies:
    """Metric means (and histograms over :data:`BUCKETS`), audit agreement, evaluator
    reliability and RAGProbe metric failures over a stream of judgements. Bounded: the means
    keep at most ``max_groups`` target × cohort × scenario groups; the other maps are keyed by
    bounded names (tiers, evaluators, metrics)."""

    def __init__(self, *, max_groups: int = 10_000) -> None:
        self.means = MetricMeans(("target", "cohort", "scenario"), max_groups=max_groups)
        #: (target, cohort, scenario, metric) → answers per bucket (not cumulative)
        self.histograms: dict[tuple[str, str, str, str], list[int]] = {}
        self.audit: dict[tuple[str, str], AuditCounts] = {}
        self.evaluators: dict[tuple[str, str], EvaluatorCounts] = {}
        self.ragprobe: dict[tuple[str, str], RagProbeCounts] = {}
        self.judgements = 0

    @classmethod
    def of(cls, judgements: Iterable[ScoredJudgement], **kwargs: int) -> ScoreTallies:
        tallies = cls(**kwargs)
        for j in judgements:
            tallies.add(j)
        return tallies

    def add(self, j: ScoredJudgement) -> None:
        self.judgements += 1
        scores = j.scores
        verdict = j.verdict
        if j.scenario != FACTUAL:
            self._ragprobe(j.target, j.scenario, verdict, scores.ragprobe)
        if scores is NO_SCORES:
            return
        if scores.audit is not None:
            self._audit(j.target, scores.audit, verdict)
        if scores.reference_free is not None:
            self._evaluators(j.target, scores.reference_free, verdict)
        metrics = scores.answer_means()
        if metrics is not None:
            group = (j.target, j.cohort, j.scenario)
            before = len(self.means)
            self.means.add(group, metrics)
            if len(self.means) > before or self.means.answers(group):
                self._histogram(group, metrics)

    def _histogram(self, group: tuple[str, str, str], metrics: dict[str, float | None]) -> None:
        for name, value in metrics.items():
            if value is None:
                continue
            key = (*group, name)
            counts = self.histograms.get(key)
            if counts is None:
                counts = self.histograms[key] = [0] * len(BUCKETS)
            counts[bisect_left(BUCKETS, value) if value <= 1.0 else len(BUCKETS) - 1] += 1

    def _audit(self, target: str, audit: AuditScore, verdict: Verdict) -> None:
        c = self.audit.get((target, audit.tier))
        if c is None:
            c = self.audit[(target, audit.tier)] = AuditCounts()
        if audit.agreed is None:
            c.unknown += 1
        elif audit.agreed:
            c.agree += 1
        else:
            c.disagree += 1
            if verdict is Verdict.CORRECT:
                c.rules_correct_llm_incorrect += 1
            elif verdict is Verdict.INCORRECT:
                c.rules_incorrect_llm_correct += 1

    def _evaluators(self, target: str, rf: ReferenceFreeScores, verdict: Verdict) -> None:
        for name, call in rf.calls():
            c = self.evaluators.get((target, name))
            if c is None:
                c = self.evaluators[(target, name)] = EvaluatorCounts()
            if call is EvaluatorCall.NOT_SAMPLED:
                c.unsampled += 1
            elif verdict is not Verdict.CORRECT and verdict is not Verdict.INCORRECT:
                c.unmatched += 1
            elif call is EvaluatorCall.ABSTAINED:
                c.abstained += 1
            else:
                says_right = call is EvaluatorCall.RIGHT
                right = verdict is Verdict.CORRECT
                if says_right and right:
                    c.true_positive += 1
                elif says_right:
                    c.false_positive += 1
                elif right:
                    c.false_negative += 1
                else:
                    c.true_negative += 1

    def _ragprobe(
        self, target: str, scenario: str, verdict: Verdict, outcomes: RagProbeOutcomes | None
    ) -> None:
        c = self.ragprobe.get((target, scenario))
        if c is None:
            c = self.ragprobe[(target, scenario)] = RagProbeCounts()
        c.probes += 1
        if verdict is Verdict.ERROR:
            c.errors += 1
        elif verdict is Verdict.INCORRECT:
            c.failed += 1
        elif verdict is Verdict.CORRECT:
            c.passed += 1
        else:
            c.undecided += 1
        if outcomes is None:
            return
        for metric, outcome in outcomes.items():
            m = c.metrics.get(metric.value)
            if m is None:
                m = c.metrics[metric.value] = MetricOutcomes()
            if outcome is MetricOutcome.OPEN:
                m.open += 1
            elif outcome is MetricOutcome.PASSED:
                m.passed += 1
            else:
                m.failed += 1
