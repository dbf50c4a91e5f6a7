"""SQLAlchemy 2.0 models: datasets, semantic groups, text forms, answer versions, runs, per-group
tallies, status transitions, processed judgements, dead letters and the LLM-verdict cache.

Owners (DESIGN.md): the generator writes datasets/groups/forms/answer versions/runs; analytics
writes tallies and processed judgements (its idempotency record); the judge writes the LLM cache.
Schema changes go through Alembic (``groundwatch/db/migrations``); a test checks the migrations
produce exactly these models.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Double,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def _now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class Dataset(Base):
    __tablename__ = "datasets"

    dataset_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(Text, default="")
    forms_per_cohort: Mapped[int] = mapped_column(Integer, default=3)
    cohorts: Mapped[list[Any]] = mapped_column(JSON, default=list)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class GroupRow(Base):
    """A semantic group: one filled SQL query with its SQL answer."""

    __tablename__ = "semantic_groups"

    dataset_id: Mapped[str] = mapped_column(
        ForeignKey("datasets.dataset_id", ondelete="CASCADE"), primary_key=True
    )
    group_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    sql: Mapped[str] = mapped_column(Text)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    answer: Mapped[dict[str, Any]] = mapped_column(JSON)
    answer_version: Mapped[int] = mapped_column(Integer, default=1)
    relevant_doc_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    scenario: Mapped[str] = mapped_column(String(32), default="factual")
    template_id: Mapped[str | None] = mapped_column(String(64), nullable=True)


class FormRow(Base):
    """A text form of a semantic group, in one cohort."""

    __tablename__ = "text_forms"

    dataset_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    group_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    form_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    cohort: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)

    __table_args__ = (Index("ix_text_forms_group", "dataset_id", "group_id"),)


class AnswerVersionRow(Base):
    """Every SQL answer a group has had, so stale responses are told apart from gaps."""

    __tablename__ = "answer_versions"

    dataset_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    group_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    answer: Mapped[dict[str, Any]] = mapped_column(JSON)
    observed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class RunRow(Base):
    """A probing run (a batch, or one window of continuous probing)."""

    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(String(64))
    series: Mapped[str] = mapped_column(String(128), default="")
    cycle: Mapped[int] = mapped_column(Integer, default=0)
    targets: Mapped[list[Any]] = mapped_column(JSON, default=list)
    probes: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="running")
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (Index("ix_runs_series_cycle", "series", "cycle"),)


class JudgementRow(Base):
    """One applied judgement: analytics' idempotency record (by probe_id) and the detail behind
    ``/groups/{id}``. Stored in the same transaction as the tallies it changed."""

    __tablename__ = "judgements"

    probe_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str] = mapped_column(String(128))
    cohort: Mapped[str] = mapped_column(String(64))
    scenario: Mapped[str] = mapped_column(String(32))
    dataset_id: Mapped[str] = mapped_column(String(64))
    group_id: Mapped[str] = mapped_column(String(64))
    form_id: Mapped[str] = mapped_column(String(64))
    query: Mapped[str] = mapped_column(Text)
    verdict: Mapped[str] = mapped_column(String(16))
    tier: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text, default="")
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: NULL when the expected answer is in ``expected_answers`` (``expected_ref``): every form
    #: of a group shares it, ~250 bytes a row stored once (rows written before keep theirs)
    expected: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    retrieved_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    relevant_doc_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    #: The judge's summary of the retrieved texts (gold stated / absent / cannot tell).
    context_has_answer: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    error_kind: Mapped[str | None] = mapped_column(String(64), nullable=True)
    group_forms: Mapped[int] = mapped_column(Integer, default=1)
    series: Mapped[str] = mapped_column(String(128), default="")
    cycle: Mapped[int] = mapped_column(Integer, default=0)
    truth_version: Mapped[int] = mapped_column(Integer, default=1)
    #: The judge's scores (``Judgement.scores``), one object per family
    #: (:mod:`groundwatch.core.scores`); rows of schema version 3 and older hold the flat
    #: ``{name: number}`` dict, read into the same families.
    scores: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    probe_created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    judged_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    tallied_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    expected_ref: Mapped[str | None] = mapped_column(String(32), nullable=True)

    #: One index serves both a group's drill-down (``target, group_id``: its prefix) and the
    #: rebuild's per-tally window (``target, group_id, cohort`` equal, ``cycle`` a range): every
    #: judgement is an insert into each index, and a second index on the same columns cost
    #: a fifth of the store's CPU per judgement.
    __table_args__ = (
        Index("ix_judgements_group_cohort_cycle", "target", "group_id", "cohort", "cycle"),
    )


#: A tally's state: up to megabytes for a big group over a long window (MySQL's BLOB stops at
#: 64 KB).
_STATE_BLOB = LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")


class TallyRow(Base):
    """Per (target, cohort, group) verdict counts: the live state analytics exports."""

    __tablename__ = "group_tallies"

    target: Mapped[str] = mapped_column(String(128), primary_key=True)
    cohort: Mapped[str] = mapped_column(String(64), primary_key=True)
    group_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(String(64))
    scenario: Mapped[str] = mapped_column(String(32), default="factual")
    forms_expected: Mapped[int] = mapped_column(Integer, default=1)
    correct: Mapped[int] = mapped_column(Integer, default=0)
    incorrect: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[int] = mapped_column(Integer, default=0)
    undecided: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    flaky_forms: Mapped[int] = mapped_column(Integer, default=0)
    series: Mapped[str] = mapped_column(String(128), default="")
    cycle: Mapped[int] = mapped_column(Integer, default=0)
    #: The oldest cycle a rebuild must replay for this group: its window and its forms' verdict
    #: history (flakiness) — so a restart reads the window, never the whole series.
    history_from_cycle: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    #: The tally's whole state (:mod:`groundwatch.core.tagging.state`, JSON): what a new owner of
    #: the group's partition restores instead of replaying its judgements. NULL: none written
    #: (a store from before it, or a tally written without one): that tally is replayed.
    state: Mapped[bytes | None] = mapped_column(_STATE_BLOB, nullable=True)
    #: A fence for the state: each write sets a fresh token and applies only over the token its
    #: writer restored or wrote last (``state_parent``), so an instance that lost the partition
    #: (frozen past its session) cannot overwrite the state of the one that took it over.
    state_token: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    state_parent: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class TransitionRow(Base):
    """A group's status change between cycles (robust → gap = regression, gap → robust =
    recovery): analytics appends one per change, the report and ``/transitions`` list them."""

    __tablename__ = "group_transitions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    target: Mapped[str] = mapped_column(String(128))
    cohort: Mapped[str] = mapped_column(String(64))
    group_id: Mapped[str] = mapped_column(String(64))
    from_status: Mapped[str] = mapped_column(String(16))
    to_status: Mapped[str] = mapped_column(String(16))
    series: Mapped[str] = mapped_column(String(128), default="")
    cycle: Mapped[int] = mapped_column(Integer, default=0)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)

    __table_args__ = (
        Index("ix_transitions_group", "target", "group_id"),
        Index("ix_transitions_series_cycle", "series", "cycle"),
    )


#: A dead letter's raw bytes (base64, up to ~700 KB): MySQL's TEXT stops at 64 KB.
_LONG_TEXT = Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


class SeriesEpochRow(Base):
    """A restart of a monitoring series' numbering (:mod:`groundwatch.core.cycles`): the cycles
    that started at or after ``started_at`` count as ``cycle + offset`` in the series. The first
    instance to see the restart writes it; every instance and every rebuild places the epoch's
    cycles by it (so no instance continues the numbering differently)."""

    __tablename__ = "series_epochs"

    series: Mapped[str] = mapped_column(String(128), primary_key=True)
    #: epoch seconds of the epoch's first cycle's start (exact: the clock compares it)
    started_at: Mapped[float] = mapped_column(Double, primary_key=True)
    offset: Mapped[int] = mapped_column(Integer)
    first_cycle: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class SeriesClockRow(Base):
    """Per monitoring series, the newest cycle stored (as the series counts it) and the first
    probe time of that cycle: what the series clock restarts from (:mod:`groundwatch.core.
    cycles`). Kept with every batch, so a restart reads one row per series instead of
    scanning every stored judgement for it."""

    __tablename__ = "series_clocks"

    series: Mapped[str] = mapped_column(String(128), primary_key=True)
    cycle: Mapped[int] = mapped_column(Integer)
    #: epoch seconds; NULL when the cycle's judgements carried no probe time
    started_at: Mapped[float | None] = mapped_column(Double, nullable=True)


class DeadLetterRow(Base):
    """A message no stage could process, kept whole (``DeadLetter``): the store's copy of the
    dead-letter topic, so an in-process run loses none when it exits and ``groundwatch
    dead-letters`` lists them. ``letter_key`` (a hash of where it came from and what it holds)
    makes a redelivered letter a no-op."""

    __tablename__ = "dead_letters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    letter_key: Mapped[str] = mapped_column(String(64), unique=True)
    service: Mapped[str] = mapped_column(String(128))
    source_topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column(Integer)
    offset: Mapped[int] = mapped_column(BigInteger)
    key: Mapped[str | None] = mapped_column(Text, nullable=True)
    group_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    probe_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    error: Mapped[str] = mapped_column(Text)
    raw_b64: Mapped[str] = mapped_column(_LONG_TEXT)
    failed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    stored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class LlmCacheRow(Base):
    """Cached LLM verdicts, keyed by a hash of (query, gold, response, model, prompt version)."""

    __tablename__ = "llm_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(128))
    prompt_version: Mapped[str] = mapped_column(String(32))
    verdict: Mapped[str] = mapped_column(String(16))
    raw: Mapped[str] = mapped_column(Text, default="")
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_s: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now, index=True)


class JudgementSummaryRow(Base):
    """What retention keeps of a group's pruned cycles: one row per run of consecutive cycles
    in which the group (target, cohort) had the same status, counts and form verdicts — a stable
    group costs one row however long it stays stable. ``verdicts`` holds each form's verdict,
    truth version and staleness (what a replay of the tagger needs); ``changed`` the forms whose
    verdict differs from the row before, with the answer that changed it."""

    __tablename__ = "judgement_summaries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    series: Mapped[str] = mapped_column(String(128))
    target: Mapped[str] = mapped_column(String(128))
    cohort: Mapped[str] = mapped_column(String(64))
    group_id: Mapped[str] = mapped_column(String(64))
    dataset_id: Mapped[str] = mapped_column(String(64))
    scenario: Mapped[str] = mapped_column(String(32))
    group_forms: Mapped[int] = mapped_column(Integer, default=1)
    first_cycle: Mapped[int] = mapped_column(Integer)
    last_cycle: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    correct: Mapped[int] = mapped_column(Integer, default=0)
    incorrect: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[int] = mapped_column(Integer, default=0)
    undecided: Mapped[int] = mapped_column(Integer, default=0)
    verdicts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    changed: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    __table_args__ = (
        UniqueConstraint(
            "series", "target", "cohort", "group_id", "first_cycle", name="uq_summaries_run"
        ),
        Index("ix_summaries_series_cycle", "series", "last_cycle"),
    )


class PrunedCycleRow(Base):
    """A cycle (one run) whose judgements retention summarised: the ledger that makes a pruning
    run killed half-way resumable — a cycle found here is never summarised again, only its
    remaining rows deleted (SQLite) or its partition dropped (PostgreSQL)."""

    __tablename__ = "pruned_cycles"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    series: Mapped[str] = mapped_column(String(128))
    cycle: Mapped[int] = mapped_column(Integer)
    judgements: Mapped[int] = mapped_column(Integer, default=0)
    #: every raw row of the cycle is gone (deleted, or its partition dropped)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    pruned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)

    __table_args__ = (Index("ix_pruned_cycles_series_cycle", "series", "cycle"),)


class PinnedRunRow(Base):
    """A run retention must never prune (a baseline ``diff`` compares against): its raw
    judgements stay whatever the window."""

    __tablename__ = "pinned_runs"

    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    reason: Mapped[str] = mapped_column(String(200), default="")
    pinned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class ExpectedAnswerRow(Base):
    """An expected answer (values, types, domain, attributes, version) stored once and
    referenced by the judgements of every form that was asked for it (``expected_ref``: a
    hash of its content, so two answers never share a row)."""

    __tablename__ = "expected_answers"

    ref: Mapped[str] = mapped_column(String(32), primary_key=True)
    expected: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The newest sweep generation (:class:`StoreCounterRow` ``expected_answers``) a writer
    #: referenced this answer in: a sweep removes only rows of older generations that no
    #: judgement references (:mod:`groundwatch.adapters.db.expected`).
    gen: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class StoreCounterRow(Base):
    """A named counter of the store and when it last moved (epoch seconds of the clock that
    moved it). ``expected_answers``: the sweep generation of the expected answers, locked
    (shared) by every writer of judgements for the length of its transaction."""

    __tablename__ = "store_counters"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)
    at: Mapped[float | None] = mapped_column(Float, nullable=True)


class HumanVerdictRow(Base):
    """A person's verdict on one judged answer (``probe_id``): right or wrong, why, who and
    when. Kept beside the judge's, never over it: every row is a labelled check of the judge
    (``groundwatch view export-labels``). A newer row of the same probe supersedes an older."""

    __tablename__ = "human_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    probe_id: Mapped[str] = mapped_column(String(36))
    verdict: Mapped[str] = mapped_column(String(16))
    note: Mapped[str] = mapped_column(Text, default="")
    who: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)

    __table_args__ = (Index("ix_human_verdicts_probe_id", "probe_id"),)
