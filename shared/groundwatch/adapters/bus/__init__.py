"""The bus: one small interface, two implementations (in-process and Kafka).

Semantics both share, so the same services run embedded and scaled out:
- ``publish_many`` returns only once every message is acknowledged (Kafka: acks=all, idempotent
  producer), so a caller may commit its input right after;
- consumers in one group split a topic's partitions; a record's offset is committed explicitly,
  only after its output is produced or its state stored; anything not committed is redelivered to
  whichever member owns the partition next (at-least-once).
"""

from groundwatch.adapters.bus.base import Bus, Consumer, Outgoing, Record, partition_for

__all__ = ["Bus", "Consumer", "Outgoing", "Record", "make_bus", "partition_for"]


def make_bus(
    kind: str,
    *,
    bootstrap: str = "",
    partitions: int = 6,
    client_id: str = "groundwatch",
    replication_factor: int = 0,
    min_insync_replicas: int = 0,
    retry: tuple[float, float, float] | None = None,
) -> Bus:
    """Build the configured bus without connecting (connections are made in ``start``).

    Kafka only: ``replication_factor`` and ``min_insync_replicas`` of the topics it creates (0:
    min(3, brokers) and RF−1), and ``retry`` = (first backoff, longest backoff, deadline) in
    seconds for the broker faults it retries before a call gives up."""
    if kind == "memory":
        from groundwatch.adapters.bus.memory import MemoryBus

        return MemoryBus(partitions=partitions)
    if kind == "kafka":
        from groundwatch.adapters.bus.kafka import BusRetry, KafkaBus

        return KafkaBus(
            bootstrap=bootstrap,
            partitions=partitions,
            client_id=client_id,
            replication_factor=replication_factor,
            min_insync_replicas=min_insync_replicas,
            retry=BusRetry(*retry) if retry is not None else None,
        )
    raise ValueError(f"unknown bus kind {kind!r} (expected 'memory' or 'kafka')")
