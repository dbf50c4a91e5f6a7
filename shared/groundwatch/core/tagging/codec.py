"""Every encoding of a group's window, and back: the one module that knows their layouts.

A window is the record the tagger keeps per (target, cohort, group): its cycles' observations,
its forms' verdict history, the numbers and status derived from them. It takes three forms:

* **live** — :class:`~groundwatch.core.tagging.windows.Tally` and its
  :class:`~groundwatch.core.tagging.windows.Cycle` s, the objects the tagger changes;
* **state** — plain JSON-able data a partition's owner writes beside each tally and a new owner
  restores from (:func:`encode_state`, :func:`decode_state`; format :data:`STATE_FORMAT`);
* **cold** — a group no judgement touches kept as a packed record of the numbers every read
  asks (:func:`pack_record`, :data:`RECORD_FIELDS`) beside its window marshalled and deflated
  (:func:`encode_cold`, :func:`decode_cold`; format :data:`COLD_FORMAT`), read by
  :class:`~groundwatch.core.tagging.cold.ColdTally`.

Both encoded forms hold a cycle's observations as the same rows (:func:`observation_row`,
:func:`row_observation`): the group's target, cohort, group id and cycle are not in a row, the
holder of the rows knows them. Each encoded form carries its format number: a state of another
format decodes to ``None`` (the caller replays that tally's judgements instead), a cold window of
another is an error (cold windows never leave the process that wrote them).
"""

from __future__ import annotations

import marshal
import struct
import zlib
from collections.abc import Iterable, Mapping
from sys import intern as _intern
from typing import Any, NamedTuple

import orjson

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.score_json import scores_from_json, scores_json_bytes
from groundwatch.core.scores import NO_SCORES, Scores
from groundwatch.core.shared_values import shared
from groundwatch.core.tagging.counts import CohortSums
from groundwatch.core.tagging.values import Cause, GroupKey, Observation
from groundwatch.core.tagging.windows import NO_CAUSES, Cycle, Tally, history_entry, tally_fields

_VERDICTS = {v.value: v for v in Verdict}
_STATUSES = {s.value: s for s in GroupStatus}
_CAUSES = {c.value: c for c in Cause}

# ---------------------------------------------------------------------------- observation rows


def observation_row(o: Observation) -> list[Any]:
    """One observation as a row of plain values (JSON-able and marshal-able); an answer a person
    gave a verdict on has two more values at its end (the revision and the judge's verdict), so
    the rows of every other answer keep their length."""
    row: list[Any] = [
        o.probe_id,
        o.form_id,
        o.verdict.value,
        o.run_id,
        o.dataset_id,
        o.scenario,
        o.group_forms,
        o.retrieved_ids,
        o.relevant_doc_ids,
        o.retrieval_ok,
        o.at,
        o.latency_s,
        o.stale,
        o.series,
        o.truth_version,
        o.error_kind,
        o.context_has_answer,
        # the typed families as JSON text ('' for none): one restore decodes a text once
        _scores_text(o.scores),
    ]
    if o.human is not None:
        row += [o.human[0], o.human[1].value]
    return row


#: Scores written as JSON text, by object: the tally's observations share their tallied scores
#: (:meth:`Scores.tallied`) and a tally's state is written again with every batch that touches
#: it, so each scores object is serialized once, not once per write (bounded like the table of
#: shared scores; the entry holds the object, so its id stays its own).
_ENCODED: dict[int, tuple[Scores, str]] = {}


def _scores_text(scores: Scores) -> str:
    if scores is NO_SCORES:
        return ""
    hit = _ENCODED.get(id(scores))
    if hit is not None and hit[0] is scores:
        return hit[1]
    if len(_ENCODED) >= 1 << 16:
        _ENCODED.clear()
    text = scores_json_bytes(scores).decode()
    _ENCODED[id(scores)] = (scores, text)
    return text


def _same(text: str) -> str:
    return text


def row_observation(
    row: list[Any], target: str, cohort: str, group_id: str, cycle: int, *, shared: bool = True
) -> Observation:
    """The observation a row holds. ``shared``: the repeated strings interned, for an observation
    that is kept (a restored or thawed tally's); a read-once decode (a cold tally peeked at by a
    report) leaves them as decoded, not adding each form id to the interpreter's table only to
    drop it again."""
    intern = _intern if shared else _same
    return Observation(
        row[0],
        target,
        cohort,
        group_id,
        intern(row[1]),  # the form: every verdict of it repeats it
        _VERDICTS[row[2]],
        intern(row[3]),  # run, dataset, scenario, series: shared by many (see observe.py)
        intern(row[4]),
        intern(row[5]),
        row[6],
        tuple(row[7]) if row[7] else (),
        tuple(row[8]) if row[8] else (),
        row[9],
        row[10],
        row[11],
        row[12],
        intern(row[13]),
        cycle,
        row[14],
        row[15],
        row[16],
        _scores(row[17]),
        (row[18], _VERDICTS[row[19]]) if len(row) > 18 else None,
    )


#: Scores decoded from their JSON text, shared: a repeated answer's scores are decoded once per
#: restore (bounded like :meth:`Scores.tallied`'s table).
_DECODED: dict[str, Scores] = {}


def _scores(text: str) -> Scores:
    if not text:
        return NO_SCORES
    scores = _DECODED.get(text)
    if scores is None:
        if len(_DECODED) >= 1 << 16:
            _DECODED.clear()
        scores = _DECODED[text] = scores_from_json(orjson.loads(text)).tallied()
    return scores


# ---------------------------------------------------------------------------- the stored state

#: Bumped whenever the state's layout changes: an older state is replayed, never misread.
STATE_FORMAT = 2

TallyState = list[Any]
"""``[STATE_FORMAT, dataset_id, scenario, group_forms, series, conclusive, evicted_before,
reports_ids, cycles, history, causes]`` — see :func:`encode_state`."""


class DecodedState(NamedTuple):
    """A stored state's parts, decoded: what :func:`~groundwatch.core.tagging.restore` puts
    back into a tagger (everything else a tally holds is derived from them again)."""

    dataset_id: str
    scenario: str
    group_forms: int
    series: str
    conclusive: GroupStatus | None
    evicted_before: int | None
    reports_ids: bool
    #: ``(cycle, closed, rows)`` ascending by cycle, each row an observation in arrival order
    #: that :func:`row_observation` decodes — one at a time as the restore adds it, not into a
    #: list of its own first: a restore streams 100k tallies, and each container more is more
    #: work for the garbage collector (a list per cycle: ~10% of a restore's time)
    cycles: list[tuple[int, bool, list[list[Any]]]]
    history: dict[str, list[tuple[int, bool, int]]]
    causes: dict[Cause, int]


def encode_state(t: Tally, *, reports_ids: bool) -> TallyState:
    """The state of one tally as plain data. ``cycles`` are ``[cycle, closed, observations]``
    ascending, each cycle's observations in arrival order (repeats of a form included: the
    latest stands); ``history`` is ``[form, [[cycle, correct, truth_version], …]]``; ``causes``
    the attribution last computed; ``reports_ids`` whether the tally's target reports retrieved
    ids (an empty list from it means "nothing retrieved")."""
    return [
        STATE_FORMAT,
        t.dataset_id,
        t.scenario,
        t.group_forms,
        t.series,
        t.conclusive.value if t.conclusive is not None else None,
        t.evicted_before,
        reports_ids,
        [
            [c, cy.closed, [observation_row(o) for o in cy.observations()]]
            for c, cy in t.cycles.items()
        ],
        [[form, [list(e) for e in h]] for form, h in t.history.items()],
        {cause.value: n for cause, n in t.causes.items()},
    ]


def valid_state(state: object) -> bool:
    """Whether ``state`` is a tally state this code decodes (the format it writes)."""
    return isinstance(state, list) and len(state) == 11 and state[0] == STATE_FORMAT


def decode_state(state: object) -> DecodedState | None:
    """The parts of a stored ``state``; ``None`` for a state of another format."""
    if not valid_state(state):
        return None
    assert isinstance(state, list)  # for mypy: valid_state says so
    (
        _fmt,
        dataset_id,
        scenario,
        group_forms,
        series,
        conclusive,
        evicted_before,
        reports_ids,
        cycles,
        history,
        causes,
    ) = state
    return DecodedState(
        dataset_id,
        scenario,
        group_forms,
        series,
        _STATUSES[conclusive] if conclusive is not None else None,
        evicted_before,
        bool(reports_ids),
        cycles,
        {form: [history_entry(*e) for e in h] for form, h in history},
        {_CAUSES[c]: k for c, k in causes.items()} if causes else {},
    )


# ---------------------------------------------------------------------------- the cold form

#: Bumped whenever the cold window's layout changes; carried in each window's first byte beside
#: whether the preset dictionary was used (``COLD_FORMAT << 1 | dictionary``).
COLD_FORMAT = 1
#: zlib's fastest level: a tally is made cold once a cycle; level 6 saved ~5% more
_LEVEL = 1
#: marshal's format 2: the last without an "interned" flag on strings. With it (3 and 4) every
#: decode interned the window's form ids and run ids again, and a report's pass decodes every
#: cold window: ~500k insertions into the interpreter's table of interned strings per pass at
#: 500k probes, each dropped again at once, and the table's resizes grew with the groups kept.
#: A thaw interns what a live tally keeps (``row_observation(shared=True)``); zlib takes the
#: repeats format 2 writes out in full (format 3's back-references).
_MARSHAL_VERSION = 2

#: The preset dictionary every cold window after the first few is deflated against: the tail of
#: the first :data:`SAMPLES` windows this process made cold. A window is a few hundred bytes of
#: the same field layout, verdicts, run ids and score names as every other, which zlib alone
#: cannot learn from so little: with the dictionary a window of the demo's groups took 259 bytes
#: instead of 511, for 24 µs to deflate (20 without) and 7 to inflate. Made from this process's
#: own data and never changed once set: cold windows never leave the process.
_ZDICT: bytes | None = None
SAMPLES = 64
_ZDICT_BYTES = 8192
_samples: list[bytes] = []


#: a cold window's first byte: the format, and whether the preset dictionary was used
_HEAD_PLAIN = bytes([COLD_FORMAT << 1])
_HEAD_DICT = bytes([COLD_FORMAT << 1 | 1])


def dictionary_made() -> bool:
    """Whether the preset dictionary is set (cold windows made from now on use it)."""
    return _ZDICT is not None


def _deflate(raw: bytes) -> bytes:
    """``raw`` deflated, headed by the format and whether the dictionary was used."""
    global _ZDICT
    zdict = _ZDICT
    if zdict is None:
        # the first windows: deflated alone, and kept to make the dictionary from
        _samples.append(raw)
        if len(_samples) >= SAMPLES:
            _ZDICT = b"".join(_samples)[-_ZDICT_BYTES:]
            _samples.clear()
        return _HEAD_PLAIN + zlib.compress(raw, _LEVEL)
    c = zlib.compressobj(_LEVEL, zdict=zdict)
    return _HEAD_DICT + c.compress(raw) + c.flush()


def _inflate(blob: bytes) -> bytes:
    head = blob[0]
    if head >> 1 != COLD_FORMAT:
        raise ValueError(f"a cold window of format {head >> 1}, not {COLD_FORMAT}")
    body = memoryview(blob)[1:]
    if not head & 1:
        return zlib.decompress(body)
    assert _ZDICT is not None  # set before the first window that used it
    d = zlib.decompressobj(zdict=_ZDICT)
    return d.decompress(body) + d.flush()


def used_dictionary(blob: bytes) -> bool:
    """Whether a cold window was deflated against the preset dictionary."""
    return bool(blob[0] & 1)


#: A cold tally's numbers packed in one bytes object, in :class:`GroupTally`'s order (its counts,
#: its cycles, then the status), then the rest a read may ask of a cold group: ``held``, the last
#: conclusive status (-1: none), the baseline's open-domain answer, the observations held, when
#: the window began to arrive, the store's fence token and the window's slot in the store. A
#: snapshot of its own was 184 bytes a group, and each int beside it 28 to 32 more; packed, 96
#: for all of them (58 bytes and the object's header: pymalloc's 96-byte class; 88 bytes took its
#: 128-byte class). Each field is as wide as what it counts needs: the counts 16 bits (a group's
#: forms and verdicts in one window), the cycles, the observations and the slot 32 (cycles are
#: numbered from 1, one a monitoring interval), the arrival sequence and the fence token 64. A
#: number that does not fit leaves the tally live (``OverflowError``): more memory for that
#: group, the same reads.
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
RECORD = struct.Struct("<" + "".join(code for _, code in _LAYOUT))
#: each field's offset (the size of the fields before it) and how it is packed
RECORD_FIELDS: dict[str, tuple[int, struct.Struct]] = {
    name: (struct.calcsize("<" + "".join(code for _, code in _LAYOUT[:i])), struct.Struct("<" + c))
    for i, (name, c) in enumerate(_LAYOUT)
}
#: the record's status bytes: an index into this list
STATUS_LIST: list[GroupStatus] = list(GroupStatus)
_STATUS_INDEX = {s: i for i, s in enumerate(STATUS_LIST)}

ColdExtras = tuple[str, str, str, Mapping[Cause, int], frozenset[str]]
"""What a cold tally keeps beside its record that many groups share — (dataset id, scenario,
series, causes, flaky forms) — one tuple per distinct value (:func:`encode_cold` shares them)."""
_EXTRAS: dict[tuple[object, ...], ColdExtras] = {}
#: Attributions as shared maps, one per distinct value (a group's is a dict of a cause or two:
#: 232 bytes each, and the same few values over and over; a tally's own map, never changed: the
#: tagger replaces attributions).
_CAUSE_MAPS: dict[frozenset[tuple[Cause, int]], Mapping[Cause, int]] = {}


def _shared_causes(causes: Mapping[Cause, int]) -> Mapping[Cause, int]:
    if not causes:
        return NO_CAUSES
    return shared(_CAUSE_MAPS, frozenset(causes.items()), causes)


class ColdParts(NamedTuple):
    """A live tally in its cold form: the record's fields but the slot (see :func:`pack_record`),
    the shared extras, and the window deflated."""

    fields: list[int]
    extras: ColdExtras
    window: bytes


def encode_cold(key: GroupKey, t: Tally) -> ColdParts:
    """``t`` in its cold form. ``OverflowError``: a number does not fit its packed field (checked
    before anything is deflated: the tally stays live, with nothing to free)."""
    f = tally_fields(key, t)
    causes = _shared_causes(t.causes)
    extras: ColdExtras = (f[3], f[4], f[16], causes, t.flaky)
    extras = shared(_EXTRAS, (f[3], f[4], f[16], frozenset(causes.items()), t.flaky), extras)
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
    fields = [
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
    pack_record(fields, 0)  # a number beyond its field raises before the window is deflated
    return ColdParts(fields, extras, _deflate(marshal.dumps(window, _MARSHAL_VERSION)))


def pack_record(fields: Iterable[int], slot: int) -> bytes:
    """The packed record of a cold tally's ``fields`` and its window's ``slot`` in the store;
    ``OverflowError`` when a number does not fit its field."""
    try:
        return RECORD.pack(*fields, slot)
    except struct.error as e:
        raise OverflowError(f"a tally's number does not fit its packed field: {e}") from None


def decode_cold(
    key: GroupKey,
    record: bytes,
    extras: ColdExtras,
    window: bytes,
    sums: CohortSums,
    *,
    shared: bool,
) -> Tally:
    """The live tally a cold one holds, counting into ``sums``. ``shared``: the observations'
    repeated strings interned (a thawed tally lives on and its form's next verdicts share them);
    a peek's are read once and dropped."""
    v = RECORD.unpack(record)
    rows, latest, history, counted, last_closed, evicted_before, reshaped = marshal.loads(
        _inflate(window)
    )
    target, cohort, group_id = key
    dataset_id, scenario, series, causes, flaky = extras
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
    t.status = STATUS_LIST[v[11]]
    t.correct, t.incorrect, t.error, t.undecided = v[2], v[3], v[4], v[5]
    t.flaky = flaky
    t.causes = dict(causes) if causes else NO_CAUSES
    t.last_closed = last_closed
    t.conclusive = None if v[13] < 0 else STATUS_LIST[v[13]]
    t.held = bool(v[12])
    t.evicted_before = evicted_before
    t.answers_open_domain = bool(v[14])
    t.reshaped = reshaped
    t.fence = v[17]
    return t
