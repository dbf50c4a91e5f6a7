"""The groups of a dataset as a sequence that need not be a list in memory.

A dataset read from its file (``adapters.db.datasets.GroupFile``) and one with newer answers
laid over it (``stages.generator.planner.WithFresh``) are both walked by cycles, sampled by
index and sliced now and then; this base gives them one way to answer ``groups[i]`` and
``groups[a:b]`` from a single-group lookup, as a list does.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import overload

from groundwatch.core.model import SemanticGroup


class GroupSequence(Sequence[SemanticGroup]):
    """A :class:`Sequence` of groups built on :meth:`_group` (an index in ``range(len)``)."""

    @abstractmethod
    def _group(self, index: int) -> SemanticGroup: ...

    @overload
    def __getitem__(self, index: int) -> SemanticGroup: ...

    @overload
    def __getitem__(self, index: slice) -> list[SemanticGroup]: ...

    def __getitem__(self, index: int | slice) -> SemanticGroup | list[SemanticGroup]:
        n = len(self)
        if isinstance(index, slice):
            return [self._group(i) for i in range(*index.indices(n))]
        if not -n <= index < n:
            raise IndexError("group index out of range")
        return self._group(index % n)
