"""judgements: one group index (target, group_id, cohort, cycle) instead of two

``ix_judgements_group`` (target, group_id) is a prefix of the new index, and the rebuild's lookups
(target, cohort, group_id equal, cycle a range) use it as well as they used
``ix_judgements_group_cycle``: one b-tree fewer to update per stored judgement.

Revision ID: d4e8a1f0c2b6
Revises: 7c1e5a9d2b40
Create Date: 2026-11-24 03:10:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "d4e8a1f0c2b6"
down_revision = "7c1e5a9d2b40"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.create_index(
            "ix_judgements_group_cohort_cycle",
            ["target", "group_id", "cohort", "cycle"],
            unique=False,
        )
        batch_op.drop_index("ix_judgements_group_cycle")
        batch_op.drop_index("ix_judgements_group")


def downgrade() -> None:
    with op.batch_alter_table("judgements", schema=None) as batch_op:
        batch_op.create_index("ix_judgements_group", ["target", "group_id"], unique=False)
        batch_op.create_index(
            "ix_judgements_group_cycle", ["target", "cohort", "group_id", "cycle"], unique=False
        )
        batch_op.drop_index("ix_judgements_group_cohort_cycle")
