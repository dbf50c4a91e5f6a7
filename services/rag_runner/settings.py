"""RAG runner settings (``GW_*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from groundwatch.runtime.settings import CommonSettings


class RunnerSettings(CommonSettings):
    port: int = Field(8002, ge=0, le=65535)
    runner_group: str = Field("rag-runner", description="Consumer group of runner instances.")
    runner_targets_file: Path | None = Field(
        None, description="YAML/TOML file of targets (http_json, openai_chat, callable)."
    )
    runner_reference_url: str | None = Field(
        "http://127.0.0.1:8005/query",
        description="URL of the target named 'reference' (the reference RAG); empty to disable.",
    )
    runner_reference_concurrency: int = Field(
        32, ge=1, le=4096, description="Requests in flight at once to the reference target."
    )
    runner_batch: int = Field(500, ge=1, le=10_000, description="Probes consumed per batch.")
