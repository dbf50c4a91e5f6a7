"""Analytics' telemetry: the live tallies as Prometheus series, read at scrape time from the view
the analytics consume loop published last (:mod:`groundwatch.core.tagging.view`; never the live
tagger).

Label sets are bounded (target, cohort, status, verdict, cause, scenario) — never group ids or
text — so the series count does not grow with the dataset. Gauges are read at scrape time from
the tagger's incrementally kept sums, so a scrape costs O(targets × cohorts × statuses) and no
database query; failure attribution is refreshed by the consumer after each batch, not here.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from groundwatch.core.data_quality import QualityLabel, QualityResults
from groundwatch.core.model import Verdict
from groundwatch.core.score_tallies import BUCKETS, ScoreTallies
from groundwatch.core.tagging import GroupStatus, Observation, TallyReads, Transition
from groundwatch.report.document import ScoresReport
from groundwatch.report.scores import scores_report


class TallyCollector(Collector):
    def __init__(
        self,
        tagger: Callable[[], TallyReads],
        quality: Callable[[], QualityResults | None] | None = None,
    ) -> None:
        self._tagger = tagger
        self._quality = quality

    def collect(self) -> Iterator[GaugeMetricFamily]:
        tagger = self._tagger()
        # With an open-domain baseline (GRAMMAR §5.2) every GRAMMAR number is the closed
        # domain's: the groups the LLM-only baseline answers and the baseline itself are left
        # out, so the alerts on these series never fire on what the model knew by itself.
        baseline = tagger.open_domain_baseline
        closed = baseline is not None
        targets = [t for t in tagger.targets() if t != baseline]
        groups = GaugeMetricFamily(
            "groundwatch_groups",
            "Semantic groups by status in the window.",
            labels=["target", "cohort", "status"],
        )
        counts = tagger.status_counts(closed_domain=closed)
        # GRAMMAR's numbers are over the factual probes; RAGProbe scenario probes (whose cohort is
        # their scenario id) are exported as scenario failure ratios below instead.
        scenarios = {s for _t, s in tagger.scenario_counts()}
        for target in targets:
            for cohort in tagger.cohorts(target):
                if cohort in scenarios:
                    continue
                for status in GroupStatus:
                    groups.add_metric(
                        [target, cohort, status.value], counts.get((target, cohort, status), 0)
                    )
        yield groups
        names = {
            "accuracy": ("groundwatch_accuracy", "Correct / decided examples (window)."),
            "acc_db": ("groundwatch_acc_db", "Acc_db = 1 - gap groups / groups (GRAMMAR eq. 1)."),
            "refined_accuracy": (
                "groundwatch_refined_accuracy",
                "R = correct / examples outside gap groups (eq. 2).",
            ),
            "lambda": ("groundwatch_lambda", "Share of examples in gap groups (eq. 3)."),
        }
        families = {
            k: GaugeMetricFamily(n, h, labels=["target", "cohort"]) for k, (n, h) in names.items()
        }
        numbers = tagger.cohort_numbers(closed_domain=closed)
        for (target, cohort), num in numbers.items():
            if cohort in scenarios:
                continue
            for key, fam in families.items():
                value = num.get(key)
                if value is not None:  # an undefined ratio (0 denominator) is absent, not 0
                    fam.add_metric([target, cohort], float(value))
        coverage = GaugeMetricFamily(
            "groundwatch_verdict_coverage_ratio",
            "Forms with a decided verdict / forms probed, in the window (beside every rate).",
            labels=["target", "cohort"],
        )
        flaky = GaugeMetricFamily(
            "groundwatch_flaky_forms",
            "Text forms whose verdict reversed at the next cycle with an unchanged SQL truth.",
            labels=["target", "cohort"],
        )
        for (target, cohort), num in numbers.items():
            if cohort in scenarios:
                continue
            if num["coverage"] is not None:
                coverage.add_metric([target, cohort], float(num["coverage"]))
            flaky.add_metric([target, cohort], float(num["flaky_forms"] or 0))
        yield from families.values()
        yield coverage
        yield flaky
        held = GaugeMetricFamily(
            "groundwatch_held_groups",
            "Semantic groups whose status stands on an older cycle than their newest: the cycles"
            " after it got no answer at all (target errors, an outage), so the status was kept.",
            labels=["target", "cohort"],
        )
        held_now = tagger.held_counts()
        for target in targets:
            for cohort in tagger.cohorts(target):
                if cohort not in scenarios:
                    held.add_metric([target, cohort], held_now.get((target, cohort), 0))
        yield held
        answered = GaugeMetricFamily(
            "groundwatch_target_answered_ratio",
            "Probes the target answered (no target error) / probes judged, in its newest cycle:"
            " 0 while the endpoint is down (the group statuses keep their last evidence).",
            labels=["target"],
        )
        newest = GaugeMetricFamily(
            "groundwatch_target_cycle",
            "Newest cycle of the target with a judgement.",
            labels=["target"],
        )
        undecided = GaugeMetricFamily(
            "groundwatch_target_undecided_ratio",
            "Answers the judge left undecided / probes the target answered, in its newest cycle:"
            " a sharp rise is an endpoint answering what cannot be judged (unrelated sentences),"
            " which turns its groups unknown; absent while it answers nothing.",
            labels=["target"],
        )
        for target, (cycle, probed, ok, open_) in sorted(tagger.target_health().items()):
            if target == baseline:
                continue  # the open-domain baseline is no target under watch
            if probed:
                answered.add_metric([target], ok / probed)
            if ok:
                undecided.add_metric([target], open_ / ok)
            newest.add_metric([target], cycle)
        yield answered
        yield undecided
        yield newest
        knowledge = GaugeMetricFamily(
            "groundwatch_knowledge_gap_groups",
            "Semantic groups that are a gap in every cohort with a verdict: the fact is missing.",
            labels=["target"],
        )
        gap_counts = tagger.knowledge_gap_counts(closed_domain=closed)
        for target in targets:
            knowledge.add_metric([target], gap_counts.get(target, 0))
        yield knowledge
        if baseline is not None:
            od = GaugeMetricFamily(
                "groundwatch_open_domain_groups",
                "Semantic groups the LLM-only baseline answers correctly (GRAMMAR §5.2): left out"
                " of every other groundwatch_* GRAMMAR series.",
                labels=["baseline"],
            )
            od.add_metric([baseline], len(tagger.open_domain_groups()))
            yield od
        results = self._quality() if self._quality is not None else None
        if results is not None:
            by_label = GaugeMetricFamily(
                "groundwatch_knowledge_gap_groups_by_quality",
                "Knowledge-gap groups by the data-quality check: knowledge_gap (the corpus lacks"
                " the fact), retrieval_or_reader (the corpus has it), unchecked.",
                labels=["target", "label"],
            )
            for target in targets:
                per_label = dict.fromkeys(QualityLabel, 0)
                for gid in tagger.knowledge_gaps(target, closed_domain=closed):
                    check = results.checks.get(gid)
                    per_label[check.label if check is not None else QualityLabel.UNCHECKED] += 1
                for label, count in per_label.items():
                    by_label.add_metric([target, label.value], count)
            yield by_label
        causes = GaugeMetricFamily(
            "groundwatch_failures",
            "Failed examples in the window by cause (gap, retrieval, lm, inconclusive, flaky,"
            " target_error, stale, undecided; unknown and pending: the group has no status).",
            labels=["target", "cohort", "cause"],
        )
        causes_now = tagger.cause_counts(refresh=False, closed_domain=closed)
        for (target, cohort, cause), n in sorted(causes_now.items()):
            if cohort not in scenarios:
                causes.add_metric([target, cohort, cause.value], n)
        yield causes
        yield from _scenario_families(tagger)


def _scenario_families(tagger: TallyReads) -> Iterator[GaugeMetricFamily]:
    """RAGProbe scenario probes: failure ratio = incorrect / decided (errors and undecided are
    not failures; they are exported next to it), from the tagger's running counts."""
    ratio = GaugeMetricFamily(
        "groundwatch_scenario_failure_ratio",
        "RAGProbe scenario probes judged incorrect / decided (correct + incorrect), in the window.",
        labels=["target", "scenario"],
    )
    judged = GaugeMetricFamily(
        "groundwatch_scenario_judgements",
        "RAGProbe scenario probes in the window by verdict (error and undecided are no failure).",
        labels=["target", "scenario", "verdict"],
    )
    for (target, scenario), counts in sorted(tagger.scenario_counts().items()):
        decided = counts[Verdict.CORRECT] + counts[Verdict.INCORRECT]
        if decided:  # an undefined ratio is absent, not 0
            ratio.add_metric([target, scenario], counts[Verdict.INCORRECT] / decided)
        for verdict, n in counts.items():
            judged.add_metric([target, scenario, verdict.value], n)
    yield ratio
    yield judged


class ScoresCollector(Collector):
    """What the judge measured beside its verdicts, over the judgements in the window: answer
    metrics (mean and a gauge histogram per target × cohort × scenario × metric), the self-audit
    agreement per rules tier, the reference-free evaluators' reliability against the SQL truth
    (GRAMMAR Table 1) and RAGProbe's failures per scenario and metric — each rate with its 95 %
    Wilson bounds. Bounded labels: targets, cohorts, scenarios, metric, tier and evaluator names.

    Rebuilt from the tagger's window only when a batch was applied since the last build, and at
    most every ``refresh_s`` seconds: a scrape in between reads the last build (O(series))."""

    def __init__(self, tagger: Callable[[], TallyReads], *, refresh_s: float = 10.0) -> None:
        self._tagger = tagger
        self.refresh_s = refresh_s
        self.dirty = True
        self._built: tuple[int, float, ScoresReport | None, ScoreTallies] | None = None

    def tallies(self) -> tuple[ScoresReport | None, ScoreTallies]:
        tagger = self._tagger()
        now = time.monotonic()
        built = self._built
        # rebuilt after a restore (another lineage), else at most every refresh_s
        due = built is None or built[0] != id(tagger.lineage)
        if not due and self.dirty and built is not None:
            due = now - built[1] >= self.refresh_s
        if due or built is None:
            self.dirty = False
            q = ScoreTallies.of(tagger.observations())
            built = self._built = (id(tagger.lineage), now, scores_report(q), q)
        return built[2], built[3]

    def collect(self) -> Iterator[Metric]:
        report, q = self.tallies()
        mean = GaugeMetricFamily(
            "groundwatch_answer_metric_mean",
            "Mean of a per-answer metric (EM, F1, ROUGE-L, BLEU, Recall/Precision/AP/nDCG@K,"
            " RR) over the scored answers in the window.",
            labels=["target", "cohort", "scenario", "metric"],
        )
        for row in q.means.rows():
            if row["mean"] is not None:
                labels = [row["target"], row["cohort"], row["scenario"], row["metric"]]
                mean.add_metric(labels, float(row["mean"]))
        yield mean
        hist = GaugeHistogramMetricFamily(
            "groundwatch_answer_metric",
            "Distribution of a per-answer metric over the scored answers in the window.",
            labels=["target", "cohort", "scenario", "metric"],
        )
        for (target, cohort, scenario, metric), counts in sorted(q.histograms.items()):
            stat = q.means.get((target, cohort, scenario), metric)
            cumulative, buckets = 0, []
            for le, n in zip(BUCKETS, counts, strict=True):
                cumulative += n
                buckets.append((_le(le), float(cumulative)))
            buckets.append(("+Inf", float(cumulative)))
            total = stat.mean * stat.count if stat is not None else 0.0
            hist.add_metric([target, cohort, scenario, metric], buckets, total)
        yield hist
        yield from _audit_families(report)
        yield from _evaluator_families(report)
        yield from _ragprobe_families(report)


def _le(bound: float) -> str:
    return f"{bound:g}" if bound != 1.0 else "1.0"


def _bounds(fam: GaugeMetricFamily, labels: list[str], ci: tuple[float, float] | None) -> None:
    if ci is not None:
        fam.add_metric([*labels, "low"], ci[0])
        fam.add_metric([*labels, "high"], ci[1])


def _audit_families(report: ScoresReport | None) -> Iterator[GaugeMetricFamily]:
    agreement = GaugeMetricFamily(
        "groundwatch_judge_audit_agreement",
        "Self-audit: share of audited rule-decided answers the LLM tier agreed with (window).",
        labels=["target", "tier"],
    )
    ci = GaugeMetricFamily(
        "groundwatch_judge_audit_agreement_ci",
        "95 % Wilson bounds of groundwatch_judge_audit_agreement.",
        labels=["target", "tier", "bound"],
    )
    audited = GaugeMetricFamily(
        "groundwatch_judge_audited",
        "Audited rule-decided answers in the window, by what the LLM tier said.",
        labels=["target", "tier", "agree"],
    )
    for target, by in (report.audit if report else {}).items():
        for tier, a in by.items():
            if a.agreement is not None:
                agreement.add_metric([target, tier], a.agreement)
            _bounds(ci, [target, tier], a.agreement_ci)
            for label, n in (("true", a.agree), ("false", a.disagree), ("unknown", a.unknown)):
                audited.add_metric([target, tier, label], n)
    yield agreement
    yield ci
    yield audited


_MEASURES = ("precision", "recall", "error_precision", "error_recall", "agreement")


def _evaluator_families(report: ScoresReport | None) -> Iterator[GaugeMetricFamily]:
    value = GaugeMetricFamily(
        "groundwatch_evaluator_reliability",
        "Reference-free evaluator against the SQL-grounded verdicts (GRAMMAR Table 1, window):"
        " precision/recall of its 'right' calls, error_precision/error_recall of its 'wrong'"
        " calls, agreement.",
        labels=["target", "evaluator", "measure"],
    )
    ci = GaugeMetricFamily(
        "groundwatch_evaluator_reliability_ci",
        "95 % Wilson bounds of groundwatch_evaluator_reliability.",
        labels=["target", "evaluator", "measure", "bound"],
    )
    calls = GaugeMetricFamily(
        "groundwatch_evaluator_calls",
        "Reference-free evaluator calls in the window by what it said and the grounded truth.",
        labels=["target", "evaluator", "says", "truth"],
    )
    for target, by in (report.reference_free if report else {}).items():
        for name, r in by.items():
            for measure in _MEASURES:
                v = getattr(r, measure)
                if v is not None:
                    value.add_metric([target, name, measure], v)
                _bounds(ci, [target, name, measure], getattr(r, f"{measure}_ci"))
            for says, truth, n in (
                ("right", "right", r.true_positive),
                ("right", "wrong", r.false_positive),
                ("wrong", "right", r.false_negative),
                ("wrong", "wrong", r.true_negative),
                ("abstained", "any", r.abstained),
                ("any", "unknown", r.unmatched),
                ("not_sampled", "any", r.unsampled),
            ):
                calls.add_metric([target, name, says, truth], n)
    yield value
    yield ci
    yield calls


def _ragprobe_families(report: ScoresReport | None) -> Iterator[GaugeMetricFamily]:
    ratio = GaugeMetricFamily(
        "groundwatch_ragprobe_metric_failure_ratio",
        "RAGProbe scenario probes failing a metric / all the scenario's probes (window;"
        " metric 'probe': failing any metric).",
        labels=["target", "scenario", "metric"],
    )
    outcomes = GaugeMetricFamily(
        "groundwatch_ragprobe_metric_outcomes",
        "RAGProbe metric outcomes in the window (open: neither the rules nor an LLM decided).",
        labels=["target", "scenario", "metric", "outcome"],
    )
    for target, by in (report.ragprobe_metrics if report else {}).items():
        for scenario, sm in by.items():
            if sm.failure_rate is not None:
                ratio.add_metric([target, scenario, "probe"], sm.failure_rate)
            for outcome, n in (
                ("passed", sm.passed),
                ("failed", sm.failed),
                ("undecided", sm.undecided),
                ("error", sm.errors),
            ):
                outcomes.add_metric([target, scenario, "probe", outcome], n)
            for metric, m in sm.metrics.items():
                if m.failure_rate is not None:
                    ratio.add_metric([target, scenario, metric], m.failure_rate)
                for outcome, n in (("passed", m.passed), ("failed", m.failed), ("open", m.open)):
                    outcomes.add_metric([target, scenario, metric, outcome], n)
    yield ratio
    yield outcomes


#: The transitions the alert rules take increase() of (groundwatch:regressions:increase1h,
#: groundwatch:recoveries:increase1h).
_ALERTED_TRANSITIONS = (
    ("robust", "gap"),
    ("non_robust", "gap"),
    ("flaky", "gap"),
    ("gap", "robust"),
)


def knowledge_regressions(tagger: TallyReads, transitions: list[Transition]) -> dict[str, set[str]]:
    """Per target, the semantic groups these transitions made a knowledge gap.

    A cohort that turned gap from a status with right answers (robust, non-robust, flaky) was
    not a gap before, so its group was no knowledge gap before; if the group is one now, the
    target lost that fact. A cohort-level regression alone is no such loss: a fact still right
    in another cohort is wording fragility, not missing knowledge (the per-cohort transition
    counter counted it, and one fact lost in two cohorts twice). A group that became a gap only
    because its other cohorts lost their evidence (an outage) lost no knowledge either.
    """
    out: dict[str, set[str]] = {}
    closed = tagger.open_domain_baseline is not None
    gaps: dict[str, set[str]] = {}
    for tr in transitions:
        if tr.kind != "regression":
            continue
        now = gaps.get(tr.target)
        if now is None:
            now = gaps[tr.target] = tagger.knowledge_gaps(tr.target, closed_domain=closed)
        if tr.group_id in now:
            out.setdefault(tr.target, set()).add(tr.group_id)
    return out


class AnalyticsTelemetry:
    def __init__(
        self,
        registry: CollectorRegistry,
        tagger: Callable[[], TallyReads],
        quality: Callable[[], QualityResults | None] | None = None,
    ) -> None:
        self.judgements = Counter(
            "groundwatch_judgements",
            "Judgements tallied, by verdict.",
            ["target", "verdict"],
            registry=registry,
        )
        self.latency = Histogram(
            "groundwatch_probe_to_tally_seconds",
            "Probe creation to tally latency.",
            ["target"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300),
            registry=registry,
        )
        self.transitions = Counter(
            "groundwatch_group_transitions",
            "Status changes of semantic groups between cycles (robust->gap is a regression).",
            ["target", "cohort", "from_status", "to_status"],
            registry=registry,
        )
        #: (target, cohort) pairs whose alerting transition series exist (at 0 until counted)
        self._transition_pairs: set[tuple[str, str]] = set()
        self.knowledge_regressions = Counter(
            "groundwatch_knowledge_gap_regressions",
            "Semantic groups that became a knowledge gap (wrong in every cohort with a verdict)"
            " by a cohort that had right answers turning gap: knowledge the target had is lost."
            " One per group, however many cohorts turned.",
            ["target"],
            registry=registry,
        )
        self._tagger = tagger
        registry.register(TallyCollector(tagger, quality))
        self.scores = ScoresCollector(tagger)
        registry.register(self.scores)

    def _count_knowledge_regressions(self, transitions: list[Transition]) -> None:
        if not transitions:
            return
        for target, groups in knowledge_regressions(self._tagger(), transitions).items():
            self.knowledge_regressions.labels(target).inc(len(groups))

    def observe(
        self, applied: list[Observation], transitions: list[Transition], tallied_at: float
    ) -> None:
        self.scores.dirty = True
        pairs = {(o.target, o.cohort) for o in applied} - self._transition_pairs
        for target, cohort in pairs:
            # A labelled counter is exported only once it has a child: the first regression
            # would appear at 1, and increase() (the regression alert) never sees it rise. The
            # series the alerts read exist at 0 from a pair's first judgement.
            for old, new in _ALERTED_TRANSITIONS:
                self.transitions.labels(target, cohort, old, new)
        for target in {t for t, _ in pairs}:
            self.knowledge_regressions.labels(target)  # at 0 from the first judgement, as above
        self._transition_pairs |= pairs
        for tr in transitions:
            self.transitions.labels(
                tr.target, tr.cohort, tr.from_status.value, tr.to_status.value
            ).inc()
        self._count_knowledge_regressions(transitions)
        # Once per label set per batch, not per judgement: ``labels()`` takes a lock and builds
        # a key each call, which made this the analytics consumer's largest cost after parsing.
        counts = collections.Counter((o.target, o.verdict.value) for o in applied)
        for (target, verdict), n in counts.items():
            self.judgements.labels(target, verdict).inc(n)
        children: dict[str, Histogram] = {}
        for o in applied:
            child = children.get(o.target)
            if child is None:
                child = children[o.target] = self.latency.labels(o.target)
            child.observe(max(0.0, tallied_at - (o.at - o.latency_s)))
