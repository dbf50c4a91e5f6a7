"""expected answers swept: a generation per answer and the store's counters

Expected answers no judgement references any more are removed by retention's sweep. Each row
records the newest sweep generation a writer referenced it in, and ``store_counters`` holds the
generation itself (one row, locked shared by every writer of judgements).

Revision ID: e7a2c4f6b8d0
Revises: b7d2f4a9c1e3
Create Date: 2026-12-02 07:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "e7a2c4f6b8d0"
down_revision = "b7d2f4a9c1e3"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("expected_answers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gen", sa.BigInteger(), server_default="0", nullable=False))
    counters = op.create_table(
        "store_counters",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("name"),
    )
    # present from the start: a writer locks it, so a sweep waits for every writer in flight
    op.bulk_insert(counters, [{"name": "expected_answers", "value": 0, "at": None}])


def downgrade() -> None:
    op.drop_table("store_counters")
    with op.batch_alter_table("expected_answers", schema=None) as batch_op:
        batch_op.drop_column("gen")
