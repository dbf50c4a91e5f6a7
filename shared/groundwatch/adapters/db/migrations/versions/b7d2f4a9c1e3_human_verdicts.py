"""human verdicts: people's right / wrong on a judged answer, with a note, who and when

Revision ID: b7d2f4a9c1e3
Revises: c9a4e6f2b8d1
Create Date: 2026-12-01 22:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "b7d2f4a9c1e3"
down_revision = "c9a4e6f2b8d1"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "human_verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("probe_id", sa.String(length=36), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("who", sa.String(length=128), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_human_verdicts_probe_id", "human_verdicts", ["probe_id"])


def downgrade() -> None:
    op.drop_index("ix_human_verdicts_probe_id", table_name="human_verdicts")
    op.drop_table("human_verdicts")
