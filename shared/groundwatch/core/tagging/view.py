"""The read model: an immutable snapshot of the tally state, published by the consume loop after
each batch, read by ``/report``, ``/metrics`` and ``/groups`` in other threads.

One :class:`~groundwatch.core.tagging.Tagger` is the write model, owned by the consume loop
(STYLE.md, point 11). Its readers used to iterate copies of its live dicts ("dictionary changed
size during iteration" was the symptom, a 500 on ``/report.html`` under a continuous run); a
:class:`TaggerView` is never changed after it is published, so a reader sees one consistent
state — every count and every group of the same batch — for as long as it holds the view.

Publishing costs O(groups changed by the batch), not a copy of the state: the groups live in
copy-on-write maps (:class:`CowMap`) whose shards are shared between consecutive views and
copied only where a batch changed something, and each changed group is one new
:class:`GroupView`; the running counts are small (targets × cohorts × statuses) and copied.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from groundwatch.core.evidence import EvidenceRule, GroupStatus
from groundwatch.core.tagging.cold import ColdTally
from groundwatch.core.tagging.counts import ClosedDomain, CohortSums
from groundwatch.core.tagging.reads import TallyReads, arrival_order
from groundwatch.core.tagging.tagger import Tagger
from groundwatch.core.tagging.values import Cause, GroupKey, GroupTally, Observation, Window
from groundwatch.core.tagging.windows import Tally, tally_fields

K = TypeVar("K")
V = TypeVar("V")

#: A value in :meth:`CowMap.evolve`'s changes that removes its key.
REMOVE: Any = object()
_MISSING = object()
#: Shards a map starts with, and how full they get before the map has four times as many.
_SHARDS = 64
_PER_SHARD = 16


class CowMap(Generic[K, V]):
    """An immutable map whose next version shares all but the changed shards with this one.

    A plain dict would be copied whole per batch (O(groups)); a map of sharded dicts copies the
    shards a batch touched and the list of shards (O(changes × shard size + shards)), and reads
    as fast as a dict (a hash, a list index, a dict lookup). The shards grow fourfold as the
    map does (one rehash of everything, amortized over the inserts that filled it)."""

    __slots__ = ("_len", "_mask", "_shards")

    def __init__(self, shards: list[dict[K, V]] | None = None, length: int = 0) -> None:
        self._shards: list[dict[K, V]] = shards if shards is not None else [{}] * _SHARDS
        self._mask = len(self._shards) - 1
        self._len = length

    @classmethod
    def of(cls, items: Iterable[tuple[K, V]]) -> CowMap[K, V]:
        """A map of ``items`` (built in one pass, sized for them)."""
        pairs = list(items)
        n = _SHARDS
        while len(pairs) > n * _PER_SHARD:
            n *= 4
        shards: list[dict[K, V]] = [{} for _ in range(n)]
        mask = n - 1
        for k, v in pairs:
            shards[hash(k) & mask][k] = v
        return cls(shards, sum(len(s) for s in shards))

    def __getitem__(self, key: K) -> V:
        return self._shards[hash(key) & self._mask][key]

    def get(self, key: K, default: Any = None) -> Any:
        return self._shards[hash(key) & self._mask].get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._shards[hash(key) & self._mask]

    def __iter__(self) -> Iterator[K]:
        for shard in self._shards:
            yield from shard

    def __len__(self) -> int:
        return self._len

    def keys(self) -> Iterator[K]:
        return iter(self)

    def values(self) -> Iterator[V]:
        for shard in self._shards:
            yield from shard.values()

    def items(self) -> Iterator[tuple[K, V]]:
        for shard in self._shards:
            yield from shard.items()

    def evolve(self, changes: Mapping[K, V]) -> CowMap[K, V]:
        """The next version: ``changes`` applied (a value :data:`REMOVE` drops its key); this
        one is left as it is."""
        if not changes:
            return self
        shards = list(self._shards)
        mask = self._mask
        copied: set[int] = set()
        n = self._len
        for k, v in changes.items():
            i = hash(k) & mask
            shard = shards[i]
            if i not in copied:
                shard = shards[i] = dict(shard)
                copied.add(i)
            if v is REMOVE:
                if shard.pop(k, _MISSING) is not _MISSING:
                    n -= 1
            else:
                if k not in shard:
                    n += 1
                shard[k] = v
        if n > len(shards) * _PER_SHARD:
            return CowMap.of((k, v) for shard in shards for k, v in shard.items())
        return CowMap(shards, n)


class GroupView:
    """One (target, cohort, group) as published: its snapshot's fields and what the reads need
    of its window, under the names the tagger's record uses (so :class:`TallyReads` reads
    either). Never changed after publishing (a plain class with slots, not a frozen dataclass:
    a full publish makes one per group, and a frozen dataclass's ``__init__`` cost most of it).

    Per group it holds references, not copies: ``latest`` is the tally's own map, which the
    tagger replaces and never changes in place, and the :class:`GroupTally` is made when asked
    for — a view kept one for every group, 184 bytes each for as long as the group lived."""

    __slots__ = ("_fields", "causes", "first_seq", "flaky", "history", "latest")

    def __init__(
        self,
        fields: tuple[Any, ...],
        latest: Mapping[str, Observation],
        history: tuple[Observation, ...],
        flaky: frozenset[str],
        causes: Mapping[Cause, int],
        first_seq: int,
    ) -> None:
        self._fields = fields  # GroupTally's fields, in its order
        #: each form's latest counted observation
        self.latest = latest
        #: every observation in the window, oldest cycle first
        self.history = history
        self.flaky = flaky
        self.causes = causes
        #: when the oldest cycle the window keeps began to arrive (the tagger's count of
        #: cycles opened): the order the tagger's observations list the groups in
        self.first_seq = first_seq

    @property
    def tally(self) -> GroupTally:
        return GroupTally(*self._fields)

    @property
    def status(self) -> GroupStatus:
        return self._fields[11]  # type: ignore[no-any-return]

    @property
    def scenario(self) -> str:
        return self._fields[4]  # type: ignore[no-any-return]

    @property
    def held(self) -> bool:
        return self._fields[18]  # type: ignore[no-any-return]

    @property
    def correct(self) -> int:
        return self._fields[7]  # type: ignore[no-any-return]

    @property
    def incorrect(self) -> int:
        return self._fields[8]  # type: ignore[no-any-return]

    @property
    def error(self) -> int:
        return self._fields[9]  # type: ignore[no-any-return]

    @property
    def undecided(self) -> int:
        return self._fields[10]  # type: ignore[no-any-return]


class TaggerView(TallyReads):
    """The tally state as of one batch: every read of the tagger, none of its writes. Made by
    :func:`publish`; never changed after (a reader may hold it across any number of batches)."""

    def __init__(
        self,
        source: object,
        window: Window,
        open_domain_baseline: str | None,
        tallies: CowMap[GroupKey, GroupView | ColdTally],
        knowledge_gaps: dict[str, CowMap[str, bool]],
        open_domain: CowMap[str, int],
        tagger: Tagger,
        size: int,
    ) -> None:
        self._source = source
        self._window = window
        self.open_domain_baseline = open_domain_baseline
        self._tallies = tallies
        self._knowledge_gaps = knowledge_gaps
        self._open_domain = open_domain
        self._size = size
        # the running counts: small (targets × cohorts × statuses), copied
        self._status_counts = dict(tagger._status_counts)
        self._held_counts = dict(tagger._held_counts)
        self._health = {t: list(h) for t, h in tagger._health.items()}
        self._sums = {k: _copy_sums(s) for k, s in tagger._sums.items()}
        self._verdict_counts = {t: dict(c) for t, c in tagger._verdict_counts.items()}
        self._scenario_counts = {k: dict(c) for k, c in tagger._scenario_counts.items()}
        self._cause_counts = dict(tagger._cause_counts)
        self._transition_counts = dict(tagger._transition_counts)
        self._kind_counts = dict(tagger._kind_counts)
        self._recent: tuple[Any, ...] = tuple(tagger._recent)
        self._id_targets = frozenset(tagger._id_targets)
        self._mutations = 0
        self._closed_cache: tuple[int, ClosedDomain] | None = None

    @property
    def window(self) -> Window:
        return self._window

    @property
    def lineage(self) -> object:
        return self._source

    @property
    def evidence(self) -> EvidenceRule:
        return self._window.evidence

    def _snap(self, key: GroupKey, t: GroupView | ColdTally) -> GroupTally:
        return t.tally

    def _entries(self) -> Iterable[tuple[GroupKey, GroupView | ColdTally]]:
        # never changed after publishing: iterated as it is, not copied (a list of 166k pairs
        # at 500k probes was 10 MB at the report's peak, twice)
        tallies: CowMap[GroupKey, GroupView | ColdTally] = self._tallies
        return tallies.items()

    def tally(self, target: str, cohort: str, group_id: str) -> GroupTally | None:
        g = self._tallies.get((target, cohort, group_id))
        return None if g is None else g.tally

    def refresh_causes(self, max_groups: int | None = None) -> int:
        """Nothing to do: the consume loop refreshes attribution and publishes it."""
        return 0

    def observations(self) -> Iterator[Observation]:
        """Every observation in the window (repeats of a form included): group by group, in
        the order the groups' kept observations first arrived (as the tagger lists them), each
        group's oldest cycle first."""
        groups = list(self._tallies.values())
        for i in arrival_order(groups, _first_seq):
            yield from groups[i].history

    def group_history(self, target: str, cohort: str, group_id: str) -> list[Observation]:
        """Every observation of the group in the window, oldest cycle first."""
        g = self._tallies.get((target, cohort, group_id))
        return [] if g is None else list(g.history)

    def __len__(self) -> int:
        return self._size


def _first_seq(g: GroupView | ColdTally) -> int:
    return g.first_seq


def _copy_sums(s: CohortSums) -> CohortSums:
    return CohortSums(
        s.correct,
        s.incorrect,
        s.gap_examples,
        s.probed,
        s.decided,
        s.error,
        s.undecided,
        s.flaky_forms,
    )


def _group_view(key: GroupKey, t: Tally | ColdTally) -> GroupView | ColdTally:
    if isinstance(t, ColdTally):
        return t  # a cold tally never changes: it is its own published entry
    cycles = t.cycles  # ascending
    if len(cycles) == 1:  # the common case, without the generators
        (cy,) = cycles.values()
        history = tuple(cy.observations())
        seq = cy.seq
    else:
        history = tuple(o for cy in cycles.values() for o in cy.observations())
        seq = min((cy.seq for cy in cycles.values()), default=0)
    # ``latest`` shared, not copied: the tagger gives a tally a new map whenever its latest
    # verdicts change (Tagger._recompute), so the one published stays as it was
    return GroupView(tally_fields(key, t), t.latest, history, t.flaky, t.causes, seq)


def publish(tagger: Tagger, previous: TaggerView | None = None) -> TaggerView:
    """The tagger's state as an immutable view, made from ``previous`` (the view it published
    last) and the groups changed since: O(changed groups). Without a previous view of this
    tagger, every group is published (once, after a restore)."""
    baseline = tagger.open_domain_baseline
    if previous is None or previous._source is not tagger._publish_token:
        # everything, each map built in one pass (after a restore: 200k groups)
        groups: CowMap[GroupKey, GroupView | ColdTally] = CowMap.of(
            (key, _group_view(key, t)) for key, t in tagger._tallies.items()
        )
        gaps = {
            target: CowMap.of((gid, True) for gid in gids)
            for target, gids in tagger._knowledge_gaps.items()
        }
        open_domain = CowMap.of((gid, n) for gid, n in tagger._open_domain.items() if n)
    else:
        groups, gaps, open_domain = _changes(tagger, previous)
    view = TaggerView(
        tagger._publish_token,
        tagger.window,
        baseline,
        groups,
        gaps,
        open_domain,
        tagger,
        len(tagger),
    )
    tagger._changed = set()
    tagger._removed = set()
    return view


def _changes(
    tagger: Tagger, previous: TaggerView
) -> tuple[
    CowMap[GroupKey, GroupView | ColdTally],
    dict[str, CowMap[str, bool]],
    CowMap[str, int],
]:
    """``previous``'s maps with the groups changed or gone since applied: O(changed groups)."""
    group_changes: dict[GroupKey, Any] = {key: REMOVE for key in tagger._removed}
    live = tagger._tallies
    for key in tagger._changed:
        t = live.get(key)
        group_changes[key] = REMOVE if t is None else _group_view(key, t)
    gap_changes: dict[str, dict[str, Any]] = {}
    od_changes: dict[str, Any] = {}
    baseline = tagger.open_domain_baseline
    for target, gid in {(k[0], k[2]) for k in group_changes}:
        is_gap = gid in tagger._knowledge_gaps.get(target, ())
        gap_changes.setdefault(target, {})[gid] = True if is_gap else REMOVE
        if target == baseline:
            n = tagger._open_domain.get(gid)
            od_changes[gid] = n if n else REMOVE
    gaps = dict(previous._knowledge_gaps)
    for target, ch in gap_changes.items():
        gaps[target] = gaps.get(target, CowMap()).evolve(ch)
    return (
        previous._tallies.evolve(group_changes),
        gaps,
        previous._open_domain.evolve(od_changes),
    )
