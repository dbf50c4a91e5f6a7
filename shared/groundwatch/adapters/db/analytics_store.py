"""Analytics persistence: applied judgements (the idempotency record), per-group tallies and the
status transitions between cycles.

One transaction per consumed batch holds all three, and the consume loop commits Kafka offsets only
after it: a crash between the two replays the batch, and the ``probe_id`` primary key plus the
tagger's duplicate check make the replay a no-op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, and_, case, func, insert, select, tuple_
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import Session, sessionmaker

from groundwatch.adapters.db.engine import dialect_insert, is_mysql
from groundwatch.adapters.db.expected import expected_ref, fill_expected, generation
from groundwatch.adapters.db.human_verdicts import JudgedAnswer, counted_revisions
from groundwatch.adapters.db.observations import OBSERVATION_COLUMNS, observation_from_row
from groundwatch.adapters.db.tables import (
    ExpectedAnswerRow,
    JudgementRow,
    RunRow,
    SeriesClockRow,
    SeriesEpochRow,
    TallyRow,
    TransitionRow,
)
from groundwatch.contracts import TRAFFIC_COHORT, TRAFFIC_WINDOW_STATUS, Judgement
from groundwatch.core.cycles import Epoch
from groundwatch.core.score_json import scores_json_bytes
from groundwatch.core.tagging import GroupKey, GroupTally, Observation, Transition

#: Tally columns an upsert overwrites (the key columns stay).
_TALLY_UPDATED = (
    "dataset_id",
    "scenario",
    "forms_expected",
    "correct",
    "incorrect",
    "error",
    "undecided",
    "status",
    "flaky_forms",
    "series",
    "cycle",
    "history_from_cycle",
    "updated_at",
    "state",
    "state_token",
    "state_parent",
)


class _Bulk:
    """One write statement compiled once for the engine's dialect and run as a driver-level
    ``executemany`` over plain value tuples.

    Why: through ``Connection.execute(stmt, [dict, ...])`` SQLAlchemy rebuilds a parameter dict
    per row (``construct_params``) and runs every column's bind processor per value — about half
    of the analytics stage's store CPU per judgement. Here the SQL string is compiled once, the
    bind processors of the columns that have one (JSON, DateTime, Boolean: the dialect's own, so
    the stored values are exactly what the ORM path would store) are looked up once, and the rows
    reach the driver as tuples (or dicts keyed by bind name for a named paramstyle: psycopg).
    """

    def __init__(
        self,
        engine: Engine,
        stmt: Any,
        table: Any,
        columns: Sequence[str],
        *,
        preprocessed: Sequence[str] = (),
    ) -> None:
        """``preprocessed``: columns whose values the caller binds itself with :meth:`bind`
        (a value shared by many rows — the batch's timestamp, a group's expected answer — is
        then converted once, not once per row)."""
        dialect = engine.dialect
        compiled = stmt.compile(dialect=dialect, column_keys=list(columns))
        order = list(compiled.positiontup or ()) if compiled.positional else list(columns)
        if sorted(order) != sorted(columns):  # a default or a missing value would go unbound
            raise ValueError(f"{table.name}: bound {order}, given {list(columns)}")
        self.sql: str = compiled.string
        self.positional: bool = bool(compiled.positional)
        #: the given columns' positions, in the statement's bind order
        self.order = [list(columns).index(name) for name in order]
        self.names = order
        self._bind: dict[str, Callable[[Any], Any]] = {}
        self.processors: list[tuple[int, Callable[[Any], Any]]] = []
        for i, name in enumerate(order):
            column_type = table.c[name].type
            proc = column_type.dialect_impl(dialect).bind_processor(dialect)
            if proc is not None:
                self._bind[name] = proc
                if name not in preprocessed:
                    self.processors.append((i, proc))

    def bind(self, column: str, value: Any) -> Any:
        """``value`` as the driver takes it for ``column`` (for a ``preprocessed`` column)."""
        proc = self._bind.get(column)
        return value if proc is None or value is None else proc(value)

    def params(self, rows: Iterable[Sequence[Any]]) -> list[Any]:
        """The driver's parameters: each row (in ``columns`` order) reordered and processed."""
        order, processors = self.order, self.processors
        out: list[Any] = []
        for row in rows:
            values = [row[i] for i in order]
            for i, proc in processors:
                values[i] = proc(values[i])
            if self.positional:
                out.append(tuple(values))
            else:
                out.append(dict(zip(self.names, values, strict=True)))
        return out

    def run(self, conn: Any, rows: Iterable[Sequence[Any]]) -> int:
        """Run the statement over ``rows``; returns the rows it changed (the driver's summed
        ``rowcount``: sqlite3, psycopg and PyMySQL all sum it over an executemany, and a row an
        ``ON CONFLICT DO NOTHING`` / ``INSERT IGNORE`` skipped counts 0)."""
        params = self.params(rows)
        if not params:
            return 0
        return int(conn.exec_driver_sql(self.sql, params).rowcount)


class AlreadyStored(Exception):
    """Some judgements of the batch were in the store already — another instance applied them
    while this one did not own their partition (frozen past its session timeout, then resumed
    with the batch in hand). The whole transaction was rolled back: this instance's view is
    behind the store, its tallies would overwrite newer ones and its counters count the other
    instance's work. The caller rebuilds from the store and tries again."""

    def __init__(self, present: int, total: int) -> None:
        super().__init__(f"{present} of {total} judgements already stored by another instance")
        self.present = present
        self.total = total


class StateFenced(AlreadyStored):
    """A tally's stored state is not the one this instance built on: another instance wrote it
    since (it owns the group's partition now, or owned it while this one was frozen). The
    transaction was rolled back; the caller restores from the store and tries again."""

    def __init__(self, fenced: int, total: int) -> None:
        Exception.__init__(
            self, f"{fenced} of {total} tally states written meanwhile by another instance"
        )
        self.present = 0
        self.total = total


@dataclass(frozen=True, slots=True)
class TallyWrite:
    """One tally to store: its numbers, its whole state (plain data, :mod:`groundwatch.core.
    tagging.state`; ``None``: none, the tally will be replayed), the fresh ``token`` this write
    sets and the ``parent`` token it must find (the one its writer restored or wrote last; 0:
    none). A bare :class:`GroupTally` given to :meth:`AnalyticsStore.save` writes no state and
    no fence."""

    tally: GroupTally
    state: Any = None
    token: int = 0
    parent: int = 0


#: The columns each store write gives, in the order ``save`` builds its value tuples.
_JUDGEMENT_COLUMNS = (
    "probe_id",
    "run_id",
    "target",
    "cohort",
    "scenario",
    "dataset_id",
    "group_id",
    "form_id",
    "query",
    "verdict",
    "tier",
    "reason",
    "answer",
    "expected",
    "retrieved_ids",
    "relevant_doc_ids",
    "context_has_answer",
    "error_kind",
    "group_forms",
    "series",
    "cycle",
    "truth_version",
    "scores",
    "probe_created_at",
    "judged_at",
    "tallied_at",
    "expected_ref",
)
_TALLY_COLUMNS = ("target", "cohort", "group_id", *_TALLY_UPDATED)
_TRANSITION_COLUMNS = (
    "target",
    "cohort",
    "group_id",
    "from_status",
    "to_status",
    "series",
    "cycle",
    "at",
)


class AnalyticsStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self._mysql = is_mysql(engine)
        table = TallyRow.__table__
        if self._mysql:
            self._insert_judgements = mysql.insert(JudgementRow).prefix_with("IGNORE")
            ins = mysql.insert(TallyRow)
            # the fence: a row is updated only over the token its writer built on; MySQL has no
            # WHERE on an upsert, so every column keeps its value unless the tokens match, and
            # the token itself is assigned last (MySQL reads the new values of the columns
            # assigned before it)
            fenced = table.c.state_token == ins.inserted.state_parent
            # (a list of pairs: SQLAlchemy keeps its order, a dict's it sorts by the table's)
            updates: list[tuple[str, Any]] = [
                (c, func.if_(fenced, ins.inserted[c], table.c[c]))
                for c in _TALLY_UPDATED
                if c != "state_token"
            ]
            updates.append(
                ("state_token", func.if_(fenced, ins.inserted.state_token, table.c.state_token))
            )
            self._upsert_tallies = ins.on_duplicate_key_update(updates)
            clock = mysql.insert(SeriesClockRow)
            newer = clock.inserted.cycle > SeriesClockRow.cycle
            same = clock.inserted.cycle == SeriesClockRow.cycle
            self._upsert_clocks = clock.on_duplicate_key_update(
                [  # started_at first: it compares with the cycle as stored
                    (
                        "started_at",
                        _clock_started(
                            newer, same, clock.inserted.started_at, SeriesClockRow.started_at
                        ),
                    ),
                    ("cycle", case((newer, clock.inserted.cycle), else_=SeriesClockRow.cycle)),
                ]
            )
        else:
            self._insert_judgements = dialect_insert(engine, JudgementRow).on_conflict_do_nothing()
            upsert = dialect_insert(engine, TallyRow)
            self._upsert_tallies = upsert.on_conflict_do_update(
                index_elements=["target", "cohort", "group_id"],
                set_={c: getattr(upsert.excluded, c) for c in _TALLY_UPDATED},
                where=table.c.state_token == upsert.excluded.state_parent,
            )
            clock = dialect_insert(engine, SeriesClockRow)
            newer = clock.excluded.cycle > SeriesClockRow.cycle
            same = clock.excluded.cycle == SeriesClockRow.cycle
            self._upsert_clocks = clock.on_conflict_do_update(
                index_elements=["series"],
                set_={
                    "cycle": case((newer, clock.excluded.cycle), else_=SeriesClockRow.cycle),
                    "started_at": _clock_started(
                        newer, same, clock.excluded.started_at, SeriesClockRow.started_at
                    ),
                },
            )
        self._judgements = _Bulk(
            engine,
            self._insert_judgements,
            JudgementRow.__table__,
            _JUDGEMENT_COLUMNS,
            preprocessed=("expected", "relevant_doc_ids", "tallied_at"),
        )
        self._tallies = _Bulk(
            engine,
            self._upsert_tallies,
            TallyRow.__table__,
            _TALLY_COLUMNS,
            preprocessed=("updated_at",),
        )
        self._transitions = _Bulk(
            engine, insert(TransitionRow), TransitionRow.__table__, _TRANSITION_COLUMNS
        )
        self._clocks = _Bulk(
            engine, self._upsert_clocks, SeriesClockRow.__table__, ("series", "cycle", "started_at")
        )
        # an answer referenced again is written with the writer's generation: inserted if a
        # sweep removed it, its generation raised if older (what keeps it from the sweep)
        if self._mysql:
            ins_e = mysql.insert(ExpectedAnswerRow)
            expected = ins_e.on_duplicate_key_update(
                gen=func.greatest(ExpectedAnswerRow.gen, ins_e.inserted.gen)
            )
        else:
            ins_e = dialect_insert(engine, ExpectedAnswerRow)
            expected = ins_e.on_conflict_do_update(
                index_elements=["ref"],
                set_={"gen": ins_e.excluded.gen},
                where=ExpectedAnswerRow.gen < ins_e.excluded.gen,
            )
        self._expected = _Bulk(
            engine,
            expected,
            ExpectedAnswerRow.__table__,
            ("ref", "expected", "gen"),
            preprocessed=("expected",),
        )
        #: references known written in generation ``_expected_gen`` (added after a commit
        #: only: a rolled-back batch's are not); a new generation (a sweep) empties it
        self._expected_stored: set[str] = set()
        self._expected_gen = -1
        self._insert_windows = (
            mysql.insert(RunRow).prefix_with("IGNORE")
            if self._mysql
            else dialect_insert(engine, RunRow).on_conflict_do_nothing()
        )
        #: traffic windows known recorded in ``runs`` (as ``_expected_stored``)
        self._windows_stored: set[str] = set()

    def save(
        self,
        judgements: Sequence[Judgement],
        tallies: Iterable[GroupTally | TallyWrite],
        transitions: Sequence[Transition] = (),
    ) -> None:
        """One transaction: the applied judgements, the tallies they changed and the status
        transitions they caused — so a replay after a crash finds all or none of them. And only
        if every judgement is new: one stored already (by another instance) rolls the whole
        transaction back and raises :class:`AlreadyStored` — the store is the fence that decides
        which instance applied (and counts) a judgement, whatever each believes it owns. A
        tally's state is fenced likewise: written only over the state its writer built on
        (:class:`TallyWrite`), else :class:`StateFenced` (an :class:`AlreadyStored`) rolls all
        back. The series' newest cycles move with the judgements (``series_clocks``).

        Each table is one driver-level ``executemany`` of plain tuples (:class:`_Bulk`): the
        statement compiled once, the rows streamed by the driver (sqlite3 executemany, psycopg
        pipeline) — no per-row parameter dicts, no ORM objects, nothing read back.
        """
        now = datetime.now(UTC)
        bulk = self._judgements
        tallied_at = bulk.bind("tallied_at", now)
        # The forms of a group carry the same expected answer and relevant ids (the same objects,
        # in process): each is converted once per batch, keyed by identity (alive all batch).
        # The expected answer is stored once (``expected_answers``) and referenced by its hash.
        expected_of: dict[int, str] = {}
        payloads: dict[str, Any] = {}
        relevant_of: dict[int, Any] = {}
        for j in judgements:
            if id(j.expected) not in expected_of:
                payload = j.expected.model_dump(mode="json")
                ref = expected_ref(payload)
                expected_of[id(j.expected)] = ref
                payloads[ref] = payload
            if id(j.relevant_doc_ids) not in relevant_of:
                relevant_of[id(j.relevant_doc_ids)] = bulk.bind(
                    "relevant_doc_ids", j.relevant_doc_ids
                )
        rows = [
            (
                str(j.probe_id),
                j.run_id,
                j.target,
                j.cohort,
                j.scenario,
                j.dataset_id,
                j.group_id,
                j.form_id,
                j.query,
                j.verdict.value,
                j.tier,
                j.reason,
                j.answer,
                None,  # in expected_answers, by expected_ref
                j.retrieved_ids,
                relevant_of[id(j.relevant_doc_ids)],
                j.context_has_answer,
                j.error_kind,
                j.group_forms,
                j.series,
                j.cycle,
                j.expected.version,
                # serialized by pydantic in one call, embedded as is by the JSON column's orjson
                orjson.Fragment(scores_json_bytes(j.scores)),
                j.probe_created_at,
                j.judged_at,
                tallied_at,
                expected_of[id(j.expected)],
            )
            for j in judgements
        ]
        updated_at = self._tallies.bind("updated_at", now)
        tally_rows = []
        fenced: list[tuple[GroupKey, int]] = []
        dumps = orjson.dumps
        for w in tallies:
            if isinstance(w, GroupTally):
                t, state, token, parent = w, None, 0, 0
            else:
                t, state, token, parent = w.tally, w.state, w.token, w.parent
            tally_rows.append(
                (
                    t.target,
                    t.cohort,
                    t.group_id,
                    t.dataset_id,
                    t.scenario,
                    t.group_forms,
                    t.correct,
                    t.incorrect,
                    t.error,
                    t.undecided,
                    t.status.value,
                    t.flaky_forms,
                    t.series,
                    t.cycle,
                    t.history_from_cycle,
                    updated_at,
                    None if state is None else dumps(state),
                    token,
                    parent,
                )
            )
            if token:
                fenced.append(((t.target, t.cohort, t.group_id), token))
        clock_rows = _clock_rows(judgements)
        windows = _traffic_windows(judgements, self._windows_stored)
        transition_rows = [
            (
                tr.target,
                tr.cohort,
                tr.group_id,
                tr.from_status.value,
                tr.to_status.value,
                tr.series,
                tr.cycle,
                datetime.fromtimestamp(tr.at, UTC) if tr.at else now,
            )
            for tr in transitions
        ]
        with self.engine.begin() as conn:
            inserted = self._judgements.run(conn, rows)
            if inserted != len(rows):
                raise AlreadyStored(len(rows) - inserted, len(rows))  # leaving `begin`: rollback
            # read after the first write (on SQLite that holds the write lock, so no sweep
            # runs until the commit), locked until the commit elsewhere
            gen = generation(conn) if payloads else self._expected_gen
            known = self._expected_stored if gen == self._expected_gen else set()
            # in one order in every writer: an upsert locks its row, and two writers that
            # share answers would otherwise deadlock
            new_expected = sorted(ref for ref in payloads if ref not in known)
            bind = self._expected.bind
            self._expected.run(
                conn, [(ref, bind("expected", payloads[ref]), gen) for ref in new_expected]
            )
            written = self._tallies.run(conn, tally_rows)
            # a row the fence kept is not counted by SQLite and PostgreSQL (ON CONFLICT … WHERE
            # false); MySQL counts it as found, so its tokens are read back
            lost = self._fenced_off(conn, fenced) if self._mysql else len(tally_rows) - written
            if lost:
                raise StateFenced(lost, len(tally_rows))  # leaving `begin`: rollback
            self._transitions.run(conn, transition_rows)
            self._clocks.run(conn, clock_rows)
            if windows:
                conn.execute(self._insert_windows, list(windows.values()))
        if gen != self._expected_gen:
            self._expected_stored, self._expected_gen = set(), gen
        self._expected_stored.update(new_expected)
        self._windows_stored.update(windows)

    @staticmethod
    def _fenced_off(conn: Any, fenced: Sequence[tuple[GroupKey, int]]) -> int:
        """How many of ``fenced`` (key, token written) do not hold their token now: rows the
        fence kept (MySQL counts a row found and left unchanged like an insert, so its rowcount
        cannot tell). The rows are locked by the upsert until the commit."""
        lost = 0
        for i in range(0, len(fenced), 500):
            chunk = dict(fenced[i : i + 500])
            key = tuple_(TallyRow.target, TallyRow.cohort, TallyRow.group_id)
            stmt = select(
                TallyRow.target, TallyRow.cohort, TallyRow.group_id, TallyRow.state_token
            ).where(key.in_(list(chunk)))
            found = {(r[0], r[1], r[2]): int(r[3]) for r in conn.execute(stmt)}
            lost += sum(1 for k, token in chunk.items() if found.get(k) != token)
        return lost

    def stored_probe_ids(self, probe_ids: Sequence[str]) -> set[str]:
        """Which of ``probe_ids`` have a stored judgement."""
        found: set[str] = set()
        with self.engine.connect() as conn:
            for i in range(0, len(probe_ids), 500):
                chunk = list(probe_ids[i : i + 500])
                stmt = select(JudgementRow.probe_id).where(JudgementRow.probe_id.in_(chunk))
                found.update(str(r[0]) for r in conn.execute(stmt))
        return found

    def judged_keys(self, probe_ids: Sequence[str]) -> dict[str, GroupKey]:
        """The tally (target, cohort, group) each of ``probe_ids`` with a stored judgement
        counts in."""
        J = JudgementRow
        found: dict[str, GroupKey] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(probe_ids), 500):
                chunk = list(probe_ids[i : i + 500])
                stmt = select(J.probe_id, J.target, J.cohort, J.group_id).where(
                    J.probe_id.in_(chunk)
                )
                rows = conn.execute(stmt)
                found.update((str(p), (str(t), str(c), str(g))) for p, t, c, g in rows)
        return found

    def people_verdicts(self) -> list[tuple[JudgedAnswer, str, int]]:
        """The newest person's verdict of every answer one was given on, with its revision
        and where the answer counts (:func:`groundwatch.adapters.db.human_verdicts.
        counted_revisions`)."""
        return counted_revisions(self.engine)

    def save_epoch(self, epoch: Epoch) -> list[Epoch]:
        """Store a restart of a series' numbering unless one at the same start is stored (another
        instance saw it first), and return every stored epoch of the series, so the caller
        places the cycles as the first writer did."""
        values = {
            "series": epoch.series,
            "started_at": epoch.started_at,
            "offset": epoch.offset,
            "first_cycle": epoch.first_cycle,
            "created_at": datetime.now(UTC),
        }
        if is_mysql(self.engine):
            stmt = mysql.insert(SeriesEpochRow).prefix_with("IGNORE").values(**values)
        else:
            stmt = (
                dialect_insert(self.engine, SeriesEpochRow)
                .values(**values)
                .on_conflict_do_nothing(index_elements=["series", "started_at"])
            )
        with self.engine.begin() as conn:
            conn.execute(stmt)
        return [e for e in self.load_epochs() if e.series == epoch.series]

    def load_epochs(self) -> list[Epoch]:
        """Every stored epoch (restart of a series' numbering), oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(
                    SeriesEpochRow.series,
                    SeriesEpochRow.started_at,
                    SeriesEpochRow.offset,
                    SeriesEpochRow.first_cycle,
                ).order_by(SeriesEpochRow.series, SeriesEpochRow.started_at)
            ).all()
        return [Epoch(r[0], float(r[1]), int(r[2]), int(r[3])) for r in rows]

    def newest_cycles(self) -> dict[str, tuple[int, float | None]]:
        """Per series: the newest stored cycle (as the series counts it) and the first probe
        time of that cycle — a lower bound of no later cycle's start, which is what the clock
        needs to tell a restarted numbering from a late judgement after a restart. Kept with
        every batch (``series_clocks``): one row per series, no scan of the judgements."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(SeriesClockRow.series, SeriesClockRow.cycle, SeriesClockRow.started_at)
            ).all()
        return {r[0]: (int(r[1]), None if r[2] is None else float(r[2])) for r in rows}

    def load_states(self) -> Iterator[tuple[GroupKey, Any, int]]:
        """Every stored tally's key, state (decoded; ``None`` where none was written) and fence
        token: what a new owner restores its partitions from. Streamed in chunks, through the
        driver's cursor, as plain tuples: SQLAlchemy's row objects cost more than the decoding
        at 200k rows."""
        loads = orjson.loads
        sql = str(
            select(
                TallyRow.target,
                TallyRow.cohort,
                TallyRow.group_id,
                TallyRow.state,
                TallyRow.state_token,
            ).compile(dialect=self.engine.dialect)
        )
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute(sql)
            while rows := cursor.fetchmany(5000):
                for target, cohort, group_id, blob, token in rows:
                    yield (
                        (target, cohort, group_id),
                        None if blob is None else loads(blob),
                        int(token),
                    )
            cursor.close()
        finally:
            raw.close()

    def load_observations(self, *, stateless_only: bool = False) -> list[Observation]:
        """The stored judgements a rebuild needs, in cycle order: for each group, those from its
        tally's ``history_from_cycle`` on (its window and its forms' recent verdict history),
        never the whole series. Judgements of groups without a tally (none yet stored) all.
        ``stateless_only``: only those of tallies stored without a state (the rest are
        restored from their states: :meth:`load_states`)."""
        window = and_(
            TallyRow.target == JudgementRow.target,
            TallyRow.cohort == JudgementRow.cohort,
            TallyRow.group_id == JudgementRow.group_id,
        )
        # the columns an observation needs, as plain rows: no ORM objects (identity map, every
        # column decoded) for what may be millions of judgements after a rebalance
        if stateless_only:
            stmt = (
                select(*OBSERVATION_COLUMNS)
                .join(TallyRow, window)
                .where(
                    TallyRow.state.is_(None),
                    JudgementRow.cycle >= TallyRow.history_from_cycle,
                )
            )
        else:
            stmt = (
                select(*OBSERVATION_COLUMNS)
                .outerjoin(TallyRow, window)
                .where(
                    (TallyRow.group_id.is_(None))
                    | (JudgementRow.cycle >= TallyRow.history_from_cycle)
                )
            )
        stmt = stmt.order_by(JudgementRow.cycle, JudgementRow.tallied_at, JudgementRow.probe_id)
        with self.engine.connect() as conn:
            return [observation_from_row(r) for r in conn.execute(stmt)]

    def transitions(
        self, *, target: str | None = None, group_id: str | None = None, limit: int = 100
    ) -> list[TransitionRow]:
        """Stored transitions, newest first."""
        with Session(self.engine) as s:
            q = select(TransitionRow)
            if target:
                q = q.where(TransitionRow.target == target)
            if group_id:
                q = q.where(TransitionRow.group_id == group_id)
            q = q.order_by(TransitionRow.id.desc()).limit(limit)
            return list(s.scalars(q).all())

    def group_judgements(
        self, group_id: str, target: str | None = None, limit: int | None = None
    ) -> list[JudgementRow]:
        """The group's stored judgements, the newest ``limit`` of them (all when None), in
        display order: by cohort, form and cycle (the last row is the newest of its form).
        A group asked every cycle has a row per form per cycle, so a monitor's history of it
        grows without end: callers that show it take the newest."""
        with Session(self.engine) as s:
            q = select(JudgementRow).where(JudgementRow.group_id == group_id)
            if target:
                q = q.where(JudgementRow.target == target)
            q = q.order_by(JudgementRow.cycle.desc(), JudgementRow.tallied_at.desc())
            if limit is not None:
                q = q.limit(limit)
            rows = list(s.scalars(q).all())
        fill_expected(self.engine, rows)
        rows.reverse()  # oldest first, so the sort below keeps time order within a form
        rows.sort(key=lambda r: (r.cohort, r.form_id, r.cycle))
        return rows

    def count_group_judgements(self, group_id: str, target: str | None = None) -> int:
        with Session(self.engine) as s:
            q = select(func.count()).select_from(JudgementRow)
            q = q.where(JudgementRow.group_id == group_id)
            if target:
                q = q.where(JudgementRow.target == target)
            return int(s.scalar(q) or 0)

    def run_observations(self, run_id: str) -> list[Observation]:
        with Session(self.engine) as s:
            rows = s.scalars(select(JudgementRow).where(JudgementRow.run_id == run_id)).all()
            return [observation_from_row(r) for r in rows]


def _clock_started(newer: Any, same: Any, new: Any, old: Any) -> Any:
    """A series clock's first probe time after an upsert: the new cycle's when it is newer, the
    earlier of the two for the same cycle, else the stored one (NULL: not known)."""
    return case(
        (newer, new),
        (same & old.is_(None), new),
        (same & (new < old), new),
        else_=old,
    )


def _traffic_windows(judgements: Sequence[Judgement], known: set[str]) -> dict[str, dict[str, Any]]:
    """The ``runs`` rows of the batch's windows of users' traffic not known recorded: a window
    is a cycle no generator records, and retention reads the cycles of every series from
    ``runs`` (a window left out would keep its raw judgements for ever)."""
    out: dict[str, dict[str, Any]] = {}
    for j in judgements:
        if j.cohort != TRAFFIC_COHORT or not j.series or j.run_id in known or j.run_id in out:
            continue
        out[j.run_id] = {
            "run_id": j.run_id,
            "dataset_id": j.dataset_id[:64],
            "series": j.series[:128],
            "cycle": j.cycle,
            "targets": [],
            "probes": 0,
            "status": TRAFFIC_WINDOW_STATUS,
            "started_at": j.cycle_started_at or j.probe_created_at,
        }
    return out


def _clock_rows(judgements: Sequence[Judgement]) -> list[tuple[str, int, float | None]]:
    """Per series of the batch: its newest cycle and that cycle's first probe time (what
    ``series_clocks`` keeps, merged with the stored row by the upsert)."""
    newest: dict[str, list[Any]] = {}
    for j in judgements:
        if not j.series:
            continue
        at = j.probe_created_at.timestamp()
        cur = newest.get(j.series)
        if cur is None or j.cycle > cur[0]:
            newest[j.series] = [j.cycle, at]
        elif j.cycle == cur[0] and at < cur[1]:
            cur[1] = at
    return [(series, c, at) for series, (c, at) in sorted(newest.items())]
