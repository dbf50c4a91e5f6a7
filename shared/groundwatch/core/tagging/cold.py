"""A quiet group's tally kept compressed: what lets the tagger hold 100k groups in a few hundred
bytes each instead of several kilobytes.

Most groups are quiet most of the time: a monitoring cycle asks a group's forms together, the
group's cycle closes, its attribution is refreshed, and nothing touches it until the next cycle
(in a ``run --once``, never again). Their window — every form's observation, the cycles, the
verdict history — was kept as Python objects all the same: ~7 KB a semantic group, 1.2 GB at
500k probes. A stream processor keeps such state in a store and a cache in front of it (Kafka
Streams' RocksDB, quix-streams); here the store is the tally itself, pickled and compressed in
memory (:class:`ColdTally`), and the cache is the tagger's hot tallies.

A :class:`ColdTally` is immutable to every reader (only its store fence token, which no read
asks for, is replaced when the tally's state is written again). It answers every *read* a hot
tally answers — its numbers, status, flaky forms and causes from fields kept beside the blob,
its window (``latest``, ``cycles``, ``history``) by decoding the blob each time, never keeping
what it decoded — so the tagger's reads and the published view read a cold group as they read
a hot one, and the view can hold the cold tally itself as the group's entry (nothing it reads
ever changes). A *write* thaws it first (:meth:`~groundwatch.core.tagging.Tagger._hot`): the
tagger puts a live :class:`~groundwatch.core.tagging.windows.Tally` back in its place.
"""

from __future__ import annotations

import marshal
import struct
import zlib
from collections.abc import Mapping

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.shared_values import shared
from groundwatch.core.tagging.counts import CohortSums
from groundwatch.core.tagging.rows import observation_row, row_observation
from groundwatch.core.tagging.values import Cause, GroupKey, GroupTally, Observation
from groundwatch.core.tagging.windows import (
    NO_CAUSES,
    Cycle,
    Tally,
    history_entry,
    tally_fields,
)
from groundwatch.core.window_blobs import WindowBlobs

#: zlib's fastest level: a tally is compressed once a cycle; level 6 saved ~5% more
_LEVEL = 1
#: marshal's format 2: the last without an "interned" flag on strings. With it (3 and 4) every
#: decode interned the window's form ids and run ids again, and a report's pass decodes every
#: quiet window: ~500k insertions into the interpreter's table of interned strings per pass at
#: 500k probes, each dropped again at once, and the table's resizes grew with the groups kept.
#: A thaw interns what a live tally keeps (``row_observation(shared=True)``); zlib takes the
#: repeats format 2 writes out in full (format 3's back-references).
_MARSHAL_VERSION = 2
_CAUSES = {c.value: c for c in Cause}
_STATUSES = {s.value: s for s in GroupStatus}
#: The last windows :meth:`ColdTally.peek` decoded (by the cold tally's id; the entry holds
#: the tally, so the id stays its own): read-only, a handful, shared by every reader.
_PEEKED: dict[int, tuple[ColdTally, Tally]] = {}
_PEEKED_MAX = 8


#: The preset dictionary every compressed window after the first few is deflated against: the
#: tail of the first :data:`_SAMPLES` windows this process compressed. A window is a few
#: hundred bytes of the same field layout, verdicts, run ids and score names as every other,
#: which zlib alone cannot learn from so little: with the dictionary a window of the demo's
#: groups took 259 bytes instead of 511, for 24 µs to compress (20 without) and 7 to expand.
#: Made from this process's own data and never changed once set; blobs live in memory only.
_ZDICT: bytes | None = None
_SAMPLES = 64
_ZDICT_BYTES = 8192
_samples: list[bytes] = []


#: Attributions as shared maps, one per distinct value (a group's is a dict of a cause or
#: two: 232 bytes each, and the same few values over and over; a tally's own map, never
#: changed: the tagger replaces attributions).
_CAUSE_MAPS: dict[frozenset[tuple[Cause, int]], Mapping[Cause, int]] = {}


def _shared_causes(causes: Mapping[Cause, int]) -> Mapping[Cause, int]:
    if not causes:
        return NO_CAUSES
    return shared(_CAUSE_MAPS, frozenset(causes.items()), causes)


def _compress(raw: bytes) -> bytes:
    """``raw`` deflated, headed by whether the dictionary was used (0: no, 1: yes)."""
    global _ZDICT
    zdict = _ZDICT
    if zdict is None:
        # the first windows: compressed alone, and kept to make the dictionary from
        _samples.append(raw)
        if len(_samples) >= _SAMPLES:
            _ZDICT = b"".join(_samples)[-_ZDICT_BYTES:]
            _samples.clear()
        return b"\0" + zlib.compress(raw, _LEVEL)
    c = zlib.compressobj(_LEVEL, zdict=zdict)
    return b"\1" + c.compress(raw) + c.flush()


def _decompress(blob: bytes) -> bytes:
    body = memoryview(blob)[1:]
    if blob[0] == 0:
        return zlib.decompress(body)
    assert _ZDICT is not None  # set before the first blob that used it
    d = zlib.decompressobj(zdict=_ZDICT)
    return d.decompress(body) + d.flush()


#: A quiet tally's numbers packed in one bytes object, in :class:`GroupTally`'s order (its
#: counts, its cycles, then the status), then the rest a read may ask of a quiet group: ``held``,
#: the last conclusive status (-1: none), the baseline's open-domain answer, the observations
#: held, when the window began to arrive, the store's fence token and the window's slot in the
#: store. A snapshot of its own was 184 bytes a group, and each int beside it 28 to 32 more;
#: packed, 96 for all of them (58 bytes and the object's header: pymalloc's 96-byte class; 88
#: bytes took its 128-byte class). Each field is as wide as what it counts needs: the counts 16
#: bits (a group's forms and verdicts in one window), the cycles, the observations and the slot
#: 32 (cycles are numbered from 1, one a monitoring interval), the arrival sequence and the
#: fence token 64. A number that does not fit leaves the tally live (``OverflowError``): more
#: memory for that group, the same reads.
_COUNTS = (
    "group_forms",
    "forms_judged",
    "correct",
    "incorrect",
    "error",
    "undecided",
    "flaky_forms",
)
_CYCLES = ("cycle", "window_from_cycle", "history_from_cycle", "evidence_cycle")
#: the record's fields in order, each with its ``struct`` code (``<``: packed, no padding)
_LAYOUT: tuple[tuple[str, str], ...] = (
    *((name, "h") for name in _COUNTS),
    *((name, "i") for name in _CYCLES),
    ("status", "b"),
    ("held", "b"),
    ("conclusive", "b"),
    ("open_domain", "b"),
    ("observations", "i"),
    ("first_seq", "q"),
    ("fence", "q"),
    ("slot", "i"),
)
_PACKED = struct.Struct("<" + "".join(code for _, code in _LAYOUT))
#: each field's offset: the size of the fields before it
_AT = {
    name: struct.calcsize("<" + "".join(code for _, code in _LAYOUT[:i]))
    for i, (name, _) in enumerate(_LAYOUT)
}
_STATUS_LIST: list[GroupStatus] = list(GroupStatus)
_STATUS_INDEX = {s: i for i, s in enumerate(_STATUS_LIST)}
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
#: the single fields read on their own: offset, and how each is packed
_OFF: dict[str, tuple[int, struct.Struct]] = {
    name: (_AT[name], struct.Struct("<" + code)) for name, code in _LAYOUT
}
_OFF_STATUS = _AT["status"]
_OFF_HELD = _AT["held"]
_OFF_CONCLUSIVE = _AT["conclusive"]
_OFF_OPEN_DOMAIN = _AT["open_domain"]
_OFF_OBSERVATIONS = _AT["observations"]
_OFF_FIRST_SEQ = _AT["first_seq"]
_OFF_FENCE = _AT["fence"]
_OFF_SLOT = _AT["slot"]
#: What a quiet tally keeps beside its numbers that many groups share — (dataset id, scenario,
#: series, causes, flaky forms) — one tuple per distinct value, in one slot of the tally (three
#: slots were 16 bytes more a group, for a handful of distinct values).
_EXTRAS: dict[tuple[object, ...], tuple[str, str, str, Mapping[Cause, int], frozenset[str]]] = {}


def _int_field(name: str) -> property:
    at, packing = _OFF[name]

    def read(self: ColdTally) -> int:
        return packing.unpack_from(self._p, at)[0]  # type: ignore[no-any-return]

    return property(read)


class ColdTally:
    """A quiet tally, compressed (see the module). Reads as a hot tally and as a published
    group view do; never changed but for its fence token (a thaw makes a new hot tally and
    leaves this one as it is).

    Beside the blob it keeps what reads ask of every group — the snapshot's numbers and status
    (packed, :data:`_PACKED`), the flaky forms, the causes, the last conclusive status — so
    listing groups, counting statuses and summing causes decode nothing; the window (each
    form's observations, the cycles, the verdict history) is in the blob as plain rows
    (:mod:`groundwatch.core.tagging.rows`), marshalled and compressed. Its snapshot
    (:attr:`tally`) is made when read: the report reads a cohort's groups through the tagger
    and keeps none."""

    __slots__ = ("_key", "_p", "_store", "_x")
    _key: GroupKey
    _p: bytes
    _store: WindowBlobs
    _x: tuple[str, str, str, Mapping[Cause, int], frozenset[str]]

    def __init__(self, key: GroupKey, t: Tally, store: WindowBlobs) -> None:
        f = tally_fields(key, t)
        self._key = key
        causes = _shared_causes(t.causes)
        extra = (f[3], f[4], f[16], causes, t.flaky)
        self._x = shared(_EXTRAS, (f[3], f[4], f[16], frozenset(causes.items()), t.flaky), extra)
        cycles = t.cycles
        rows = [
            (c, cy.closed, cy.seq, tuple(observation_row(o) for o in cy.observations()))
            for c, cy in cycles.items()
        ]
        counted = t.counted_last
        window = (
            rows,
            tuple((form, o.cycle, o.probe_id) for form, o in t.latest.items()),
            tuple((form, tuple(h)) for form, h in t.history.items()),
            counted.cycle if counted is not None else None,
            t.last_closed,
            t.evicted_before,
            t.reshaped,
        )
        conclusive = t.conclusive
        packed = [
            *f[5:11], f[12], f[13], f[14], f[15], f[17],
            _STATUS_INDEX[f[11]],
            bool(f[18]),
            -1 if conclusive is None else _STATUS_INDEX[conclusive],
            bool(t.answers_open_domain),
            # observations the window holds (repeats included): the tagger's count of them
            sum(len(r[3]) for r in rows),
            # when the oldest kept cycle began to arrive (the order groups are listed in)
            min((cy.seq for cy in cycles.values()), default=0),
            t.fence,
        ]  # fmt: skip
        # checked before the window goes to the store: a number beyond 64 bits (a cycle of
        # a far-off epoch) leaves the tally live, with nothing stored to free
        try:
            _PACKED.pack(*packed, 0)
        except struct.error as e:
            raise OverflowError(f"a tally's number does not fit its packed field: {e}") from None
        self._store = store
        slot = store.put(_compress(marshal.dumps(window, _MARSHAL_VERSION)))
        self._p = _PACKED.pack(*packed, slot)

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
        """A live tally equal to the one compressed, counting into the cohort's ``sums``."""
        return self._decode(sums, shared=True)

    def peek(self) -> Tally:
        """The compressed tally as it was, for reading only (not counted anywhere, not kept
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
        """``shared``: the observations' repeated strings interned (a thawed tally lives on and
        its form's next verdicts share them); a peek's are read once and dropped."""
        v = _PACKED.unpack(self._p)
        rows, latest, history, counted, last_closed, evicted_before, reshaped = marshal.loads(
            _decompress(self._store.get(self._slot))
        )
        key = (target, cohort, group_id) = self._key
        dataset_id, scenario, series, causes, flaky = self._x
        t = Tally(key, dataset_id, scenario, v[0], series, sums)
        by_probe: dict[str, Observation] = {}
        cycles = t.cycles
        for c, closed, seq, obs_rows in rows:
            cy = Cycle(c, closed=closed, seq=seq)
            for row in obs_rows:
                o = row_observation(row, target, cohort, group_id, c, shared=shared)
                by_probe[o.probe_id] = o
                cy.add(o)
            cycles[c] = cy
        t.latest = {form: by_probe[pid] for form, _c, pid in latest}
        t.history = {form: [history_entry(*e) for e in h] for form, h in history}
        t.counted_last = cycles.get(counted) if counted is not None else None
        t.status = _STATUS_LIST[v[11]]
        t.correct, t.incorrect, t.error, t.undecided = v[2], v[3], v[4], v[5]
        t.flaky = flaky
        t.causes = dict(causes) if causes else NO_CAUSES
        t.last_closed = last_closed
        t.conclusive = self.conclusive
        t.held = self.held
        t.evicted_before = evicted_before
        t.answers_open_domain = self.answers_open_domain
        t.reshaped = reshaped
        t.fence = self.fence
        return t

    @property
    def size(self) -> int:
        """Bytes of the compressed window (what a cold group costs beside its fields)."""
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
        return _STATUS_LIST[self._p[_OFF_STATUS]]

    @property
    def held(self) -> bool:
        return bool(self._p[_OFF_HELD])

    @property
    def conclusive(self) -> GroupStatus | None:
        i = self._p[_OFF_CONCLUSIVE]  # a signed byte read unsigned: 255 is -1, none
        return None if i == 255 else _STATUS_LIST[i]

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
        v = _PACKED.unpack(self._p)
        target, cohort, group_id = self._key
        dataset_id, scenario, series = self._x[0], self._x[1], self._x[2]
        return GroupTally(
            target, cohort, group_id, dataset_id, scenario,
            v[0], v[1], v[2], v[3], v[4], v[5],
            _STATUS_LIST[v[11]],
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
