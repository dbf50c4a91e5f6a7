"""Prometheus export of the live tallies, read from the tagger at scrape time.

Label sets are bounded (target, cohort, status, verdict, cause, scenario) — never group ids or
text — so the series count does not grow with the dataset. Gauges are read at scrape time from
the tagger's incrementally kept sums, so a scrape costs O(targets × cohorts × statuses) and no
database query; failure attribution is refreshed by the consumer after each batch, not here.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from groundwatch.core.data_quality import QualityLabel, QualityResults
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import GroupStatus, Observation, Tagger, Transition


class TallyCollector(Collector):
    def __init__(
        self,
        tagger: Callable[[], Tagger],
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
            "Failed examples in the window by cause (gap, retrieval, lm, target_error).",
            labels=["target", "cohort", "cause"],
        )
        causes_now = tagger.cause_counts(refresh=False, closed_domain=closed)
        for (target, cohort, cause), n in sorted(causes_now.items()):
            if cohort not in scenarios:
                causes.add_metric([target, cohort, cause.value], n)
        yield causes
        yield from _scenario_families(tagger)


def _scenario_families(tagger: Tagger) -> Iterator[GaugeMetricFamily]:
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


class AnalyticsMetrics:
    def __init__(
        self,
        registry: CollectorRegistry,
        tagger: Callable[[], Tagger],
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
        registry.register(TallyCollector(tagger, quality))

    def observe(
        self, applied: list[Observation], transitions: list[Transition], tallied_at: float
    ) -> None:
        for tr in transitions:
            self.transitions.labels(
                tr.target, tr.cohort, tr.from_status.value, tr.to_status.value
            ).inc()
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
