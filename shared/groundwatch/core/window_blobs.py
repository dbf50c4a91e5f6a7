"""Where cold windows live: the port between the tagger's cold tallies and a state store.

A cold group's window is a few hundred bytes (:mod:`groundwatch.core.tagging.cold`);
kept as Python ``bytes`` they were still ~40% of what a run held per group at 500k probes, and
the process's peak grew with every group it had seen. A stream processor keeps such state in a
store outside the heap with a small cache in front (Kafka Streams' RocksDB, quix-streams); the
tagger does the same through this port: a cold tally holds a *slot*, the store holds the
bytes. The core holds no file: :class:`MemoryBlobs` (the default: a library tagger, the tests)
keeps them in the heap; the analytics stage plugs in a file-backed store
(:mod:`groundwatch.adapters.window_file`) whose bytes stay in the kernel's page cache.

A store is shared by every tagger of a process (a reload builds a new tagger beside the old one)
and read from report threads while the consume loop writes, so implementations are thread-safe.
"""

from __future__ import annotations

import threading
from typing import Protocol


class WindowBlobs(Protocol):
    """Bytes by slot: put once, read any number of times, freed when the tally holding the slot
    is gone (a thaw, a discarded group, a dropped tagger)."""

    def put(self, blob: bytes) -> int:
        """Keep ``blob``; returns its slot (reused after :meth:`free`)."""
        ...

    def get(self, slot: int) -> bytes:
        """The bytes put in ``slot``."""
        ...

    def size(self, slot: int) -> int:
        """How many bytes ``slot`` holds."""
        ...

    def free(self, slot: int) -> None:
        """The slot's bytes are not needed any more."""
        ...


class MemoryBlobs:
    """The default store: the bytes in the heap (what the tagger held before there was a port)."""

    def __init__(self) -> None:
        self._blobs: list[bytes] = []
        self._free: list[int] = []
        self._lock = threading.Lock()

    def put(self, blob: bytes) -> int:
        with self._lock:
            if self._free:
                slot = self._free.pop()
                self._blobs[slot] = blob
                return slot
            self._blobs.append(blob)
            return len(self._blobs) - 1

    def get(self, slot: int) -> bytes:
        return self._blobs[slot]

    def size(self, slot: int) -> int:
        return len(self._blobs[slot])

    def free(self, slot: int) -> None:
        with self._lock:
            self._blobs[slot] = b""
            self._free.append(slot)

    def __len__(self) -> int:
        """Slots in use."""
        return len(self._blobs) - len(self._free)


__all__ = ["MemoryBlobs", "WindowBlobs"]
