"""A bounded memo for the judge's pure functions of one response.

A RAG endpoint probed every cycle gives the same answer to the same form again and again (and
one extractive sentence to several forms): the rules' decision is a pure function of (question,
gold, answer), the contexts' evidence of (gold, contexts, question). Keeping the last
``max_entries`` of each makes all but the first sighting a dictionary lookup, as
:class:`~groundwatch.stages.judge.stage.AnswerScorer` does for the answer metrics. Bounded, so a
judge that sees only new answers keeps constant memory; ``hits``/``misses`` say how much it
helps.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """A least-recently-used map of at most ``max_entries`` keys."""

    #: 10k, not 50k: an entry keeps its key's texts and its value alive, and a 50k-probe cycle
    #: filled every memo (this and the encoder's byte bound: 589 -> 554 MB at its peak). A cycle
    #: larger than the bound gets no hits from an LRU anyway (each key comes back after the
    #: whole cycle), so a larger bound only helps cycles between the two sizes.
    def __init__(self, max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        value = self._data.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: V) -> None:
        self._data[key] = value
        if len(self._data) > self.max_entries:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
