"""What the tagger takes and gives: a judged text form (:class:`Observation`), the window
setting, the status change between cycles (:class:`Transition`), a group's numbers
(:class:`GroupTally`), and why an example failed (:class:`Cause`). Plain values, no behaviour
beyond their own properties: every tagging module and every reader shares them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from groundwatch.core.evidence import DEFAULT_EVIDENCE, EvidenceRule, GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.scores import NO_SCORES, Scores

#: The judge's reason for a response that matches an earlier answer version of its group.
STALE_REASON = "stale"
#: The scenario of a GRAMMAR probe; anything else is a RAGProbe scenario (S1…S6).
FACTUAL = "factual"
#: Decided verdicts kept per form across cycles (beyond the window) to tell flaky forms.
FLAKY_HISTORY = 6
#: Transitions kept in memory for the report and the API (the store keeps them all).
RECENT_TRANSITIONS = 1000


GroupKey = tuple[str, str, str]
"""(target, cohort, group_id)."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One judged text form: the unit both the live tagger and the batch report consume.

    ``series`` and ``cycle`` place it in a monitoring series (cycle 0: no series, e.g. an imported
    batch result, where everything is one cycle). ``truth_version`` is the SQL answer's version,
    so a verdict that changes with the truth is not flakiness. ``retrieval_ok`` is a retrieval
    judgement given from outside (an imported GRAMMAR result); when it is ``None`` the retrieval
    is judged from ``relevant_doc_ids``, by context comparison or from the retrieved text
    (:func:`judge_retrieval`). ``context_has_answer`` is the judge stage's bounded summary of the
    retrieved texts — True: the gold answer is stated in them; False: there were contexts and it
    is not; None: no contexts (or not computed) — so the texts themselves never travel further.
    ``at`` is the judgement time in epoch seconds; ``latency_s`` is probe → judgement latency.
    """

    probe_id: str
    target: str
    cohort: str
    group_id: str
    form_id: str
    verdict: Verdict
    run_id: str = ""
    dataset_id: str = ""
    scenario: str = "factual"
    group_forms: int = 1
    retrieved_ids: tuple[str, ...] = ()
    relevant_doc_ids: tuple[str, ...] = ()
    retrieval_ok: bool | None = None
    at: float = 0.0
    latency_s: float = 0.0
    stale: bool = False
    series: str = ""
    cycle: int = 0
    truth_version: int = 1
    error_kind: str | None = None
    context_has_answer: bool | None = None
    #: The judgement's scores analytics tallies (answer metrics, self-audit, reference-free
    #: calls, RAGProbe metric outcomes: :mod:`groundwatch.core.scores`), which the tagger only
    #: carries (:mod:`groundwatch.core.score_tallies` reads them).
    scores: Scores = NO_SCORES
    #: ``(revision, the judge's verdict)`` once a person's verdict was applied to this answer
    #: (:meth:`Tagger.override`): ``verdict`` is then the person's, or the judge's again after a
    #: withdrawal; the revision orders a probe's verdicts, so a redelivered or older one is a
    #: repeat. None: the judge's verdict stands and no person gave one.
    human: tuple[int, Verdict] | None = None

    @property
    def key(self) -> GroupKey:
        return (self.target, self.cohort, self.group_id)


class Cause(StrEnum):
    """Why an example failed (GRAMMAR §4.3), or why it was not attributed."""

    GAP = "gap"
    RETRIEVAL = "retrieval"
    LM = "lm"
    INCONCLUSIVE = "inconclusive"
    FLAKY = "flaky"
    TARGET_ERROR = "target_error"
    STALE = "stale"
    UNDECIDED = "undecided"
    UNKNOWN = "unknown"
    PENDING = "pending"


class RetrievalEvidence(StrEnum):
    """What a retrieval judgement stands on (:func:`judge_retrieval`), strongest first."""

    GIVEN = "given"  # judged outside (an imported GRAMMAR result's retrieval_judgement)
    GROUND_TRUTH = "ground_truth"  # relevant document ids ⊆ retrieved ids
    NOTHING_RETRIEVED = "nothing_retrieved"  # a target that reports ids returned none here
    CONTEXT_COMPARISON = "context_comparison"  # retrieved ids against correctly answered forms
    CONTEXT_TEXT = "context_text"  # the gold answer stated (or not) in the retrieved texts
    NONE = "none"  # no evidence: inconclusive


@dataclass(frozen=True, slots=True)
class Window:
    """Which cycles count: each group's own last ``runs`` closed cycles with answers
    (``None``: every cycle, a batch report that pools a span), and how much of a group must be
    decided for a conclusive status (``evidence``: :mod:`groundwatch.core.evidence`)."""

    runs: int | None = None
    evidence: EvidenceRule = DEFAULT_EVIDENCE

    def __post_init__(self) -> None:
        if self.runs is not None and self.runs < 1:
            raise ValueError("Window.runs must be >= 1")


@dataclass(frozen=True, slots=True)
class Transition:
    """A group's status changed when ``cycle`` closed (or a late verdict reopened it)."""

    target: str
    cohort: str
    group_id: str
    from_status: GroupStatus
    to_status: GroupStatus
    cycle: int
    series: str
    at: float
    #: The last conclusive status before this change (gap, robust, non-robust or flaky), when
    #: ``from_status`` is not one: robust → unknown (too little evidence) → gap lost the fact
    #: as surely as robust → gap did, and gap → unknown → gap lost nothing.
    from_conclusive: GroupStatus | None = None

    @property
    def kind(self) -> str:
        """regression (→ gap from a status with right answers), recovery (gap → robust), or
        change; judged from the last conclusive status, so a cycle of too little evidence in
        between neither hides a regression nor makes a gap regress again."""
        before = self.from_conclusive or self.from_status
        if self.to_status is GroupStatus.GAP and before in (
            GroupStatus.ROBUST,
            GroupStatus.NON_ROBUST,
            GroupStatus.FLAKY,
        ):
            return "regression"
        if before is GroupStatus.GAP and self.to_status is GroupStatus.ROBUST:
            return "recovery"
        return "change"


@dataclass(frozen=True, slots=True)
class GroupTally:
    """A read-only snapshot of one group's window (what the service stores and serves).

    Counts are over the window's *forms* (each form's latest verdict), not over repeats.
    """

    target: str
    cohort: str
    group_id: str
    dataset_id: str
    scenario: str
    group_forms: int
    forms_judged: int
    correct: int
    incorrect: int
    error: int
    undecided: int
    status: GroupStatus
    flaky_forms: int = 0
    cycle: int = 0
    window_from_cycle: int = 0
    history_from_cycle: int = 0
    series: str = ""
    #: The cycle the status stands on: the group's newest cycle with answers (0: none yet).
    evidence_cycle: int = 0
    #: The status is older than the group's newest cycle: cycles in which the target answered
    #: none of the group's forms (target errors) came after it and did not move it: held.
    held: bool = False

    @property
    def examples(self) -> int:
        """Decisively judged forms: the denominator of accuracy (errors excluded)."""
        return self.correct + self.incorrect

    @property
    def coverage(self) -> float | None:
        """Decided forms / forms with any verdict (``None`` when nothing was probed)."""
        return self.examples / self.forms_judged if self.forms_judged else None

    @property
    def partial(self) -> bool:
        """Some form erred or was undecided: the status holds over the answered forms only."""
        return self.error + self.undecided > 0
