"""What the view's pages read of one tagger, found once per tagger: its targets and cohorts,
every group worst first (a list per cohort choice), and the groups the last few filters picked.

The tagger a page reads never changes (a replay of the store, a published view): each of these
is a pass over every group, made once, and a page is then a filter over the sorted list and a
slice of it. :func:`warm` makes the common ones before a fresh replay is shown, off the request
path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

from groundwatch.core.tagging import FACTUAL, GroupStatus, TallyReads, overall_status
from groundwatch.report.groups import SEVERITY, Picked

_Entry = tuple[tuple[str, str], GroupStatus, tuple[str, ...], bool]
"""((target, group_id), status, cohorts, held)."""


class ViewIndex:
    KEEP = 8

    def __init__(self, tagger: TallyReads) -> None:
        self.tagger = tagger
        self.targets = tagger.targets()
        self.cohorts = {t: tagger.cohorts(t) for t in self.targets}
        self.every_cohort = tagger.cohorts()
        self._sorted: dict[str | None, list[_Entry]] = {}
        self._picked: OrderedDict[tuple[Any, ...], Picked] = OrderedDict()
        self._lock = threading.Lock()

    def cohorts_of(self, target: str | None) -> list[str]:
        return self.every_cohort if target is None else self.cohorts.get(target, [])

    def worst_first(self, cohort: str | None) -> list[_Entry]:
        """Every factual group worst first (by ``cohort``'s status, else the group's over
        its cohorts), as ``report.groups`` orders a listing."""
        with self._lock:
            found = self._sorted.get(cohort)
        if found is not None:
            return found
        entries: list[_Entry] = []
        for t, gid, cohorts, statuses, answered, held in self.tagger.group_statuses(
            None, cohort, FACTUAL
        ):
            st = statuses[0] if cohort is not None else overall_status(statuses, answered=answered)
            entries.append(((t, gid), st, cohorts, bool(held)))
        entries.sort(key=lambda e: (SEVERITY[e[1]], e[0][0], e[0][1]))
        with self._lock:
            self._sorted[cohort] = entries
        return entries

    def pick(
        self,
        *,
        target: str | None,
        cohort: str | None,
        status: Iterable[GroupStatus] | None,
        held: bool | None,
        group_ids: Collection[str] | None,
        key: tuple[Any, ...],
    ) -> Picked:
        """The groups a filter keeps, worst first (the last few filters' kept)."""
        with self._lock:
            found = self._picked.get(key)
            if found is not None:
                self._picked.move_to_end(key)
                return found
        wanted = None if status is None else frozenset(status)
        made: Picked = [
            (k, st, cohorts)
            for k, st, cohorts, h in self.worst_first(cohort)
            if (target is None or k[0] == target)
            and (wanted is None or st in wanted)
            and (held is None or h is held)
            and (group_ids is None or k[1] in group_ids)
        ]
        with self._lock:
            self._picked[key] = made
            while len(self._picked) > self.KEEP:
                self._picked.popitem(last=False)
        return made


class _Indexes:
    """The indexes of the last few taggers read (one per view served in the process)."""

    KEEP = 4

    def __init__(self) -> None:
        self._by_id: OrderedDict[int, ViewIndex] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, tagger: TallyReads) -> ViewIndex:
        with self._lock:
            found = self._by_id.get(id(tagger))
        if found is not None and found.tagger is tagger:
            return found
        made = ViewIndex(tagger)
        with self._lock:
            self._by_id[id(tagger)] = made
            while len(self._by_id) > self.KEEP:
                self._by_id.popitem(last=False)
        return made


index_of = _Indexes()


def warm(tagger: TallyReads) -> None:
    """Make ``tagger``'s index, its sorted lists (over every cohort and per cohort) and the
    unfiltered table before a page asks for them."""
    index = index_of(tagger)
    for cohort in [None, *index.every_cohort]:
        index.worst_first(cohort)
    index.pick(target=None, cohort=None, status=None, held=None, group_ids=None,
               key=(None, None, "", "", ""))  # fmt: skip
