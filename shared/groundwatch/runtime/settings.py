"""Configuration from the environment (prefix ``GW_``), validated at start-up.

One settings class per service subclasses :class:`CommonSettings`. Library code receives settings
objects and never reads ``os.environ``. :func:`load_settings` turns a validation error into a
:class:`ConfigError` whose message names the environment variable, so a bad deployment stops at
once with a line an operator can act on. A variable set but empty counts as unset
(``env_ignore_empty`` in every class): a shell's ``GW_X=`` or a compose file's ``${X:-}`` leaves
one behind, and its default, not a refusal of "", is what the operator meant.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from groundwatch.adapters.db.engine import database_url_problem
from groundwatch.contracts import DEFAULT_PREFIX
from groundwatch.errors import ConfigError
from groundwatch.runtime.consume import RetryPolicy
from groundwatch.runtime.loop import LoopSettings
from groundwatch.secrets import reject_placeholder

__all__ = [
    "CommonSettings",
    "load_settings",
    "problems",
    "reject_placeholder",
]


#: Default of ``GW_READY_DEADLINE_S``: what ``/readyz`` waits for its dependency checks at most.
#: Below the 1 s a readiness probe is commonly given, so a frozen dependency is a 503, not a
#: probe timeout (which an orchestrator may count as neither ready nor not).
READY_DEADLINE_S = 0.8


class CommonSettings(LoopSettings):
    """Settings every service shares (the event loop's among them)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    bus: Literal["memory", "kafka"] = Field(
        "memory", description="Message bus: 'memory' (embedded, one process) or 'kafka'."
    )
    kafka_bootstrap: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers.")
    topic_prefix: str = Field(
        DEFAULT_PREFIX,
        description="Prefix of every topic name; under another than gw. the consumer groups"
        " get it too (staging.judge), so two deployments on one cluster never rebalance each"
        " other.",
    )
    partitions: int = Field(6, ge=1, le=1024, description="Partitions per topic when created.")
    kafka_replication_factor: int = Field(
        0,
        ge=0,
        le=32,
        description="Replicas of each topic when created; 0: min(3, brokers in the cluster).",
    )
    kafka_min_insync_replicas: int = Field(
        0,
        ge=0,
        le=32,
        description="min.insync.replicas of each topic when created (acks=all waits for them); "
        "0: the replication factor - 1, at least 1.",
    )
    kafka_retry_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="How long one publish, poll or commit retries broker faults (leader "
        "elections, a broker restarting) before the consume loop backs off and retries the batch.",
    )
    database_url: str = Field(
        "sqlite:///groundwatch.db",
        description="SQLAlchemy URL (SQLite default, PostgreSQL in prod).",
    )
    host: str = Field("127.0.0.1", min_length=1, description="HTTP bind address of the service.")
    port: int = Field(8000, ge=0, le=65535, description="HTTP port of the service.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level."
    )
    instance: str = Field("", description="Instance name (client id); defaults to service-pid.")
    retry_backoff_s: float = Field(
        1.0, gt=0, le=60, description="First wait before a failed batch is retried (doubles)."
    )
    retry_backoff_max_s: float = Field(
        30.0, gt=0, le=3600, description="Longest wait between retries of a failed batch."
    )
    message_attempts: int = Field(
        3,
        ge=1,
        le=100,
        description="Attempts of one message alone, after its batch failed twice, before it is "
        "dead-lettered (only while the rest of its batch goes through).",
    )
    stall_after_s: float = Field(
        300.0,
        gt=0,
        description="A consumer holding uncommitted records this long is stalled: /readyz 503, "
        "groundwatch_consumer_stalled = 1.",
    )
    ready_deadline_s: float = Field(
        READY_DEADLINE_S,
        gt=0,
        le=30,
        description="/readyz answers within this many seconds: a dependency (broker, database) "
        "whose ping has not answered by then counts as down (503), so a frozen broker fails "
        "the readiness probe instead of hanging it.",
    )
    liveness_timeout_s: float = Field(
        300.0,
        gt=0,
        description="/healthz answers 503 (so the liveness probe restarts the process) when a "
        "worker loop has not beaten its heartbeat for this long.",
    )
    test_kill_before_commit: int = Field(
        0,
        ge=0,
        description="Test only, 0 (off) in production: SIGKILL the process after its N-th batch "
        "is published or stored and before its offsets are committed.",
    )

    def retry_policy(self) -> RetryPolicy:
        """The consume loops' retry, isolation and stall policy from these settings."""
        return RetryPolicy(
            backoff_s=self.retry_backoff_s,
            backoff_max_s=max(self.retry_backoff_s, self.retry_backoff_max_s),
            message_attempts=self.message_attempts,
            stall_after_s=self.stall_after_s,
        )

    def bus_retry(self) -> tuple[float, float, float]:
        """The bus adapter's retry of broker faults: (first backoff, longest, deadline) in s."""
        return (
            self.retry_backoff_s,
            max(self.retry_backoff_s, self.retry_backoff_max_s),
            self.kafka_retry_s,
        )

    @field_validator("kafka_bootstrap")
    @classmethod
    def _bootstrap_has_port(cls, v: str) -> str:
        for hostport in v.split(","):
            host, _, port = hostport.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"expected host:port[,host:port…], got {v!r}")
        return v

    @field_validator("database_url")
    @classmethod
    def _database_url_opens(cls, v: str) -> str:
        problem = database_url_problem(v)
        if problem is not None:
            raise ValueError(problem)
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
        raise ConfigError("invalid configuration: " + "; ".join(problems(cls, exc))) from None


def problems(cls: type[BaseSettings], exc: ValidationError) -> list[str]:
    """One ``GW_NAME: what it accepts (got …)`` line per bad variable of ``exc``."""
    prefix = str(cls.model_config.get("env_prefix", "")).upper()
    lines = []
    for err in exc.errors(include_url=False):
        field = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        shown = "" if _secret(field) else f" (got {value!r})"
        lines.append(f"{prefix}{field.upper()}: {err['msg']}{shown}")
    return lines


def _secret(field: str) -> bool:
    # URLs too: a database or target URL may carry a password or an API key
    return any(w in field.lower() for w in ("key", "token", "secret", "password", "url"))
