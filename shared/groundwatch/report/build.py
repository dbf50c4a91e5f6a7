"""Building the group report: GRAMMAR-Eval numbers per target × cohort, the cohort hypothesis
test, the target comparison and evaluator reliability, as the typed :class:`~.model.Report`.

Built once; every renderer (text, JSON, HTML, the API) reads the same models. Most reports have
one target (a run against production, an imported GRAMMAR experiment), so ``Report.cohorts`` and
``Report.hypothesis`` describe the first target and ``targets`` holds every target in the same
shape. Targets and cohorts keep the order they first appear in the input.

Definitions (GRAMMAR §4.3). *examples* are decisively judged examples (correct + incorrect); error
and undecided verdicts are counted apart and never enter a denominator, so an outage is not a
wrong answer. *groups* are tagged groups (gap + robust + non-robust); pending groups are counted
apart and excluded from Acc_db. Acc_db = 1 − gap groups / groups (eq. 1); R = correct /
(examples − examples in gap groups) (eq. 2); λ = examples in gap groups / examples, so that
accuracy = R × (1 − λ) (eq. 3); each has its denominator beside it (``examples``, ``groups``,
``refined_n``). Retrieval accuracy = sufficient / examples whose retrieval could be judged
(:func:`groundwatch.core.tagging.judge_retrieval`), over every group, with its ``retrieval_judged``
and ``retrieval_coverage``: an inconclusive example (no ids, no contexts) enters no denominator, so
a target that returns no retrieval evidence gets no retrieval accuracy at all, never 1.0 or 0.0.

The GRAMMAR numbers are computed over GRAMMAR's own (``factual``) probes only. RAGProbe scenario
probes (S1…S6) are single questions, not semantic groups asked in several forms, and would bend
Acc_db, R and λ; they get the ``scenarios`` section instead: per target and scenario the
judgements and the failure rate = incorrect / decided (RAGProbe §5.2: a failure is an answer
that does not pass). Errors (the target did not answer) and undecided verdicts are counted there
but are not failures.
"""

from __future__ import annotations

from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    ValuesView,
)
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TypedDict, Unpack

from groundwatch.core.balance import GroupSample, balance
from groundwatch.core.data_quality import QualityLabel, QualityResults
from groundwatch.core.model import Verdict
from groundwatch.core.open_domain import closed_domain
from groundwatch.core.scores import EvaluatorCall
from groundwatch.core.stats import (
    evaluator_reliability,
    mcnemar_exact,
    paired_test,
    proportion,
    spearman,
    two_proportion_z_test,
    wilson_ci,
)
from groundwatch.core.tagging import (
    DECIDED_STATUSES,
    FACTUAL,
    Cause,
    GroupStatus,
    GroupTally,
    Observation,
    RetrievalEvidence,
    Tagger,
    TallyReads,
    Transition,
    Window,
    attribution_status,
    cause_of,
)
from groundwatch.report.columns import fmt
from groundwatch.report.document import (
    Balanced,
    BalancedCohort,
    CohortNumbers,
    ComparisonCohort,
    CorrelationResult,
    DataQuality,
    DataQualityEntry,
    EffectSize,
    EvaluatorReliability,
    FormsRange,
    HumanAgreement,
    Hypothesis,
    McNemarResult,
    OpenDomainFilter,
    PairedTestResult,
    Report,
    ScenarioNumbers,
    SideNumbers,
    TargetComparison,
    TargetReport,
    TransitionEntry,
    ZTestResult,
)
from groundwatch.report.groups import FAILING, Evidence, cycle_health, group_results
from groundwatch.report.scores import scores_section

MAX_LISTED = 50
"""Group ids listed per category in comparisons (counts are always complete)."""


class ReportOptions(TypedDict, total=False):
    """What a report is asked for beside its judgements (:func:`report_from_tagger`'s keywords),
    so that a caller that passes them on names them once."""

    cohorts: Sequence[str] | None
    compare: tuple[str, str] | None
    compare_targets: tuple[str, str] | None
    evaluators: Mapping[str, Mapping[str, bool]] | None
    human_ratings: Mapping[str, float] | None
    metric_scores: Mapping[str, Mapping[str, float]] | None
    alpha: float
    lambda_tolerance: float
    balance_seed: int
    data_quality: QualityResults | None
    evidence: Evidence | None
    failing_limit: int | None


def build_report(
    observations: Iterable[Observation],
    *,
    window: Window | None = None,
    **options: Unpack[ReportOptions],
) -> Report:
    """The report over a batch of observations (duplicates by ``probe_id`` count once).

    ``window`` keeps each group's last N cycles (observations in cycle order; default: every
    cycle pooled); ``options`` are :func:`report_from_tagger`'s: ``cohorts`` selects and orders
    the cohorts; ``compare`` = (hypothetically robust, hypothetically non-robust) cohorts for the
    hypothesis test, by default the first two cohorts; ``compare_targets`` = (baseline,
    candidate), by default the two targets when there are two. ``evaluators`` maps an evaluator
    name to its verdicts by probe_id (reliability, judge verdicts as truth); ``human_ratings``
    maps probe_id to a 1–5 rating, correlated with the judge verdict, the retrieval judgement and
    every metric of ``metric_scores`` (name → probe_id → score). ``balance_seed`` seeds the
    λ-balancing draw; ``data_quality`` holds the gap groups' labels
    (:mod:`groundwatch.core.data_quality`).
    """
    tagger = Tagger(window)
    tagger.apply_many(observations)
    return report_from_tagger(tagger, **options)


def _no_step() -> None:
    """No allocator hook: a library caller's report."""


#: Failing groups a report lists in full by default (counts are always complete).
MAX_FAILING = 2000


def report_from_tagger(
    tagger: TallyReads,
    *,
    cohorts: Sequence[str] | None = None,
    compare: tuple[str, str] | None = None,
    compare_targets: tuple[str, str] | None = None,
    evaluators: Mapping[str, Mapping[str, bool]] | None = None,
    human_ratings: Mapping[str, float] | None = None,
    metric_scores: Mapping[str, Mapping[str, float]] | None = None,
    alpha: float = 0.05,
    lambda_tolerance: float = 0.05,
    balance_seed: int = 0,
    data_quality: QualityResults | None = None,
    evidence: Evidence | None = None,
    failing_limit: int | None = None,
    after_pass: Callable[[], object] | None = None,
) -> Report:
    """The same report from a live tagger's window (what ``/report`` serves).

    A tagger with an open-domain baseline (GRAMMAR §5.2) reports the closed domain: the groups
    the baseline answers correctly and the baseline itself are left out of every number, as
    ``groundwatch run --open-domain-baseline`` does, and the ``open_domain`` section says which.
    ``evidence`` (the store) fills the failing groups' questions, answers and SQL; at most
    ``failing_limit`` (default :data:`MAX_FAILING`) are listed in full.

    ``after_pass`` is called after each pass over every group (the caller's allocator hook:
    the services give the pass's freed heap back to the system there). A pass's transient
    objects are freed when it ends, but the heap keeps their pages; the next pass then grew
    the process again from there: the report of a 500k-probe cycle climbed 48 MB over the
    cycle's state, and with the pages given back after each pass its peak was 11 MB lower.
    """
    step: Callable[[], object] = after_pass if after_pass is not None else _no_step
    baseline = tagger.open_domain_baseline
    outer = tagger
    flagged: set[str] = set()
    if baseline is not None:
        # the report of the closed domain: the same report over a tagger without the baseline
        # and the groups it answers
        flagged = outer.open_domain_groups()
        tagger = Tagger(outer.window)
        tagger.apply_many(closed_domain(outer.observations(), baseline, flagged))
        tagger.drain_transitions()
    view = _View(tagger)
    step()
    view.quality = data_quality
    targets = view.targets
    # this cycle's health first: each cohort's error share is over its newest cycle's probes
    health, cycle_probes = cycle_health(tagger, evidence)
    out_targets: dict[str, TargetReport] = {}
    for target in targets:
        present = view.cohorts[target]
        chosen = [c for c in cohorts if c in present] if cohorts is not None else present
        per_cohort: dict[str, CohortNumbers] = {}
        for c in chosen:
            probes, errors = cycle_probes.get((target, c), (0, 0))
            per_cohort[c] = _cohort_numbers(view, target, c).model_copy(
                update={"cycle_probes": probes, "cycle_errors": errors}
            )
            step()
        pair: tuple[str, str] | None = compare
        if pair is None and len(chosen) >= 2:
            pair = (chosen[0], chosen[1])
        hypothesis = _hypothesis(view, target, pair, alpha, lambda_tolerance, per_cohort)
        step()
        balanced = _balanced(view, target, pair, balance_seed)
        step()
        out_targets[target] = TargetReport(
            cohorts=per_cohort, hypothesis=hypothesis, balanced=balanced
        )
    scores = scores_section(tagger.observations())
    step()
    step()
    # the failing groups last: their page (up to MAX_FAILING rows with their evidence, ~10 MB)
    # is kept to the end, and every pass made after it added its own peak on top of it
    failing_total, failing = group_results(
        tagger,
        status=FAILING,
        evidence=evidence,
        limit=MAX_FAILING if failing_limit is None else failing_limit,
    )
    step()
    tpair = compare_targets
    if tpair is None and len(targets) == 2:
        tpair = (targets[0], targets[1])
    report = Report(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        alpha=alpha,
        target=targets[0] if targets else None,
        targets=out_targets,
        target_comparison=(
            _target_comparison(view, tpair, cohorts, alpha) if tpair is not None else None
        ),
        reliability=_reliability(view, evaluators) if evaluators else None,
        human_agreement=(
            _human_agreement(view, human_ratings, metric_scores or {}) if human_ratings else None
        ),
        scenarios=scenario_numbers(tagger),
        window_runs=tagger.window.runs,
        series=sorted(view.series),
        latest_cycle=view.latest_cycle,
        transitions=[transition_entry(tr) for tr in tagger.recent_transitions(50)],
        data_quality=_data_quality(view, data_quality) if data_quality is not None else None,
        scores=scores,
        failing_groups=failing,
        failing_groups_total=failing_total,
        target_health=health,
    )
    if baseline is None:
        return report
    kept = [
        transition_entry(tr)
        for tr in outer.recent_transitions(50)
        if tr.target != baseline and tr.group_id not in flagged
    ]
    return report.model_copy(
        update={
            "open_domain": OpenDomainFilter(
                baseline=baseline, groups=len(flagged), group_ids=sorted(flagged)
            ),
            "transitions": kept,
        }
    )


def _data_quality(view: _View, results: QualityResults) -> DataQuality:
    """Every gap group of the report with its label (unchecked when no label is known)."""
    gap_in: dict[str, list[str]] = {}
    for target, cohort in view.pairs:
        for gid, t in view.tallies(target, cohort).items():
            if t.status is GroupStatus.GAP:
                gap_in.setdefault(gid, []).append(f"{target}/{cohort}")
    entries: list[DataQualityEntry] = []
    labels = dict.fromkeys((q.value for q in QualityLabel), 0)
    for gid in sorted(gap_in):
        check = results.checks.get(gid)
        if check is None:
            entry = DataQualityEntry(
                group_id=gid,
                label=QualityLabel.UNCHECKED.value,
                method="none",
                reason="not checked (no corpus, or the group's question is not known)",
                gap_in=gap_in[gid],
            )
        else:
            entry = DataQualityEntry(
                group_id=gid,
                label=check.label.value,
                method=check.method,
                reason=check.reason,
                doc_id=check.doc_id,
                excerpt=check.excerpt,
                gap_in=gap_in[gid],
            )
        labels[entry.label] += 1
        entries.append(entry)
    return DataQuality(
        corpus_documents=results.corpus_documents, mrc=results.mrc, labels=labels, groups=entries
    )


def transition_entry(tr: Transition) -> TransitionEntry:
    return TransitionEntry(
        target=tr.target,
        cohort=tr.cohort,
        group_id=tr.group_id,
        from_status=tr.from_status.value,
        to_status=tr.to_status.value,
        kind=tr.kind,
        series=tr.series,
        cycle=tr.cycle,
        at=datetime.fromtimestamp(tr.at, UTC).isoformat(timespec="seconds") if tr.at else None,
    )


def scenario_numbers(tagger: TallyReads) -> dict[str, dict[str, ScenarioNumbers]]:
    """RAGProbe failure rates per target and scenario, from the tagger's running counts."""
    out: dict[str, dict[str, ScenarioNumbers]] = {}
    for (target, scenario), c in sorted(tagger.scenario_counts().items()):
        correct, incorrect = c[Verdict.CORRECT], c[Verdict.INCORRECT]
        decided = correct + incorrect
        out.setdefault(target, {})[scenario] = ScenarioNumbers(
            probes=sum(c.values()),
            correct=correct,
            incorrect=incorrect,
            errors=c[Verdict.ERROR],
            undecided=c[Verdict.UNDECIDED],
            decided=decided,
            failure_rate=proportion(incorrect, decided),
            failure_rate_ci=wilson_ci(incorrect, decided),
        )
    return out


# ---------------------------------------------------------------------- the view over a tagger
class _View:
    """Per-report caches over a tagger: group snapshots, observations and retrieval judgements."""

    def __init__(self, tagger: TallyReads) -> None:
        self.tagger = tagger
        self.targets: list[str] = []
        self.cohorts: dict[str, list[str]] = {}
        self.series: set[str] = set()
        self.latest_cycle: int | None = None
        self._obs: dict[str, Observation] | None = None
        for o in tagger.observations():
            if o.scenario != FACTUAL:
                continue  # RAGProbe probes have their own section
            if o.series:
                self.series.add(o.series)
            if self.latest_cycle is None or o.cycle > self.latest_cycle:
                self.latest_cycle = o.cycle
            if o.target not in self.cohorts:
                self.targets.append(o.target)
                self.cohorts[o.target] = []
            if o.cohort not in self.cohorts[o.target]:
                self.cohorts[o.target].append(o.cohort)
        #: the (target, cohort) pairs with factual groups, in the order the tagger lists them
        self.pairs: list[tuple[str, str]] = []
        pairs: set[tuple[str, str]] = set()
        for t in tagger.tallies():
            if t.scenario == FACTUAL:
                pair = (t.target, t.cohort)
                if pair not in pairs:
                    pairs.add(pair)
                    self.pairs.append(pair)
        self._retrieval: dict[
            tuple[str, str], dict[str, tuple[bool | None, RetrievalEvidence]]
        ] = {}
        self.quality: QualityResults | None = None

    @property
    def obs(self) -> dict[str, Observation]:
        """Probe id → observation, made when first asked (a report with evaluators or human
        ratings): an index of every observation held for the report's whole life was ~40 MB
        at 500k probes, for two sections most reports do not have."""
        if self._obs is None:
            self._obs = {o.probe_id: o for o in self.tagger.observations() if o.scenario == FACTUAL}
        return self._obs

    def tallies(self, target: str, cohort: str) -> Mapping[str, GroupTally]:
        return _CohortTallies(self.tagger, target, cohort)

    def retrieval(
        self, target: str, group_id: str
    ) -> dict[str, tuple[bool | None, RetrievalEvidence]]:
        key = (target, group_id)
        cache = self._retrieval
        r = cache.get(key)
        if r is None:
            r = cache[key] = self.tagger.retrieval_judgements(target, group_id)
            if len(cache) > RETRIEVAL_CACHE:
                del cache[next(iter(cache))]  # the oldest (the report runs in one thread)
        return r


_NO_EVIDENCE: tuple[bool | None, RetrievalEvidence] = (None, RetrievalEvidence.NONE)


class _CohortTallies(Mapping[str, GroupTally]):
    """One (target, cohort)'s factual groups, read through the tagger as the report asks: the
    report's own map of every group (a dict per cohort) held ~15 MB at 500k probes for as long
    as the report was built. Every group's snapshot is made when read (a cold group's from
    its packed numbers) and dropped once the report has used it."""

    __slots__ = ("_cohort", "_reads", "_target")

    def __init__(self, reads: TallyReads, target: str, cohort: str) -> None:
        self._reads = reads
        self._target = target
        self._cohort = cohort

    def _snapshots(self) -> Iterator[GroupTally]:
        for t in self._reads.tallies(self._target, self._cohort):
            if t.scenario == FACTUAL:
                yield t

    def __getitem__(self, group_id: str) -> GroupTally:
        t = self._reads.tally(self._target, self._cohort, group_id)
        if t is None or t.scenario != FACTUAL:
            raise KeyError(group_id)
        return t

    def __iter__(self) -> Iterator[str]:
        for t in self._snapshots():
            yield t.group_id

    def __len__(self) -> int:
        return sum(1 for _ in self._snapshots())

    def __bool__(self) -> bool:
        return next(self._snapshots(), None) is not None

    def items(self) -> ItemsView[str, GroupTally]:
        return _Items(self)

    def values(self) -> ValuesView[GroupTally]:
        return _Values(self)


class _Items(ItemsView[str, GroupTally]):
    """Each group read once (the default reads the key, then looks it up)."""

    _mapping: _CohortTallies

    def __iter__(self) -> Iterator[tuple[str, GroupTally]]:
        for t in self._mapping._snapshots():
            yield t.group_id, t


class _Values(ValuesView[GroupTally]):
    _mapping: _CohortTallies

    def __iter__(self) -> Iterator[GroupTally]:
        return self._mapping._snapshots()


#: Groups whose retrieval judgements a report keeps at once: the sections walk the groups in
#: the same order, each asking a group's judgements a few times in a row, and keeping every
#: group's was ~1.5 KB a group for the report's whole build (the probe ids as keys).
RETRIEVAL_CACHE = 1024


def _cohort_numbers(view: _View, target: str, cohort: str) -> CohortNumbers:
    """One cohort's numbers. Acc, Acc_db, R and λ are over the same set: the decided groups
    (gap, robust, non-robust, flaky); pending and unknown groups are counted apart and enter none
    of them. Errors, undecided verdicts and coverage are over every group. Retrieval accuracy is
    over every example whose retrieval could be judged (any group, any verdict but a target
    error: the retrieval judgement does not need the answer's); refined retrieval accuracy over
    those of decided non-gap groups."""
    tallies = view.tallies(target, cohort)
    status_n = dict.fromkeys(GroupStatus, 0)
    correct = incorrect = errors = undecided = gap_examples = cohort_gaps = 0
    probed = partial = flaky_forms = 0
    retrieval_ok = retrieval_judged = inconclusive = 0
    refined_ret_ok = refined_ret_n = 0
    causes = dict.fromkeys(Cause, 0)
    methods: dict[str, int] = {}
    error_kinds: dict[str, int] = {}
    forms = [t.group_forms for t in tallies.values()]
    for gid, t in tallies.items():
        status_n[t.status] += 1
        errors += t.error
        undecided += t.undecided
        probed += t.forms_judged
        flaky_forms += t.flaky_forms
        counted = t.status in DECIDED_STATUSES
        if counted:
            correct += t.correct
            incorrect += t.incorrect
            partial += t.partial
        gap = t.status is GroupStatus.GAP
        if gap:
            gap_examples += t.examples
        # whether another cohort answered it, looked up (a set of every answered group,
        # held for the report's life, was ~4 MB at 500k probes)
        answered = view.tagger.answered_anywhere(target, gid)
        attr_status = attribution_status(t.status, answered)
        if gap and attr_status is not GroupStatus.GAP:
            cohort_gaps += 1
        rj = view.retrieval(target, gid)
        for o in view.tagger.group_observations(target, cohort, gid):
            if o.error_kind:
                error_kinds[o.error_kind] = error_kinds.get(o.error_kind, 0) + 1
            ok, evidence = rj.get(o.probe_id, _NO_EVIDENCE)
            if ok is not None:
                methods[evidence.value] = methods.get(evidence.value, 0) + 1
                retrieval_judged += 1
                retrieval_ok += ok
                if counted and not gap:
                    refined_ret_n += 1
                    refined_ret_ok += ok
            elif o.verdict is not Verdict.ERROR:
                inconclusive += 1
            cause = cause_of(o, attr_status, ok)
            if cause is not None:
                causes[cause] += 1
    examples = correct + incorrect
    groups = sum(n for s, n in status_n.items() if s in DECIDED_STATUSES)
    refined_n = examples - gap_examples
    decided_forms = sum(t.examples for t in tallies.values())
    moves = {
        f"{a.value}->{b.value}": n
        for (tt, cc, a, b), n in view.tagger.transition_counts().items()
        if (tt, cc) == (target, cohort)
    }
    kinds = {
        kind: n for (tt, cc, kind), n in view.tagger.transition_kinds().items()
        if (tt, cc) == (target, cohort)
    }  # fmt: skip
    gap_quality: dict[str, int] = {}
    if view.quality is not None:
        gap_quality = dict.fromkeys((q.value for q in QualityLabel), 0)
        for gid, t in tallies.items():
            if t.status is GroupStatus.GAP:
                check = view.quality.checks.get(gid)
                gap_quality[check.label.value if check else QualityLabel.UNCHECKED.value] += 1
    return CohortNumbers(
        examples=examples,
        correct=correct,
        incorrect=incorrect,
        errors=errors,
        undecided=undecided,
        probed=probed,
        coverage=proportion(decided_forms, probed),
        groups=groups,
        gap_groups=status_n[GroupStatus.GAP],
        robust_groups=status_n[GroupStatus.ROBUST],
        non_robust_groups=status_n[GroupStatus.NON_ROBUST],
        flaky_groups=status_n[GroupStatus.FLAKY],
        pending_groups=status_n[GroupStatus.PENDING],
        unknown_groups=status_n[GroupStatus.UNKNOWN],
        partial_groups=partial,
        flaky_forms=flaky_forms,
        knowledge_gap_groups=status_n[GroupStatus.GAP] - cohort_gaps,
        cohort_gap_groups=cohort_gaps,
        gap_examples=gap_examples,
        accuracy=proportion(correct, examples),
        accuracy_ci=wilson_ci(correct, examples),
        acc_db=(1 - status_n[GroupStatus.GAP] / groups) if groups else None,
        refined_n=refined_n,
        refined_accuracy=proportion(correct, refined_n),
        refined_accuracy_ci=wilson_ci(correct, refined_n),
        lambda_=proportion(gap_examples, examples),
        retrieval_accuracy=proportion(retrieval_ok, retrieval_judged),
        retrieval_accuracy_ci=wilson_ci(retrieval_ok, retrieval_judged),
        retrieval_judged=retrieval_judged,
        retrieval_inconclusive=inconclusive,
        retrieval_coverage=proportion(retrieval_judged, retrieval_judged + inconclusive),
        refined_retrieval_accuracy=proportion(refined_ret_ok, refined_ret_n),
        refined_retrieval_n=refined_ret_n,
        retrieval_judged_by=methods,
        attribution={c.value: n for c, n in causes.items()},
        error_kinds=error_kinds,
        transitions=moves,
        regressions=kinds.get("regression", 0),
        recoveries=kinds.get("recovery", 0),
        held_groups=sum(1 for t in tallies.values() if t.held),
        forms_per_group=FormsRange(min=min(forms), max=max(forms)) if forms else None,
        gap_quality=gap_quality,
    )


def _balanced(view: _View, target: str, pair: tuple[str, str] | None, seed: int) -> Balanced:
    """GRAMMAR's "balance gap examples" for the compared cohorts (:mod:`groundwatch.core.balance`):
    each form's latest decided verdict and its retrieval judgement, per shared group."""
    if pair is None:
        return Balanced(available=False, reason="needs two cohorts")
    samples: dict[str, dict[str, GroupSample]] = {}
    # equal samples shared: a few distinct values (verdicts × judgements × status) for every
    # group of both cohorts — one object and two tuples a group was ~30 MB at 500k probes
    distinct: dict[GroupSample, GroupSample] = {}
    for cohort in pair:
        tallies = view.tallies(target, cohort)
        if not tallies:
            return Balanced(available=False, reason=f"cohort {cohort!r} has no observations")
        by_group: dict[str, GroupSample] = {}
        for gid, t in tallies.items():
            judged = view.retrieval(target, gid)
            verdicts: list[bool] = []
            retrieval: list[bool] = []
            for o in view.tagger.group_observations(target, cohort, gid):
                if o.verdict is Verdict.CORRECT or o.verdict is Verdict.INCORRECT:
                    verdicts.append(o.verdict is Verdict.CORRECT)
                ok = judged.get(o.probe_id, _NO_EVIDENCE)[0]
                if ok is not None:
                    retrieval.append(ok)
            sample = GroupSample(
                verdicts=tuple(verdicts),
                retrieval=tuple(retrieval),
                decided=t.status in DECIDED_STATUSES,
                gap=t.status is GroupStatus.GAP,
            )
            by_group[gid] = distinct.setdefault(sample, sample)
        samples[cohort] = by_group
    b = balance(samples, seed=seed)
    if not b.groups and not b.retrieval_groups:
        return Balanced(
            available=False,
            reason="no shared group with a decided verdict or a retrieval judgement in both",
            cohorts=list(pair),
            seed=seed,
        )
    return Balanced(
        available=True,
        cohorts=list(pair),
        seed=b.seed,
        forms_per_group=b.forms_per_group,
        groups=b.groups,
        mutual_gap_groups=b.mutual_gap_groups,
        retrieval_groups=b.retrieval_groups,
        sides={
            c: BalancedCohort(
                examples=sd.examples,
                correct=sd.correct,
                accuracy=sd.accuracy,
                gap_examples=sd.gap_examples,
                lambda_=sd.lambda_,
                refined_n=sd.refined_n,
                refined_accuracy=sd.refined_accuracy,
                retrieval_judged=sd.retrieval_judged,
                retrieval_accuracy=sd.retrieval_accuracy,
            )
            for c, sd in b.sides.items()
        },
    )


def _unavailable(reason: str, **fields: object) -> Hypothesis:
    return Hypothesis.model_validate({"available": False, "reason": reason, **fields})


def _group_acc(t: GroupTally) -> float:
    return t.correct / t.examples if t.examples else 0.0


def _hypothesis(
    view: _View,
    target: str,
    pair: tuple[str, str] | None,
    alpha: float,
    lambda_tolerance: float,
    numbers: Mapping[str, CohortNumbers] | None = None,
) -> Hypothesis:
    """Cohort a (hypothetically robust) against cohort b over the same semantic groups.

    ``numbers``: the cohorts' numbers when the report has them already (each is a pass over
    every group: ~18 s apiece at 500k probes).

    Mutual gap groups (gap in both cohorts) are left out: they say the knowledge base lacks the
    fact, not that one text form is worse. A group that is a gap in one cohort only stays in —
    that is exactly a form the target cannot handle (the keyword retriever's long queries).
    Groups still pending in either cohort are left out as well.
    """
    if pair is None:
        return _unavailable("needs two cohorts")
    a, b = pair
    ta, tb = view.tallies(target, a), view.tallies(target, b)
    if not ta or not tb:
        return _unavailable(f"cohort {a if not ta else b!r} has no observations for {target!r}")
    shared = [g for g in ta if g in tb]
    pending = [
        g
        for g in shared
        if ta[g].status not in DECIDED_STATUSES or tb[g].status not in DECIDED_STATUSES
    ]
    pending_set = set(pending)
    decided = [g for g in shared if g not in pending_set]
    mutual = [
        g for g in decided if ta[g].status is GroupStatus.GAP and tb[g].status is GroupStatus.GAP
    ]
    mutual_set = set(mutual)
    compared = [g for g in decided if g not in mutual_set]
    warnings: list[str] = []
    if not compared:
        return _unavailable(
            "no shared, decided, non-mutual-gap groups",
            cohorts=[a, b],
            shared_groups=len(shared),
            mutual_gap_groups=len(mutual),
        )
    known = numbers or {}
    full_a = known[a] if a in known else _cohort_numbers(view, target, a)
    full_b = known[b] if b in known else _cohort_numbers(view, target, b)
    la, lb = full_a.lambda_, full_b.lambda_
    side = {
        a: _side(ta, compared, lambda_all_groups=la),
        b: _side(tb, compared, lambda_all_groups=lb),
    }
    balanced = la is not None and lb is not None and abs(la - lb) <= lambda_tolerance
    if not balanced:
        warnings.append(
            f"λ differs between cohorts ({fmt(la)} vs {fmt(lb)}): plain accuracy mixes knowledge"
            " gaps with robustness, compare R, accuracy without mutual gap groups, or the"
            " balanced accuracy (equal forms per group, equal λ)"
        )
    if full_a.forms_per_group != full_b.forms_per_group:
        warnings.append(
            "cohorts have different numbers of forms per group (unbalanced sampling):"
            f" {_forms(full_a.forms_per_group)} vs {_forms(full_b.forms_per_group)}"
        )
    if len(compared) < 10:
        warnings.append(f"only {len(compared)} groups compared: the paired test has little power")
    xs = [_group_acc(ta[g]) for g in compared]
    ys = [_group_acc(tb[g]) for g in compared]
    paired = paired_test(xs, ys)
    sa, sb = side[a], side[b]
    z = two_proportion_z_test(sa.correct, sa.examples, sb.correct, sb.examples)
    zr = two_proportion_z_test(sa.correct, sa.refined_n, sb.correct, sb.refined_n)
    better_a = [g for g, x, y in zip(compared, xs, ys, strict=True) if x > y]
    better_b = [g for g, x, y in zip(compared, xs, ys, strict=True) if y > x]
    p = paired.p_value
    significant = p is not None and p < alpha
    if significant:
        hi, lo = (a, b) if (paired.mean_difference or 0) > 0 else (b, a)
        conclusion = f"{lo!r} is worse than {hi!r} (paired p = {p:.3g} < {alpha})"
    else:
        conclusion = f"no significant difference between {a!r} and {b!r} (paired p = {fmt(p)})"
    return Hypothesis(
        available=True,
        target=target,
        cohorts=[a, b],
        shared_groups=len(shared),
        pending_groups_left_out=len(pending),
        mutual_gap_groups=len(mutual),
        groups_compared=len(compared),
        sides=side,
        accuracy_difference=z.difference,
        accuracy_difference_ci=z.difference_ci,
        refined_accuracy_difference=zr.difference,
        paired_test=PairedTestResult(
            unit="semantic group", score="per-group accuracy", **asdict(paired)
        ),
        z_test=ZTestResult(z=z.z, p_value=z.p_value),
        refined_z_test=ZTestResult(z=zr.z, p_value=zr.p_value),
        effect_size=EffectSize(
            cohens_h=z.cohens_h,
            rank_biserial=paired.rank_biserial,
            mean_group_accuracy_difference=paired.mean_difference,
        ),
        p_value=p,
        significant=significant,
        lambda_by_cohort={a: la, b: lb},
        lambda_balanced=balanced,
        groups_better_in={a: len(better_a), b: len(better_b)},
        groups_better_listed={a: better_a[:MAX_LISTED], b: better_b[:MAX_LISTED]},
        warnings=warnings,
        conclusion=conclusion,
    )


def _forms(r: FormsRange | None) -> str:
    return "–" if r is None else f"{r.min}–{r.max}"


def _side(
    tallies: Mapping[str, GroupTally],
    groups: Sequence[str],
    *,
    lambda_all_groups: float | None = None,
) -> SideNumbers:
    correct = sum(tallies[g].correct for g in groups)
    examples = sum(tallies[g].examples for g in groups)
    gaps = [g for g in groups if tallies[g].status is GroupStatus.GAP]
    gap_examples = sum(tallies[g].examples for g in gaps)
    refined_n = examples - gap_examples
    return SideNumbers(
        examples=examples,
        correct=correct,
        accuracy=proportion(correct, examples),
        accuracy_ci=wilson_ci(correct, examples),
        gap_groups=len(gaps),
        gap_examples=gap_examples,
        refined_n=refined_n,
        refined_accuracy=proportion(correct, refined_n),
        refined_accuracy_ci=wilson_ci(correct, refined_n),
        lambda_=proportion(gap_examples, examples),
        lambda_all_groups=lambda_all_groups,
    )


_RANK = {
    GroupStatus.GAP: 0,
    GroupStatus.NON_ROBUST: 1,
    GroupStatus.FLAKY: 1,
    GroupStatus.ROBUST: 2,
}


def _target_comparison(
    view: _View,
    pair: tuple[str, str],
    cohorts: Sequence[str] | None,
    alpha: float,
) -> TargetComparison:
    """Baseline against candidate (production vs canary, two RAG versions) on the same groups:
    per cohort, which groups got better or worse, the paired test over groups and McNemar's test
    over the same text forms."""
    base, cand = pair
    if base not in view.cohorts or cand not in view.cohorts:
        return TargetComparison(
            available=False, reason=f"targets {base!r} and {cand!r} both need observations"
        )
    common = [c for c in view.cohorts[base] if c in view.cohorts[cand]]
    if cohorts is not None:
        common = [c for c in cohorts if c in common]
    per_cohort: dict[str, ComparisonCohort] = {}
    for cohort in common:
        tb, tc = view.tallies(base, cohort), view.tallies(cand, cohort)
        groups = [
            g
            for g in tb
            if g in tc and tb[g].status in DECIDED_STATUSES and tc[g].status in DECIDED_STATUSES
        ]
        transitions: dict[str, int] = {}
        improved: list[str] = []
        worsened: list[str] = []
        xs, ys = [], []
        for g in groups:
            sb, sc = tb[g].status, tc[g].status
            if sb is not sc:
                k = f"{sb.value}->{sc.value}"
                transitions[k] = transitions.get(k, 0) + 1
            x, y = _group_acc(tb[g]), _group_acc(tc[g])
            xs.append(x)
            ys.append(y)
            if y > x:
                improved.append(g)
            elif y < x:
                worsened.append(g)
        paired = paired_test(ys, xs)
        forms = _form_pairs(view, base, cand, cohort, groups)
        mc = mcnemar_exact(forms)
        nb = _side(tb, groups)
        nc = _side(tc, groups)
        p = paired.p_value
        significant = p is not None and p < alpha
        if significant:
            verdict = "better" if (paired.mean_difference or 0) > 0 else "worse"
            conclusion = f"{cand!r} is {verdict} than {base!r} on {cohort!r} (paired p = {p:.3g})"
        else:
            conclusion = f"no significant change from {base!r} to {cand!r} on {cohort!r}"
        per_cohort[cohort] = ComparisonCohort(
            groups_compared=len(groups),
            sides={base: nb, cand: nc},
            improved_groups=len(improved),
            worsened_groups=len(worsened),
            unchanged_groups=len(groups) - len(improved) - len(worsened),
            improved_listed=improved[:MAX_LISTED],
            worsened_listed=worsened[:MAX_LISTED],
            status_transitions=transitions,
            status_improved=sum(1 for g in groups if _RANK[tc[g].status] > _RANK[tb[g].status]),
            status_worsened=sum(1 for g in groups if _RANK[tc[g].status] < _RANK[tb[g].status]),
            paired_test=PairedTestResult(unit="semantic group", x=cand, y=base, **asdict(paired)),
            mcnemar=McNemarResult(unit="text form", first=base, second=cand, **asdict(mc)),
            p_value=p,
            significant=significant,
            conclusion=conclusion,
        )
    return TargetComparison(available=True, baseline=base, candidate=cand, cohorts=per_cohort)


def _form_pairs(
    view: _View, base: str, cand: str, cohort: str, groups: Sequence[str]
) -> list[tuple[bool, bool]]:
    """(baseline correct, candidate correct) per text form both targets judged decisively; with
    several runs in the window the latest verdict of each form stands for it."""
    pairs: list[tuple[bool, bool]] = []
    for g in groups:
        latest: list[dict[str, bool]] = []
        for target in (base, cand):
            seen: dict[str, bool] = {}
            for o in view.tagger.group_observations(target, cohort, g):
                if o.verdict is Verdict.CORRECT or o.verdict is Verdict.INCORRECT:
                    seen[o.form_id] = o.verdict is Verdict.CORRECT
            latest.append(seen)
        pairs.extend((latest[0][f], latest[1][f]) for f in latest[0] if f in latest[1])
    return pairs


def _decided(o: Observation) -> bool:
    return o.verdict is Verdict.CORRECT or o.verdict is Verdict.INCORRECT


def _reliability(
    view: _View, evaluators: Mapping[str, Mapping[str, bool]]
) -> dict[str, EvaluatorReliability]:
    """Each reference-free evaluator against the judge's verdicts (GRAMMAR §3, Table 1)."""
    out: dict[str, EvaluatorReliability] = {}
    for name, verdicts in evaluators.items():
        truth: list[bool] = []
        pred: list[bool] = []
        for pid, says_correct in verdicts.items():
            o = view.obs.get(pid)
            if o is not None and _decided(o):
                truth.append(o.verdict is Verdict.CORRECT)
                pred.append(bool(says_correct))
        out[name] = EvaluatorReliability(
            **asdict(evaluator_reliability(truth, pred)), unmatched=len(verdicts) - len(truth)
        )
    return out


def _human_agreement(
    view: _View,
    ratings: Mapping[str, float],
    metric_scores: Mapping[str, Mapping[str, float]],
) -> HumanAgreement:
    """Spearman's ρ between human Likert ratings and each metric (Oro et al.): the judge's
    verdict, the retrieval judgement, every per-answer metric stored with the rated judgements
    (EM, F1, ROUGE-L, BLEU, the IR metrics, semantic similarity, BERTScore, the LLM-derived
    ones, RAGAS faithfulness, SelfCheck agreement), the reference-free evaluators' calls
    (``rf.<evaluator>``: right 1, wrong 0), and the CSV's own metric columns."""
    metrics: dict[str, dict[str, float]] = {"judge_verdict": {}, "retrieval_sufficient": {}}
    for pid in ratings:
        o = view.obs.get(pid)
        if o is None:
            continue
        for name, value in (o.scores.answer_means() or {}).items():
            if value is not None:
                metrics.setdefault(name, {})[pid] = value
        rf = o.scores.reference_free
        for evaluator, call in rf.calls() if rf is not None else ():
            if call is EvaluatorCall.RIGHT or call is EvaluatorCall.WRONG:  # a call, not a pass
                metrics.setdefault(f"rf.{evaluator}", {})[pid] = float(call is EvaluatorCall.RIGHT)
        if not _decided(o):
            continue
        metrics["judge_verdict"][pid] = 1.0 if o.verdict is Verdict.CORRECT else 0.0
        ok = view.retrieval(o.target, o.group_id).get(pid, _NO_EVIDENCE)[0]
        if ok is not None:
            metrics["retrieval_sufficient"][pid] = 1.0 if ok else 0.0
    for name, scores in metric_scores.items():  # given scores add to (or correct) stored ones
        metrics.setdefault(name, {}).update(scores)
    correlations: dict[str, CorrelationResult] = {}
    for name, scores in metrics.items():
        common = [pid for pid in ratings if pid in scores]
        corr = spearman([ratings[p] for p in common], [scores[p] for p in common])
        correlations[name] = CorrelationResult(**asdict(corr))
    return HumanAgreement(ratings=len(ratings), spearman=correlations)
