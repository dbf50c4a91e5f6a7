"""Where verdicts go beside the OTLP traces: Phoenix span annotations and Langfuse scores.

The traces themselves are configured by the OpenTelemetry SDK's own variables (``OTEL_*``):
tracing is on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
is set and ``OTEL_SDK_DISABLED`` is not true; ``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``,
``OTEL_EXPORTER_OTLP_HEADERS`` and the rest mean what the SDK says they mean.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class TracingSettings(BaseSettings):
    """Verdicts written onto spans in the tools people read traces with (``GW_TRACE_*``)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_TRACE_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    phoenix_url: str | None = Field(
        None,
        description="Phoenix base URL (e.g. http://phoenix:6006): every verdict also becomes a"
        " span annotation on its span (annotator CODE, upserted per group). Unset: none.",
    )
    phoenix_api_key: SecretStr | None = Field(
        None, description="Phoenix API key (Bearer), when its authentication is on."
    )
    langfuse_url: str | None = Field(
        None,
        description="Langfuse base URL: every verdict also becomes a Langfuse score on its"
        " trace and observation. Unset: none.",
    )
    langfuse_public_key: str | None = Field(None, description="Langfuse public key.")
    langfuse_secret_key: SecretStr | None = Field(None, description="Langfuse secret key.")
    hold_s: float = Field(
        5.0,
        ge=0,
        le=60,
        description="Seconds a probe's span waits for its verdict when this process judges"
        " too (groundwatch run, demo): the verdict is then an event on the probe span, one span"
        " a probe; later, or judged elsewhere, it is an evaluation span under it. 0: never wait.",
    )
    queue: int = Field(
        50_000,
        ge=1,
        le=10_000_000,
        description="Verdicts waiting for Phoenix or Langfuse at most; beyond, the oldest are"
        " dropped and counted (a slow tool never slows probing).",
    )


def tracing_enabled(environ: Mapping[str, str]) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces: an OTLP endpoint set, the SDK not off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )
