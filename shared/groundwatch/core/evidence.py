"""The evidence rules: what a semantic group's status may claim from its forms' verdicts.

Every alert and every GRAMMAR number stands on a group's status, so the rules that turn verdicts
into a status live here, in one place, and nowhere else (DESIGN.md, "status"):

* a verdict is **evidence** only when it is decided — correct or incorrect. A target error (the
  endpoint did not answer) and an undecided verdict (the judge could not tell) say nothing about
  the knowledge base: undecided is not wrong, and an outage is news about the endpoint's health;
* **non-robust**: at least one form conclusively right *and* one conclusively wrong in the same
  cycle — two verdicts that contradict each other are conclusive on their own;
* **gap**: enough of the group's forms decided (:class:`EvidenceRule`), and every decided one
  wrong; **robust**: likewise, every decided one right;
* anything else with some evidence is **unknown**: "one form wrong, five undecided" is no gap —
  it is not known whether the other five would have been right;
* a cycle with **no answer** for a group (every form a target error, or the group was not
  sampled) does not count at all: the group keeps the status of its last cycle with answers,
  marked held since then (:mod:`groundwatch.core.tagging` keeps the windows). A cycle in which
  the target answered and nothing (or too little) was decided counts, and is unknown: answers
  the judge cannot place are news about the endpoint, not an outage to wait out.

The thresholds are the operator's (``GW_EVIDENCE_MIN_FORMS``, ``GW_EVIDENCE_MIN_SHARE``); the
defaults ask for at least two decided forms and half of the group's forms, which every complete
cycle of the authors' files meets (three labelled forms per group), so GRAMMAR's Table 3 is
reproduced exactly while "1 of 6 decided" stays unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class GroupStatus(StrEnum):
    """A semantic group's tag for one (target, cohort) over its window of cycles."""

    GAP = "gap"
    ROBUST = "robust"
    NON_ROBUST = "non_robust"
    FLAKY = "flaky"
    UNKNOWN = "unknown"
    PENDING = "pending"


#: Statuses that carry evidence about the knowledge base: the groups Acc_db, R and λ count (and
#: the only ones a transition can be a regression or a recovery from).
DECIDED_STATUSES = frozenset(
    {GroupStatus.GAP, GroupStatus.ROBUST, GroupStatus.NON_ROBUST, GroupStatus.FLAKY}
)


@dataclass(frozen=True, slots=True)
class EvidenceRule:
    """How many of a group's forms must be decided before its cycle may say gap or robust.

    ``min_forms`` decided forms (capped at the group's size, so a one-question RAGProbe item
    needs its one verdict) and at least ``min_share`` of the group's forms. A cycle with a right
    and a wrong form is non-robust whatever the thresholds: that needs no more evidence."""

    min_forms: int = 2
    min_share: float = 0.5

    def __post_init__(self) -> None:
        if self.min_forms < 1:
            raise ValueError("EvidenceRule.min_forms must be >= 1")
        if not 0.0 <= self.min_share <= 1.0:
            raise ValueError("EvidenceRule.min_share must be within [0, 1]")

    def needed(self, group_forms: int) -> int:
        """Decided forms a group of ``group_forms`` forms needs for gap or robust."""
        forms = max(1, group_forms)
        # a share is rounded up, less a float's noise (0.5 × 6 forms is 3, not 4)
        share = math.ceil(self.min_share * forms - 1e-9)
        return max(1, min(self.min_forms, forms), min(share, forms))

    def cycle_status(self, right: int, wrong: int, group_forms: int) -> GroupStatus | None:
        """The status one cycle's decided forms support; ``None`` when it has no evidence at all
        (nothing decided): such a cycle must not move the group's status."""
        if right and wrong:
            return GroupStatus.NON_ROBUST
        decided = right + wrong
        if not decided:
            return None
        if decided < self.needed(group_forms):
            return GroupStatus.UNKNOWN
        return GroupStatus.GAP if wrong else GroupStatus.ROBUST


#: The rule used where the operator set none (batch reports, tests, the CLI's defaults).
DEFAULT_EVIDENCE = EvidenceRule()
