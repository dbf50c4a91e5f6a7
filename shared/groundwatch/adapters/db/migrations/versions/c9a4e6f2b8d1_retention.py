"""retention: judgement summaries, the pruning ledger, pinned runs; judgements partitioned

Every judgement was kept for ever (~1 KB a row: ~95 GB a day for a minute monitor of 75k
probes). Retention rolls old cycles up into per-group summaries and removes their rows. The
ledger of pruned cycles makes a pruning run killed half-way resumable; pinned runs (baselines)
are never pruned. On PostgreSQL the judgements table becomes partitioned by probe time, so old
rows go with a dropped partition instead of row-by-row deletes on the hot table (a DEFAULT
partition takes every row no time partition covers, so inserts never fail). The LLM cache gets
an index on its age, which its bound deletes by. The expected answer every form of a group
shares (~250 bytes a judgement) moves to ``expected_answers``, stored once and referenced.

Revision ID: c9a4e6f2b8d1
Revises: a8d3f6b1c4e7
Create Date: 2026-12-01 21:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "c9a4e6f2b8d1"
down_revision = "a8d3f6b1c4e7"
branch_labels = None
depends_on = None

_INDEXES = (
    ("ix_judgements_run_id", "run_id"),
    ("ix_judgements_group_cohort_cycle", "target, group_id, cohort, cycle"),
)


def upgrade() -> None:
    op.create_table(
        "judgement_summaries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("series", sa.String(length=128), nullable=False),
        sa.Column("target", sa.String(length=128), nullable=False),
        sa.Column("cohort", sa.String(length=64), nullable=False),
        sa.Column("group_id", sa.String(length=64), nullable=False),
        sa.Column("dataset_id", sa.String(length=64), nullable=False),
        sa.Column("scenario", sa.String(length=32), nullable=False),
        sa.Column("group_forms", sa.Integer(), nullable=False),
        sa.Column("first_cycle", sa.Integer(), nullable=False),
        sa.Column("last_cycle", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.Column("incorrect", sa.Integer(), nullable=False),
        sa.Column("error", sa.Integer(), nullable=False),
        sa.Column("undecided", sa.Integer(), nullable=False),
        sa.Column("verdicts", sa.JSON(), nullable=False),
        sa.Column("changed", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "series", "target", "cohort", "group_id", "first_cycle", name="uq_summaries_run"
        ),
    )
    op.create_index("ix_summaries_series_cycle", "judgement_summaries", ["series", "last_cycle"])
    op.create_table(
        "pruned_cycles",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("series", sa.String(length=128), nullable=False),
        sa.Column("cycle", sa.Integer(), nullable=False),
        sa.Column("judgements", sa.Integer(), nullable=False),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("pruned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_pruned_cycles_series_cycle", "pruned_cycles", ["series", "cycle"])
    op.create_table(
        "pinned_runs",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=False),
        sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_llm_cache_created_at", "llm_cache", ["created_at"])
    op.create_table(
        "expected_answers",
        sa.Column("ref", sa.String(length=32), nullable=False),
        sa.Column("expected", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("ref"),
    )
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expected_ref", sa.String(length=32), nullable=True))
        batch_op.alter_column("expected", existing_type=sa.JSON(), nullable=True)
    if op.get_bind().dialect.name == "postgresql":
        _partition_judgements()


def _partition_judgements() -> None:
    """The table rebuilt as ``PARTITION BY RANGE (probe_created_at)``: the primary key must
    hold the partition key, and a replayed judgement carries its probe's time, so
    ``(probe_id, probe_created_at)`` still makes a redelivery a conflict."""
    op.execute("ALTER TABLE judgements RENAME TO judgements_unpartitioned")
    op.execute(
        "ALTER TABLE judgements_unpartitioned RENAME CONSTRAINT judgements_pkey"
        " TO judgements_unpartitioned_pkey"
    )
    for name, _ in _INDEXES:
        op.execute(f"ALTER INDEX {name} RENAME TO {name}_unpartitioned")
    op.execute(
        "CREATE TABLE judgements (LIKE judgements_unpartitioned INCLUDING DEFAULTS)"
        " PARTITION BY RANGE (probe_created_at)"
    )
    op.execute(
        "ALTER TABLE judgements ADD CONSTRAINT judgements_pkey"
        " PRIMARY KEY (probe_id, probe_created_at)"
    )
    for name, cols in _INDEXES:
        op.execute(f"CREATE INDEX {name} ON judgements ({cols})")
    op.execute("CREATE TABLE judgements_default PARTITION OF judgements DEFAULT")
    op.execute("INSERT INTO judgements SELECT * FROM judgements_unpartitioned")
    op.execute("DROP TABLE judgements_unpartitioned")


def _unpartition_judgements() -> None:
    op.execute("ALTER TABLE judgements RENAME TO judgements_partitioned")
    op.execute(
        "ALTER TABLE judgements_partitioned RENAME CONSTRAINT judgements_pkey"
        " TO judgements_partitioned_pkey"
    )
    for name, _ in _INDEXES:
        op.execute(f"ALTER INDEX {name} RENAME TO {name}_partitioned")
    op.execute("CREATE TABLE judgements (LIKE judgements_partitioned INCLUDING DEFAULTS)")
    op.execute("ALTER TABLE judgements ADD CONSTRAINT judgements_pkey PRIMARY KEY (probe_id)")
    for name, cols in _INDEXES:
        op.execute(f"CREATE INDEX {name} ON judgements ({cols})")
    op.execute("INSERT INTO judgements SELECT * FROM judgements_partitioned")
    op.execute("DROP TABLE judgements_partitioned CASCADE")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _unpartition_judgements()
    # rows written lean get their expected answer back before the column may be NOT NULL
    op.execute(
        "UPDATE judgements SET expected = (SELECT e.expected FROM expected_answers e"
        " WHERE e.ref = judgements.expected_ref) WHERE expected IS NULL"
    )
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.alter_column("expected", existing_type=sa.JSON(), nullable=False)
        batch_op.drop_column("expected_ref")
    op.drop_table("expected_answers")
    op.drop_index("ix_llm_cache_created_at", table_name="llm_cache")
    op.drop_table("pinned_runs")
    op.drop_index("ix_pruned_cycles_series_cycle", table_name="pruned_cycles")
    op.drop_table("pruned_cycles")
    op.drop_index("ix_summaries_series_cycle", table_name="judgement_summaries")
    op.drop_table("judgement_summaries")
