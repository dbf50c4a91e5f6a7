"""Build the runner from a targets file: shared by the rag-runner service and `groundwatch run`."""

from __future__ import annotations

from pathlib import Path

import httpx

from groundwatch.adapters.targets import HttpClient, Target, TargetLimits
from groundwatch.adapters.targets.config import (
    HttpJsonConfig,
    StreamHook,
    build_targets,
    load_targets,
)
from groundwatch.stages.runner.lanes import ResponseHook, Runner, SelfCheckSampling


def make_runner(
    http_client: HttpClient | httpx.AsyncClient,
    *,
    targets_file: Path | None = None,
    reference_url: str | None = None,
    reference_concurrency: int = 32,
    on_response: ResponseHook | None = None,
    selfcheck: SelfCheckSampling | None = None,
    on_stream: StreamHook | None = None,
) -> Runner:
    """Targets from the targets file plus the reference RAG at ``reference_url`` (unless the file
    already names a target ``reference``), each behind its own limits; ``on_stream`` is told
    each streamed answer's time to first token and to the end."""
    configs = load_targets(targets_file) if targets_file else []
    if reference_url and all(c.name != "reference" for c in configs):
        configs.append(
            HttpJsonConfig(
                type="http_json",
                name="reference",
                url=reference_url,
                limits=TargetLimits(concurrency=reference_concurrency, timeout_s=30.0),
            )
        )
    targets: dict[str, Target]
    targets, limits = build_targets(configs, http_client=http_client, stream_hook=on_stream)
    return Runner(targets, limits, on_response=on_response, selfcheck=selfcheck)
