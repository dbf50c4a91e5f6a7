"""Live group tagging (GRAMMAR-Eval §4.3) over the cycles of a monitoring series.

A monitoring series probes the same semantic groups again and again: each **cycle** asks every
sampled group in all its text forms. The tagger keeps, per (target, cohort, semantic group), the
observations of the group's own last ``W`` *closed cycles with evidence* (``Window(runs=W)``;
``None`` pools every cycle, as a batch report does) plus the cycle still filling, and from them
the group's status, by the evidence rules of :mod:`groundwatch.core.evidence` (the one place
they are written):

* **gap** — enough forms of the latest cycle with evidence decided, every decided one wrong (the
  knowledge is missing);
* **robust** — likewise, every decided one right, and no cycle in the window mixed;
* **non-robust** — some cycle in the window had a right *and* a wrong form: wording sensitivity;
* **flaky** — it would be gap or non-robust, but every wrong form is *flaky*: its verdict went
  A → B → A over consecutive cycles while the SQL truth stayed the same (LM stochasticity, which
  is not fragility to wording and not missing knowledge);
* **unknown** — too little decided for any of those ("one form wrong, five undecided"), or no
  cycle of the group ever had a decided verdict;
* **pending** — no cycle of the group has closed yet.

A cycle **closes** when every form of the cohort has a verdict in it (``group_forms``), or when a
newer cycle of the group starts; status is computed from closed cycles only, so a cycle that is
still filling never flips a group half-way. Cycles are ordered by their number, never by arrival:
a late judgement of a cycle still in the window joins it, one of a cycle older than the window is
refused, and neither ever evicts a newer cycle. Within the window each **form counts once** — its
latest verdict — so re-asking the same questions does not add examples (nor narrow intervals).

Errors (the target did not answer) and undecided verdicts never count as wrong, nor as evidence.
A closed cycle with no decided verdict at all — an outage, a judge that abstained on every form —
does not advance the group's window: the group keeps the status (and the numbers) of its last
cycle with evidence, marked **stale** (``GroupTally.stale``, ``evidence_cycle``), so an endpoint
that is down does not erase the gap list, nor resolve and re-fire the alerts that read it; the
outage is the target's health signal, not news about its knowledge. A group whose decided forms
are all right but some form erred is robust *and partial* (``coverage`` < 1). A status change
between cycles is a **transition** (robust → gap is a regression, gap → robust a recovery; judged
from the last conclusive status, so robust → unknown → gap is a regression too), kept in order
for the store, the metrics and the report.

Failure attribution (gap / retrieval / LM / inconclusive / target error) needs context comparison
across a group's forms and cohorts, so it is recomputed lazily for groups touched since the last
refresh. A group that is a gap in one cohort while another cohort answered it is a *cohort gap* —
the fact is there, the form cannot reach it — and its failures go to retrieval or the LM, not to
the knowledge base (:func:`attribution_status`). A wrong example whose retrieval cannot be judged
(no ids, no contexts, ids that neither contain nor avoid a correctly answered form's) is
*inconclusive*: the papers warn that a missing match "does not conclusively indicate retrieval
failure" (GRAMMAR 000 §3.6), so it is never blamed on retrieval by default
(:func:`judge_retrieval`).

With an **open-domain baseline** (an LLM-only target, GRAMMAR 002 §5.2 / Table 4) the tagger flags
every semantic group the baseline answers correctly — its answer may come from the model's own
memory, so the group says nothing about the knowledge base — and the closed-domain reads
(``closed_domain=True``: what ``/metrics`` and the alerts use) leave those groups and the baseline
itself out, as the batch report does. The flags follow the baseline's window: a group it stops
answering is closed-domain again.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

# re-exported: every reader of statuses imports them from the tagger
from groundwatch.core.evidence import DECIDED_STATUSES as DECIDED_STATUSES
from groundwatch.core.evidence import DEFAULT_EVIDENCE as DEFAULT_EVIDENCE
from groundwatch.core.evidence import EvidenceRule as EvidenceRule
from groundwatch.core.evidence import GroupStatus as GroupStatus
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
_CORRECT = Verdict.CORRECT
_INCORRECT = Verdict.INCORRECT
_ERROR = Verdict.ERROR
_NO_CAUSES: dict[Cause, int] = {}


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
    """Which cycles count: each group's own last ``runs`` closed cycles with evidence
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
    #: The cycle the status stands on: the group's newest cycle with evidence (0: none yet).
    evidence_cycle: int = 0
    #: The status is older than the group's newest cycle: cycles with no evidence (the target
    #: erred, the judge abstained) came after it and did not move it.
    stale: bool = False

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


@dataclass(slots=True)
class _CohortSums:
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


class _Cycle:
    """One cycle of a group: each form's latest observation, every observation in arrival
    order, and how many forms stand right and wrong — kept as verdicts arrive, so neither the
    closing test nor the status rescans the observations per judgement. Counts, not sets of
    forms: the wrong forms are listed only when flakiness has to be checked against them (few
    groups); and the arrival list exists only once a form is repeated in the cycle (before, it
    is ``forms`` itself): every container a cycle holds is more work for the garbage collector."""

    __slots__ = ("_repeats", "closed", "cycle", "forms", "right", "wrong")

    def __init__(self, cycle: int, *, closed: bool = False) -> None:
        self.cycle = cycle
        # form → its latest observation here (keys in order of first appearance)
        self.forms: dict[str, Observation] = {}
        # probe id → observation, in arrival order: only once a form came twice
        self._repeats: dict[str, Observation] | None = None
        self.right = 0  # forms whose latest verdict here is correct
        self.wrong = 0  # … incorrect
        self.closed = closed

    def add(self, obs: Observation) -> None:
        """Add a verdict; the form's latest verdict in the cycle is the one that stands."""
        forms = self.forms
        form = obs.form_id
        prev = forms.get(form)
        if prev is not None:
            if self._repeats is None:  # so far one observation per form, in arrival order
                self._repeats = {o.probe_id: o for o in forms.values()}
            v = prev.verdict
            if v is _CORRECT:
                self.right -= 1
            elif v is _INCORRECT:
                self.wrong -= 1
        if self._repeats is not None:
            self._repeats[obs.probe_id] = obs
        forms[form] = obs
        v = obs.verdict
        if v is _CORRECT:
            self.right += 1
        elif v is _INCORRECT:
            self.wrong += 1

    def observations(self) -> Iterable[Observation]:
        """Every observation of the cycle (repeats of a form included), in arrival order."""
        return self.forms.values() if self._repeats is None else self._repeats.values()

    def wrong_forms(self) -> Iterator[str]:
        """The forms whose latest verdict here is incorrect."""
        return (f for f, o in self.forms.items() if o.verdict is _INCORRECT)


@dataclass(slots=True)
class _Tally:
    key: GroupKey
    dataset_id: str
    scenario: str
    group_forms: int
    series: str
    sums: _CohortSums
    # ascending by cycle number (kept so on insertion): the window is read in order without
    # sorting per judgement
    cycles: dict[int, _Cycle] = field(default_factory=dict)
    status: GroupStatus = GroupStatus.PENDING
    # derived over the window: each form's latest observation
    latest: dict[str, Observation] = field(default_factory=dict)
    # a cycle opened, closed or left since the last recompute: the counted cycles may differ
    reshaped: bool = True
    correct: int = 0
    incorrect: int = 0
    error: int = 0
    undecided: int = 0
    # per form: (cycle, correct?, truth_version) of its decided verdicts, oldest first
    history: dict[str, list[tuple[int, bool, int]]] = field(default_factory=dict)
    flaky: frozenset[str] = frozenset()
    # replaced, never changed in place (Tagger._reattribute): all tallies start with one empty
    causes: dict[Cause, int] = field(default_factory=lambda: _NO_CAUSES)
    # the last of the cycles ``latest`` was derived from (see Tagger._recompute)
    counted_last: _Cycle | None = None
    last_closed: int | None = None
    # the last conclusive status (see Transition.from_conclusive), for transitions out of unknown
    conclusive: GroupStatus | None = None
    # the status stands on an older cycle than the group's newest closed one (see GroupTally)
    stale: bool = False
    evicted_before: int | None = None
    answers_open_domain: bool = False  # a baseline tally with a correct latest verdict


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
    return frozenset(form for form, h in history.items() if form_is_flaky(h))


def form_is_flaky(h: list[tuple[int, bool, int]]) -> bool:
    """One form's history (cycle, correct, truth version), oldest first: see :func:`flaky_forms`."""
    if len(h) < 3:
        return False
    for (_, a, ta), (_, b, tb), (_, c, tc) in zip(h, h[1:], h[2:], strict=False):
        if a == c != b and ta == tb == tc:
            return True
    return False


def judge_retrieval(
    obs: Observation, correct_contexts: set[frozenset[str]], *, reports_ids: bool = False
) -> tuple[bool | None, RetrievalEvidence]:
    """Whether the retrieval gave ``obs`` sufficient context, and what that stands on; ``None``
    (inconclusive) when nothing says.

    In order of strength:

    1. the judgement given with the observation (imported GRAMMAR results);
    2. ground-truth document ids, when the target reported retrieved ids: sufficient when every
       relevant document was retrieved (relevant ⊆ retrieved — a top-k retriever always brings
       extra documents, so set equality as in the authors' tool would blame retrieval for every
       k > |relevant|, while mere overlap would call half of a two-document answer sufficient);
    3. an empty retrieval from a target that reports ids for other queries (``reports_ids``):
       nothing was retrieved, so nothing sufficed;
    4. context comparison (§4.3) on ids: sufficient when the retrieved ids contain (⊇) those of a
       correctly answered form of the same semantic group — that form got its answer from those
       documents, and more documents do not take them away (a correct form matches itself);
    5. the retrieved text (the judge's ``context_has_answer``): the gold answer stated in the
       contexts → sufficient; contexts without it → insufficient;
    6. context comparison, negative: the retrieved ids share no document with any correctly
       answered form's → insufficient (none of the documents that answered the group came back);
    7. otherwise inconclusive: no ids and no contexts (every ``openai_chat`` target, an
       ``http_json`` target without id or context paths), or ids that overlap a correct form's
       without containing them. The paper itself warns that a missing match "does not
       conclusively indicate retrieval failures" (000 §3.6), so no evidence is never a verdict.

    A target error has no retrieval judgement. An undecided verdict keeps whatever evidence the
    retrieval has (its correctness is not evidence either way).
    """
    if obs.verdict is Verdict.ERROR:
        return None, RetrievalEvidence.NONE
    if obs.retrieval_ok is not None:
        return obs.retrieval_ok, RetrievalEvidence.GIVEN
    retrieved = obs.retrieved_ids
    if retrieved and obs.relevant_doc_ids:
        return set(obs.relevant_doc_ids) <= set(retrieved), RetrievalEvidence.GROUND_TRUTH
    if not retrieved and reports_ids:
        return False, RetrievalEvidence.NOTHING_RETRIEVED
    if retrieved and correct_contexts:
        got = frozenset(retrieved)
        if any(c <= got for c in correct_contexts):
            return True, RetrievalEvidence.CONTEXT_COMPARISON
    if obs.context_has_answer is not None:
        return obs.context_has_answer, RetrievalEvidence.CONTEXT_TEXT
    if retrieved and correct_contexts and all(got.isdisjoint(c) for c in correct_contexts):
        return False, RetrievalEvidence.CONTEXT_COMPARISON
    return None, RetrievalEvidence.NONE


def retrieval_sufficient(
    obs: Observation, correct_contexts: set[frozenset[str]], *, reports_ids: bool = False
) -> bool | None:
    """:func:`judge_retrieval` without its evidence: True, False, or None (inconclusive)."""
    return judge_retrieval(obs, correct_contexts, reports_ids=reports_ids)[0]


def cause_of(obs: Observation, status: GroupStatus, retrieval_ok: bool | None) -> Cause | None:
    """Failure attribution of one example; ``None`` for a correct one.

    error → target error; undecided → undecided; a response matching an earlier answer version
    (the source database changed, the RAG's knowledge did not) → stale; a wrong example in a gap
    group → gap (the knowledge base lacks the fact); in a flaky group → flaky; in a pending group
    → pending (it may yet turn out to be a gap); otherwise insufficient retrieval → retrieval,
    sufficient → LM, not judgeable (``None``) → inconclusive. Callers pass the status from
    :func:`attribution_status`, so a group that is a gap in one cohort only is not blamed on the
    knowledge base.
    """
    v = obs.verdict
    if v is Verdict.CORRECT:
        return None
    if v is Verdict.ERROR:
        return Cause.TARGET_ERROR
    if v is Verdict.UNDECIDED:
        return Cause.UNDECIDED
    if obs.stale:
        return Cause.STALE  # the answer matches an earlier SQL truth: outdated, not missing
    if status is GroupStatus.GAP:
        return Cause.GAP
    if status is GroupStatus.FLAKY:
        return Cause.FLAKY
    if status is GroupStatus.PENDING or status is GroupStatus.UNKNOWN:
        return Cause.PENDING
    if retrieval_ok is None:
        return Cause.INCONCLUSIVE
    return Cause.LM if retrieval_ok else Cause.RETRIEVAL


def attribution_status(status: GroupStatus, answered_in_another_cohort: bool) -> GroupStatus:
    """The status attribution works from: a *cohort gap* — every form of this cohort wrong while
    a form of another cohort of the same semantic group was answered correctly — is no knowledge
    gap (the fact is in the knowledge base, the target just cannot reach it in this form), so its
    failures are judged like those of a non-robust group: retrieval or LM. This is the authors'
    rule that gap groups are identified "by considering both hypothesis and counter-hypothesis
    clusters" (mutual gap groups), applied to attribution; the per-cohort status, and with it
    Acc_db, R and λ, stays exactly GRAMMAR's. The same holds for a wrong form of a cohort with
    too little evidence for a status (unknown): the fact was answered in another wording, so
    that form's failure is fragility, whatever the rest of its cohort did."""
    if (status is GroupStatus.GAP or status is GroupStatus.UNKNOWN) and answered_in_another_cohort:
        return GroupStatus.NON_ROBUST
    return status


class Tagger:
    """Incremental, idempotent GRAMMAR tagging of a stream of judged observations.

    ``apply`` returns False for a duplicate ``probe_id`` (a redelivered judgement) and for an
    observation of a cycle older than the group's window, so the caller can skip persisting it.
    Not thread-safe for writes: one tagger per analytics instance, fed by its consumer loop;
    the instance owns the semantic groups of its partitions (key = group_id) and drops them with
    :meth:`discard_group` on revocation. Its reads may run in another thread (the report is built
    in a worker thread while judgements arrive): each iterates a snapshot of the dict it reads
    (``list(d.items())`` copies in one step under the GIL), never the live one, which raised
    "dictionary changed size during iteration" (a 500 on a continuous run's ``/report``).
    Memory is proportional to groups × (window + 1) cycles
    plus a short verdict history per form, never to the length of the series.
    """

    def __init__(
        self,
        window: Window | None = None,
        *,
        open_domain_baseline: str | None = None,
        evidence: EvidenceRule | None = None,
    ) -> None:
        """``open_domain_baseline`` names the LLM-only target whose correctly answered groups
        are open-domain (left out of the closed-domain reads); ``evidence`` is how much of a
        group must be decided for gap or robust (:mod:`groundwatch.core.evidence`), the
        window's rule unless given."""
        self._w = window.runs if window is not None else None
        if evidence is None:
            evidence = window.evidence if window is not None else DEFAULT_EVIDENCE
        self.evidence = evidence
        # groups per (target, cohort) whose status stands on an older cycle than their newest
        self._stale_counts: dict[tuple[str, str], int] = {}
        # target → [newest cycle, probes judged in it, of which answered]: its health right now
        self._health: dict[str, list[int]] = {}
        self.open_domain_baseline = open_domain_baseline
        # group id → baseline tallies (cohorts) with a correct latest verdict
        self._open_domain: dict[str, int] = {}
        self._mutations = 0
        self._closed_cache: tuple[int, _ClosedDomain] | None = None
        self._tallies: dict[GroupKey, _Tally] = {}
        self._live: dict[str, Observation] = {}
        self._status_counts: dict[tuple[str, str, GroupStatus], int] = {}
        self._verdict_counts: dict[str, dict[Verdict, int]] = {}
        self._scenario_counts: dict[tuple[str, str], dict[Verdict, int]] = {}
        self._cohorts_of: dict[tuple[str, str], set[str]] = {}
        self._dirty: set[GroupKey] = set()
        self._cause_counts: dict[tuple[str, str, Cause], int] = {}
        self._sums: dict[tuple[str, str], _CohortSums] = {}
        self._knowledge_gaps: dict[str, set[str]] = {}
        self._pending_transitions: list[Transition] = []
        self._recent: deque[Transition] = deque(maxlen=RECENT_TRANSITIONS)
        self._transition_counts: dict[tuple[str, str, GroupStatus, GroupStatus], int] = {}
        # (target, cohort, regression | recovery | change) → transitions so far
        self._kind_counts: dict[tuple[str, str, str], int] = {}
        # targets that reported retrieved ids at least once: an empty list from them means
        # "nothing retrieved", from any other target "not reported"
        self._id_targets: set[str] = set()

    @property
    def window(self) -> Window:
        return Window(runs=self._w, evidence=self.evidence)

    # ------------------------------------------------------------------ ingest
    def apply(self, obs: Observation) -> bool:
        """Count one judged observation: O(forms × window) for its group at worst; while no
        cycle opens, closes or leaves the window, only the new verdict moves its numbers."""
        t = self._ingest(obs)
        if t is None:
            return False
        self._recompute(t.key, t, obs)
        return True

    def _ingest(self, obs: Observation) -> _Tally | None:
        """Put ``obs`` in its group's window (``None``: a repeat, or older than the window);
        the group's numbers and status are re-derived by :meth:`_recompute` after."""
        pid = obs.probe_id
        live = self._live
        if pid in live:
            return None
        key = (obs.target, obs.cohort, obs.group_id)
        t = self._tallies.get(key)
        c = obs.cycle
        if t is None:
            t = self._open(key, obs)
        elif t.evicted_before is not None and c < t.evicted_before:
            return None  # a late verdict of a cycle that left the window: never evicts newer
        elif c not in t.cycles and t.cycles and self._w is not None:
            closed = [cc for cc, cy in t.cycles.items() if cy.closed]  # ascending
            if len(closed) >= self._w and c < closed[0] and c < next(reversed(t.cycles)):
                return None  # older than every cycle the window keeps
        live[pid] = obs
        health = self._health.get(obs.target)
        if health is None or c > health[0]:
            self._health[obs.target] = [c, 1, obs.verdict is not _ERROR]
        elif c == health[0]:
            health[1] += 1
            health[2] += obs.verdict is not _ERROR
        if obs.scenario == FACTUAL and (vc := self._verdict_counts.get(obs.target)) is not None:
            vc[obs.verdict] += 1  # _count_verdict's common case, without the call
        else:
            self._count_verdict(obs, 1)
        if obs.retrieved_ids and obs.target not in self._id_targets:
            self._id_targets.add(obs.target)
        cycles = t.cycles
        top = next(reversed(cycles)) if cycles else 0
        if c >= top:
            t.group_forms = obs.group_forms
        cycle = cycles.get(c)
        changed = False  # whether a cycle opened or closed: only then can one leave the window
        # (and only then can the cycles that count differ: see _recompute)
        if cycle is None:
            changed = True
            # a late verdict of an older cycle opens it already closed: a newer one has started
            newer = bool(cycles) and c < top
            cycle = _Cycle(c, closed=newer)
            # a newer cycle started: every older open cycle is as complete as it will get
            for cc, cy in cycles.items():
                if cc < c:
                    cy.closed = True
            cycles[c] = cycle
            if newer:  # keep the cycles ascending
                t.cycles = dict(sorted(cycles.items()))
        had_evidence = bool(cycle.right or cycle.wrong)
        cycle.add(obs)
        if had_evidence is not bool(cycle.right or cycle.wrong):
            # a cycle with evidence counts for the window, one without does not: which cycles
            # count changed as if one had opened or closed
            changed = True
        if not cycle.closed and len(cycle.forms) >= t.group_forms:
            cycle.closed = changed = True
        if changed:
            t.reshaped = True
            if self._w is not None:
                self._evict(t)
        return t

    def apply_many(self, observations: Iterable[Observation]) -> int:
        """Apply each; returns how many were new."""
        apply = self.apply
        return sum(1 for o in observations if apply(o))

    def rebuild(self, observations: Iterable[Observation]) -> int:
        """Load stored observations into a fresh tagger (start-up, rebalance): each goes into its
        window and its form's history as :meth:`apply` would put it, and each group's numbers
        and status are derived once, at the end, instead of after every observation. The final
        state is the one ``apply_many`` reaches; the status changes it would have passed through
        on the way are replays of stored history and are not counted again. Returns how many
        were new."""
        touched: dict[GroupKey, _Tally] = {}
        n = 0
        for obs in observations:
            t = self._ingest(obs)
            if t is None:
                continue
            n += 1
            touched[t.key] = t
            if obs.verdict is _CORRECT or obs.verdict is _INCORRECT:
                self._remember(t, obs)
        for key, t in touched.items():
            self._recompute(key, t, None)
        return n

    def drain_transitions(self) -> list[Transition]:
        """Transitions since the last call, in the order they happened (the store and the
        transition counter read them after each batch)."""
        out, self._pending_transitions = self._pending_transitions, []
        return out

    def _open(self, key: GroupKey, obs: Observation) -> _Tally:
        ck = (key[0], key[1])
        sums = self._sums.get(ck)
        if sums is None:
            sums = self._sums[ck] = _CohortSums()
        t = self._tallies[key] = _Tally(
            key, obs.dataset_id, obs.scenario, obs.group_forms, obs.series, sums
        )
        sc = (key[0], key[1], GroupStatus.PENDING)
        self._status_counts[sc] = self._status_counts.get(sc, 0) + 1
        gk = (key[0], key[2])
        self._cohorts_of.setdefault(gk, set()).add(key[1])
        return t

    def _evict(self, t: _Tally) -> None:
        """Keep the last W closed cycles *with evidence* and any open one newer than them (run
        when a cycle opened, closed, or gained or lost its evidence). A closed cycle without
        evidence (every form erred or was undecided) never pushes one with evidence out, so an
        outage of any length keeps the group's last conclusive cycles; of those empty cycles
        only the newest is kept (what the group's last probe showed), so an outage of any length
        costs one cycle of memory."""
        if self._w is None:
            return
        cycles = t.cycles
        closed = [(c, cy) for c, cy in cycles.items() if cy.closed]  # ascending
        evidence = [c for c, cy in closed if cy.right or cy.wrong]
        if len(evidence) > self._w:
            oldest_kept = evidence[-self._w]
            for c, _ in closed:
                if c >= oldest_kept:
                    break
                self._drop(t, c)
                t.evicted_before = max(t.evicted_before or 0, c + 1)
        empty = [c for c, cy in closed if c in cycles and not (cy.right or cy.wrong)]
        for c in empty[:-1]:
            # no evidence and not the newest: nothing counts on it (a late verdict of it opens
            # it again, already closed)
            self._drop(t, c)

    def _drop(self, t: _Tally, c: int) -> None:
        for o in t.cycles.pop(c).observations():
            del self._live[o.probe_id]
            self._count_verdict(o, -1)

    def _recompute(self, key: GroupKey, t: _Tally, obs: Observation | None) -> None:
        """Re-derive the group's window numbers and status, and move the running sums by the
        difference (a group has a handful of forms and W cycles: cheap). After :meth:`apply`,
        when no cycle opened, closed or left, only the new verdict is accounted for."""
        old_status: GroupStatus = t.status
        o_correct, o_incorrect, o_error, o_undecided = t.correct, t.incorrect, t.error, t.undecided
        o_probed, o_flaky = len(t.latest), len(t.flaky)
        closed: list[_Cycle] | None = None
        # Since the last recompute only ``obs`` arrived: if no cycle opened, closed or left on
        # the way, the counted cycles (below) are the same ones, and the window's numbers move
        # by this one verdict instead of being re-derived.
        cycle: _Cycle | None = None
        if obs is not None and not t.reshaped:
            cycle = t.cycles[obs.cycle]
        t.reshaped = False
        if cycle is not None and cycle is t.counted_last:
            assert obs is not None  # for mypy: ``cycle`` implies it
            correct, incorrect, error, undecided = o_correct, o_incorrect, o_error, o_undecided
            latest = t.latest
            form = obs.form_id
            prev = latest.get(form)
            if prev is None:
                # a new form: a new dict, so an iteration of the old one (a report built in
                # another thread) never sees it change size — as with a full re-derivation
                latest = t.latest = {**latest, form: obs}
            else:
                latest[form] = obs  # the form keeps its place, as in a re-derivation
                v = prev.verdict
                if v is _CORRECT:
                    correct -= 1
                elif v is _INCORRECT:
                    incorrect -= 1
                elif v is _ERROR:
                    error -= 1
                else:
                    undecided -= 1
            v = obs.verdict
            if v is _CORRECT:
                correct += 1
            elif v is _INCORRECT:
                incorrect += 1
            elif v is _ERROR:
                error += 1
            else:
                undecided += 1
        elif cycle is not None and not cycle.closed and old_status is not GroupStatus.PENDING:
            # a verdict of a cycle still filling while closed ones (not pending) count: nothing
            # counted moved
            latest = t.latest
            correct, incorrect, error, undecided = o_correct, o_incorrect, o_error, o_undecided
        else:
            # What counts is what the status stands on: each form's latest verdict in the closed
            # cycles (a cycle still filling joins when it closes); before any cycle closed, the
            # open one, so a pending group still shows what it has.
            closed = [cy for cy in t.cycles.values() if cy.closed]
            # a closed cycle without evidence counts only while no cycle has any (it is then
            # what the group's forms last did): an outage must not replace the window's numbers
            evidence = [cy for cy in closed if cy.right or cy.wrong]
            counted = evidence or closed[-1:] or list(t.cycles.values())
            t.counted_last = counted[-1] if counted else None
            if len(counted) == 1:
                latest = counted[0].forms.copy()
            else:
                latest = {}
                for cy in counted:
                    latest.update(cy.forms)  # a later cycle's verdict of a form replaces it
            t.latest = latest
            correct, incorrect, error, undecided = _verdict_counts(latest.values())
        t.correct, t.incorrect, t.error, t.undecided = correct, incorrect, error, undecided
        old_flaky = t.flaky
        if obs is None:  # a rebuild or a dropped partition: every form's history may differ
            t.flaky = flaky_forms(t.history)
        elif obs.verdict is _CORRECT or obs.verdict is _INCORRECT:
            # only this form's history moved, so only its flakiness can change
            form = obs.form_id
            h = self._remember(t, obs)
            if (len(h) > 2 and form_is_flaky(h)) is not (form in old_flaky):
                t.flaky = old_flaky ^ {form}
        new_status: GroupStatus
        last_closed: int | None
        if (
            cycle is not None
            and not cycle.closed
            and (old_status is GroupStatus.PENDING or t.flaky is old_flaky)
        ):
            # No cycle opened, closed or left, and this verdict joined none of the closed ones:
            # the status is what it was (pending: still no closed cycle; otherwise the closed
            # cycles and the flaky forms are as they were).
            new_status, last_closed = old_status, t.last_closed
        else:
            if closed is None:
                closed = [cy for cy in t.cycles.values() if cy.closed]
            new_status, last_closed = self._status(t, closed)
            stale = bool(closed) and last_closed is not None and closed[-1].cycle > last_closed
            if stale is not t.stale:
                t.stale = stale
                ck = (key[0], key[1])
                self._stale_counts[ck] = self._stale_counts.get(ck, 0) + (1 if stale else -1)
        # running sums: remove the old contribution, add the new one
        s = t.sums
        s.probed += len(latest) - o_probed
        s.decided += (correct + incorrect) - (o_correct + o_incorrect)
        s.error += error - o_error
        s.undecided += undecided - o_undecided
        s.flaky_forms += len(t.flaky) - o_flaky
        if new_status is not old_status or correct != o_correct or incorrect != o_incorrect:
            was_decided = old_status in DECIDED_STATUSES
            now_decided = new_status in DECIDED_STATUSES
            s.correct += (correct if now_decided else 0) - (o_correct if was_decided else 0)
            s.incorrect += (incorrect if now_decided else 0) - (o_incorrect if was_decided else 0)
            s.gap_examples += (correct + incorrect if new_status is GroupStatus.GAP else 0) - (
                o_correct + o_incorrect if old_status is GroupStatus.GAP else 0
            )
        if new_status is not old_status:
            self._move(key, t, new_status)
            if old_status is not GroupStatus.PENDING and last_closed is not None:
                # A verdict of a cycle still filling changes the status through the form's
                # flakiness (its flip back): the change is that cycle's, not the last closed
                # one's (robust→non_robust at 3 and non_robust→flaky both read "cycle 3")
                at_cycle = (
                    obs.cycle
                    if obs is not None and t.flaky is not old_flaky and obs.cycle > last_closed
                    else last_closed
                )
                tr = Transition(
                    key[0],
                    key[1],
                    key[2],
                    old_status,
                    new_status,
                    at_cycle,
                    t.series,
                    obs.at if obs is not None else 0.0,
                    None if old_status in DECIDED_STATUSES else t.conclusive,
                )
                self._pending_transitions.append(tr)
                self._recent.append(tr)
                tk = (key[0], key[1], old_status, new_status)
                self._transition_counts[tk] = self._transition_counts.get(tk, 0) + 1
                kk = (key[0], key[1], tr.kind)
                self._kind_counts[kk] = self._kind_counts.get(kk, 0) + 1
            self._update_knowledge_gap(key[0], key[2])
            if new_status in DECIDED_STATUSES:
                t.conclusive = new_status
        elif (correct > 0) is not (o_correct > 0):
            # a right answer in a cohort of too little evidence refutes a knowledge gap too
            self._update_knowledge_gap(key[0], key[2])
        t.last_closed = last_closed
        self._dirty.add(key)
        self._mutations += 1
        if key[0] == self.open_domain_baseline:
            answers = correct > 0
            if answers is not t.answers_open_domain:
                t.answers_open_domain = answers
                flagged = self._open_domain.get(key[2], 0) + (1 if answers else -1)
                if flagged:
                    self._open_domain[key[2]] = flagged
                else:
                    self._open_domain.pop(key[2], None)

    def _remember(self, t: _Tally, obs: Observation) -> list[tuple[int, bool, int]]:
        """The form's decided verdict of this cycle in its (bounded) history; returns the
        history. Verdicts mostly arrive in cycle order, so the newest entry is checked first."""
        h = t.history.get(obs.form_id)
        if h is None:
            h = t.history[obs.form_id] = []
        c = obs.cycle
        entry = (c, obs.verdict is _CORRECT, obs.truth_version)
        if not h or h[-1][0] < c:
            h.append(entry)
        elif h[-1][0] == c:
            h[-1] = entry  # the latest verdict of the form in that cycle stands
        else:
            for i, (hc, _, _) in enumerate(h):
                if hc == c:
                    h[i] = entry
                    break
            else:
                h.append(entry)
                h.sort()
        if len(h) > FLAKY_HISTORY:
            del h[:-FLAKY_HISTORY]
        return h

    def _status(self, t: _Tally, closed: list[_Cycle]) -> tuple[GroupStatus, int | None]:
        """The group's status from its closed cycles (ascending) and its flaky forms, by the
        evidence rules (:mod:`groundwatch.core.evidence`), and the cycle it stands on: a cycle
        without evidence is skipped, so the status stays that of the newest cycle with some."""
        if not closed:
            return GroupStatus.PENDING, None
        rule = self.evidence
        mixed = False  # a cycle with a right and a wrong form
        last: _Cycle | None = None  # the latest cycle with evidence
        for cy in closed:
            if cy.right:
                if cy.wrong:
                    mixed = True
                last = cy
            elif cy.wrong:
                last = cy
        if last is None:
            return GroupStatus.UNKNOWN, closed[-1].cycle
        last_cycle = last.cycle
        if mixed:
            status = GroupStatus.NON_ROBUST  # culprits: the wrong forms of mixed cycles
        else:
            status = rule.cycle_status(last.right, last.wrong, t.group_forms) or GroupStatus.UNKNOWN
            if status is not GroupStatus.GAP:
                return status, last_cycle  # robust, or unknown: too little decided
        flaky = t.flaky
        if flaky:  # there are culprits: with no flaky form they cannot all be flaky
            if mixed:
                culprits = all(
                    f in flaky for cy in closed if cy.right and cy.wrong for f in cy.wrong_forms()
                )
            else:
                culprits = all(f in flaky for f in last.wrong_forms())
            if culprits:
                return GroupStatus.FLAKY, last_cycle
        return status, last_cycle

    def _count_verdict(self, obs: Observation, delta: int) -> None:
        vc = self._verdict_counts.get(obs.target)
        if vc is None:
            vc = self._verdict_counts[obs.target] = dict.fromkeys(Verdict, 0)
        vc[obs.verdict] += delta
        if obs.scenario != FACTUAL:
            key = (obs.target, obs.scenario)
            counts = self._scenario_counts.get(key)
            if counts is None:
                counts = self._scenario_counts[key] = dict.fromkeys(Verdict, 0)
            counts[obs.verdict] += delta

    def _move(self, key: GroupKey, t: _Tally, new: GroupStatus) -> None:
        counts = self._status_counts
        counts[(key[0], key[1], t.status)] -= 1
        kn = (key[0], key[1], new)
        counts[kn] = counts.get(kn, 0) + 1
        t.status = new

    def _update_knowledge_gap(self, target: str, group_id: str) -> None:
        # Every cohort with a status says gap and no cohort has a right answer; a cohort with
        # no status yet (pending, unknown: the target erred, the judge abstained, too little was
        # decided) confirms nothing, but its right answer refutes. One pass over
        # the cohorts (this runs on every status change).
        tallies = self._tallies
        decided = False
        all_gap = True
        for c in self._cohorts_of.get((target, group_id), ()):
            t = tallies[(target, c, group_id)]
            if t.scenario != FACTUAL:
                return  # RAGProbe scenario probes are single questions, not facts of the database
            s = t.status
            if s is GroupStatus.GAP:
                decided = True
            elif s in DECIDED_STATUSES or t.correct:
                # a cohort with a right answer refutes the gap, even with too little evidence
                # for a status of its own (gap means *every* form is wrong)
                decided = decided or s in DECIDED_STATUSES
                all_gap = False
        gaps = self._knowledge_gaps.setdefault(target, set())
        if decided and all_gap:
            gaps.add(group_id)
        else:
            gaps.discard(group_id)

    def discard_group(self, target: str | None, group_id: str) -> int:
        """Forget a semantic group (every cohort; every target when ``target`` is None), e.g.
        when its partition moves to another instance. Returns how many observations went."""
        keys = [k for k in self._tallies if k[2] == group_id and target in (None, k[0])]
        n = 0
        for key in keys:
            t = self._tallies[key]
            for cy in t.cycles.values():
                for o in cy.observations():
                    del self._live[o.probe_id]
                    self._count_verdict(o, -1)
                    n += 1
            t.cycles.clear()
            self._recompute(key, t, None)
            self._status_counts[(key[0], key[1], t.status)] -= 1
            for cause, c in t.causes.items():
                self._cause_counts[(key[0], key[1], cause)] -= c
            del self._tallies[key]
            cohorts = self._cohorts_of[(key[0], key[2])]
            cohorts.discard(key[1])
            if not cohorts:
                del self._cohorts_of[(key[0], key[2])]
            self._knowledge_gaps.get(key[0], set()).discard(group_id)
            self._dirty.discard(key)
        # a transition the discarded group produced while being emptied is no real one
        self._pending_transitions = [
            tr for tr in self._pending_transitions if tr.group_id != group_id
        ]
        return n

    # ------------------------------------------------------------------ reads
    def status(self, target: str, cohort: str, group_id: str) -> GroupStatus:
        t = self._tallies.get((target, cohort, group_id))
        return GroupStatus.PENDING if t is None else t.status

    def tally(self, target: str, cohort: str, group_id: str) -> GroupTally | None:
        t = self._tallies.get((target, cohort, group_id))
        return None if t is None else _snapshot((target, cohort, group_id), t)

    def tallies(
        self,
        target: str | None = None,
        cohort: str | None = None,
        status: GroupStatus | None = None,
    ) -> Iterator[GroupTally]:
        """Snapshots of every tracked group, optionally filtered (for ``/groups``)."""
        for key, t in list(self._tallies.items()):  # a snapshot: see the class docstring
            if (
                (target is None or key[0] == target)
                and (cohort is None or key[1] == cohort)
                and (status is None or t.status is status)
            ):
                yield _snapshot(key, t)

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

    def stale_counts(self) -> dict[tuple[str, str], int]:
        """Groups per (target, cohort) whose status stands on an older cycle than their newest
        one: cycles without evidence (an outage) came after it (what the operator must know
        beside a gap list that an outage did not erase)."""
        return {k: n for k, n in list(self._stale_counts.items()) if n}

    def target_health(self) -> dict[str, tuple[int, int, int]]:
        """target → (its newest cycle, probes judged in that cycle, of which the target
        answered): whether the endpoint is up now, which the group statuses no longer say
        (an outage keeps them, stale)."""
        return {t: (h[0], h[1], h[2]) for t, h in list(self._health.items())}

    def open_domain_groups(self) -> set[str]:
        """Semantic groups the open-domain baseline answers correctly (in its window)."""
        return set(self._open_domain)

    def _closed(self) -> _ClosedDomain:
        """What the open-domain groups contribute to the other targets' running counts, to be
        subtracted: O(open-domain groups × cohorts), recomputed only after the tagger changed."""
        cached = self._closed_cache
        if cached is not None and cached[0] == self._mutations:
            return cached[1]
        cd = _ClosedDomain()
        baseline = self.open_domain_baseline
        targets = {t for t, _ in list(self._sums) if t != baseline}
        for gid in list(self._open_domain):
            for target in targets:
                for cohort in self._cohorts_of.get((target, gid), ()):
                    t = self._tallies[(target, cohort, gid)]
                    ck = (target, cohort)
                    s = cd.sums.setdefault(ck, _CohortSums())
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
                ck: _minus(s, cd.sums.get(ck))
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
                "stale_groups": self._stale_counts.get((target, cohort), 0),
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

    def refresh_causes(self, max_groups: int | None = None) -> int:
        """Re-attribute up to ``max_groups`` touched semantic groups (all when None); returns
        how many touched groups are still waiting."""
        dirty = self._dirty
        done: set[tuple[str, str]] = set()
        while dirty and (max_groups is None or len(done) < max_groups):
            key = dirty.pop()
            gk = (key[0], key[2])
            if gk not in done:
                done.add(gk)
                self._reattribute(gk)
        return len(dirty)

    def observations(self) -> Iterator[Observation]:
        """Every observation in the window (repeats of a form included), in arrival order.

        A snapshot: the report is built in a worker thread while the consume loop applies
        judgements, and iterating the live dict there failed with "dictionary changed size
        during iteration" (a 500 on ``/report.html`` under a continuous ``run``); ``list`` copies
        it in one step under the GIL."""
        return iter(list(self._live.values()))

    def counted_observations(self) -> Iterator[Observation]:
        """The observations that count: each form's latest verdict in its group's window."""
        for t in list(self._tallies.values()):
            yield from list(t.latest.values())

    def group_observations(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        """The group's counted observations (each form's latest verdict in the window)."""
        t = self._tallies.get((target, cohort, group_id))
        return [] if t is None else list(t.latest.values())

    def group_history(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        """Every observation of the group in the window, oldest cycle first."""
        t = self._tallies.get((target, cohort, group_id))
        if t is None:
            return []
        cycles = list(t.cycles.values())  # a cycle may leave the window meanwhile
        return [o for cy in sorted(cycles, key=lambda cy: cy.cycle) for o in cy.observations()]

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
            gaps -= self._open_domain.keys()
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
        contexts = _correct_contexts(tallies)
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

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, probe_id: object) -> bool:
        return probe_id in self._live

    # ------------------------------------------------------------------ attribution
    def _group_tallies(self, gk: tuple[str, str]) -> list[_Tally]:
        target, group_id = gk
        return [
            self._tallies[(target, c, group_id)]
            for c in sorted(self._cohorts_of.get(gk, ()))
            if (target, c, group_id) in self._tallies
        ]

    def _reattribute(self, gk: tuple[str, str]) -> None:
        target, group_id = gk
        cohorts = self._cohorts_of.get(gk)
        if not cohorts:
            return
        tallies = [(c, self._tallies[(target, c, group_id)]) for c in cohorts]
        contexts: set[frozenset[str]] | None = None
        counts = self._cause_counts
        answered = any(t.correct for _, t in tallies)
        ids = target in self._id_targets
        for cohort, t in tallies:
            status = attribution_status(t.status, answered)
            fresh: dict[Cause, int] = {}
            if status is GroupStatus.NON_ROBUST:
                # only here does a wrong example need its retrieval judged
                if contexts is None:
                    contexts = _correct_contexts(tt for _, tt in tallies)
                for o in t.latest.values():
                    cause = cause_of(o, status, retrieval_sufficient(o, contexts, reports_ids=ids))
                    if cause is not None:
                        fresh[cause] = fresh.get(cause, 0) + 1
            else:
                for o in t.latest.values():
                    cause = cause_of(o, status, None)
                    if cause is not None:
                        fresh[cause] = fresh.get(cause, 0) + 1
            old = t.causes
            if old == fresh:
                continue
            for cause, n in old.items():
                counts[(target, cohort, cause)] -= n
            for cause, n in fresh.items():
                ck = (target, cohort, cause)
                counts[ck] = counts.get(ck, 0) + n
            t.causes = fresh
            self._mutations += 1


@dataclass(slots=True)
class _ClosedDomain:
    """The open-domain groups' share of the running counts (per target and cohort)."""

    sums: dict[tuple[str, str], _CohortSums] = field(default_factory=dict)
    status: dict[tuple[str, str, GroupStatus], int] = field(default_factory=dict)
    causes: dict[tuple[str, str, Cause], int] = field(default_factory=dict)


def _minus(a: _CohortSums, b: _CohortSums | None) -> _CohortSums:
    if b is None:
        return a
    return _CohortSums(
        correct=a.correct - b.correct,
        incorrect=a.incorrect - b.incorrect,
        gap_examples=a.gap_examples - b.gap_examples,
        probed=a.probed - b.probed,
        decided=a.decided - b.decided,
        error=a.error - b.error,
        undecided=a.undecided - b.undecided,
        flaky_forms=a.flaky_forms - b.flaky_forms,
    )


def _correct_contexts(tallies: Iterable[_Tally]) -> set[frozenset[str]]:
    """Retrieved-id sets of the correctly answered forms of one semantic group, across cohorts:
    any semantically identical, correctly answered form is evidence that a context suffices."""
    return {
        frozenset(o.retrieved_ids)
        for t in tallies
        if t.correct
        for o in t.latest.values()
        if o.verdict is _CORRECT and o.retrieved_ids
    }


def _snapshot(key: GroupKey, t: _Tally) -> GroupTally:
    cycles = sorted(t.cycles)
    history_from = min((h[0][0] for h in t.history.values() if h), default=0)
    return GroupTally(
        target=key[0],
        cohort=key[1],
        group_id=key[2],
        dataset_id=t.dataset_id,
        scenario=t.scenario,
        group_forms=t.group_forms,
        forms_judged=len(t.latest),
        correct=t.correct,
        incorrect=t.incorrect,
        error=t.error,
        undecided=t.undecided,
        status=t.status,
        flaky_forms=len(t.flaky),
        cycle=cycles[-1] if cycles else 0,
        window_from_cycle=cycles[0] if cycles else 0,
        history_from_cycle=min(history_from, cycles[0]) if cycles else history_from,
        series=t.series,
        evidence_cycle=t.last_closed or 0,
        stale=t.stale,
    )


def _verdict_counts(observations: Iterable[Observation]) -> tuple[int, int, int, int]:
    """(correct, incorrect, error, undecided) among ``observations``: the full recount; the
    per-judgement path moves the four counts by one verdict inline instead."""
    counts = Counter(o.verdict for o in observations)
    return counts[_CORRECT], counts[_INCORRECT], counts[_ERROR], counts[Verdict.UNDECIDED]
