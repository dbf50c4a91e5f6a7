"""What a consuming stage is: a typed batch handler for one input topic.

A stage knows what to do with a batch of messages (judge them, ask targets, tally them) and which
topic it reads; it knows nothing of offsets, retries or dead letters. The runtime's one consume
loop (:mod:`groundwatch.runtime.consume`) runs any stage on any bus, so the same handler serves the
Kafka services, the embedded pipeline and the CLI.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from groundwatch.adapters.bus.base import Consumer
from groundwatch.contracts import Topic, Topics, _Contract
from groundwatch.errors import Reject

M = TypeVar("M", bound=_Contract)

#: Called by the consume loop after a rebalance, before any record of the new assignment.
AssignmentHook = Callable[[Consumer, frozenset[tuple[str, int]]], Awaitable[None]]


class Stage(Protocol[M]):
    """A consuming stage. ``service`` names it in logs, metrics and dead letters; ``group`` is
    its default consumer group; ``max_records`` its batch size."""

    service: str
    group: str
    max_records: int

    def source(self, topics: Topics) -> Topic[M]:
        """The topic this stage consumes."""
        ...

    async def handle(self, messages: list[M]) -> Sequence[_Contract | Reject]:
        """Process one batch; the returned messages are produced before offsets commit, and a
        :class:`Reject` dead-letters the message it names."""
        ...
