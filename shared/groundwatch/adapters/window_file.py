"""Cold tallies' windows in a temporary file: the analytics stage's state store.

The tagger keeps its cold groups' windows encoded (:mod:`groundwatch.core.tagging.codec`); this
store keeps their bytes in an unlinked temporary file read back with ``pread``, so they live in
the kernel's page cache (evictable, shared, not the process's RSS) and the heap keeps two numbers
a slot. The file is the process's own scratch space, never a source of truth: the analytics
store holds every tally's state, and a restart restores from there. It is gone when the process
ends (unlinked at creation).

A cold window is written once a cycle per group and freed when the group thaws, so the file
accumulates dead bytes in a long series; when they outweigh the live ones (and a few megabytes)
the next write first copies the live windows to a fresh file, in slot order, under the lock (a
free never rewrites: it may run from a finalizer, in the middle of another call).
"""

from __future__ import annotations

import os
import tempfile
import threading
from array import array
from pathlib import Path

#: Dead bytes tolerated before a rewrite, whatever the live ones (a rewrite costs a pass).
_MIN_DEAD = 8 << 20


class FileBlobs:
    """A :class:`~groundwatch.core.window_blobs.WindowBlobs` store in an unlinked temporary file
    (in ``directory``, else the system's temporary directory)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._dir = str(directory) if directory is not None else None
        self._fd = self._new_file()
        self._offsets = array("q")
        self._sizes = array("q")  # -1: a free slot
        self._free: list[int] = []
        self._end = 0
        self._dead = 0
        # re-entrant: a tally's finalizer frees its slot, and may run inside a call of this
        # thread that holds the lock
        self._lock = threading.RLock()
        #: rewrites done so far (the file's garbage collections)
        self.rewrites = 0

    def _new_file(self) -> int:
        fd, path = tempfile.mkstemp(prefix="groundwatch-windows-", dir=self._dir)
        os.unlink(path)  # the process's own: gone with it, whatever way it ends
        return fd

    def put(self, blob: bytes) -> int:
        with self._lock:
            if self._dead > _MIN_DEAD and self._dead > self._end - self._dead:
                self._rewrite()
            at = self._end
            os.pwrite(self._fd, blob, at)
            self._end = at + len(blob)
            if self._free:
                slot = self._free.pop()
                self._offsets[slot] = at
                self._sizes[slot] = len(blob)
            else:
                slot = len(self._sizes)
                self._offsets.append(at)
                self._sizes.append(len(blob))
            return slot

    def get(self, slot: int) -> bytes:
        with self._lock:
            size = self._sizes[slot]
            if size < 0:
                raise KeyError(f"window slot {slot} is free")
            data = os.pread(self._fd, size, self._offsets[slot])
        if len(data) != size:  # the file was cut short under us: never read a torn window
            raise OSError(f"window slot {slot}: read {len(data)} of {size} bytes")
        return data

    def size(self, slot: int) -> int:
        return self._sizes[slot]

    def free(self, slot: int) -> None:
        with self._lock:
            size = self._sizes[slot]
            if size < 0:
                return
            self._sizes[slot] = -1
            self._free.append(slot)
            self._dead += size

    def _rewrite(self) -> None:
        """Copy the live windows to a fresh file (called with the lock held)."""
        fd = self._new_file()
        at = 0
        offsets, sizes = array("q", self._offsets), self._sizes
        try:
            for slot in range(len(sizes)):
                size = sizes[slot]
                if size < 0:
                    continue
                os.pwrite(fd, os.pread(self._fd, size, offsets[slot]), at)
                offsets[slot] = at
                at += size
        except BaseException:  # the old file and offsets stand: nothing was lost
            os.close(fd)
            raise
        os.close(self._fd)
        self._fd, self._offsets = fd, offsets
        self._end = at
        self._dead = 0
        self.rewrites += 1

    @property
    def file_bytes(self) -> int:
        """The file's length: live windows plus the dead bytes not rewritten yet."""
        return self._end

    def __len__(self) -> int:
        """Slots in use."""
        return len(self._sizes) - len(self._free)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __del__(self) -> None:
        # the last tally holding a slot is gone (a stage rebuilt, a test's tagger dropped):
        # the descriptor goes with the store, not with the process. A plain try: at
        # interpreter exit module globals may be gone already.
        try:  # noqa: SIM105
            self.close()
        except Exception:  # nothing left to close
            pass


__all__ = ["FileBlobs"]
