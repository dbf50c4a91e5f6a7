"""Two evaluations of one dataset compared semantic group by semantic group.

A *side* is what one evaluation found: for every (target, semantic group) each cohort's verdict
counts and GRAMMAR status — one run of a series, or a saved baseline. Comparing two sides gives

* per target and cohort, Acc_db, R, λ and coverage on each side with the difference and its
  95 % interval (Newcombe's score interval from the two Wilson intervals,
  :func:`~groundwatch.core.stats.two_proportion_z_test`; it treats the sides as independent, so
  for the same groups asked twice it is on the wide side — never falsely narrow);
* every group whose status changed, worst first: a decided group that got worse (robust →
  non-robust → gap, flaky between robust and non-robust) is a **regression**, one that got better
  a **recovery**; a decided group with no decided status on the other side **lost** (→ unknown,
  → pending, not probed) or **gained** its evidence — news about the endpoint or the sample, not
  about the knowledge base, so neither counts as a regression;
* the exact two-sided sign test over the groups decided on both sides (McNemar's exact test when
  the statuses are two): do more groups get worse than better, beyond chance?

Nothing here reads a store or a file: the service layer (:mod:`groundwatch.app.compare`) builds
the sides and adds the answers behind each changed group.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from groundwatch.core.evidence import DECIDED_STATUSES, DEFAULT_EVIDENCE, EvidenceRule, GroupStatus
from groundwatch.core.stats import sign_test_p, two_proportion_z_test
from groundwatch.core.tagging import overall_status, status_of

#: How bad a decided status is: a move up this scale is a regression.
SEVERITY: dict[str, int] = {
    GroupStatus.ROBUST: 0,
    GroupStatus.FLAKY: 1,
    GroupStatus.NON_ROBUST: 2,
    GroupStatus.GAP: 3,
}
#: The status of a group one side did not probe at all.
ABSENT = "absent"
#: Change kinds, worst first: the order of every listing.
KINDS = ("regression", "lost", "gained", "recovery")

GroupKey = tuple[str, str]
"""(target, group_id)."""


@dataclass(frozen=True, slots=True)
class CohortTally:
    """One cohort of one semantic group on one side: its verdict counts and status.

    ``forms`` maps form id → verdict when the side carries them (a saved baseline); a side read
    from the store leaves it empty and the service layer reads the changed groups' forms."""

    status: str
    correct: int = 0
    incorrect: int = 0
    errors: int = 0
    undecided: int = 0
    judged: int = 0
    group_forms: int = 1
    forms: Mapping[str, str] = field(default_factory=dict)


def cohort_tally(
    correct: int,
    incorrect: int,
    errors: int,
    undecided: int,
    group_forms: int,
    evidence: EvidenceRule = DEFAULT_EVIDENCE,
    forms: Mapping[str, str] | None = None,
) -> CohortTally:
    """A cohort's tally from one cycle's verdicts, its status by the evidence rules (the status
    the tagger gives the same cycle alone)."""
    judged = correct + incorrect + errors + undecided
    status = status_of(correct, incorrect, judged, group_forms, evidence)
    return CohortTally(
        status.value, correct, incorrect, errors, undecided, judged, group_forms, forms or {}
    )


def group_status(
    cohorts: Mapping[str, CohortTally], memo: dict[tuple[Any, ...], str] | None = None
) -> str:
    """A semantic group's status over its cohorts, as the report and ``groups`` give it.
    ``memo`` keeps the answers by cohort statuses (a comparison asks 200k groups, of a few
    patterns)."""
    key = tuple((c.status, c.correct > 0) for c in cohorts.values())
    if memo is not None and key in memo:
        return memo[key]
    answered = any(c.correct for c in cohorts.values())
    status = overall_status((GroupStatus(c.status) for c in cohorts.values()), answered=answered)
    if memo is not None:
        memo[key] = status.value
    return status.value


@dataclass(slots=True)
class Side:
    """What one evaluation found, per (target, group_id): each cohort's tally. ``digest`` is
    its dataset version's (:func:`dataset_digest`), empty until someone needs it."""

    label: str
    dataset_id: str
    digest: str
    groups: dict[GroupKey, dict[str, CohortTally]] = field(default_factory=dict)
    run_ids: tuple[str, ...] = ()

    def add(self, target: str, group_id: str, cohort: str, tally: CohortTally) -> None:
        self.groups.setdefault((target, group_id), {})[cohort] = tally

    @property
    def targets(self) -> list[str]:
        return sorted({t for t, _ in self.groups})


def dataset_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """The digest of a dataset version: its (group id, form id) pairs in sorted order (Python's
    code-point order: a database's collation may sort otherwise). The same groups asked in the
    same wordings digest alike wherever they are stored; a regenerated dataset (other groups,
    other forms) does not."""
    h = hashlib.sha256()
    it = iter(sorted(pairs))
    while chunk := list(itertools.islice(it, 10_000)):
        h.update("".join(f"{g}\x1f{f}\n" for g, f in chunk).encode())
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Figures:
    """A (target, cohort)'s GRAMMAR numbers from its groups, each rate with its counts."""

    groups: int = 0
    gap_groups: int = 0
    examples: int = 0
    correct: int = 0
    gap_examples: int = 0
    decided_forms: int = 0
    probed_forms: int = 0

    def ratio(self, name: str) -> tuple[int, int]:
        """(numerator, denominator) of figure ``name``."""
        if name == "acc_db":
            return self.groups - self.gap_groups, self.groups
        if name == "refined_accuracy":
            return self.correct, self.examples - self.gap_examples
        if name == "lambda":
            return self.gap_examples, self.examples
        if name == "coverage":
            return self.decided_forms, self.probed_forms
        raise KeyError(name)

    def value(self, name: str) -> float | None:
        k, n = self.ratio(name)
        return k / n if n else None


#: The figures a comparison gives deltas of (GRAMMAR eq. 1–3 and the evidence they stand on).
FIGURES = ("acc_db", "refined_accuracy", "lambda", "coverage")


def figures(side: Side, target: str) -> dict[str, Figures]:
    """Per cohort of ``target``: Acc_db and λ over the decided groups and their decided forms,
    R outside the gap groups, coverage over every probed form (the report's definitions)."""
    acc: dict[str, list[int]] = {}
    for (t, _gid), cohorts in side.groups.items():
        if t != target:
            continue
        for cohort, c in cohorts.items():
            a = acc.setdefault(cohort, [0] * 7)
            decided = c.correct + c.incorrect
            a[5] += decided
            a[6] += c.judged
            if c.status not in DECIDED_STATUSES:
                continue
            gap = c.status == GroupStatus.GAP
            a[0] += 1
            a[1] += gap
            a[2] += decided
            a[3] += c.correct
            a[4] += decided if gap else 0
    return {cohort: Figures(*a) for cohort, a in sorted(acc.items())}


@dataclass(frozen=True, slots=True)
class FigureDelta:
    """One figure on both sides: B − A with its 95 % interval (None when either is undefined)."""

    figure: str
    a: float | None
    b: float | None
    a_n: int
    b_n: int
    delta: float | None
    delta_ci: tuple[float, float] | None


def figure_delta(name: str, a: Figures, b: Figures) -> FigureDelta:
    ka, na = a.ratio(name)
    kb, nb = b.ratio(name)
    test = two_proportion_z_test(kb, nb, ka, na)
    return FigureDelta(
        name, a.value(name), b.value(name), na, nb, test.difference, test.difference_ci
    )


@dataclass(frozen=True, slots=True)
class CohortChange:
    cohort: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class FormChange:
    """One text form whose verdict or answer differs between the sides."""

    cohort: str
    form_id: str
    question: str | None
    before: str | None
    after: str | None
    before_answer: str | None = None
    after_answer: str | None = None


@dataclass(slots=True)
class GroupChange:
    """A semantic group whose status differs between the sides."""

    target: str
    group_id: str
    before: str
    after: str
    kind: str
    cohorts: list[CohortChange]
    gold: str | None = None
    sql: str | None = None
    forms: list[FormChange] = field(default_factory=list)

    @property
    def transition(self) -> str:
        return f"{self.before}→{self.after}"


def change_kind(before: str, after: str) -> str | None:
    """regression / recovery between decided statuses, lost / gained when one side has none;
    None when nothing changed (or nothing was decided on either side)."""
    if before == after:
        return None
    a, b = SEVERITY.get(before), SEVERITY.get(after)
    if a is not None and b is not None:
        return "regression" if b > a else "recovery"
    if a is not None:
        return "lost"
    if b is not None:
        return "gained"
    return None


def _order(c: GroupChange) -> tuple[int, int, str, str]:
    """Worst first: by kind, then the bigger fall (→ gap before → non-robust), then by id."""
    jump = SEVERITY.get(c.after, 0) - SEVERITY.get(c.before, 0)
    return (KINDS.index(c.kind), -jump if c.kind == "regression" else jump, c.target, c.group_id)


@dataclass(frozen=True, slots=True)
class PairedSign:
    """The exact sign test over groups decided on both sides: worse against better.

    ``p_value`` is two-sided (:func:`~groundwatch.core.stats.sign_test_p`); what it is asked is
    whether the candidate *regressed*, so a split as lopsided towards recoveries is no finding:
    :meth:`significant` needs more worse than better as well, and :meth:`verdict` says which."""

    groups: int
    worse: int
    better: int
    ties: int
    p_value: float

    def significant(self, alpha: float) -> bool:
        """A significant regression: more groups worse than better, and p < ``alpha``."""
        return self.worse > self.better and self.p_value < alpha

    def verdict(self, alpha: float) -> str:
        """What the test found at ``alpha``, in words naming the test and the comparison with α,
        e.g. "no significant regression (two-sided sign test, p = 0.31 ≥ α = 0.05)"."""
        below = self.p_value < alpha
        test = f"two-sided sign test, p = {self.p_value:.3g} {'<' if below else '≥'} α = {alpha:g}"
        if self.significant(alpha):
            return f"significant regression ({test})"
        if below and self.better > self.worse:
            return f"no regression, significantly more better than worse ({test})"
        return f"no significant regression ({test})"


@dataclass(slots=True)
class TargetDiff:
    target_a: str
    target_b: str
    cohorts: dict[str, list[FigureDelta]]
    paired: PairedSign
    counts: dict[str, int]


@dataclass(slots=True)
class Comparison:
    """Side A (before, the baseline) against side B (after, the candidate)."""

    a: str
    b: str
    dataset_id: str
    same_dataset: bool
    alpha: float
    targets: dict[str, TargetDiff]
    paired: PairedSign
    counts: dict[str, int]
    changes: list[GroupChange]

    @property
    def regressions(self) -> list[GroupChange]:
        return [c for c in self.changes if c.kind == "regression"]


def target_pairs(a: Side, b: Side) -> list[tuple[str, str]]:
    """Which target of A is compared with which of B: the same names; or, when each side has one
    target of different names (two deployments, two series), those two."""
    ta, tb = a.targets, b.targets
    shared = [t for t in ta if t in tb]
    if shared:
        return [(t, t) for t in shared]
    if len(ta) == 1 and len(tb) == 1:
        return [(ta[0], tb[0])]
    return []


def compare(a: Side, b: Side, *, alpha: float = 0.05) -> Comparison:
    """Side ``a`` against side ``b`` over the targets they share (:func:`target_pairs`)."""
    pairs = target_pairs(a, b)
    changes: list[GroupChange] = []
    targets: dict[str, TargetDiff] = {}
    worse_all = better_all = ties_all = 0
    memo: dict[tuple[Any, ...], str] = {}
    for ta, tb in pairs:
        fa, fb = figures(a, ta), figures(b, tb)
        cohorts = {
            cohort: [figure_delta(name, fa.get(cohort, Figures()), fb.get(cohort, Figures()))
                     for name in FIGURES]
            for cohort in sorted(set(fa) | set(fb))
        }  # fmt: skip
        ids = {g for t, g in a.groups if t == ta} | {g for t, g in b.groups if t == tb}
        worse = better = ties = 0
        counts = dict.fromkeys(KINDS, 0)
        for gid in ids:
            ca, cb = a.groups.get((ta, gid)), b.groups.get((tb, gid))
            before = group_status(ca, memo) if ca else ABSENT
            after = group_status(cb, memo) if cb else ABSENT
            sa, sb = SEVERITY.get(before), SEVERITY.get(after)
            if sa is not None and sb is not None:
                worse += sb > sa
                better += sb < sa
                ties += sb == sa
            kind = change_kind(before, after)
            if kind is None:
                continue
            counts[kind] += 1
            names = sorted(set(ca or {}) | set(cb or {}))
            moved = [
                CohortChange(
                    n,
                    (ca or {})[n].status if n in (ca or {}) else ABSENT,
                    (cb or {})[n].status if n in (cb or {}) else ABSENT,
                )
                for n in names
            ]
            changes.append(GroupChange(tb, gid, before, after, kind, moved))
        paired = PairedSign(worse + better + ties, worse, better, ties, sign_test_p(worse, better))
        targets[tb] = TargetDiff(ta, tb, cohorts, paired, counts)
        worse_all, better_all, ties_all = worse_all + worse, better_all + better, ties_all + ties
    changes.sort(key=_order)
    total = dict.fromkeys(KINDS, 0)
    for c in changes:
        total[c.kind] += 1
    paired = PairedSign(
        worse_all + better_all + ties_all,
        worse_all,
        better_all,
        ties_all,
        sign_test_p(worse_all, better_all),
    )
    return Comparison(
        a.label,
        b.label,
        b.dataset_id or a.dataset_id,
        a.dataset_id == b.dataset_id and (not a.digest or not b.digest or a.digest == b.digest),
        alpha,
        targets,
        paired,
        total,
        changes,
    )


def form_changes(
    before: Mapping[str, tuple[str, str, str | None, str | None]],
    after: Mapping[str, tuple[str, str, str | None, str | None]],
    *,
    answers_known: bool = True,
) -> list[FormChange]:
    """The forms whose verdict or answer differs: each side maps form id → (cohort, verdict,
    question, answer); a form one side did not ask shows None there. ``answers_known`` False
    (a side whose answers were not all kept: a run rolled up into summaries): verdicts only."""
    out = []
    for form_id in sorted(set(before) | set(after)):
        a, b = before.get(form_id), after.get(form_id)
        if a is not None and b is not None and a[1] == b[1] and (a[3] == b[3] or not answers_known):
            continue
        ref = b or a
        assert ref is not None
        out.append(
            FormChange(
                ref[0],
                form_id,
                (b and b[2]) or (a and a[2]) or None,
                a[1] if a else None,
                b[1] if b else None,
                a[3] if a else None,
                b[3] if b else None,
            )
        )
    out.sort(key=lambda f: (f.cohort, f.form_id))
    return out


def gate(comparison: Comparison, allowed: int, *, significant_only: bool) -> str | None:
    """Why the candidate fails the regression gate (None when it passes): more than ``allowed``
    groups regressed — and, with ``significant_only``, the sign test says so at the comparison's
    α."""
    n = len(comparison.regressions)
    if n <= allowed:
        return None
    p = comparison.paired
    if significant_only and not p.significant(comparison.alpha):
        return None
    sign = f"; {p.worse} worse, {p.better} better: {p.verdict(comparison.alpha)}"
    groups = f"{n} group{'s' if n != 1 else ''}"
    return f"{groups} regressed against {comparison.a}, allowed {allowed}{sign}"
