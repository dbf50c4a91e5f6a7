"""Autogenerate an Alembic revision from the models: `python scripts/make_migration.py "message"`.

Runs against a scratch SQLite database brought to head first, so the revision holds exactly the
difference between the migrations and the models.
"""

from __future__ import annotations

import sys
import tempfile

from alembic import command
from sqlalchemy import create_engine

from groundwatch.adapters.db.migrate import alembic_config, upgrade

with tempfile.TemporaryDirectory() as tmp:
    engine = create_engine(f"sqlite:///{tmp}/scratch.db")
    upgrade(engine)
    command.revision(alembic_config(engine), message=sys.argv[1], autogenerate=True)
