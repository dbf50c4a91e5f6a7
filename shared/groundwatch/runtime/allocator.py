"""How many malloc arenas the process may use: two, as Python services commonly run.

glibc gives each thread that allocates while another holds the lock an arena of its own (up to
8 × cores), and memory freed in an arena stays with it: the store's writer threads, the judge's
worker threads and the event loop each kept their own, and a 50k-probe ``run --once`` peaked
~30 MB higher than with two arenas (531 → 501 MB measured here; one arena: 495 MB, no slower to
the second). Set once at start-up, before the first worker thread, unless ``MALLOC_ARENA_MAX``
is in the environment (glibc read it already: the operator's value stands). Anywhere else than
glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

#: mallopt's parameter number for the arena limit (malloc.h: M_ARENA_MAX)
_M_ARENA_MAX = -8
#: the limit set when the environment names none
ARENAS = 2

_done = False


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library's symbols through the process's own handle (``dlopen(NULL)``: the
    interpreter is linked against it), looked up once: a report gives memory back after each
    of its passes. No ``find_library``, which runs ``ldconfig -p`` in a subprocess."""
    return ctypes.CDLL(None)


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` (once per process); returns whether it is set."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        ok = bool(_libc().mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt arenas)
        return False
    _done = ok
    return ok


def release_free_memory() -> bool:
    """Give the pages malloc holds free back to the system (glibc's ``malloc_trim``); whether
    it could. A long cycle leaves its heap full of holes (a batch's transient objects freed
    between the tallies that stay), which count in the process's RSS until reused; a report
    built right after allocates as much again in a burst. Released first, the report reuses
    what it needs and the rest is the system's: a 200k-probe ``run --once`` peaked 9 MB lower
    (389 against 398 MB). Elsewhere than glibc this does nothing."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(_libc().malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


__all__ = ["ARENAS", "limit_arenas", "release_free_memory"]
