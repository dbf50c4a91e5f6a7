"""A tally's state as plain data: what a partition's owner writes beside each tally, and what a
new owner restores the partition from — instead of replaying every stored judgement.

Stream processors keep state per partition and recover it from a compact changelog of it
(Kafka Streams, quix-streams), not by re-reading the system of record: a rebuild that replayed
each group's judgements since its ``history_from_cycle`` took 45 s at 100k groups, and the moved
partitions' tallies were behind that long. The state of one (target, cohort, group) is small and
bounded: the observations of the cycles its window keeps (at most ``W`` closed cycles with
answers, the newest empty one and the one filling), its forms' verdict history (at most
:data:`~groundwatch.core.tagging.FLAKY_HISTORY` entries a form), the last conclusive status, the
eviction mark and the failure attribution. Everything else — the window's numbers, the status,
the held mark, the flaky forms, every running count of the tagger — is derived from it again on
restore by the same code the live path runs, so a restored tagger is the live one, not an
approximation.

The encoding is :mod:`groundwatch.core.tagging.codec`'s (:func:`~groundwatch.core.tagging.codec.
encode_state`, a JSON-able list headed by :data:`STATE_FORMAT`); a state of another format is
refused by :func:`valid` (the caller replays that tally's judgements instead). This module puts a
decoded state back into a tagger.
"""

from __future__ import annotations

from collections.abc import Iterable

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.tagging.codec import (
    STATE_FORMAT,
    DecodedState,
    TallyState,
    decode_state,
    encode_state,
    row_observation,
    valid_state,
)
from groundwatch.core.tagging.cold import ColdTally
from groundwatch.core.tagging.counts import CohortSums
from groundwatch.core.tagging.tagger import Tagger
from groundwatch.core.tagging.values import GroupKey
from groundwatch.core.tagging.windows import Cycle, Tally

__all__ = ["STATE_FORMAT", "TallyState", "dump_state", "restore", "valid"]


def dump_state(tagger: Tagger, key: GroupKey) -> TallyState | None:
    """The state of one tally as plain data (``None``: the tagger has no such tally); its
    layout is :func:`~groundwatch.core.tagging.codec.encode_state`'s."""
    found = tagger._tallies.get(key)
    if found is None:
        return None
    t = found.peek() if isinstance(found, ColdTally) else found
    return encode_state(t, reports_ids=key[0] in tagger._id_targets)


def valid(state: object) -> bool:
    """Whether ``state`` is a tally state this code restores (the format it writes)."""
    return valid_state(state)


def restore(tagger: Tagger, states: Iterable[tuple[GroupKey, TallyState]]) -> int:
    """Load the given tally states into ``tagger`` (a fresh one, or one holding other groups:
    each key must be new to it); returns how many observations they hold.

    Each tally is put back as it was — its cycles (closed or filling), its forms' histories,
    its last conclusive status and eviction mark, its attribution — and everything derived is
    derived once, by the code the live path runs (:meth:`Tagger._recompute`), as
    :meth:`Tagger.rebuild` does. Attribution is marked due for every restored group, so the
    causes kept with the state are refreshed with the first budgeted refresh."""
    live = tagger._live
    count_verdict = tagger._count_verdict
    health = tagger._health
    recompute = tagger._recompute
    cause_counts = tagger._cause_counts
    groups: set[tuple[str, str]] = set()
    n = 0
    # one pass, tally by tally (the states are streamed from the store): each is rebuilt and
    # its numbers derived at once; only the knowledge gaps, which read every cohort of a
    # semantic group, wait for the end
    tagger._gaps_deferred = True
    try:
        for key, state in states:
            if key in tagger._tallies:
                raise ValueError(f"tally {key} is present already")
            parts = decode_state(state)
            if parts is None:
                raise ValueError(f"tally {key}'s state is not of format {STATE_FORMAT}")
            t = _open(tagger, key, parts)
            target, cohort, group_id = key
            if parts.reports_ids:
                tagger._id_targets.add(target)
            for c, closed, rows in parts.cycles:
                cy = Cycle(c, closed=closed, seq=tagger._seq)
                tagger._seq += 1
                for row in rows:
                    obs = row_observation(row, target, cohort, group_id, c)
                    cy.add(obs)
                    live[obs.probe_id] = obs
                    count_verdict(obs, 1)
                    h = health.get(target)
                    v = obs.verdict
                    if h is None or c > h[0]:
                        health[target] = [c, 1, v is not Verdict.ERROR, v is Verdict.UNDECIDED]
                    elif c == h[0]:
                        h[1] += 1
                        h[2] += v is not Verdict.ERROR
                        h[3] += v is Verdict.UNDECIDED
                    n += 1
                t.cycles[c] = cy
            t.history = parts.history
            t.evicted_before = parts.evicted_before
            recompute(key, t, None)
            # the last conclusive status is history, not derivable from the window: a group
            # that is unknown now remembers what it was before (a later gap regresses from it)
            t.conclusive = parts.conclusive
            if parts.causes:
                t.causes = parts.causes
                for cause, k in t.causes.items():
                    ck = (target, cohort, cause)
                    cause_counts[ck] = cause_counts.get(ck, 0) + k
            groups.add((target, group_id))
    finally:
        tagger._gaps_deferred = False
    for target, group_id in groups:
        tagger._update_knowledge_gap(target, group_id)
    tagger._pending_transitions.clear()
    return n


def _open(tagger: Tagger, key: GroupKey, parts: DecodedState) -> Tally:
    """A new, empty tally for ``key``, counted pending (as :meth:`Tagger._open` makes one)."""
    ck = (key[0], key[1])
    sums = tagger._sums.get(ck)
    if sums is None:
        sums = tagger._sums[ck] = CohortSums()
    t = tagger._tallies[key] = Tally(
        key, parts.dataset_id, parts.scenario, parts.group_forms, parts.series, sums
    )
    tagger._hot_keys.add(key)
    sc = (key[0], key[1], GroupStatus.PENDING)
    counts = tagger._status_counts
    counts[sc] = counts.get(sc, 0) + 1
    return t
