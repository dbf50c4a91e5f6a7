"""A group's window of cycles: each cycle's verdicts as they arrive (:class:`Cycle`), and the
per-(target, cohort, group) record the tagger keeps (:class:`Tally`) — its cycles, its forms'
verdict history, the numbers and status derived from them — with its read-only snapshot
(:func:`snapshot_of`). Which cycles a window keeps is :class:`~groundwatch.core.tagging.Tagger`'s
ingest; what they say is :mod:`groundwatch.core.tagging.status`'s."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.shared_values import shared
from groundwatch.core.tagging.counts import CohortSums
from groundwatch.core.tagging.values import Cause, GroupKey, GroupTally, Observation

#: A form's history entries, one object per distinct value: every form of every group has
#: entries of the same few cycles and versions, and a tuple of three is 64 bytes — up to
#: FLAKY_HISTORY of them per form, for every form of a continuous run.
_ENTRIES: dict[tuple[int, bool, int], tuple[int, bool, int]] = {}

_CORRECT = Verdict.CORRECT
_INCORRECT = Verdict.INCORRECT
_ERROR = Verdict.ERROR
NO_CAUSES: dict[Cause, int] = {}


def history_entry(cycle: int, correct: bool, truth_version: int) -> tuple[int, bool, int]:
    """The shared ``(cycle, correct, truth_version)`` of a form's verdict history."""
    key = (cycle, correct, truth_version)
    return shared(_ENTRIES, key, key)


class Cycle:
    """One cycle of a group: each form's latest observation, every observation in arrival order, and
    how many forms stand right, wrong and answered at all — kept as verdicts arrive, so neither the
    closing test nor the status rescans the observations per judgement. Counts, not sets of forms:
    the wrong forms are listed only when flakiness has to be checked against them (few groups); and
    the arrival list exists only once a form is repeated in the cycle (before, it is ``forms``
    itself): every container a cycle holds is more work for the garbage collector."""

    __slots__ = ("_repeats", "answered", "closed", "cycle", "forms", "right", "seq", "wrong")

    def __init__(self, cycle: int, *, closed: bool = False, seq: int = 0) -> None:
        self.cycle = cycle
        # when it began to arrive, in the tagger's count of cycles opened: the order of the
        # groups' first kept observations (the read model lists groups by it)
        self.seq = seq
        # form → its latest observation here (keys in order of first appearance)
        self.forms: dict[str, Observation] = {}
        # probe id → observation, in arrival order: only once a form came twice
        self._repeats: dict[str, Observation] | None = None
        self.right = 0  # forms whose latest verdict here is correct
        self.wrong = 0  # … incorrect
        # … anything but a target error: the endpoint answered, whatever the judge made of it
        self.answered = 0
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
            if v is not _ERROR:
                self.answered -= 1
        if self._repeats is not None:
            self._repeats[obs.probe_id] = obs
        forms[form] = obs
        v = obs.verdict
        if v is _CORRECT:
            self.right += 1
        elif v is _INCORRECT:
            self.wrong += 1
        if v is not _ERROR:
            self.answered += 1

    def replace(self, old: Observation, new: Observation) -> bool:
        """Put ``new`` (the same answer, another verdict) where ``old`` is, in its place in the
        arrival order; returns whether it is its form's latest here (the one that counts)."""
        form = old.form_id
        if self._repeats is not None:
            self._repeats[old.probe_id] = new
        if self.forms.get(form) is not old:
            return False  # an earlier repeat of the form: it counts for nothing here
        self.forms[form] = new
        for o, d in ((old, -1), (new, 1)):
            v = o.verdict
            if v is _CORRECT:
                self.right += d
            elif v is _INCORRECT:
                self.wrong += d
            if v is not _ERROR:
                self.answered += d
        return True

    def observations(self) -> Iterable[Observation]:
        """Every observation of the cycle (repeats of a form included), in arrival order."""
        return self.forms.values() if self._repeats is None else self._repeats.values()

    def wrong_forms(self) -> Iterator[str]:
        """The forms whose latest verdict here is incorrect."""
        return (f for f, o in self.forms.items() if o.verdict is _INCORRECT)


@dataclass(slots=True)
class Tally:
    key: GroupKey
    dataset_id: str
    scenario: str
    group_forms: int
    series: str
    sums: CohortSums
    # ascending by cycle number (kept so on insertion): the window is read in order without
    # sorting per judgement
    cycles: dict[int, Cycle] = field(default_factory=dict)
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
    causes: dict[Cause, int] = field(default_factory=lambda: NO_CAUSES)
    # the last of the cycles ``latest`` was derived from (see Tagger._recompute)
    counted_last: Cycle | None = None
    last_closed: int | None = None
    # the last conclusive status (see Transition.from_conclusive), for transitions out of unknown
    conclusive: GroupStatus | None = None
    # the status stands on an older cycle than the group's newest closed one (see GroupTally)
    held: bool = False
    evicted_before: int | None = None
    answers_open_domain: bool = False  # a baseline tally with a correct latest verdict
    # the store's fence token of the state last written or restored (0: none known): the write
    # model's bookkeeping for its store, kept here rather than in a map beside every tally
    fence: int = 0


def snapshot_of(key: GroupKey, t: Tally) -> GroupTally:
    return GroupTally(*tally_fields(key, t))


def tally_fields(key: GroupKey, t: Tally) -> tuple[Any, ...]:
    """A :class:`GroupTally`'s fields, in their order: what a snapshot is made of (a tuple is
    a fraction of a frozen dataclass's cost, for the read model's 200k groups at a time)."""
    cycles = t.cycles  # kept ascending: the first and the last are the window's ends
    first = next(iter(cycles), None)
    # a loop, not min() over a generator: a group has a form or three, and a restore's first
    # publish reads 200k groups
    history_from: int | None = None
    for h in t.history.values():
        if h and (history_from is None or h[0][0] < history_from):
            history_from = h[0][0]
    if history_from is None:
        history_from = 0
    return (
        key[0],
        key[1],
        key[2],
        t.dataset_id,
        t.scenario,
        t.group_forms,
        len(t.latest),
        t.correct,
        t.incorrect,
        t.error,
        t.undecided,
        t.status,
        len(t.flaky),
        next(reversed(cycles)) if first is not None else 0,
        first if first is not None else 0,
        min(history_from, first) if first is not None else history_from,
        t.series,
        t.last_closed or 0,
        t.held,
    )
