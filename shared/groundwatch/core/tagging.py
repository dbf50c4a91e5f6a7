"""Live group tagging (GRAMMAR-Eval §4.3): one verdict at a time into per-group status.

The tagger keeps, per (target, cohort, semantic group), the counts of correct, incorrect, error and
undecided verdicts inside a window, and from them the group's status:

* **gap** — every *judged* form wrong (no correct verdict, at least one incorrect);
* **robust** — every judged form right (no incorrect verdict, at least one correct);
* **non-robust** — both a right and a wrong form;
* **pending** — fewer than ``group_forms`` distinct forms have any verdict yet, *or* none of the
  group's verdicts is decisive (every verdict so far is ``error`` or ``undecided``).

"Judged" means a decisive verdict (correct or incorrect). An ``error`` (the target failed to
answer) or ``undecided`` (the judge could not tell) verdict fills the form's slot for the pending
check — the form was asked and answered as far as it ever will be this run — but it counts neither
way: a group with two correct forms and one error is robust, one with two incorrect forms and one
error is a gap, and one whose forms all errored stays pending because there is no evidence about
the knowledge base at all. This mirrors the authors' ``TaggedGroup`` (gap = no correct verdict,
non-robust = a correct and a non-correct one) on data where every verdict is decisive, while never
letting an outage masquerade as a knowledge gap.

Every observation in the window counts: with a window of several runs a form contributes one
verdict per run, so a group that recovers goes through non-robust to robust as its old runs leave
the window (with ``Window(runs=1)`` it flips at the first recovered run). Updates are O(1)
(amortised for eviction); ``status_counts`` is maintained as statuses change, so an exporter
reads it without scanning groups. Failure attribution (gap / retrieval / LM / target error) needs
context comparison across a group's forms and cohorts, so it is recomputed lazily, only for groups
touched since the last refresh. Attribution looks at the whole semantic group: a group that is a
gap in one cohort while another cohort answered it is a *cohort gap* — the fact is there, the form
cannot reach it — and its failures go to retrieval or the LM, not to the knowledge base
(:func:`attribution_status`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from groundwatch.core.model import Verdict

#: The judge's reason for a response that matches an earlier answer version of its group.
STALE_REASON = "stale"
#: The scenario of a GRAMMAR probe; anything else is a RAGProbe scenario (S1…S6).
FACTUAL = "factual"

GroupKey = tuple[str, str, str]
"""(target, cohort, group_id)."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One judged text form: the unit both the live tagger and the batch report consume.

    ``retrieval_ok`` is a retrieval judgement given from outside (an imported GRAMMAR result);
    when it is ``None`` the retrieval is judged from ``relevant_doc_ids`` or by context
    comparison (see :func:`retrieval_sufficient`). ``at`` is the judgement time in epoch seconds,
    used by a time window; ``latency_s`` is probe → judgement latency.
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

    @property
    def key(self) -> GroupKey:
        return (self.target, self.cohort, self.group_id)


class GroupStatus(StrEnum):
    """A semantic group's tag for one (target, cohort) in the current window."""

    GAP = "gap"
    ROBUST = "robust"
    NON_ROBUST = "non_robust"
    PENDING = "pending"


class Cause(StrEnum):
    """Why an example failed (GRAMMAR §4.3), or why it was not attributed."""

    GAP = "gap"
    RETRIEVAL = "retrieval"
    LM = "lm"
    TARGET_ERROR = "target_error"
    STALE = "stale"
    UNDECIDED = "undecided"
    PENDING = "pending"


@dataclass(frozen=True, slots=True)
class Window:
    """Which observations count: the last ``runs`` runs per target and/or the last ``seconds``
    seconds of judgement time. ``None`` for both keeps everything (a batch report)."""

    runs: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.runs is not None and self.runs < 1:
            raise ValueError("Window.runs must be >= 1")
        if self.seconds is not None and self.seconds <= 0:
            raise ValueError("Window.seconds must be > 0")


@dataclass(frozen=True, slots=True)
class GroupTally:
    """A read-only snapshot of one group's counts (what the service stores and serves)."""

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

    @property
    def examples(self) -> int:
        """Decisively judged examples: the denominator of accuracy (errors excluded)."""
        return self.correct + self.incorrect


@dataclass(slots=True)
class _CohortSums:
    """Running sums per (target, cohort): what eq. 1–3 need, so /metrics never scans groups."""

    correct: int = 0
    incorrect: int = 0
    error: int = 0
    undecided: int = 0
    gap_examples: int = 0


@dataclass(slots=True)
class _Tally:
    dataset_id: str
    scenario: str
    group_forms: int
    sums: _CohortSums
    correct: int = 0
    incorrect: int = 0
    error: int = 0
    undecided: int = 0
    status: GroupStatus = GroupStatus.PENDING
    forms: dict[str, int] = field(default_factory=dict)
    obs: dict[str, Observation] = field(default_factory=dict)
    causes: dict[Cause, int] = field(default_factory=dict)


def status_of(correct: int, incorrect: int, forms_judged: int, group_forms: int) -> GroupStatus:
    """The GRAMMAR tag from counts; see the module docstring for error/undecided and pending."""
    if forms_judged < group_forms or (correct == 0 and incorrect == 0):
        return GroupStatus.PENDING
    if incorrect == 0:
        return GroupStatus.ROBUST
    if correct == 0:
        return GroupStatus.GAP
    return GroupStatus.NON_ROBUST


def retrieval_sufficient(obs: Observation, correct_contexts: set[frozenset[str]]) -> bool | None:
    """Whether the retrieval gave ``obs`` sufficient context; ``None`` when it cannot be judged.

    In order: the judgement given with the observation (imported GRAMMAR results); ground-truth
    document ids — sufficient when every relevant document was retrieved (relevant ⊆ retrieved:
    the paper's question is whether the context is *sufficient*, and a top-k retriever always
    brings extra documents, so set equality as in the authors' tool would blame retrieval for
    every k > |relevant|, while mere overlap would call half of a two-document answer sufficient);
    otherwise context comparison (§4.3): a correct example had sufficient context, and a wrong one
    had it when its retrieved ids equal (as a set) those of a correctly answered form of the same
    semantic group. An empty retrieved set never matches — no ids, no evidence. Errors and
    undecided verdicts have no retrieval judgement.
    """
    if obs.verdict is Verdict.ERROR or obs.verdict is Verdict.UNDECIDED:
        return None
    if obs.retrieval_ok is not None:
        return obs.retrieval_ok
    if obs.relevant_doc_ids:
        return set(obs.relevant_doc_ids) <= set(obs.retrieved_ids)
    if obs.verdict is Verdict.CORRECT:
        return True
    return bool(obs.retrieved_ids) and frozenset(obs.retrieved_ids) in correct_contexts


def cause_of(obs: Observation, status: GroupStatus, retrieval_ok: bool | None) -> Cause | None:
    """Failure attribution of one example; ``None`` for a correct one.

    error → target error; undecided → undecided; a response matching an earlier answer version
    (the source database changed, the RAG's knowledge did not) → stale; a wrong example in a gap
    group → gap (the knowledge base lacks the fact); in a pending group → pending (it may yet
    turn out to be a gap); otherwise insufficient retrieval → retrieval, sufficient → LM.
    Callers pass the status from :func:`attribution_status`, so a group that is a gap in one
    cohort only is not blamed on the knowledge base.
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
    if status is GroupStatus.PENDING:
        return Cause.PENDING
    return Cause.RETRIEVAL if not retrieval_ok else Cause.LM


def attribution_status(status: GroupStatus, answered_in_another_cohort: bool) -> GroupStatus:
    """The status attribution works from: a *cohort gap* — every form of this cohort wrong while
    a form of another cohort of the same semantic group was answered correctly — is no knowledge
    gap (the fact is in the knowledge base, the target just cannot reach it in this form), so its
    failures are judged like those of a non-robust group: retrieval or LM. This is the authors'
    rule that gap groups are identified "by considering both hypothesis and counter-hypothesis
    clusters" (mutual gap groups), applied to attribution; the per-cohort status, and with it
    Acc_db, R and λ, stays exactly GRAMMAR's."""
    if status is GroupStatus.GAP and answered_in_another_cohort:
        return GroupStatus.NON_ROBUST
    return status


_CORRECT = Verdict.CORRECT
_INCORRECT = Verdict.INCORRECT
_ERROR = Verdict.ERROR
_PENDING = GroupStatus.PENDING
_ROBUST = GroupStatus.ROBUST
_GAP = GroupStatus.GAP
_NON_ROBUST = GroupStatus.NON_ROBUST


class Tagger:
    """Incremental, idempotent GRAMMAR tagging of a stream of judged observations.

    ``apply`` returns False for a duplicate ``probe_id`` (a redelivered judgement) and for an
    observation that falls outside the window (a late judgement of an evicted run or of a time
    already past), so the caller can skip persisting it. Not thread-safe: one tagger per
    analytics instance, fed by its consumer loop; the instance owns the semantic groups of its
    partitions (key = group_id) and drops them with :meth:`discard_group` on revocation.
    """

    def __init__(self, window: Window | None = None) -> None:
        self._window = window if window is not None and (window.runs or window.seconds) else None
        self._tallies: dict[GroupKey, _Tally] = {}
        self._live: dict[str, Observation] = {}
        self._status_counts: dict[tuple[str, str, GroupStatus], int] = {}
        self._verdict_counts: dict[str, dict[Verdict, int]] = {}
        self._scenario_counts: dict[tuple[str, str], dict[Verdict, int]] = {}
        self._cohorts_of: dict[tuple[str, str], set[str]] = {}
        self._dirty: set[GroupKey] = set()
        self._cause_counts: dict[tuple[str, str, Cause], int] = {}
        self._sums: dict[tuple[str, str], _CohortSums] = {}
        # window bookkeeping
        self._runs: dict[str, OrderedDict[str, list[str]]] = {}
        self._evicted_runs: dict[str, set[str]] = {}
        self._arrivals: deque[Observation] = deque()
        self._latest_at = float("-inf")

    # ------------------------------------------------------------------ ingest
    def apply(self, obs: Observation) -> bool:
        """Count one judged observation; O(1), amortised over window evictions."""
        # Hot path (≥ 100k/s): locals, no helper calls unless the status changes.
        pid = obs.probe_id
        live = self._live
        if pid in live:
            return False
        if self._window is not None and not self._admit(obs):
            return False
        target = obs.target
        key = (target, obs.cohort, obs.group_id)
        t = self._tallies.get(key)
        if t is None:
            t = self._open(key, obs)
        live[pid] = obs
        t.obs[pid] = obs
        sums = t.sums
        v = obs.verdict
        if v is _CORRECT:
            t.correct += 1
            sums.correct += 1
        elif v is _INCORRECT:
            t.incorrect += 1
            sums.incorrect += 1
        elif v is _ERROR:
            t.error += 1
            sums.error += 1
        else:
            t.undecided += 1
            sums.undecided += 1
        forms = t.forms
        fid = obs.form_id
        forms[fid] = forms.get(fid, 0) + 1
        n_forms = t.group_forms = obs.group_forms  # the latest probe knows the group's size
        vc = self._verdict_counts.get(target)
        if vc is None:
            vc = self._verdict_counts[target] = dict.fromkeys(Verdict, 0)
        vc[v] += 1
        if obs.scenario != FACTUAL:
            self._count_scenario(obs, 1)
        c, i = t.correct, t.incorrect
        if len(forms) < n_forms or not (c or i):
            new = _PENDING
        elif not i:
            new = _ROBUST
        elif not c:
            new = _GAP
        else:
            new = _NON_ROBUST
        old = t.status
        if old is _GAP or new is _GAP:
            ex = c + i
            before = ex - 1 if (v is _CORRECT or v is _INCORRECT) else ex
            sums.gap_examples += (ex if new is _GAP else 0) - (before if old is _GAP else 0)
        if new is not old:
            self._move(key, t, new)
        self._dirty.add(key)
        return True

    def _open(self, key: GroupKey, obs: Observation) -> _Tally:
        ck = (key[0], key[1])
        sums = self._sums.get(ck)
        if sums is None:
            sums = self._sums[ck] = _CohortSums()
        t = self._tallies[key] = _Tally(obs.dataset_id, obs.scenario, obs.group_forms, sums)
        sc = (key[0], key[1], GroupStatus.PENDING)
        self._status_counts[sc] = self._status_counts.get(sc, 0) + 1
        gk = (key[0], key[2])
        cohorts = self._cohorts_of.get(gk)
        if cohorts is None:
            self._cohorts_of[gk] = {key[1]}
        else:
            cohorts.add(key[1])
        return t

    def discard_group(self, target: str | None, group_id: str) -> int:
        """Forget a semantic group (every cohort; every target when ``target`` is None), e.g.
        when its partition moves to another instance. Returns how many observations went."""
        keys = [gk for gk in self._cohorts_of if gk[1] == group_id and target in (None, gk[0])]
        n = 0
        for t, g in keys:
            for tally in self._group_tallies((t, g)):
                for o in list(tally.obs.values()):
                    self._remove(o)
                    n += 1
        return n

    def apply_many(self, observations: Iterable[Observation]) -> int:
        """Apply each; returns how many were new."""
        apply = self.apply
        return sum(1 for o in observations if apply(o))

    def expire(self, now: float) -> int:
        """Evict by wall-clock time (a time window advances even when no judgement arrives)."""
        if self._window is None or self._window.seconds is None:
            return 0
        self._latest_at = max(self._latest_at, now)
        return self._evict_before(self._latest_at - self._window.seconds)

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
        for key, t in self._tallies.items():
            if (
                (target is None or key[0] == target)
                and (cohort is None or key[1] == cohort)
                and (status is None or t.status is status)
            ):
                yield _snapshot(key, t)

    def status_counts(self) -> dict[tuple[str, str, GroupStatus], int]:
        """Groups per (target, cohort, status); maintained incrementally, so this is a copy only."""
        return {k: n for k, n in self._status_counts.items() if n}

    def cohort_numbers(self) -> dict[tuple[str, str], dict[str, float | int | None]]:
        """GRAMMAR's numbers per (target, cohort) from running sums — O(cohorts), for /metrics.

        examples, correct, errors, groups (tagged, pending excluded), gap_groups, gap_examples,
        accuracy, acc_db (eq. 1), refined_accuracy R (eq. 2), lambda (eq. 3); ``None`` when a
        denominator is 0. The same definitions as the report's per-cohort numbers.
        """
        out: dict[tuple[str, str], dict[str, float | int | None]] = {}
        status = self._status_counts
        for (target, cohort), s in self._sums.items():
            gaps = status.get((target, cohort, _GAP), 0)
            groups = (
                gaps
                + status.get((target, cohort, _ROBUST), 0)
                + status.get((target, cohort, _NON_ROBUST), 0)
            )
            pending = status.get((target, cohort, _PENDING), 0)
            if not groups and not pending:
                continue
            examples = s.correct + s.incorrect
            refined = examples - s.gap_examples
            out[(target, cohort)] = {
                "examples": examples,
                "correct": s.correct,
                "errors": s.error,
                "undecided": s.undecided,
                "groups": groups,
                "gap_groups": gaps,
                "pending_groups": pending,
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
        return {(target, v): n for target, vc in counts.items() for v, n in vc.items() if n}

    def scenario_counts(self) -> dict[tuple[str, str], dict[Verdict, int]]:
        """Judgements in the window per (target, RAGProbe scenario), by verdict; GRAMMAR's
        factual probes are not in it. Kept as verdicts arrive and leave, so this is a copy of
        O(targets × scenarios) counters — what /metrics reads."""
        return {k: dict(c) for k, c in self._scenario_counts.items() if any(c.values())}

    def cause_counts(self, *, refresh: bool = True) -> dict[tuple[str, str, Cause], int]:
        """Failure attribution per (target, cohort, cause).

        Context comparison looks across a group's forms and cohorts, so attribution is
        recomputed lazily for the groups touched since the last refresh (~15 µs per semantic
        group). With ``refresh=False`` this is a copy of the maintained counts — what an exporter
        should read, while the consumer loop calls :meth:`refresh_causes` with a budget after
        each batch, so a scrape never pays for a burst of judgements.
        """
        if refresh:
            self.refresh_causes()
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
        """Every observation in the window, in arrival order."""
        return iter(self._live.values())

    def group_observations(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        t = self._tallies.get((target, cohort, group_id))
        return [] if t is None else list(t.obs.values())

    def knowledge_gaps(self, target: str) -> set[str]:
        """Semantic groups of ``target`` the knowledge base lacks: a gap in at least one cohort,
        no correct answer in any cohort, no cohort still pending. O(groups), for reports."""
        out: set[str] = set()
        for (t, group_id), cohorts in self._cohorts_of.items():
            if t != target:
                continue
            statuses = [self._tallies[(t, c, group_id)].status for c in cohorts]
            if all(s is GroupStatus.GAP for s in statuses):
                out.add(group_id)
        return out

    def answered_anywhere(self, target: str, group_id: str) -> bool:
        """Whether any cohort of the semantic group has a correct verdict in the window."""
        return any(t.correct for t in self._group_tallies((target, group_id)))

    def retrieval_judgements(self, target: str, group_id: str) -> dict[str, bool | None]:
        """probe_id → retrieval sufficiency for every observation of a semantic group (all
        cohorts of ``target``), by :func:`retrieval_sufficient`."""
        tallies = self._group_tallies((target, group_id))
        contexts = _correct_contexts(tallies)
        return {
            o.probe_id: retrieval_sufficient(o, contexts) for t in tallies for o in t.obs.values()
        }

    def targets(self) -> list[str]:
        return sorted({k[0] for k in self._tallies})

    def cohorts(self, target: str | None = None) -> list[str]:
        return sorted({k[1] for k in self._tallies if target is None or k[0] == target})

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, probe_id: object) -> bool:
        return probe_id in self._live

    # ------------------------------------------------------------------ internals
    def _restatus(self, key: GroupKey, t: _Tally) -> None:
        new = status_of(t.correct, t.incorrect, len(t.forms), t.group_forms)
        if new is not t.status:
            self._move(key, t, new)

    def _count_scenario(self, obs: Observation, delta: int) -> None:
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

    def _admit(self, obs: Observation) -> bool:
        window = self._window
        assert window is not None
        if window.seconds is not None:
            cutoff = self._latest_at - window.seconds
            if obs.at < cutoff:
                return False
            if obs.at > self._latest_at:
                self._latest_at = obs.at
                self._evict_before(obs.at - window.seconds)
            self._arrivals.append(obs)
        if window.runs is not None:
            runs = self._runs.setdefault(obs.target, OrderedDict())
            members = runs.get(obs.run_id)
            if members is None:
                evicted = self._evicted_runs.setdefault(obs.target, set())
                if obs.run_id in evicted:
                    return False
                members = runs[obs.run_id] = []
                while len(runs) > window.runs:
                    old_run, old_members = runs.popitem(last=False)
                    evicted.add(old_run)
                    for pid in old_members:
                        gone = self._live.get(pid)
                        if gone is not None:
                            self._remove(gone)
            members.append(obs.probe_id)
        return True

    def _evict_before(self, cutoff: float) -> int:
        arrivals = self._arrivals
        n = 0
        while arrivals and arrivals[0].at < cutoff:
            o = arrivals.popleft()
            if self._live.get(o.probe_id) is o:
                self._remove(o)
                n += 1
        return n

    def _remove(self, obs: Observation) -> None:
        del self._live[obs.probe_id]
        key = (obs.target, obs.cohort, obs.group_id)
        t = self._tallies[key]
        del t.obs[obs.probe_id]
        sums = t.sums
        was_gap = t.status is _GAP
        ex_before = t.correct + t.incorrect
        v = obs.verdict
        if v is _CORRECT:
            t.correct -= 1
            sums.correct -= 1
        elif v is _INCORRECT:
            t.incorrect -= 1
            sums.incorrect -= 1
        elif v is _ERROR:
            t.error -= 1
            sums.error -= 1
        else:
            t.undecided -= 1
            sums.undecided -= 1
        left = t.forms[obs.form_id] - 1
        if left:
            t.forms[obs.form_id] = left
        else:
            del t.forms[obs.form_id]
        self._verdict_counts[obs.target][v] -= 1
        if obs.scenario != FACTUAL:
            self._count_scenario(obs, -1)
        gk = (obs.target, obs.group_id)
        self._dirty.add(key)
        if was_gap:
            sums.gap_examples -= ex_before
        if t.obs:
            self._restatus(key, t)
            if t.status is _GAP:
                sums.gap_examples += t.correct + t.incorrect
            return
        # the group left the window entirely: forget it (and its attribution)
        self._status_counts[(key[0], key[1], t.status)] -= 1
        for cause, n in t.causes.items():
            self._cause_counts[(key[0], key[1], cause)] -= n
        del self._tallies[key]
        cohorts = self._cohorts_of[gk]
        cohorts.discard(obs.cohort)
        if not cohorts:
            del self._cohorts_of[gk]

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
        for cohort, t in tallies:
            status = attribution_status(t.status, answered)
            if status is GroupStatus.NON_ROBUST:
                # only here does a wrong example need its retrieval judged
                if contexts is None:
                    contexts = _correct_contexts(tt for _, tt in tallies)
                fresh: dict[Cause, int] = {}
                for o in t.obs.values():
                    cause = cause_of(o, status, retrieval_sufficient(o, contexts))
                    if cause is not None:
                        fresh[cause] = fresh.get(cause, 0) + 1
            else:
                # every wrong example of a gap / pending group shares one cause; robust has none
                fresh = {}
                if t.incorrect and status is not GroupStatus.ROBUST:
                    fresh[Cause.GAP if status is GroupStatus.GAP else Cause.PENDING] = t.incorrect
                if t.error:
                    fresh[Cause.TARGET_ERROR] = t.error
                if t.undecided:
                    fresh[Cause.UNDECIDED] = t.undecided
            old = t.causes
            if old == fresh:
                continue
            for cause, n in old.items():
                counts[(target, cohort, cause)] -= n
            for cause, n in fresh.items():
                ck = (target, cohort, cause)
                counts[ck] = counts.get(ck, 0) + n
            t.causes = fresh


def _correct_contexts(tallies: Iterable[_Tally]) -> set[frozenset[str]]:
    """Retrieved-id sets of the correctly answered forms of one semantic group, across cohorts:
    any semantically identical, correctly answered form is evidence that a context suffices."""
    return {
        frozenset(o.retrieved_ids)
        for t in tallies
        if t.correct
        for o in t.obs.values()
        if o.verdict is _CORRECT and o.retrieved_ids
    }


def _snapshot(key: GroupKey, t: _Tally) -> GroupTally:
    return GroupTally(
        target=key[0],
        cohort=key[1],
        group_id=key[2],
        dataset_id=t.dataset_id,
        scenario=t.scenario,
        group_forms=t.group_forms,
        forms_judged=len(t.forms),
        correct=t.correct,
        incorrect=t.incorrect,
        error=t.error,
        undecided=t.undecided,
        status=t.status,
    )
