"""dead_letters: the store's copy of the dead-letter topic

An in-process run (``groundwatch run``, the demo) kept its dead letters only in memory: they were
gone when it exited. The table keeps each one whole; ``letter_key`` makes a redelivery a no-op.

Revision ID: e5b2c7d9f1a3
Revises: d4e8a1f0c2b6
Create Date: 2026-11-26 11:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "e5b2c7d9f1a3"
down_revision = "d4e8a1f0c2b6"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("letter_key", sa.String(length=64), nullable=False),
        sa.Column("service", sa.String(length=128), nullable=False),
        sa.Column("source_topic", sa.String(length=249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.Text(), nullable=True),
        sa.Column("group_id", sa.Text(), nullable=True),
        sa.Column("probe_id", sa.String(length=36), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column(
            "raw_b64",
            sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"),
            nullable=False,
        ),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("letter_key"),
    )


def downgrade() -> None:
    op.drop_table("dead_letters")
