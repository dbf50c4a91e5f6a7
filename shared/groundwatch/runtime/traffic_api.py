"""``POST /traffic``: users' questions and their answers, in batches, onto the ``traffic`` topic.

The endpoint only checks and publishes: a batch is accepted whole or refused whole (422 naming
the first bad record and why), so a client knows exactly what to send again, and what was
accepted is on the bus before the 202 — grounding, judging and tallying happen downstream.
Writes need ``GW_API_TOKEN`` as a bearer token (closed when it is unset); the body is capped by
the app's input guards, the batch by :data:`MAX_BATCH`, and each target's records a second by
``GW_TRAFFIC_RATE`` (:func:`rate_limited`: 429 with ``Retry-After``). ``GET /traffic/unmatched``
reads the grounding stage's counts: the match rate, why questions were not matched, and the most
frequent shapes of those that were not — candidates for new templates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from pydantic import ValidationError

from groundwatch.adapters.bus.base import Bus, Outgoing
from groundwatch.contracts import Topics, TrafficRecord
from groundwatch.runtime.auth import require_read_token, require_token
from groundwatch.runtime.traffic_limit import RateLimited, TargetRateLimit, TooLargeForLimit
from groundwatch.stages.traffic.stage import TrafficCounts

#: Records one request may carry.
MAX_BATCH = 1000

Publish = Callable[[Sequence[TrafficRecord]], Awaitable[None]]


def parse_batch(body: bytes, max_records: int = MAX_BATCH) -> list[TrafficRecord]:
    """The records of a request body — a JSON array of records, ``{"records": [...]}`` or one
    record — or ValueError with one line saying what is wrong."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"body is not JSON: {exc}") from None
    if isinstance(data, dict) and set(data) == {"records"}:
        data = data["records"]
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ValueError("no records")
    if len(items) > max_records:
        raise ValueError(f"{len(items)} records in one batch; at most {max_records}")
    out: list[TrafficRecord] = []
    for i, item in enumerate(items):
        try:
            out.append(TrafficRecord.model_validate(item))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(map(str, first["loc"])) or "record"
            raise ValueError(f"record {i}: {where}: {first['msg']}") from None
    return out


def bus_publisher(bus: Bus, topics: Topics) -> Publish:
    """Publish records on ``topics.traffic``, keyed by trace (a trace's records stay in order)."""
    name = topics.traffic.name

    async def publish(records: Sequence[TrafficRecord]) -> None:
        await bus.publish_many([Outgoing(name, r.key, r.to_bytes(), r) for r in records])

    return publish


def rate_limited(publish: Publish, limit: TargetRateLimit | None) -> Publish:
    """``publish`` behind a per-target rate limit (None: none): a batch over a target's budget
    is refused whole with 429 and ``Retry-After`` (the seconds after which the same batch
    fits), one larger than the budget ever holds with 422; nothing of either is published."""
    if limit is None:
        return publish

    async def limited(records: Sequence[TrafficRecord]) -> None:
        try:
            limit.take(r.target for r in records)
        except RateLimited as exc:
            raise HTTPException(
                429,
                f"{exc}; send the batch again in {exc.retry_after} s",
                {"Retry-After": exc.retry_after},
            ) from None
        except TooLargeForLimit as exc:
            raise HTTPException(422, str(exc)) from None
        await publish(records)

    return limited


def unmatched_view(counts: TrafficCounts, n: int) -> dict[str, Any]:
    return {
        "records": counts.records,
        "matched": counts.matched,
        "match_rate": round(counts.match_rate, 4),
        "reasons": dict(counts.reasons.most_common()),
        "shapes": [{"shape": s, "count": c} for s, c in counts.unmatched(n)],
    }


def add_traffic_routes(
    app: FastAPI,
    publish: Publish,
    counts: Callable[[], TrafficCounts] | None = None,
    *,
    token: str | None,
    read_token: str | None = None,
    max_records: int = MAX_BATCH,
) -> None:
    """``POST /traffic`` (bearer ``token``) and, with ``counts``, ``GET /traffic/unmatched``."""

    @app.post(
        "/traffic", status_code=202, tags=["traffic"], dependencies=[Depends(require_token(token))]
    )
    async def traffic(request: Request) -> dict[str, int]:
        """A batch of traffic records: accepted whole (202) or refused whole (422, one line)."""
        try:
            records = parse_batch(await request.body(), max_records)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        await publish(records)
        return {"accepted": len(records)}

    if counts is not None:
        add_unmatched_route(app, counts, read_token=read_token)


def add_unmatched_route(
    app: FastAPI, counts: Callable[[], TrafficCounts], *, read_token: str | None
) -> None:
    """``GET /traffic/unmatched`` of the grounding stage whose counts ``counts`` returns."""

    @app.get(
        "/traffic/unmatched",
        tags=["traffic"],
        dependencies=[Depends(require_read_token(read_token))],
    )
    async def unmatched(n: int = Query(20, ge=1, le=1000)) -> dict[str, Any]:
        """Match rate, abstentions by reason, the ``n`` most frequent unmatched shapes."""
        return unmatched_view(counts(), n)
