"""Alembic environment: uses the engine handed over by ``adapters.db.migrate`` if there is one."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from groundwatch.adapters.db.migrate import include_name
from groundwatch.adapters.db.tables import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:  # the caller holds the migration lock on this connection
        _run(connection)
        connection.commit()
        return
    engine = config.attributes.get("engine") or create_engine(
        config.get_main_option("sqlalchemy.url") or ""
    )
    with engine.begin() as conn:
        _run(conn)


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
