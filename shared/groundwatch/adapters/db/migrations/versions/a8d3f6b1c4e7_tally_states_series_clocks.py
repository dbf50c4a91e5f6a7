"""tally states and series clocks: a partition is restored from its tallies' states

A new owner of a partition (a rebalance, a restart) rebuilt each group by replaying its stored
judgements: 45 s at 100k groups. Each tally now keeps its whole state beside its counts, written
in the batch's transaction, with a fence token; and each series keeps its newest cycle, which a
restart read by scanning every judgement. Existing tallies get no state (NULL): they are
replayed until their next write. The series clocks are filled from the stored judgements here.

Revision ID: a8d3f6b1c4e7
Revises: f1c3e5a7b9d2
Create Date: 2026-11-26 20:30:00.000000
"""

from __future__ import annotations

from datetime import UTC

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "a8d3f6b1c4e7"
down_revision = "f1c3e5a7b9d2"
branch_labels = None
depends_on = None


def upgrade() -> None:
    blob = sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
    with op.batch_alter_table("group_tallies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("state", blob, nullable=True))
        batch_op.add_column(
            sa.Column("state_token", sa.BigInteger(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("state_parent", sa.BigInteger(), nullable=False, server_default="0")
        )
    clocks = op.create_table(
        "series_clocks",
        sa.Column("series", sa.String(length=128), nullable=False),
        sa.Column("cycle", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("series"),
    )
    # the newest stored cycle of each series and its first probe time (what the clock restored
    # from by a scan of every judgement until now)
    j = sa.table(
        "judgements",
        sa.column("series", sa.String()),
        sa.column("cycle", sa.Integer()),
        sa.column("probe_created_at", sa.DateTime(timezone=True)),
    )
    newest = (
        sa.select(j.c.series, sa.func.max(j.c.cycle).label("cycle"))
        .where(j.c.series != "")
        .group_by(j.c.series)
        .subquery()
    )
    stmt = (
        sa.select(newest.c.series, newest.c.cycle, sa.func.min(j.c.probe_created_at))
        .join(j, sa.and_(j.c.series == newest.c.series, j.c.cycle == newest.c.cycle))
        .group_by(newest.c.series, newest.c.cycle)
    )
    rows = []
    for series, cycle, first in op.get_bind().execute(stmt):
        at = None
        if first is not None:
            if isinstance(first, str):  # SQLite without the column's type: its stored text
                from datetime import datetime

                first = datetime.fromisoformat(first)
            at = (first if first.tzinfo else first.replace(tzinfo=UTC)).timestamp()
        rows.append({"series": series, "cycle": int(cycle), "started_at": at})
    if rows:
        op.bulk_insert(clocks, rows)


def downgrade() -> None:
    op.drop_table("series_clocks")
    with op.batch_alter_table("group_tallies", schema=None) as batch_op:
        batch_op.drop_column("state_parent")
        batch_op.drop_column("state_token")
        batch_op.drop_column("state")
