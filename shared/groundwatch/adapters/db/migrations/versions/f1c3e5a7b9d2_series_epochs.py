"""series_epochs: a restarted numbering of a monitoring series continues the series

A generator restarted on a fresh store numbers its cycles from 1 again; analytics stored those
judgements and counted none (older than every window). The analytics clock now opens an epoch
for the restart and keeps it here, so every instance and rebuild places its cycles alike.

Revision ID: f1c3e5a7b9d2
Revises: e5b2c7d9f1a3
Create Date: 2026-11-26 19:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "f1c3e5a7b9d2"
down_revision = "e5b2c7d9f1a3"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "series_epochs",
        sa.Column("series", sa.String(length=128), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=False),
        sa.Column("offset", sa.Integer(), nullable=False),
        sa.Column("first_cycle", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("series", "started_at"),
    )


def downgrade() -> None:
    op.drop_table("series_epochs")
