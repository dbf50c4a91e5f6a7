"""The allocator's knobs: arenas capped, free pages released (runtime/allocator.py)."""

from __future__ import annotations

import os
import sys

import pytest

from groundwatch.runtime import allocator

pytestmark = pytest.mark.unit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_release_free_memory_gives_a_holed_heap_back() -> None:
    """A heap with holes (most of a batch's objects freed between the few kept) holds its
    pages until they are released: the release gives them back."""

    def rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    blocks = [bytes(2000) + str(i).encode() for i in range(40_000)]  # ~80 MB, below mmap size
    kept = blocks[::16]
    del blocks
    before = rss_mb()
    assert allocator.release_free_memory()
    assert before - rss_mb() > 20, "the freed blocks' pages stayed with the process"
    assert len(kept) == 2500
