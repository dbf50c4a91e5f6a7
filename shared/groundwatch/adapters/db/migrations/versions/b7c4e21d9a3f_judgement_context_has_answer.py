"""judgements: the judge's summary of the retrieved texts (context_has_answer)

Existing rows get NULL: their contexts were never read, so there is no text evidence for them.

Revision ID: b7c4e21d9a3f
Revises: 30ddc072d0ce
Create Date: 2026-11-24 21:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "b7c4e21d9a3f"
down_revision = "30ddc072d0ce"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.add_column(sa.Column("context_has_answer", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.drop_column("context_has_answer")
