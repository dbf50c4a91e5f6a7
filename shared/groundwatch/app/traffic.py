"""Traffic use cases of the command line: grounding a file of questions, or asking a run."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from groundwatch.errors import ConfigError, GroundwatchError


def unmatched_of_file(
    dataset: Path, questions: Iterable[str], top: int, min_confidence: float
) -> dict[str, Any]:
    """Match rate, reasons and unmatched shapes of ``questions`` over the ``dataset`` file."""
    from groundwatch.app.datasets import load_dataset
    from groundwatch.core.traffic import GroundingIndex
    from groundwatch.runtime.traffic_api import unmatched_view
    from groundwatch.stages.traffic.stage import TrafficCounts

    index = GroundingIndex(load_dataset(dataset, "DATASET"), min_confidence=min_confidence)
    counts = TrafficCounts()
    for q in questions:
        counts.count(index.match(q))
    return unmatched_view(counts, top)


def unmatched_of_run(url: str, top: int, token: str | None) -> dict[str, Any]:
    """The same, as a running ``groundwatch run`` or generator service counted it (``GET
    /traffic/unmatched``)."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    where = f"{url.rstrip('/')}/traffic/unmatched"
    try:
        reply = httpx.get(where, params={"n": top}, headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        raise GroundwatchError(f"{where}: {exc}") from None
    if reply.status_code == 404:
        raise ConfigError(
            f"{where}: not found (a continuous `groundwatch run`, or the generator service?)"
        )
    if reply.status_code != 200:
        raise GroundwatchError(f"{where}: HTTP {reply.status_code} {reply.text[:200]}")
    data: dict[str, Any] = reply.json()
    return data
