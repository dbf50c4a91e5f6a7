"""One object per distinct value, for the small immutable values every group of a large window
repeats (a form's verdict-history entry, a group's cohort set, its attribution): a copy per
group was 60–230 bytes each, for a handful of distinct values."""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")

#: Distinct values a table keeps before it starts over (a value shared before stays valid:
#: only later equal values get a new object).
LIMIT = 4096


def shared(table: dict[K, V], key: K, value: V) -> V:
    """The object ``table`` holds for ``key``, ``value`` when it holds none yet."""
    found = table.get(key)
    if found is None:
        if len(table) >= LIMIT:
            table.clear()
        found = table[key] = value
    return found


__all__ = ["LIMIT", "shared"]
