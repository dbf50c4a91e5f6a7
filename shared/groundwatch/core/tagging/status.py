"""Statuses from verdicts over cycles: one cycle's status by the evidence rules, and flakiness
(a form whose verdict reverses with an unchanged truth). The rules themselves live in
:mod:`groundwatch.core.evidence`; the tagger applies these per group as cycles close."""

from __future__ import annotations

from collections.abc import Iterable

from groundwatch.core.evidence import (
    DECIDED_STATUSES,
    DEFAULT_EVIDENCE,
    EvidenceRule,
    GroupStatus,
)


def status_of(
    correct: int,
    incorrect: int,
    forms_judged: int,
    group_forms: int,
    evidence: EvidenceRule = DEFAULT_EVIDENCE,
) -> GroupStatus:
    """The status one complete cycle alone supports (no flakiness, no window): pending while
    forms are missing, unknown when nothing or too little was decided (the evidence rules)."""
    if forms_judged < group_forms:
        return GroupStatus.PENDING
    return evidence.cycle_status(correct, incorrect, group_forms) or GroupStatus.UNKNOWN


def flaky_forms(history: dict[str, list[tuple[int, bool, int]]]) -> frozenset[str]:
    """Forms whose decided verdict reversed at the next probed cycle (A, B, A) while the SQL truth
    stayed the same. A change that persists (A, B, B) is a transition, not flakiness."""
    flaky = [form for form, h in history.items() if len(h) > 2 and form_is_flaky(h)]
    # most groups have none: the shared empty set, not one per group (a restore derives 200k)
    return frozenset(flaky) if flaky else _NONE


_NONE: frozenset[str] = frozenset()


def form_is_flaky(h: list[tuple[int, bool, int]]) -> bool:
    """One form's history (cycle, correct, truth version), oldest first: see :func:`flaky_forms`."""
    n = len(h)
    if n < 3:
        return False
    for i in range(n - 2):
        a, b, c = h[i], h[i + 1], h[i + 2]
        if a[1] == c[1] != b[1] and a[2] == b[2] == c[2]:
            return True
    return False


def overall_status(statuses: Iterable[GroupStatus], *, answered: bool = False) -> GroupStatus:
    """A semantic group's status over all its cohorts.

    **gap** when every cohort with a decided status is a gap and no form of any cohort was
    answered right (``answered``: a cohort of too little evidence for a status of its own may
    still hold a right answer — the fact is there); it is GRAMMAR's knowledge gap, as
    :meth:`Tagger.knowledge_gaps`; **non-robust** when some cohort is non-robust, or one cohort
    is a gap while another answered (the fact is there, some wordings miss it); **flaky** when
    the only wrong answers flip between cycles; **robust** when every decided cohort is robust;
    **pending**/**unknown** when no cohort is decided yet/at all."""
    all_ = list(statuses)
    decided = [s for s in all_ if s in DECIDED_STATUSES]
    if not decided:
        return GroupStatus.PENDING if GroupStatus.PENDING in all_ else GroupStatus.UNKNOWN
    if all(s is GroupStatus.GAP for s in decided):
        return GroupStatus.NON_ROBUST if answered else GroupStatus.GAP
    if GroupStatus.NON_ROBUST in decided or GroupStatus.GAP in decided:
        return GroupStatus.NON_ROBUST
    if GroupStatus.FLAKY in decided:
        return GroupStatus.FLAKY
    return GroupStatus.ROBUST
