"""The running counts the tagger keeps as statuses and verdicts move — what ``/metrics`` reads
in O(targets × cohorts) — and the open-domain groups' share of them (GRAMMAR §5.2)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.tagging.values import Cause, Observation

_CORRECT = Verdict.CORRECT
_INCORRECT = Verdict.INCORRECT
_ERROR = Verdict.ERROR


@dataclass(slots=True)
class CohortSums:
    """Running sums per (target, cohort): what eq. 1–3 need, so /metrics never scans groups.

    ``correct``/``incorrect``/``gap_examples`` count forms of *decided* groups only (Acc_db, R and
    λ over the same groups); ``probed``/``decided``/``error``/``undecided`` count every form (the
    coverage beside every rate)."""

    correct: int = 0
    incorrect: int = 0
    gap_examples: int = 0
    probed: int = 0
    decided: int = 0
    error: int = 0
    undecided: int = 0
    flaky_forms: int = 0


@dataclass(slots=True)
class ClosedDomain:
    """The open-domain groups' share of the running counts (per target and cohort)."""

    sums: dict[tuple[str, str], CohortSums] = field(default_factory=dict)
    status: dict[tuple[str, str, GroupStatus], int] = field(default_factory=dict)
    causes: dict[tuple[str, str, Cause], int] = field(default_factory=dict)


def sums_minus(a: CohortSums, b: CohortSums | None) -> CohortSums:
    if b is None:
        return a
    return CohortSums(
        correct=a.correct - b.correct,
        incorrect=a.incorrect - b.incorrect,
        gap_examples=a.gap_examples - b.gap_examples,
        probed=a.probed - b.probed,
        decided=a.decided - b.decided,
        error=a.error - b.error,
        undecided=a.undecided - b.undecided,
        flaky_forms=a.flaky_forms - b.flaky_forms,
    )


def count_verdicts(observations: Iterable[Observation]) -> tuple[int, int, int, int]:
    """(correct, incorrect, error, undecided) among ``observations``: the full recount; the
    per-judgement path moves the four counts by one verdict inline instead. (A loop, not a
    ``Counter``: a group has a handful of forms, and a restore recounts every group.)"""
    correct = incorrect = error = undecided = 0
    for o in observations:
        v = o.verdict
        if v is _CORRECT:
            correct += 1
        elif v is _INCORRECT:
            incorrect += 1
        elif v is _ERROR:
            error += 1
        else:
            undecided += 1
    return correct, incorrect, error, undecided
