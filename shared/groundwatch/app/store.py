"""The store of judgements as the use cases read it: open it, replay a series into the tagger,
list the groups, runs and dead letters.

The commands that read the store (``groups``, ``show``, ``runs``, ``dead-letters``, ``report``)
and the ones that write it (``run``, ``demo``, ``db-upgrade``) open it here; none of them holds an
engine or a session. A store that is not there, or holds no groundwatch tables, is a
:class:`~groundwatch.errors.ConfigError` naming the option or variable that pointed at it (exit 2);
what was asked for and is not stored (a series, a group) is :class:`NothingStored` (exit 3).

SQLAlchemy is imported inside the functions: the CLI imports this module for its help text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundwatch.errors import ConfigError, GroundwatchError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from groundwatch.adapters.db.evidence import StoreEvidence
    from groundwatch.adapters.db.runs import RunSummaryRow
    from groundwatch.adapters.db.tables import DeadLetterRow
    from groundwatch.core.data_quality import GroupSpec
    from groundwatch.core.tagging import GroupStatus, Observation, Tagger
    from groundwatch.report.document import GroupResult


#: How many windows back a replay reads summaries from: a group probed in one cycle of k (a
#: sampled cycle) needs its last N probed cycles, up to k x N cycles back.
_WINDOW_SLACK = 50


class NothingStored(GroundwatchError):
    """What was asked for (a monitoring series, a group) is not in the store."""


def shown_url(url: str) -> str:
    """A URL as it may be printed (password hidden)."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {text[0] if text else ''}"[:300]


@dataclass
class Store:
    """An open store: its URL, the option or variable that named it (for errors) and its
    engine, which stays inside the service layer. Close it (or use it as a context manager)."""

    url: str
    name: str
    engine: Engine

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def evidence(self) -> StoreEvidence:
        """The texts beside the judgements (questions, answers, SQL) that fill a group's rows."""
        from groundwatch.adapters.db.evidence import StoreEvidence

        return StoreEvidence(self.engine)

    def change_mark(self) -> tuple[int, ...]:
        """What changes when the store does for a replay: its judgements and runs (a cycle
        stored, one pruned) and the newest person's verdict. Equal marks: a replay would give
        the same tallies."""
        from sqlalchemy import func, inspect, select

        from groundwatch.adapters.db.tables import HumanVerdictRow, JudgementRow, RunRow

        with self.engine.connect() as conn:
            judged = conn.execute(select(func.count()).select_from(JudgementRow)).scalar()
            runs = conn.execute(select(func.count()).select_from(RunRow)).scalar()
            people = 0
            if inspect(conn).has_table(HumanVerdictRow.__tablename__):
                people = conn.execute(select(func.max(HumanVerdictRow.id))).scalar() or 0
        return int(judged or 0), int(runs or 0), int(people)

    def latest_series(self, series: str | None) -> tuple[str, list[Observation]]:
        """(series, its stored judgements in cycle order): ``series``, else the latest probed."""
        return self._series_observations(series, window_runs=0)

    def _series_observations(
        self, series: str | None, window_runs: int
    ) -> tuple[str, list[Observation]]:
        """The series' judgements in cycle order; a summarised (pruned) cycle's from its
        summaries (only those a window of ``window_runs`` cycles can reach; 0: all)."""
        from sqlalchemy import inspect
        from sqlalchemy.orm import Session

        from groundwatch.adapters.db.observations import observations_for_series
        from groundwatch.adapters.db.runs import latest_cycle

        latest = latest_cycle(self.engine, series)
        if latest is None:
            what = f"series {series!r}" if series else "monitoring cycles"
            raise NothingStored(f"no {what} in the store")
        name, top = latest
        with Session(self.engine) as session:
            raw = self.counted(observations_for_series(session, name))
        if not inspect(self.engine).has_table("pruned_cycles"):
            return name, raw
        from groundwatch.adapters.db.retention import pruned_cycles, summary_observations

        pruned = pruned_cycles(self.engine, name)
        if not pruned:
            return name, raw
        # a window counts each group's own last N probed cycles: every summary a group has
        # from N cycles before the newest on reaches it only if the group was probed in them,
        # so the summaries are read from the oldest cycle any group could still need
        from_cycle = 0 if window_runs <= 0 else max(0, top - _WINDOW_SLACK * window_runs)
        kept = [o for o in raw if o.cycle not in pruned]
        summarised = summary_observations(self.engine, name, pruned, from_cycle)
        return name, sorted([*summarised, *kept], key=lambda o: o.cycle)

    def replay(self, series: str | None, window_runs: int) -> Replay:
        """The series' judgements replayed through the tagger with the live services' window
        and evidence rule, so a status here is the one ``/groups`` and the report show."""
        from groundwatch.core.tagging import Tagger, Window
        from groundwatch.runtime.evidence_settings import evidence_rule

        name, observations = self._series_observations(series, window_runs)
        tagger = Tagger(Window(runs=window_runs or None, evidence=evidence_rule()))
        tagger.apply_many(observations)
        cycle = max((o.cycle for o in observations), default=0)
        return Replay(name, cycle, tagger)

    def status_changes(
        self, series: str, target: str, group_id: str, limit: int = 200
    ) -> list[tuple[str, str, str, int]]:
        """The group's stored status changes in ``series``, newest first: (cohort, from, to,
        cycle) — what ``show`` says "unknown since cycle N, was robust" from."""
        from sqlalchemy import select

        from groundwatch.adapters.db.tables import TransitionRow as T

        q = (
            select(T.cohort, T.from_status, T.to_status, T.cycle)
            .where(T.target == target, T.group_id == group_id, T.series == series)
            .order_by(T.id.desc())
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [(str(c), str(a), str(b), int(n)) for c, a, b, n in conn.execute(q)]

    def observations_for_runs(self, run_ids: Sequence[str]) -> list[Observation]:
        from sqlalchemy.orm import Session

        from groundwatch.adapters.db.observations import observations_for_runs

        with Session(self.engine) as session:
            return self.counted(observations_for_runs(session, run_ids))

    def counted(self, observations: list[Observation]) -> list[Observation]:
        """``observations`` with each answer a person gave a verdict on counted by the
        person's (newest) verdict instead of the judge's: a correction changes the group's
        tallies and status wherever the store is replayed. The stored judgement keeps the
        judge's verdict, so ``judge-agreement`` can still compare the two."""
        from dataclasses import replace

        from groundwatch.adapters.db.human_verdicts import counted_verdicts
        from groundwatch.core.model import Verdict

        people = counted_verdicts(self.engine)
        if not people:
            return observations
        out = []
        for o in observations:
            v = people.get(o.probe_id)
            out.append(o if v is None or v == o.verdict.value else replace(o, verdict=Verdict(v)))
        return out

    def specs_for_runs(self, run_ids: Sequence[str]) -> dict[str, GroupSpec]:
        """The groups' specs (SQL, answer, domain) of these runs, for the data-quality check."""
        from sqlalchemy.orm import Session

        from groundwatch.adapters.db.observations import specs_for_runs

        with Session(self.engine) as session:
            return specs_for_runs(session, run_ids)

    def answers(self, probe_ids: Sequence[str]) -> list[tuple[str, str | None, Any]]:
        """(probe id, answer, expected) of stored judgements."""
        from sqlalchemy import select

        from groundwatch.adapters.db.expected import EXPECTED
        from groundwatch.adapters.db.tables import JudgementRow

        with self.engine.connect() as conn:
            rows = conn.execute(
                select(JudgementRow.probe_id, JudgementRow.answer, EXPECTED).where(
                    JudgementRow.probe_id.in_(list(probe_ids))
                )
            ).all()
        return [(str(p), a, e) for p, a, e in rows]

    def runs(self, *, series: str | None = None, limit: int = 20) -> list[RunSummaryRow]:
        """The stored runs (cycles), newest first, with their judgements by verdict."""
        from groundwatch.adapters.db.runs import list_runs

        return list_runs(self.engine, series=series, limit=limit)

    def series_group_ids(self, series: str) -> set[str]:
        from groundwatch.adapters.db.runs import series_group_ids

        return series_group_ids(self.engine, series)

    def dead_letters(self, *, service: str | None = None, limit: int = 20) -> DeadLetters | None:
        """The newest dead letters (of ``service``), with the counts; None when the store
        predates the dead-letter table."""
        from sqlalchemy import inspect

        from groundwatch.adapters.db.dead_letters import DeadLetterStore

        if not inspect(self.engine).has_table("dead_letters"):
            return None
        store = DeadLetterStore(self.engine)
        found = store.newest(limit=limit, service=service)
        total = store.count(service=service)
        everywhere = store.count() if service is not None and not found else total
        return DeadLetters(found, total, everywhere)


@dataclass(frozen=True)
class Replay:
    """A monitoring series replayed from the store: its name, latest cycle and tagger."""

    series: str
    cycle: int
    tagger: Tagger


@dataclass(frozen=True)
class DeadLetters:
    """The newest dead letters asked for, how many there are of the stage asked for, and (when
    none of that stage) how many of every stage."""

    newest: list[DeadLetterRow]
    total: int
    everywhere: int


@dataclass(frozen=True)
class GroupListing:
    """A page of semantic groups of a series' latest window."""

    series: str
    cycle: int
    total: int
    rows: list[GroupResult]


def list_groups(
    store: Store,
    *,
    series: str | None,
    window_runs: int,
    target: str | None = None,
    cohort: str | None = None,
    status: Sequence[GroupStatus] | None = None,
    scenario: str | None = "factual",
    group_id: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> GroupListing:
    """Semantic groups worst first with their SQL, gold answer and forms (``groups``, ``show``)."""
    from groundwatch.report.groups import group_results

    replay = store.replay(series, window_runs)
    _known(target, replay.tagger.targets(), "target", replay.series)
    _known(cohort, replay.tagger.cohorts(target), "cohort", replay.series)
    total, rows = group_results(
        replay.tagger,
        target=target,
        cohort=cohort,
        status=status,
        scenario=scenario,
        group_id=group_id,
        evidence=store.evidence(),
        offset=offset,
        limit=limit,
    )
    return GroupListing(replay.series, replay.cycle, total, rows)


def with_people(store: Store, rows: list[GroupResult]) -> list[GroupResult]:
    """``rows`` with each form a person gave a verdict on carrying it — who, when, the note and
    the judge's verdict beside it — as the view shows it (the form's ``verdict`` is already the
    person's: the replay counts it)."""
    from groundwatch.adapters.db import human_verdicts as hv
    from groundwatch.report.document import PersonVerdict

    if not hv.has_table(store.engine):
        return rows
    people = hv.newest(store.engine, [f.probe_id for r in rows for f in r.forms])
    if not people:
        return rows

    def mark(p: hv.HumanVerdict) -> PersonVerdict:
        at = p.at.isoformat(timespec="seconds").replace("+00:00", "Z")
        return PersonVerdict(verdict=p.verdict, who=p.who, at=at, note=p.note, judge=p.judge)

    return [
        r.model_copy(
            update={
                "forms": [
                    f.model_copy(update={"person": mark(people[f.probe_id])})
                    if f.probe_id in people
                    else f
                    for f in r.forms
                ]
            }
        )
        for r in rows
    ]


def _known(name: str | None, known: Sequence[str], what: str, series: str) -> None:
    """A filter naming nothing the series holds is a typo, not an empty answer: ``--cohort lng``
    printed "0 groups" and exited 0."""
    if name is None or name in known or not known:
        return
    from groundwatch.pydantic_errors import did_you_mean

    raise ConfigError(
        f"--{what} {name!r}: series {series} has no such {what}{did_you_mean(name, known)}"
        f" (it has {', '.join(known)})"
    )


def open_store(
    url: str, name: str, *, create: bool = False, default: bool = False, writable: bool = False
) -> Store:
    """The store at ``url``, connected; with ``create`` the schema is brought to the newest
    migration, else a store without our tables is an error naming ``name`` (the option or
    variable that gave the URL; ``default``: it is the default file, said so). ``writable``:
    an existing store opened to be written to (people's verdicts), its schema left as it is."""
    from groundwatch.adapters.db.engine import open_engine

    if not create:
        _no_new_sqlite_file(url, name, default=default)
    # reading never writes: a file that is no store stays byte for byte as it was
    engine = open_engine(url, name, read_only=not (create or writable))
    if create:
        from groundwatch.adapters.db import create_schema

        try:
            create_schema(engine)
        except Exception as exc:  # a read-only file, a user without DDL rights
            engine.dispose()
            raise ConfigError(
                f"{name}: cannot create the groundwatch tables ({_first_line(exc)})"
            ) from None
        return Store(url, name, engine)
    from sqlalchemy import inspect

    if not inspect(engine).has_table("judgements"):
        engine.dispose()
        where = "the default store" if default else name
        raise ConfigError(
            f"{where} ({shown_url(url)}) holds no groundwatch judgements; run `groundwatch run"
            " --once` or `groundwatch demo` first, or point --database-url at their store"
        )
    return Store(url, name, engine)


def _no_new_sqlite_file(url: str, name: str, *, default: bool) -> None:
    """Reading a SQLite store that is not there must not create an empty one as a side effect
    (SQLite makes the file on connect): say where the store was looked for instead."""
    from sqlalchemy.engine import make_url

    from groundwatch.adapters.db.engine import database_url_problem

    if database_url_problem(url) is not None:
        return  # open_engine names the problem
    parsed = make_url(url)
    db = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or db in ("", ":memory:") or db.startswith("file:"):
        return
    if not Path(db).exists():
        where = "the default store" if default else name
        raise ConfigError(
            f"{where}: cannot connect (no such database file {Path(db).resolve()}); run"
            " `groundwatch run --once` or `groundwatch demo` first, or point --database-url"
            " at their store"
        )


def upgrade_schema(url: str, name: str) -> str:
    """Migrate the store at ``url`` to the newest schema (Alembic); its URL as shown."""
    from groundwatch.adapters.db import create_schema
    from groundwatch.adapters.db.engine import open_engine

    engine = open_engine(url, name)
    try:
        create_schema(engine)
        return engine.url.render_as_string(hide_password=True)
    finally:
        engine.dispose()


def check_database_url(url: str, name: str) -> str:
    """``url`` if it names a database SQLAlchemy can open, else :class:`ConfigError` naming
    ``name``."""
    from groundwatch.adapters.db.engine import check_database_url as check

    return check(url, name)
