"""Storage through SQLAlchemy 2.0: SQLite by default, PostgreSQL in production and in CI tests."""

from groundwatch.adapters.db.engine import create_schema, make_engine, make_sessionmaker, ping

__all__ = ["create_schema", "make_engine", "make_sessionmaker", "ping"]
