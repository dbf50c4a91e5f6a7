"""Configuration from the environment (prefix ``GW_``), validated at start-up.

One settings class per service subclasses :class:`CommonSettings`. Library code receives settings
objects and never reads ``os.environ``. :func:`load_settings` turns a validation error into a
:class:`ConfigError` whose message names the environment variable, so a bad deployment stops at
once with a line an operator can act on.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from groundwatch.errors import ConfigError
from groundwatch.secrets import reject_placeholder

__all__ = ["CommonSettings", "load_settings", "reject_placeholder"]


class CommonSettings(BaseSettings):
    """Settings every service shares."""

    model_config = SettingsConfigDict(env_prefix="GW_", extra="ignore", env_file=None)

    bus: Literal["memory", "kafka"] = Field(
        "memory", description="Message bus: 'memory' (embedded, one process) or 'kafka'."
    )
    kafka_bootstrap: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers.")
    topic_prefix: str = Field("gw.", description="Prefix of every topic name.")
    partitions: int = Field(6, ge=1, le=1024, description="Partitions per topic when created.")
    database_url: str = Field(
        "sqlite:///groundwatch.db",
        description="SQLAlchemy URL (SQLite default, PostgreSQL in prod).",
    )
    host: str = Field("127.0.0.1", description="HTTP bind address of the service.")
    port: int = Field(8000, ge=0, le=65535, description="HTTP port of the service.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level."
    )
    instance: str = Field("", description="Instance name (client id); defaults to service-pid.")

    @field_validator("kafka_bootstrap")
    @classmethod
    def _bootstrap_has_port(cls, v: str) -> str:
        for hostport in v.split(","):
            host, _, port = hostport.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port…], got {v!r}")
        return v

    @field_validator("topic_prefix")
    @classmethod
    def _prefix_is_legal(cls, v: str) -> str:
        import re

        if not re.fullmatch(r"[A-Za-z0-9._-]*", v):
            raise ValueError("may only contain letters, digits, '.', '_' and '-'")
        return v


S = TypeVar("S", bound=BaseSettings)


def load_settings(cls: type[S], **overrides: Any) -> S:
    """Build settings, or raise :class:`ConfigError` naming each bad ``GW_*`` variable."""
    try:
        return cls(**overrides)
    except ValidationError as exc:
        prefix = str(cls.model_config.get("env_prefix", "")).upper()
        lines = []
        for err in exc.errors(include_url=False):
            field = ".".join(str(p) for p in err["loc"])
            value = err.get("input")
            shown = "" if _secret(field) else f" (got {value!r})"
            lines.append(f"{prefix}{field.upper()}: {err['msg']}{shown}")
        raise ConfigError("invalid configuration: " + "; ".join(lines)) from None


def _secret(field: str) -> bool:
    return any(w in field.lower() for w in ("key", "token", "secret", "password"))
