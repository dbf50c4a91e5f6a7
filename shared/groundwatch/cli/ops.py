"""Operator commands: database migrations and Kafka topics."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from groundwatch.cli.common import one_line_errors

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
    @one_line_errors
    def db_upgrade(
        url: str = typer.Option(
            None,
            "--database-url",
            "--url",
            help="SQLAlchemy URL of the store, as every other command names it (default:"
            " GW_DATABASE_URL; --url: its former name).",
        ),
    ) -> None:
        """Migrate the database to the newest schema (Alembic)."""
        from groundwatch.app.store import upgrade_schema

        shown = (
            upgrade_schema(url, "--database-url")
            if url
            else upgrade_schema(_settings().database_url, "GW_DATABASE_URL")
        )
        typer.echo(f"database at {shown} is at head")

    @app.command("topics-create")
    @one_line_errors
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
        """Create the topics (probes, responses, judgements, dead-letter, traffic,
        human-verdicts) if missing, with the cluster's replication (a topic that exists is left
        as it is, with a warning when it has fewer replicas)."""
        from groundwatch.app.services import create_topics
        from groundwatch.errors import ConfigError

        s = _settings()
        try:
            names = create_topics(
                s,
                bootstrap=bootstrap,
                prefix=prefix,
                partitions=partitions,
                replication_factor=replication_factor,
                min_insync_replicas=min_insync_replicas,
                wait_s=wait,
            )
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except Exception as exc:  # no broker, or too few up, for the whole --wait
            typer.echo(f"error: topics not created: {' '.join(str(exc).split())}", err=True)
            raise typer.Exit(1) from None
        typer.echo("topics: " + ", ".join(names))
