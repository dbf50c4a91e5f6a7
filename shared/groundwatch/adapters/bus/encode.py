"""Contracts onto the bus: each message to its topic, keyed by its semantic group."""

from __future__ import annotations

from collections.abc import Sequence

from groundwatch.adapters.bus.base import Outgoing
from groundwatch.contracts import Topics, _Contract


def to_outgoing(messages: Sequence[_Contract], topics: Topics) -> list[Outgoing]:
    """Route each contract to its topic (by model), keyed by ``group_id`` when it has one."""
    names = {
        "probes": topics.probes.name,
        "responses": topics.responses.name,
        "judgements": topics.judgements.name,
        "dead-letter": topics.dead_letter.name,
    }
    out = []
    for m in messages:
        key = getattr(m, "group_id", None)
        # no bytes yet: a bus encodes the message when it needs them (Kafka: at once)
        out.append(Outgoing(names[m.topic], key.encode() if key else None, None, m))  # type: ignore[attr-defined]
    return out
