"""Test-only fault injection at the instant that matters for delivery: output stored or published,
offsets not yet committed.

A SIGKILL there is what makes at-least-once hand the same records to the next owner, so the
fault tests can show the duplicates arrive *and* are not counted twice, instead of hoping a
random kill lands in that window (in earlier runs it never did). It is enabled only by the
``GW_TEST_KILL_BEFORE_COMMIT`` setting, 0 (off) by default; nothing else reaches it.
"""

from __future__ import annotations

import logging
import os
import signal

from groundwatch.runtime.consume import BeforeCommitHook

log = logging.getLogger(__name__)


def kill_before_commit(after_batches: int) -> BeforeCommitHook | None:
    """A hook that SIGKILLs this process once ``after_batches`` batches are handled and before
    the last one's offsets are committed; ``None`` (no hook at all) when 0."""
    if after_batches <= 0:
        return None

    def hook(batches: int) -> None:
        if batches >= after_batches:
            log.warning("test fault: SIGKILL after batch %d, before its offsets commit", batches)
            for handler in logging.getLogger().handlers:
                handler.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
