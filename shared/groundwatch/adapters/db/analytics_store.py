"""Analytics persistence: applied judgements (the idempotency record), per-group tallies and the
status transitions between cycles.

One transaction per consumed batch holds all three, and the consume loop commits Kafka offsets only
after it: a crash between the two replays the batch, and the ``probe_id`` primary key plus the
tagger's duplicate check make the replay a no-op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Engine, and_, func, insert, select
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import Session, sessionmaker

from groundwatch.adapters.db.engine import dialect_insert, is_mysql
from groundwatch.adapters.db.models import JudgementRow, SeriesEpochRow, TallyRow, TransitionRow
from groundwatch.adapters.db.observations import OBSERVATION_COLUMNS, observation_from_row
from groundwatch.contracts import Judgement
from groundwatch.core.cycles import Epoch
from groundwatch.core.score_json import scores_json_bytes
from groundwatch.core.tagging import GroupTally, Observation, Transition

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
        if is_mysql(engine):
            self._insert_judgements = mysql.insert(JudgementRow).prefix_with("IGNORE")
            ins = mysql.insert(TallyRow)
            self._upsert_tallies = ins.on_duplicate_key_update(
                {c: ins.inserted[c] for c in _TALLY_UPDATED}
            )
        else:
            self._insert_judgements = dialect_insert(engine, JudgementRow).on_conflict_do_nothing()
            upsert = dialect_insert(engine, TallyRow)
            self._upsert_tallies = upsert.on_conflict_do_update(
                index_elements=["target", "cohort", "group_id"],
                set_={c: getattr(upsert.excluded, c) for c in _TALLY_UPDATED},
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

    def save(
        self,
        judgements: Sequence[Judgement],
        tallies: Iterable[GroupTally],
        transitions: Sequence[Transition] = (),
    ) -> None:
        """One transaction: the applied judgements, the tallies they changed and the status
        transitions they caused — so a replay after a crash finds all or none of them. And only
        if every judgement is new: one stored already (by another instance) rolls the whole
        transaction back and raises :class:`AlreadyStored` — the store is the fence that decides
        which instance applied (and counts) a judgement, whatever each believes it owns.

        Each table is one driver-level ``executemany`` of plain tuples (:class:`_Bulk`): the
        statement compiled once, the rows streamed by the driver (sqlite3 executemany, psycopg
        pipeline) — no per-row parameter dicts, no ORM objects, nothing read back.
        """
        now = datetime.now(UTC)
        bulk = self._judgements
        tallied_at = bulk.bind("tallied_at", now)
        # The forms of a group carry the same expected answer and relevant ids (the same objects,
        # in process): each is converted once per batch, keyed by identity (alive all batch).
        expected_of: dict[int, Any] = {}
        relevant_of: dict[int, Any] = {}
        for j in judgements:
            if id(j.expected) not in expected_of:
                expected_of[id(j.expected)] = bulk.bind(
                    "expected", j.expected.model_dump(mode="json")
                )
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
                expected_of[id(j.expected)],
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
            )
            for j in judgements
        ]
        updated_at = self._tallies.bind("updated_at", now)
        tally_rows = [
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
            )
            for t in tallies
        ]
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
            self._tallies.run(conn, tally_rows)
            self._transitions.run(conn, transition_rows)

    def stored_probe_ids(self, probe_ids: Sequence[str]) -> set[str]:
        """Which of ``probe_ids`` have a stored judgement."""
        found: set[str] = set()
        with self.engine.connect() as conn:
            for i in range(0, len(probe_ids), 500):
                chunk = list(probe_ids[i : i + 500])
                stmt = select(JudgementRow.probe_id).where(JudgementRow.probe_id.in_(chunk))
                found.update(str(r[0]) for r in conn.execute(stmt))
        return found

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
        needs to tell a restarted numbering from a late judgement after a restart."""
        newest = (
            select(JudgementRow.series, func.max(JudgementRow.cycle).label("cycle"))
            .where(JudgementRow.series != "")
            .group_by(JudgementRow.series)
            .subquery()
        )
        stmt = (
            select(newest.c.series, newest.c.cycle, func.min(JudgementRow.probe_created_at))
            .join(
                JudgementRow,
                and_(JudgementRow.series == newest.c.series, JudgementRow.cycle == newest.c.cycle),
            )
            .group_by(newest.c.series, newest.c.cycle)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        out: dict[str, tuple[int, float | None]] = {}
        for series, cycle, first in rows:
            at = None
            if first is not None:
                at = (first if first.tzinfo else first.replace(tzinfo=UTC)).timestamp()
            out[series] = (int(cycle), at)
        return out

    def load_observations(self) -> list[Observation]:
        """The stored judgements a rebuild needs, in cycle order: for each group, those from its
        tally's ``history_from_cycle`` on (its window and its forms' recent verdict history),
        never the whole series. Judgements of groups without a tally (none yet stored) all."""
        window = and_(
            TallyRow.target == JudgementRow.target,
            TallyRow.cohort == JudgementRow.cohort,
            TallyRow.group_id == JudgementRow.group_id,
        )
        # the columns an observation needs, as plain rows: no ORM objects (identity map, every
        # column decoded) for what may be millions of judgements after a rebalance
        stmt = (
            select(*OBSERVATION_COLUMNS)
            .outerjoin(TallyRow, window)
            .where(
                (TallyRow.group_id.is_(None)) | (JudgementRow.cycle >= TallyRow.history_from_cycle)
            )
            .order_by(JudgementRow.cycle, JudgementRow.tallied_at, JudgementRow.probe_id)
        )
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
