"""A cold group's tally: what lets the tagger hold 100k groups in a few hundred bytes each
instead of several kilobytes.

Most groups are cold most of the time: a monitoring cycle asks a group's forms together, the
group's cycle closes, its attribution is refreshed, and nothing touches it until the next cycle
(in a ``run --once``, never again). Their window — every form's observation, the cycles, the
verdict history — was kept as Python objects all the same: ~7 KB a semantic group, 1.2 GB at
500k probes. A stream processor keeps such state in a store and a cache in front of it (Kafka
Streams' RocksDB, quix-streams); here the store is the tally itself in its cold form
(:mod:`groundwatch.core.tagging.codec`: a packed record and the window deflated, in memory or a
:class:`~groundwatch.core.window_blobs.WindowBlobs`), and the cache is the tagger's hot tallies.

A :class:`ColdTally` is immutable to every reader (only its store fence token, which no read
asks for, is replaced when the tally's state is written again). It answers every *read* a hot
tally answers — its numbers, status, flaky forms and causes from the record and the extras kept
beside the window, its window (``latest``, ``cycles``, ``history``) by decoding it each time,
never keeping what it decoded — so the tagger's reads and the published view read a cold group
as they read a hot one, and the view can hold the cold tally itself as the group's entry
(nothing it reads ever changes). A *write* thaws it first (:meth:`Tagger._live_tally
<groundwatch.core.tagging.Tagger>`): the tagger puts a live
:class:`~groundwatch.core.tagging.windows.Tally` back in its place.
"""

from __future__ import annotations

from collections.abc import Mapping

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.tagging.codec import (
    RECORD,
    RECORD_FIELDS,
    STATUS_LIST,
    ColdExtras,
    decode_cold,
    encode_cold,
    pack_record,
)
from groundwatch.core.tagging.counts import CohortSums
from groundwatch.core.tagging.values import Cause, GroupKey, GroupTally, Observation
from groundwatch.core.tagging.windows import Cycle, Tally
from groundwatch.core.window_blobs import WindowBlobs

#: The last windows :meth:`ColdTally.peek` decoded (by the cold tally's id; the entry holds
#: the tally, so the id stays its own): read-only, a handful, shared by every reader.
_PEEKED: dict[int, tuple[ColdTally, Tally]] = {}
_PEEKED_MAX = 8
_OFF_STATUS = RECORD_FIELDS["status"][0]
_OFF_HELD = RECORD_FIELDS["held"][0]
_OFF_CONCLUSIVE = RECORD_FIELDS["conclusive"][0]
_OFF_OPEN_DOMAIN = RECORD_FIELDS["open_domain"][0]
_OFF_OBSERVATIONS, _I32 = RECORD_FIELDS["observations"]
_OFF_FIRST_SEQ, _I64 = RECORD_FIELDS["first_seq"]
_OFF_FENCE = RECORD_FIELDS["fence"][0]
_OFF_SLOT = RECORD_FIELDS["slot"][0]


def _int_field(name: str) -> property:
    at, packing = RECORD_FIELDS[name]

    def read(self: ColdTally) -> int:
        return packing.unpack_from(self._p, at)[0]  # type: ignore[no-any-return]

    return property(read)


class ColdTally:
    """A cold tally (see the module). Reads as a hot tally and as a published group view do;
    never changed but for its fence token (a thaw makes a new hot tally and leaves this one as
    it is).

    Beside the window it keeps what reads ask of every group — the snapshot's numbers and status
    (the packed record, :data:`~groundwatch.core.tagging.codec.RECORD`), the flaky forms, the
    causes, the last conclusive status — so listing groups, counting statuses and summing causes
    decode nothing; the window (each form's observations, the cycles, the verdict history) is
    in the store in its cold encoding (:func:`~groundwatch.core.tagging.codec.encode_cold`). Its
    snapshot (:attr:`tally`) is made when read: the report reads a cohort's groups through the
    tagger and keeps none."""

    __slots__ = ("_key", "_p", "_store", "_x")
    _key: GroupKey
    _p: bytes
    _store: WindowBlobs
    _x: ColdExtras

    def __init__(self, key: GroupKey, t: Tally, store: WindowBlobs) -> None:
        fields, self._x, window = encode_cold(key, t)  # OverflowError: nothing stored yet
        self._key = key
        self._store = store
        self._p = pack_record(fields, store.put(window))

    @property
    def _slot(self) -> int:
        return _I32.unpack_from(self._p, _OFF_SLOT)[0]  # type: ignore[no-any-return]

    def __del__(self) -> None:
        # the last holder (the tagger, a published view) let go: the window's bytes are garbage.
        # A plain try (not contextlib): at interpreter exit module globals may be gone already.
        try:  # noqa: SIM105
            self._store.free(self._slot)
        except Exception:  # nothing to free into any more
            pass

    def thaw(self, sums: CohortSums) -> Tally:
        """A live tally equal to the cold one, counting into the cohort's ``sums``."""
        return self._decode(sums, shared=True)

    def peek(self) -> Tally:
        """The cold tally as it was, for reading only (not counted anywhere, not kept
        beyond the last few: a report asks a group's window several times in a row — its
        numbers, then its retrieval judged beside its other cohorts)."""
        recent = _PEEKED.get(id(self))
        if recent is not None and recent[0] is self:
            return recent[1]
        t = self._decode(CohortSums(), shared=False)
        if len(_PEEKED) >= _PEEKED_MAX:
            try:
                del _PEEKED[next(iter(_PEEKED))]  # the oldest
            except (RuntimeError, KeyError, StopIteration):  # another thread's reads moved it
                _PEEKED.clear()
        _PEEKED[id(self)] = (self, t)
        return t

    def _decode(self, sums: CohortSums, *, shared: bool) -> Tally:
        window = self._store.get(self._slot)
        return decode_cold(self._key, self._p, self._x, window, sums, shared=shared)

    @property
    def size(self) -> int:
        """Bytes of the cold window (what a cold group costs beside its fields)."""
        return self._store.size(self._slot)

    # -- the fields a hot tally has, for the tagger's reads ----------------------------------
    group_forms = _int_field("group_forms")
    correct = _int_field("correct")
    incorrect = _int_field("incorrect")
    error = _int_field("error")
    undecided = _int_field("undecided")

    @property
    def dataset_id(self) -> str:
        return self._x[0]

    @property
    def scenario(self) -> str:
        return self._x[1]

    @property
    def series(self) -> str:
        return self._x[2]

    @property
    def causes(self) -> Mapping[Cause, int]:
        return self._x[3]

    @property
    def flaky(self) -> frozenset[str]:
        return self._x[4]

    @property
    def status(self) -> GroupStatus:
        return STATUS_LIST[self._p[_OFF_STATUS]]

    @property
    def held(self) -> bool:
        return bool(self._p[_OFF_HELD])

    @property
    def conclusive(self) -> GroupStatus | None:
        i = self._p[_OFF_CONCLUSIVE]  # a signed byte read unsigned: 255 is -1, none
        return None if i == 255 else STATUS_LIST[i]

    @property
    def answers_open_domain(self) -> bool:
        return bool(self._p[_OFF_OPEN_DOMAIN])

    @property
    def observations(self) -> int:
        return _I32.unpack_from(self._p, _OFF_OBSERVATIONS)[0]  # type: ignore[no-any-return]

    @property
    def fence(self) -> int:
        """The store's fence token of the state last written (the tally's, not its view's)."""
        return _I64.unpack_from(self._p, _OFF_FENCE)[0]  # type: ignore[no-any-return]

    def set_fence(self, token: int) -> None:
        """Record the token of a new write. The one field that changes, in a new packed record
        swapped in whole: no read (the tagger's, a published view's) ever asks for it."""
        p = bytearray(self._p)
        _I64.pack_into(p, _OFF_FENCE, token)
        self._p = bytes(p)

    @property
    def first_seq(self) -> int:
        return _I64.unpack_from(self._p, _OFF_FIRST_SEQ)[0]  # type: ignore[no-any-return]

    @property
    def tally(self) -> GroupTally:
        """The group's snapshot, made from the packed numbers (a new one per read)."""
        v = RECORD.unpack(self._p)
        target, cohort, group_id = self._key
        dataset_id, scenario, series = self._x[0], self._x[1], self._x[2]
        return GroupTally(
            target, cohort, group_id, dataset_id, scenario,
            v[0], v[1], v[2], v[3], v[4], v[5],
            STATUS_LIST[v[11]],
            v[6], v[7], v[8], v[9], series, v[10], bool(v[12]),
        )  # fmt: skip

    # -- the window, decoded on each read and not kept --------------------------------------
    @property
    def latest(self) -> Mapping[str, Observation]:
        return self.peek().latest

    @property
    def cycles(self) -> Mapping[int, Cycle]:
        return self.peek().cycles

    @property
    def history(self) -> tuple[Observation, ...]:
        """Every observation in the window, oldest cycle first (a published group's
        ``history``; the hot tally's per-form verdict history is :meth:`peek`'s)."""
        cycles = self.peek().cycles.values()
        return tuple(o for cy in cycles for o in cy.observations())


__all__ = ["ColdTally"]
