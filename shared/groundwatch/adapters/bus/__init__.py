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
    kind: str, *, bootstrap: str = "", partitions: int = 6, client_id: str = "groundwatch"
) -> Bus:
    """Build the configured bus without connecting (connections are made in ``start``)."""
    if kind == "memory":
        from groundwatch.adapters.bus.memory import MemoryBus

        return MemoryBus(partitions=partitions)
    if kind == "kafka":
        from groundwatch.adapters.bus.kafka import KafkaBus

        return KafkaBus(bootstrap=bootstrap, partitions=partitions, client_id=client_id)
    raise ValueError(f"unknown bus kind {kind!r} (expected 'memory' or 'kafka')")
