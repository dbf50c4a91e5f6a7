"""What every reader of the tally state asks — group statuses and snapshots, the running counts
GRAMMAR's numbers come from, knowledge gaps, attribution counts, transitions — written once for
both holders of that state: the consume loop's live :class:`~groundwatch.core.tagging.Tagger`
(the write model) and the immutable :class:`~groundwatch.core.tagging.view.TaggerView` it
publishes after each batch (the read model that ``/report``, ``/metrics`` and ``/groups``
read). Both keep the same fields under the same names — dicts in the tagger, copy-on-write
maps and copies in the view — so the definitions cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from groundwatch.core.evidence import DECIDED_STATUSES, GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.tagging.attribution import correct_answer_contexts, judge_retrieval
from groundwatch.core.tagging.counts import ClosedDomain, CohortSums, sums_minus
from groundwatch.core.tagging.values import (
    Cause,
    GroupKey,
    GroupTally,
    Observation,
    RetrievalEvidence,
    Transition,
    Window,
)


class TallyReads:
    """The reads (see the module). A holder provides the fields below and :meth:`_snap` (a
    group's :class:`GroupTally`), :meth:`refresh_causes` and :meth:`_closed`'s cache."""

    # the per-group records: anything with status, latest (form → observation), correct,
    # incorrect, error, undecided, flaky and causes (the tagger's Tally, the view's GroupView)
    _tallies: Any
    _knowledge_gaps: Any  # target → its knowledge-gap group ids
    _open_domain: Any  # group id → baseline tallies answering it
    _status_counts: dict[tuple[str, str, GroupStatus], int]
    _held_counts: dict[tuple[str, str], int]
    _health: dict[str, list[int]]
    _sums: dict[tuple[str, str], CohortSums]
    _verdict_counts: dict[str, dict[Verdict, int]]
    _scenario_counts: dict[tuple[str, str], dict[Verdict, int]]
    _cause_counts: dict[tuple[str, str, Cause], int]
    _transition_counts: dict[tuple[str, str, GroupStatus, GroupStatus], int]
    _kind_counts: dict[tuple[str, str, str], int]
    _recent: Any  # transitions, oldest first
    _id_targets: Any  # targets that reported retrieved ids
    _mutations: int
    _closed_cache: tuple[int, ClosedDomain] | None
    #: each target's cohorts, sorted, as of how many (target, cohort) sums there were
    _cohort_order: tuple[int, dict[str, tuple[str, ...]]] | None = None
    open_domain_baseline: str | None

    def _snap(self, key: GroupKey, t: Any) -> GroupTally:
        raise NotImplementedError

    def _entries(self) -> Iterable[tuple[GroupKey, Any]]:
        """Every (key, record) pair, safe to iterate while the holder changes: over a copy of
        a live map's keys (8 bytes a group; a copy of its (key, record) pairs was 64, 10 MB at
        500k probes for every read), skipping a group dropped since; a published view, which
        never changes, iterates its map as it is."""
        tallies = self._tallies
        for key in list(tallies):
            t = tallies.get(key)
            if t is not None:
                yield key, t

    def refresh_causes(self, max_groups: int | None = None) -> int:
        raise NotImplementedError

    @property
    def window(self) -> Window:
        raise NotImplementedError

    @property
    def lineage(self) -> object:
        """What stays the same across the views one tagger publishes (a restore, a new
        tagger, changes it): what a reader caching something derived keys it by."""
        raise NotImplementedError

    def tally(self, target: str, cohort: str, group_id: str) -> GroupTally | None:
        raise NotImplementedError

    def observations(self) -> Iterator[Observation]:
        raise NotImplementedError

    def group_history(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def status(self, target: str, cohort: str, group_id: str) -> GroupStatus:
        t = self._tallies.get((target, cohort, group_id))
        return GroupStatus.PENDING if t is None else t.status

    def tallies(
        self,
        target: str | None = None,
        cohort: str | None = None,
        status: GroupStatus | None = None,
    ) -> Iterator[GroupTally]:
        """Snapshots of every tracked group, optionally filtered (for ``/groups``)."""
        for key, t in self._entries():  # a snapshot: see the class docstring
            if (
                (target is None or key[0] == target)
                and (cohort is None or key[1] == cohort)
                and (status is None or t.status is status)
            ):
                yield self._snap(key, t)

    def group_statuses(
        self, target: str | None = None, cohort: str | None = None, scenario: str | None = None
    ) -> Iterator[tuple[str, str, tuple[str, ...], tuple[GroupStatus, ...], bool, bool]]:
        """Each semantic group once, without a snapshot: (target, group id, its cohorts
        (sorted; ``cohort`` alone when given), their statuses, whether any cohort has a right
        answer, whether any stands on kept evidence (``held``)), of ``scenario`` when given.
        A report that lists some groups picks them from here and snapshots only those:
        snapshots of every group, held together, were ~56 MB at 500k probes for a page of
        failing groups."""
        tallies = self._tallies
        for key, t in self._entries():
            if (target is not None and key[0] != target) or (
                cohort is not None and key[1] != cohort
            ):
                continue
            if scenario is not None and t.scenario != scenario:
                continue
            if cohort is not None:
                yield key[0], key[2], (cohort,), (t.status,), bool(t.correct), bool(t.held)
                continue
            cohorts = self._group_cohorts(key[0], key[2])
            if not cohorts or cohorts[0] != key[1]:
                continue  # the group is listed once, at its first cohort
            records = [tallies.get((key[0], c, key[2])) for c in cohorts]
            present = [(c, r) for c, r in zip(cohorts, records, strict=True) if r is not None]
            yield (
                key[0],
                key[2],
                tuple(c for c, _ in present),
                tuple(r.status for _, r in present),
                any(r.correct for _, r in present),
                any(r.held for _, r in present),
            )

    def status_counts(
        self, *, closed_domain: bool = False
    ) -> dict[tuple[str, str, GroupStatus], int]:
        """Groups per (target, cohort, status); maintained incrementally, so this is a copy only.
        ``closed_domain``: without the open-domain groups and the baseline (see the module)."""
        if closed_domain and self.open_domain_baseline is not None:
            cd = self._closed()
            return {
                k: n - cd.status.get(k, 0)
                for k, n in list(self._status_counts.items())
                if k[0] != self.open_domain_baseline and n - cd.status.get(k, 0)
            }
        return {k: n for k, n in list(self._status_counts.items()) if n}

    def held_counts(self) -> dict[tuple[str, str], int]:
        """Groups per (target, cohort) whose status stands on an older cycle than their newest
        one: cycles without answers (an outage) came after it (what the operator must know
        beside a gap list that an outage did not erase)."""
        return {k: n for k, n in list(self._held_counts.items()) if n}

    def target_health(self) -> dict[str, tuple[int, int, int, int]]:
        """target → (its newest cycle, probes judged in that cycle, of which the target
        answered, of which the judge left undecided): whether the endpoint is up now, which the
        group statuses no longer say (an outage keeps them, held), and whether its answers can
        still be judged (a broken endpoint that answers unrelated sentences turns them all
        undecided)."""
        return {t: (h[0], h[1], h[2], h[3]) for t, h in list(self._health.items())}

    def open_domain_groups(self) -> set[str]:
        """Semantic groups the open-domain baseline answers correctly (in its window)."""
        return set(self._open_domain)

    def _closed(self) -> ClosedDomain:
        """What the open-domain groups contribute to the other targets' running counts, to be
        subtracted: O(open-domain groups × cohorts), recomputed only after the tagger changed."""
        cached = self._closed_cache
        if cached is not None and cached[0] == self._mutations:
            return cached[1]
        cd = ClosedDomain()
        baseline = self.open_domain_baseline
        targets = {t for t, _ in list(self._sums) if t != baseline}
        for gid in list(self._open_domain):
            for target in targets:
                for cohort in self._group_cohorts(target, gid):
                    t = self._tallies[(target, cohort, gid)]
                    ck = (target, cohort)
                    s = cd.sums.setdefault(ck, CohortSums())
                    decided = t.status in DECIDED_STATUSES
                    s.probed += len(t.latest)
                    s.decided += t.correct + t.incorrect
                    s.error += t.error
                    s.undecided += t.undecided
                    s.flaky_forms += len(t.flaky)
                    if decided:
                        s.correct += t.correct
                        s.incorrect += t.incorrect
                    if t.status is GroupStatus.GAP:
                        s.gap_examples += t.correct + t.incorrect
                    sk = (target, cohort, t.status)
                    cd.status[sk] = cd.status.get(sk, 0) + 1
                    for cause, n in t.causes.items():
                        cause_key = (target, cohort, cause)
                        cd.causes[cause_key] = cd.causes.get(cause_key, 0) + n
        self._closed_cache = (self._mutations, cd)
        return cd

    def transition_counts(self) -> dict[tuple[str, str, GroupStatus, GroupStatus], int]:
        """Transitions seen by this tagger per (target, cohort, from, to)."""
        return {k: n for k, n in list(self._transition_counts.items()) if n}

    def transition_kinds(self) -> dict[tuple[str, str, str], int]:
        """Transitions seen by this tagger per (target, cohort, kind): regression, recovery or
        change, each judged from the last conclusive status (:attr:`Transition.kind`)."""
        return dict(list(self._kind_counts.items()))

    def recent_transitions(self, limit: int = 50) -> list[Transition]:
        """The latest transitions, newest first."""
        return list(reversed(self._recent))[:limit]

    def cohort_numbers(
        self, *, closed_domain: bool = False
    ) -> dict[tuple[str, str], dict[str, float | int | None]]:
        """GRAMMAR's numbers per (target, cohort) from running sums — O(cohorts), for /metrics.

        Acc_db, R, λ and accuracy are over the same set: decided groups (gap, robust,
        non-robust, flaky); pending and unknown groups are left out of all of them and counted
        apart. ``coverage`` = decided forms / forms with a verdict, over every group. ``None``
        when a denominator is 0. The same definitions as the report's per-cohort numbers.
        ``closed_domain``: the open-domain groups and the baseline left out (§5.2).
        """
        out: dict[tuple[str, str], dict[str, float | int | None]] = {}
        status = self._status_counts
        sums = self._sums
        if closed_domain and self.open_domain_baseline is not None:
            status = self.status_counts(closed_domain=True)
            cd = self._closed()
            sums = {
                ck: sums_minus(s, cd.sums.get(ck))
                for ck, s in list(self._sums.items())
                if ck[0] != self.open_domain_baseline
            }
        for (target, cohort), s in list(sums.items()):
            by = {st: status.get((target, cohort, st), 0) for st in GroupStatus}
            gaps = by[GroupStatus.GAP]
            groups = sum(by[st] for st in DECIDED_STATUSES)
            if not any(by.values()):
                continue
            examples = s.correct + s.incorrect
            refined = examples - s.gap_examples
            out[(target, cohort)] = {
                "examples": examples,
                "correct": s.correct,
                "errors": s.error,
                "undecided": s.undecided,
                "probed": s.probed,
                "coverage": s.decided / s.probed if s.probed else None,
                "groups": groups,
                "gap_groups": gaps,
                "non_robust_groups": by[GroupStatus.NON_ROBUST],
                "flaky_groups": by[GroupStatus.FLAKY],
                "robust_groups": by[GroupStatus.ROBUST],
                "pending_groups": by[GroupStatus.PENDING],
                "unknown_groups": by[GroupStatus.UNKNOWN],
                "held_groups": self._held_counts.get((target, cohort), 0),
                "flaky_forms": s.flaky_forms,
                "gap_examples": s.gap_examples,
                "accuracy": s.correct / examples if examples else None,
                "acc_db": 1 - gaps / groups if groups else None,
                "refined_accuracy": s.correct / refined if refined else None,
                "lambda": s.gap_examples / examples if examples else None,
            }
        return out

    def verdict_counts(self) -> dict[tuple[str, Verdict], int]:
        """Judgements in the window per (target, verdict)."""
        counts = self._verdict_counts
        return {
            (target, v): n for target, vc in list(counts.items()) for v, n in list(vc.items()) if n
        }

    def scenario_counts(self) -> dict[tuple[str, str], dict[Verdict, int]]:
        """Judgements in the window per (target, RAGProbe scenario), by verdict; GRAMMAR's
        factual probes are not in it. Kept as verdicts arrive and leave, so this is a copy of
        O(targets × scenarios) counters — what /metrics reads."""
        return {k: dict(c) for k, c in list(self._scenario_counts.items()) if any(c.values())}

    def cause_counts(
        self, *, refresh: bool = True, closed_domain: bool = False
    ) -> dict[tuple[str, str, Cause], int]:
        """Failure attribution per (target, cohort, cause), over each form's latest verdict.

        Context comparison looks across a group's forms and cohorts, so attribution is
        recomputed lazily for the groups touched since the last refresh. With ``refresh=False``
        this is a copy of the maintained counts — what an exporter should read, while the
        consumer loop calls :meth:`refresh_causes` with a budget after each batch.
        """
        if refresh:
            self.refresh_causes()
        if closed_domain and self.open_domain_baseline is not None:
            sub = self._closed().causes
            return {
                k: n - sub.get(k, 0)
                for k, n in self._cause_counts.items()
                if k[0] != self.open_domain_baseline and n - sub.get(k, 0)
            }
        return {k: n for k, n in self._cause_counts.items() if n}

    def counted_observations(self) -> Iterator[Observation]:
        """The observations that count: each form's latest verdict in its group's window."""
        for _, t in self._entries():
            yield from list(t.latest.values())

    def newest_cycle_forms(self) -> Iterator[tuple[GroupKey, int, list[Observation]]]:
        """Per group: its newest cycle and each form's latest observation in it — what the
        target did the last time it was asked this group, counted or not (an outage's cycle
        counts for no window, and is what the target's health is made of)."""
        for key, t in self._entries():
            cycles = getattr(t, "cycles", None)
            if cycles is not None:  # a tally, live or cold: its cycles ascending
                if cycles:
                    top = next(reversed(cycles))
                    yield key, top, list(cycles[top].forms.values())
                continue
            forms: dict[str, Observation] = {}
            top = -1
            for o in t.history:  # a published group: its window, oldest cycle first
                if o.cycle > top:
                    top, forms = o.cycle, {}
                if o.cycle == top:
                    forms[o.form_id] = o
            if forms:
                yield key, top, list(forms.values())

    def group_observations(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        """The group's counted observations (each form's latest verdict in the window)."""
        t = self._tallies.get((target, cohort, group_id))
        return [] if t is None else list(t.latest.values())

    def flaky(self, target: str, cohort: str, group_id: str) -> frozenset[str]:
        """Form ids of the group whose verdict reversed with an unchanged truth."""
        t = self._tallies.get((target, cohort, group_id))
        return frozenset() if t is None else t.flaky

    def knowledge_gaps(self, target: str, *, closed_domain: bool = False) -> set[str]:
        """Semantic groups of ``target`` the knowledge base lacks: a gap in every cohort with a
        decided status, at least one (maintained as statuses change). ``closed_domain``: without
        the open-domain groups (and nothing for the baseline itself)."""
        gaps = set(self._knowledge_gaps.get(target, ()))
        if closed_domain and self.open_domain_baseline is not None:
            if target == self.open_domain_baseline:
                return set()
            gaps.difference_update(self._open_domain)
        return gaps

    def knowledge_gap_counts(self, *, closed_domain: bool = False) -> dict[str, int]:
        """Knowledge-gap groups per target (what the gap alert watches)."""
        if closed_domain and self.open_domain_baseline is not None:
            out = {
                t: len(self.knowledge_gaps(t, closed_domain=True))
                for t in list(self._knowledge_gaps)
            }
            return {t: n for t, n in out.items() if n}
        return {t: len(g) for t, g in list(self._knowledge_gaps.items()) if g}

    def answered_anywhere(self, target: str, group_id: str) -> bool:
        """Whether any cohort of the semantic group has a correct (latest) verdict."""
        return any(t.correct for t in self._group_tallies((target, group_id)))

    def reports_ids(self, target: str) -> bool:
        """Whether ``target`` ever reported retrieved ids (then an empty list is an empty
        retrieval, not a missing one)."""
        return target in self._id_targets

    def retrieval_judgements(
        self, target: str, group_id: str
    ) -> dict[str, tuple[bool | None, RetrievalEvidence]]:
        """probe_id → (retrieval sufficiency, its evidence) for every counted observation of a
        semantic group (all cohorts of ``target``), by :func:`judge_retrieval`."""
        tallies = self._group_tallies((target, group_id))
        contexts = correct_answer_contexts(tallies)
        ids = target in self._id_targets
        return {
            o.probe_id: judge_retrieval(o, contexts, reports_ids=ids)
            for t in tallies
            for o in list(t.latest.values())
        }

    def targets(self) -> list[str]:
        return sorted({k[0] for k in list(self._tallies)})

    def cohorts(self, target: str | None = None) -> list[str]:
        return sorted({k[1] for k in list(self._tallies) if target is None or k[0] == target})

    def _group_tallies(self, gk: tuple[str, str]) -> list[Any]:
        target, group_id = gk
        return [self._tallies[(target, c, group_id)] for c in self._group_cohorts(target, group_id)]

    def _group_cohorts(self, target: str, group_id: str) -> tuple[str, ...]:
        """The cohorts holding a tally of the group, sorted. Looked up among the target's
        cohorts (a handful), not kept per group: a map of every group's cohorts cost ~100
        bytes a group in the tagger and as much again in the published view."""
        order = self._cohort_order
        if order is None or order[0] != len(self._sums):  # a cohort was added (none leaves)
            by_target: dict[str, tuple[str, ...]] = {}
            for t, c in sorted(tuple(self._sums)):
                by_target[t] = (*by_target.get(t, ()), c)
            order = self._cohort_order = (len(self._sums), by_target)
        tallies = self._tallies
        return tuple(c for c in order[1].get(target, ()) if (target, c, group_id) in tallies)


_R = TypeVar("_R")


def arrival_order(records: Sequence[_R], first_seq: Callable[[_R], int]) -> npt.NDArray[np.intp]:
    """Indices of ``records`` by ``first_seq`` ascending, ties in list order (a stable sort): the
    order the window lists its groups in. The keys are one int64 array: ``sorted(key=...)``
    made an int object and a key slot per group, ~6.6 MB at 500k probes on every pass a report
    makes over the window, and the allocator kept what those passes had touched."""
    seqs = np.fromiter(map(first_seq, records), dtype=np.int64, count=len(records))
    return np.argsort(seqs, kind="stable")
