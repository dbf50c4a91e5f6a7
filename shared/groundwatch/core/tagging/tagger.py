"""Live group tagging (GRAMMAR-Eval §4.3) over the cycles of a monitoring series.

A monitoring series probes the same semantic groups again and again: each **cycle** asks every
sampled group in all its text forms. The tagger keeps, per (target, cohort, semantic group), the
observations of the group's own last ``W`` *closed cycles with answers* (``Window(runs=W)``;
``None`` pools every cycle, as a batch report does) plus the cycle still filling, and from them
the group's status, by the evidence rules of :mod:`groundwatch.core.evidence` (the one place
they are written):

* **gap** — enough forms of the latest cycle with answers decided, every decided one wrong (the
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

Errors (the target did not answer) and undecided verdicts never count as wrong, nor as evidence. A
closed cycle in which the target answered none of the group's forms — an outage: every form a target
error — does not advance the group's window: the group keeps the status (and the numbers) of its
last cycle with answers, marked **held** (``GroupTally.held``, ``evidence_cycle``), so an endpoint
that is down does not erase the gap list, nor resolve and re-fire the alerts that read it; the
outage is the target's health signal, not news about its knowledge. A cycle in which the target
answered and the judge decided too little is no outage: it stands, and the group is **unknown** (its
transition keeps the last conclusive status: "unknown since cycle N, was robust"), because an
endpoint that answers unrelated sentences is how a silently broken one shows (the undecided share of
its answers is a signal of its own: ``target_health``). A group whose decided forms are all right
but some form erred is robust *and partial* (``coverage`` < 1). A status change between cycles is a
**transition** (robust → gap is a regression, gap → robust a recovery; judged from the last
conclusive status, so robust → unknown → gap is a regression too), kept in order for the store, the
metrics and the report.

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

import functools
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from groundwatch.core.evidence import DECIDED_STATUSES, DEFAULT_EVIDENCE, EvidenceRule, GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.tagging.attribution import (
    attribution_status,
    cause_of,
    correct_answer_contexts,
    retrieval_sufficient,
)
from groundwatch.core.tagging.cold import ColdTally
from groundwatch.core.tagging.counts import ClosedDomain, CohortSums, count_verdicts
from groundwatch.core.tagging.overrides import Override, override
from groundwatch.core.tagging.reads import TallyReads, arrival_order
from groundwatch.core.tagging.status import flaky_forms, form_is_flaky
from groundwatch.core.tagging.values import (
    FACTUAL,
    FLAKY_HISTORY,
    RECENT_TRANSITIONS,
    Cause,
    GroupKey,
    GroupTally,
    Observation,
    Transition,
    Window,
)
from groundwatch.core.tagging.windows import Cycle, Tally, history_entry, snapshot_of
from groundwatch.core.window_blobs import MemoryBlobs, WindowBlobs

_CORRECT = Verdict.CORRECT
_INCORRECT = Verdict.INCORRECT
_ERROR = Verdict.ERROR
_UNDECIDED = Verdict.UNDECIDED


def _first_seq(t: Tally | ColdTally) -> int:
    """When the tally's oldest kept cycle began to arrive (the order groups are listed in)."""
    if isinstance(t, ColdTally):
        return t.first_seq
    return min((cy.seq for cy in t.cycles.values()), default=0)


class Tagger(TallyReads):
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
        blobs: WindowBlobs | None = None,
    ) -> None:
        """``open_domain_baseline`` names the LLM-only target whose correctly answered groups
        are open-domain (left out of the closed-domain reads); ``evidence`` is how much of a
        group must be decided for gap or robust (:mod:`groundwatch.core.evidence`), the
        window's rule unless given; ``blobs`` keeps the cold tallies' windows
        (:mod:`groundwatch.core.window_blobs`: in the heap unless given)."""
        self._blobs: WindowBlobs = blobs if blobs is not None else MemoryBlobs()
        self._w = window.runs if window is not None else None
        if evidence is None:
            evidence = window.evidence if window is not None else DEFAULT_EVIDENCE
        self.evidence = evidence
        # the rule's verdict per (right, wrong, forms): a few distinct triples, asked per status
        self._cycle_status = functools.lru_cache(maxsize=4096)(evidence.cycle_status)
        # groups per (target, cohort) whose status stands on an older cycle than their newest
        self._held_counts: dict[tuple[str, str], int] = {}
        # target → [newest cycle, probes judged in it, of which answered, of which undecided]:
        # its health right now
        self._health: dict[str, list[int]] = {}
        self.open_domain_baseline = open_domain_baseline
        # group id → baseline tallies (cohorts) with a correct latest verdict
        self._open_domain: dict[str, int] = {}
        self._mutations = 0
        self._closed_cache: tuple[int, ClosedDomain] | None = None
        self._tallies: dict[GroupKey, Tally | ColdTally] = {}
        self._live: dict[str, Observation] = {}
        self._status_counts: dict[tuple[str, str, GroupStatus], int] = {}
        self._verdict_counts: dict[str, dict[Verdict, int]] = {}
        self._scenario_counts: dict[tuple[str, str], dict[Verdict, int]] = {}
        self._dirty: set[GroupKey] = set()
        self._cause_counts: dict[tuple[str, str, Cause], int] = {}
        self._sums: dict[tuple[str, str], CohortSums] = {}
        self._knowledge_gaps: dict[str, set[str]] = {}
        self._pending_transitions: list[Transition] = []
        self._recent: deque[Transition] = deque(maxlen=RECENT_TRANSITIONS)
        self._transition_counts: dict[tuple[str, str, GroupStatus, GroupStatus], int] = {}
        # (target, cohort, regression | recovery | change) → transitions so far
        self._kind_counts: dict[tuple[str, str, str], int] = {}
        # targets that reported retrieved ids at least once: an empty list from them means
        # "nothing retrieved", from any other target "not reported"
        self._id_targets: set[str] = set()
        # a restore derives every group's knowledge gap once, after all its cohorts are back
        self._gaps_deferred = False
        # the read model (groundwatch.core.tagging.view): groups changed or gone since the last
        # published view, which of this tagger's views the next one is made from, and cycles
        # opened so far (the order of the groups' first kept observations)
        self._changed: set[GroupKey] = set()
        self._removed: set[GroupKey] = set()
        # tallies no judgement touches are kept cold (groundwatch.core.tagging.cold,
        # :meth:`make_cold`): the keys of the live ones, those touched since the last call, and
        # how many observations the cold ones hold
        self._hot_keys: set[GroupKey] = set()
        self._touched: set[GroupKey] = set()
        self._cold_observations = 0
        self._publish_token = object()
        self._seq = 0

    @property
    def window(self) -> Window:
        return Window(runs=self._w, evidence=self.evidence)

    @property
    def lineage(self) -> object:
        return self._publish_token

    # ------------------------------------------------------------------ ingest
    def apply(self, obs: Observation) -> bool:
        """Count one judged observation: O(forms × window) for its group at worst; while no
        cycle opens, closes or leaves the window, only the new verdict moves its numbers."""
        t = self._ingest(obs)
        if t is None:
            return False
        self._recompute(t.key, t, obs)
        return True

    def _ingest(self, obs: Observation) -> Tally | None:
        """Put ``obs`` in its group's window (``None``: a repeat, or older than the window);
        the group's numbers and status are re-derived by :meth:`_recompute` after."""
        t = self._admit(obs)
        if t is None:
            return None
        self._live[obs.probe_id] = obs
        self._count_health(obs)
        if obs.scenario == FACTUAL and (vc := self._verdict_counts.get(obs.target)) is not None:
            vc[obs.verdict] += 1  # _count_verdict's common case, without the call
        else:
            self._count_verdict(obs, 1)
        if obs.retrieved_ids and obs.target not in self._id_targets:
            self._id_targets.add(obs.target)
        self._place(t, obs)
        return t

    def _admit(self, obs: Observation) -> Tally | None:
        """The live tally ``obs`` goes into (thawed or opened), or None when it is a repeat or
        older than every cycle the group's window keeps."""
        key = (obs.target, obs.cohort, obs.group_id)
        t = self._tallies.get(key)
        if isinstance(t, ColdTally):
            t = self._thaw(key, t)  # its observations are live again: the repeat test below
        if obs.probe_id in self._live:
            return None
        if t is not None and t.series != obs.series:
            # another series probes the group: its cycles are numbered on their own, so the
            # group starts afresh in it (one live state per group and target; each series'
            # judgements stay in the store for `groups --series` and `diff`); emptying it
            # makes no real transition
            pending, fence = len(self._pending_transitions), t.fence
            self._discard_key(key)
            del self._pending_transitions[pending:]
            self._touched.add(key)
            fresh = self._open(key, obs)
            fresh.fence = fence  # the stored row is this tally's: it is written over it
            return fresh
        self._touched.add(key)
        if t is None:
            return self._open(key, obs)
        if obs.cycle in t.cycles and t.evicted_before is None:
            return t  # another form of a cycle the window holds: the common case, no call
        return None if self._before_window(t, obs.cycle) else t

    def _before_window(self, t: Tally, c: int) -> bool:
        """Whether cycle ``c`` is older than the window of ``t`` keeps: a late verdict of a
        cycle that left it, or of one older than every cycle it holds (never evicts newer)."""
        if t.evicted_before is not None and c < t.evicted_before:
            return True
        if c in t.cycles or not t.cycles or self._w is None:
            return False
        closed = [cc for cc, cy in t.cycles.items() if cy.closed]  # ascending
        return len(closed) >= self._w and c < closed[0] and c < next(reversed(t.cycles))

    def _count_health(self, obs: Observation) -> None:
        """Count ``obs`` in its target's health, which is its newest cycle's alone."""
        c = obs.cycle
        v = obs.verdict
        health = self._health.get(obs.target)
        if health is None or c > health[0]:
            self._health[obs.target] = [c, 1, v is not _ERROR, v is _UNDECIDED]
        elif c == health[0]:
            health[1] += 1
            health[2] += v is not _ERROR
            health[3] += v is _UNDECIDED

    def _place(self, t: Tally, obs: Observation) -> None:
        """Add ``obs`` to its cycle of ``t``, opening the cycle if it is new, closing it once
        every form is in; when a cycle opened or closed, or which cycles count changed (see
        :meth:`_recompute`), the group is reshaped and its window evicts."""
        c = obs.cycle
        cycles = t.cycles
        top = next(reversed(cycles)) if cycles else 0
        if c >= top:
            t.group_forms = obs.group_forms
        cycle = cycles.get(c)
        changed = cycle is None  # only when a cycle opens or closes can one leave the window
        if cycle is None:
            cycle = self._open_cycle(t, c, top)
        had_answers = cycle.answered > 0
        cycle.add(obs)
        if had_answers is not (cycle.answered > 0):
            # a cycle with answers counts for the window, one without (an outage) does not:
            # which cycles count changed as if one had opened or closed
            changed = True
        if not cycle.closed and len(cycle.forms) >= t.group_forms:
            cycle.closed = changed = True
        if changed:
            t.reshaped = True
            if self._w is not None:
                self._evict(t)

    def _open_cycle(self, t: Tally, c: int, top: int) -> Cycle:
        """Open cycle ``c`` of ``t`` (``top``: its newest cycle so far); every older open cycle
        is closed, as complete as it will get now that a newer one has started."""
        cycles = t.cycles
        # a late verdict of an older cycle opens it already closed: a newer one has started
        newer = bool(cycles) and c < top
        cycle = Cycle(c, closed=newer, seq=self._seq)
        self._seq += 1
        for cc, cy in cycles.items():
            if cc < c:
                cy.closed = True
        cycles[c] = cycle
        if newer:  # keep the cycles ascending
            t.cycles = dict(sorted(cycles.items()))
        return cycle

    def override(
        self,
        key: GroupKey,
        probe_id: str,
        verdict: Verdict | None,
        revision: int,
        at: float = 0.0,
    ) -> Override:
        """Count a person's ``verdict`` (None: withdrawn, the judge's counts again) for the
        answer ``probe_id`` of the tally ``key`` instead of the judge's; idempotent by
        ``revision``, which orders one answer's verdicts (:mod:`groundwatch.core.tagging.
        overrides`). ``at``: when it was given (a status change it causes is dated so)."""
        return override(self, key, probe_id, verdict, revision, at)

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
        touched: dict[GroupKey, Tally] = {}
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

    # ------------------------------------------------------------------ cold tallies
    def forget_changes(self) -> None:
        """Drop the groups changed since the last published view: a holder that publishes no
        view after a batch (a batch run, read only once it ends) would otherwise keep a key of
        every group it ever changed. The next :func:`~groundwatch.core.tagging.view.publish`
        must then be made without a previous view (every group)."""
        self._changed = set()
        self._removed = set()
        self._publish_token = object()  # a view published before cannot be evolved any more

    def make_cold(self) -> int:
        """Make the untouched tallies cold (groundwatch.core.tagging.cold): live ones whose cycles
        have all closed, whose attribution is not due, and which no judgement touched since the
        last call; returns how many. The consume loop calls it after each stored batch, so a
        group stays live while its cycle fills and for one batch after, and the tagger's
        memory follows the groups in flight, not every group it has seen. Reads are the same
        before and after (a cold tally reads as a live one); a write thaws it."""
        touched, self._touched = self._touched, set()
        dirty = self._dirty
        tallies = self._tallies
        n = 0
        for key in [k for k in self._hot_keys if k not in touched and k not in dirty]:
            t = tallies[key]
            if type(t) is Tally and all(cy.closed for cy in t.cycles.values()):
                try:
                    self._freeze(key, t)
                except OSError:
                    # the window store cannot take it (a full disk): this and the rest stay
                    # live, read the same, and are made cold by a later call
                    return n
                except OverflowError:
                    continue  # a number beyond 64 bits (a far-off cycle): this one stays live
                n += 1
        return n

    def _freeze(self, key: GroupKey, t: Tally) -> None:
        cold = ColdTally(key, t, self._blobs)
        live = self._live
        for cy in t.cycles.values():
            for o in cy.observations():
                del live[o.probe_id]
        self._cold_observations += cold.observations
        self._tallies[key] = cold
        self._hot_keys.discard(key)
        # the published view holds the cold tally itself from now on (it never changes)
        self._changed.add(key)

    def _thaw(self, key: GroupKey, cold: ColdTally) -> Tally:
        t = cold.thaw(self._sums[(key[0], key[1])])
        live = self._live
        for cy in t.cycles.values():
            for o in cy.observations():
                live[o.probe_id] = o
        self._cold_observations -= cold.observations
        self._tallies[key] = t
        self._hot_keys.add(key)
        self._touched.add(key)
        return t

    def _live_tally(self, key: GroupKey) -> Tally:
        """The group's tally, live (thawed if it was cold), to be changed."""
        t = self._tallies[key]
        return self._thaw(key, t) if isinstance(t, ColdTally) else t

    def _open(self, key: GroupKey, obs: Observation) -> Tally:
        ck = (key[0], key[1])
        sums = self._sums.get(ck)
        if sums is None:
            sums = self._sums[ck] = CohortSums()
        t = self._tallies[key] = Tally(
            key, obs.dataset_id, obs.scenario, obs.group_forms, obs.series, sums
        )
        self._hot_keys.add(key)
        sc = (key[0], key[1], GroupStatus.PENDING)
        self._status_counts[sc] = self._status_counts.get(sc, 0) + 1
        return t

    def _evict(self, t: Tally) -> None:
        """Keep the last W closed cycles *with answers* and any open one newer than them (run
        when a cycle opened, closed, or gained or lost its answers). A closed cycle without
        answers (every form a target error) never pushes one with answers out, so an outage of
        any length keeps the group's last answered cycles; of those empty cycles
        only the newest is kept (what the group's last probe showed), so an outage of any length
        costs one cycle of memory."""
        if self._w is None:
            return
        cycles = t.cycles
        closed = [(c, cy) for c, cy in cycles.items() if cy.closed]  # ascending
        answered = [c for c, cy in closed if cy.answered]
        if len(answered) > self._w:
            oldest_kept = answered[-self._w]
            for c, _ in closed:
                if c >= oldest_kept:
                    break
                self._drop(t, c)
                t.evicted_before = max(t.evicted_before or 0, c + 1)
        empty = [c for c, cy in closed if c in cycles and not cy.answered]
        for c in empty[:-1]:
            # no evidence and not the newest: nothing counts on it (a late verdict of it opens
            # it again, already closed)
            self._drop(t, c)

    def _drop(self, t: Tally, c: int) -> None:
        for o in t.cycles.pop(c).observations():
            del self._live[o.probe_id]
            self._count_verdict(o, -1)

    def _recompute(
        self, key: GroupKey, t: Tally, obs: Observation | None, *, at: float = 0.0
    ) -> None:
        """Re-derive the group's window numbers and status, and move the running sums by the
        difference (a group has a handful of forms and W cycles: cheap). After :meth:`apply`,
        when no cycle opened, closed or left, only the new verdict is accounted for. ``at``:
        when a change without a new observation (a person's verdict) happened."""
        old_status: GroupStatus = t.status
        before = (t.correct, t.incorrect, t.error, t.undecided, len(t.latest), len(t.flaky))
        # Since the last recompute only ``obs`` arrived: if no cycle opened, closed or left on
        # the way, the counted cycles are the same ones, and the window's numbers move by this
        # one verdict instead of being re-derived.
        cycle = t.cycles[obs.cycle] if obs is not None and not t.reshaped else None
        t.reshaped = False
        closed = self._count_window(t, obs, cycle, old_status)
        old_flaky = t.flaky
        self._refresh_flaky(t, obs)
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
            new_status, last_closed = self._closed_status(key, t, closed)
        self._move_sums(t, before, old_status, new_status)
        if new_status is not old_status:
            self._status_moved(key, t, obs, old_status, new_status, last_closed, old_flaky, at)
        elif (t.correct > 0) is not (before[0] > 0) and not self._gaps_deferred:
            # a right answer in a cohort of too little evidence refutes a knowledge gap too
            self._update_knowledge_gap(key[0], key[2])
        t.last_closed = last_closed
        self._dirty.add(key)
        self._changed.add(key)
        self._mutations += 1
        if key[0] == self.open_domain_baseline:
            self._flag_open_domain(key, t)

    @staticmethod
    def _count_window(
        t: Tally, obs: Observation | None, cycle: Cycle | None, old_status: GroupStatus
    ) -> list[Cycle] | None:
        """The window's latest verdict per form and its numbers, into ``t``: moved by ``obs``
        alone when it joined the last counted ``cycle``, unchanged when it joined a cycle still
        filling, re-derived otherwise. Returns the closed cycles when it listed them."""
        if cycle is not None and cycle is t.counted_last:
            assert obs is not None  # for mypy: ``cycle`` implies it
            form = obs.form_id
            prev = t.latest.get(form)
            # a new map, never this one changed: the published view shares it (tagging.view),
            # and a new form keeps its place after the others, a repeated one its own place —
            # as with a full re-derivation
            t.latest = {**t.latest, form: obs}
            if prev is not None:
                v = prev.verdict
                if v is _CORRECT:
                    t.correct -= 1
                elif v is _INCORRECT:
                    t.incorrect -= 1
                elif v is _ERROR:
                    t.error -= 1
                else:
                    t.undecided -= 1
            v = obs.verdict
            if v is _CORRECT:
                t.correct += 1
            elif v is _INCORRECT:
                t.incorrect += 1
            elif v is _ERROR:
                t.error += 1
            else:
                t.undecided += 1
            return None
        if cycle is not None and not cycle.closed and old_status is not GroupStatus.PENDING:
            # a verdict of a cycle still filling while closed ones (not pending) count: nothing
            # counted moved
            return None
        # What counts is what the status stands on: each form's latest verdict in the closed
        # cycles (a cycle still filling joins when it closes); before any cycle closed, the
        # open one, so a pending group still shows what it has.
        closed = [cy for cy in t.cycles.values() if cy.closed]
        # a closed cycle without answers counts only while no cycle has any (it is then what
        # the group's forms last did): an outage must not replace the window's numbers
        answered = [cy for cy in closed if cy.answered]
        counted = answered or closed[-1:] or list(t.cycles.values())
        t.counted_last = counted[-1] if counted else None
        if len(counted) == 1:
            latest = counted[0].forms.copy()
        else:
            latest = {}
            for cy in counted:
                latest.update(cy.forms)  # a later cycle's verdict of a form replaces it
        t.latest = latest
        t.correct, t.incorrect, t.error, t.undecided = count_verdicts(latest.values())
        return closed

    def _refresh_flaky(self, t: Tally, obs: Observation | None) -> None:
        """The group's flaky forms after ``obs`` (all of them again after a rebuild or a dropped
        partition, when every form's history may differ)."""
        if obs is None:
            t.flaky = flaky_forms(t.history)
        elif obs.verdict is _CORRECT or obs.verdict is _INCORRECT:
            # only this form's history moved, so only its flakiness can change
            form = obs.form_id
            h = self._remember(t, obs)
            if (len(h) > 2 and form_is_flaky(h)) is not (form in t.flaky):
                t.flaky = t.flaky ^ {form}

    def _closed_status(
        self, key: GroupKey, t: Tally, closed: list[Cycle] | None
    ) -> tuple[GroupStatus, int | None]:
        """The status the closed cycles give and the last one it stands on; the group is held
        (and counted so) when a newer cycle closed without deciding it."""
        if closed is None:
            closed = [cy for cy in t.cycles.values() if cy.closed]
        new_status, last_closed = self._status(t, closed)
        held = bool(closed) and last_closed is not None and closed[-1].cycle > last_closed
        if held is not t.held:
            t.held = held
            ck = (key[0], key[1])
            self._held_counts[ck] = self._held_counts.get(ck, 0) + (1 if held else -1)
        return new_status, last_closed

    @staticmethod
    def _move_sums(
        t: Tally,
        before: tuple[int, int, int, int, int, int],
        old_status: GroupStatus,
        new_status: GroupStatus,
    ) -> None:
        """The cohort's running sums: the group's old contribution out, its new one in."""
        o_correct, o_incorrect, o_error, o_undecided, o_probed, o_flaky = before
        correct, incorrect = t.correct, t.incorrect
        s = t.sums
        s.probed += len(t.latest) - o_probed
        s.decided += (correct + incorrect) - (o_correct + o_incorrect)
        s.error += t.error - o_error
        s.undecided += t.undecided - o_undecided
        s.flaky_forms += len(t.flaky) - o_flaky
        if new_status is not old_status or correct != o_correct or incorrect != o_incorrect:
            was_decided = old_status in DECIDED_STATUSES
            now_decided = new_status in DECIDED_STATUSES
            s.correct += (correct if now_decided else 0) - (o_correct if was_decided else 0)
            s.incorrect += (incorrect if now_decided else 0) - (o_incorrect if was_decided else 0)
            s.gap_examples += (correct + incorrect if new_status is GroupStatus.GAP else 0) - (
                o_correct + o_incorrect if old_status is GroupStatus.GAP else 0
            )

    def _status_moved(
        self,
        key: GroupKey,
        t: Tally,
        obs: Observation | None,
        old_status: GroupStatus,
        new_status: GroupStatus,
        last_closed: int | None,
        old_flaky: frozenset[str],
        at: float = 0.0,
    ) -> None:
        """A new status: counted, recorded as a transition once the group had one, the
        knowledge gaps re-derived and the last conclusive status kept."""
        self._move(key, t, new_status)
        if old_status is not GroupStatus.PENDING and last_closed is not None:
            # A verdict of a cycle still filling changes the status through the form's
            # flakiness (its flip back): the change is that cycle's, not the last closed one's
            # (robust→non_robust at 3 and non_robust→flaky both read "cycle 3")
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
                obs.at if obs is not None else at,
                None if old_status in DECIDED_STATUSES else t.conclusive,
            )
            self._pending_transitions.append(tr)
            self._recent.append(tr)
            tk = (key[0], key[1], old_status, new_status)
            self._transition_counts[tk] = self._transition_counts.get(tk, 0) + 1
            kk = (key[0], key[1], tr.kind)
            self._kind_counts[kk] = self._kind_counts.get(kk, 0) + 1
        if not self._gaps_deferred:
            self._update_knowledge_gap(key[0], key[2])
        if new_status in DECIDED_STATUSES:
            t.conclusive = new_status

    def _flag_open_domain(self, key: GroupKey, t: Tally) -> None:
        """Whether the open-domain baseline answers the group right, counted per group id."""
        answers = t.correct > 0
        if answers is not t.answers_open_domain:
            t.answers_open_domain = answers
            flagged = self._open_domain.get(key[2], 0) + (1 if answers else -1)
            if flagged:
                self._open_domain[key[2]] = flagged
            else:
                self._open_domain.pop(key[2], None)

    def _remember(self, t: Tally, obs: Observation) -> list[tuple[int, bool, int]]:
        """The form's decided verdict of this cycle in its (bounded) history; returns the
        history. Verdicts mostly arrive in cycle order, so the newest entry is checked first."""
        h = t.history.get(obs.form_id)
        if h is None:
            h = t.history[obs.form_id] = []
        c = obs.cycle
        entry = history_entry(c, obs.verdict is _CORRECT, obs.truth_version)
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

    def _status(self, t: Tally, closed: list[Cycle]) -> tuple[GroupStatus, int | None]:
        """The group's status from its closed cycles (ascending) and its flaky forms, by the
        evidence rules (:mod:`groundwatch.core.evidence`), and the cycle it stands on: a cycle
        in which the target answered no form is skipped, so the status stays that of the newest
        cycle with answers (held); a cycle with answers of which too little was decided stands,
        unknown — an endpoint that answers wrongly in words the judge cannot place is not down."""
        if not closed:
            return GroupStatus.PENDING, None
        mixed = False  # a cycle with a right and a wrong form
        last: Cycle | None = None  # the latest cycle with answers
        for cy in closed:
            if cy.right and cy.wrong:
                mixed = True
            if cy.answered:
                last = cy
        if last is None:
            return GroupStatus.UNKNOWN, closed[-1].cycle
        last_cycle = last.cycle
        if mixed:
            status = GroupStatus.NON_ROBUST  # culprits: the wrong forms of mixed cycles
        else:
            status = (
                self._cycle_status(last.right, last.wrong, t.group_forms) or GroupStatus.UNKNOWN
            )
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

    def _move(self, key: GroupKey, t: Tally, new: GroupStatus) -> None:
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
        for c in self._group_cohorts(target, group_id):
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
        n = sum(self._discard_key(key) for key in keys)
        # a transition the discarded group produced while being emptied is no real one
        self._pending_transitions = [
            tr for tr in self._pending_transitions if tr.group_id != group_id
        ]
        return n

    def _discard_key(self, key: GroupKey) -> int:
        """Forget one tally: its observations, counts and status; how many observations went."""
        t = self._live_tally(key)
        n = 0
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
        self._hot_keys.discard(key)
        self._touched.discard(key)
        self._knowledge_gaps.get(key[0], set()).discard(key[2])
        self._dirty.discard(key)
        self._changed.discard(key)
        self._removed.add(key)
        return n

    # ------------------------------------------------------------------ reads
    def _snap(self, key: GroupKey, t: Tally | ColdTally) -> GroupTally:
        return t.tally if isinstance(t, ColdTally) else snapshot_of(key, t)

    def tally(self, target: str, cohort: str, group_id: str) -> GroupTally | None:
        key = (target, cohort, group_id)
        t = self._tallies.get(key)
        return None if t is None else self._snap(key, t)

    def fence(self, key: GroupKey) -> int | None:
        """The store's fence token the tally was last written or restored with (0: none yet;
        None: no such tally). Kept in the tally, not in a map beside it: a map of every group's
        token (a dict entry and an int) was ~90 bytes a group, 15 MB at 500k probes."""
        t = self._tallies.get(key)
        return None if t is None else t.fence

    def set_fence(self, key: GroupKey, token: int) -> bool:
        """Record the fence token the tally's state was just written (or restored) with;
        False when there is no such tally."""
        t = self._tallies.get(key)
        if t is None:
            return False
        if isinstance(t, ColdTally):
            t.set_fence(token)
        else:
            t.fence = token
        return True

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
        """Every observation in the window (repeats of a form included): group by group, in
        the order the groups' kept cycles began to arrive, each group's oldest cycle first and
        a cycle's observations in arrival order — the order the published view lists them in
        (:class:`~groundwatch.core.tagging.view.TaggerView`), so a report reads the same from
        either, and the same whether a group is live or cold (:meth:`make_cold`): a
        cold group is decoded in its turn, never all of them at once.

        A snapshot of the groups: the report is built in a worker thread while the consume
        loop applies judgements, and iterating the live dict there failed with "dictionary
        changed size during iteration" (a 500 on ``/report.html`` under a continuous ``run``);
        ``list`` copies it in one step under the GIL."""
        groups: list[Any] = list(self._tallies.values())
        order = arrival_order(groups, _first_seq)
        # the live groups' observations listed now (references; a live tally changes), the
        # cold ones decoded when their turn comes (a cold tally never changes)
        for i, t in enumerate(groups):
            if not isinstance(t, ColdTally):
                groups[i] = [o for cy in list(t.cycles.values()) for o in list(cy.observations())]
        return self._observations_by_group(groups, order)

    @staticmethod
    def _observations_by_group(
        groups: list[ColdTally | list[Observation]], order: Iterable[int]
    ) -> Iterator[Observation]:
        for i in order:
            g = groups[i]
            if isinstance(g, ColdTally):
                for cy in g.cycles.values():
                    yield from cy.observations()
            else:
                yield from g

    def group_history(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        """Every observation of the group in the window, oldest cycle first."""
        t = self._tallies.get((target, cohort, group_id))
        if t is None:
            return []
        cycles = list(t.cycles.values())  # a cycle may leave the window meanwhile
        return [o for cy in sorted(cycles, key=lambda cy: cy.cycle) for o in cy.observations()]

    def __len__(self) -> int:
        return len(self._live) + self._cold_observations

    def __contains__(self, probe_id: object) -> bool:
        """Whether a live tally holds the probe's observation (a cold one is not looked
        into: :meth:`apply` is the authority on repeats, and thaws the group to tell)."""
        return probe_id in self._live

    # ------------------------------------------------------------------ attribution
    def _reattribute(self, gk: tuple[str, str]) -> None:
        target, group_id = gk
        cohorts = self._group_cohorts(target, group_id)
        if not cohorts:
            return
        tallies = [(c, self._live_tally((target, c, group_id))) for c in cohorts]
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
                    contexts = correct_answer_contexts(tt for _, tt in tallies)
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
            self._changed.add((target, cohort, group_id))
            self._mutations += 1
