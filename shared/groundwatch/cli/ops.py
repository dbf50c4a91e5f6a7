"""Operator commands: database migrations and Kafka topics."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from groundwatch.runtime.settings import CommonSettings


def _settings() -> CommonSettings:
    from groundwatch.errors import ConfigError
    from groundwatch.runtime.settings import CommonSettings, load_settings

    try:
        return load_settings(CommonSettings)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    @app.command("db-upgrade")
    def db_upgrade(
        url: str = typer.Option(None, "--url", help="SQLAlchemy URL (default: GW_DATABASE_URL)."),
    ) -> None:
        """Migrate the database to the newest schema (Alembic)."""
        from groundwatch.adapters.db import create_schema
        from groundwatch.adapters.db.engine import open_engine
        from groundwatch.errors import ConfigError

        try:
            if url:
                engine = open_engine(url, "--url")
            else:
                engine = open_engine(_settings().database_url, "GW_DATABASE_URL")
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        create_schema(engine)
        typer.echo(f"database at {engine.url.render_as_string(hide_password=True)} is at head")
        engine.dispose()

    @app.command("topics-create")
    def topics_create(
        bootstrap: str = typer.Option(None, help="Kafka bootstrap (default: GW_KAFKA_BOOTSTRAP)."),
        prefix: str = typer.Option(None, help="Topic prefix (default: GW_TOPIC_PREFIX)."),
        partitions: int = typer.Option(None, help="Partitions per topic (default: GW_PARTITIONS)."),
        replication_factor: int = typer.Option(
            None,
            min=1,
            help="Replicas per topic (default: GW_KAFKA_REPLICATION_FACTOR, else min(3, brokers)).",
        ),
        min_insync_replicas: int = typer.Option(
            None,
            min=1,
            help="min.insync.replicas (default: GW_KAFKA_MIN_INSYNC_REPLICAS, else RF-1, >= 1).",
        ),
        wait: float = typer.Option(
            120.0,
            "--wait",
            min=0.0,
            help="Seconds to wait for the brokers (reachable, and as many up as the replication).",
        ),
    ) -> None:
        """Create the four topics (probes, responses, judgements, dead-letter) if missing, with
        the cluster's replication (a topic that exists is left as it is, with a warning when it
        has fewer replicas)."""
        from groundwatch.adapters.bus.kafka import KafkaBus
        from groundwatch.contracts import Topics
        from groundwatch.errors import ConfigError

        s = _settings()
        topics = Topics(s.topic_prefix if prefix is None else prefix)
        bus = KafkaBus(
            bootstrap=bootstrap or s.kafka_bootstrap,
            partitions=partitions or s.partitions,
            replication_factor=replication_factor or s.kafka_replication_factor,
            min_insync_replicas=min_insync_replicas or s.kafka_min_insync_replicas,
        )

        async def create() -> None:
            await bus.ensure_topics(topics.all(), wait_s=wait)

        # the adapter's "retrying" notes are for a service's log; a command says one line
        logging.getLogger("groundwatch.adapters.bus.kafka").setLevel(logging.ERROR)

        try:
            asyncio.run(create())
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except Exception as exc:  # no broker, or too few up, for the whole --wait
            typer.echo(f"error: topics not created: {' '.join(str(exc).split())}", err=True)
            raise typer.Exit(1) from None
        typer.echo("topics: " + ", ".join(topics.all()))
