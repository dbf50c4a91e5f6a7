"""judgement scores: answer metrics, self-audit, reference-free calls, RAGProbe metrics

Existing rows get no scores ({}): they were judged before the judge shipped any.

Revision ID: 7c1e5a9d2b40
Revises: b7c4e21d9a3f
Create Date: 2026-11-23 21:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "7c1e5a9d2b40"
down_revision = "b7c4e21d9a3f"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("scores", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.drop_column("scores")
