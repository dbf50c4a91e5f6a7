"""A person's verdict on one judged answer, counted in its group's tally instead of the judge's.

The judge's verdict of an answer is applied once, by its probe id (:meth:`Tagger.apply`); a
person's verdict on the same answer is not a new answer but a correction of that one, so it has
its own idempotent path: it replaces the verdict the window counts for that answer and the
group's numbers, status, flaky forms and transitions are derived again by the code the live path
runs. Each person's verdict carries a **revision** that orders the verdicts of one answer (the
store's row id): a verdict of a revision already applied, or older than the one applied, is a
repeat and changes nothing — so redelivery and replay never count twice, and a later verdict
replaces an earlier one whatever order they arrive in. A withdrawal (no verdict) restores the
judge's. The judge's verdict and the applied revision travel with the observation
(``Observation.human``), so a stored tally state, a compressed tally and a restore keep them.

The target's health (its undecided share) stays the judge's: it says how well the judge can
read the target's answers, which a person's correction does not change.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING

from groundwatch.core.model import Verdict
from groundwatch.core.tagging.values import FLAKY_HISTORY, GroupKey
from groundwatch.core.tagging.windows import Tally, history_entry

if TYPE_CHECKING:
    from groundwatch.core.tagging.tagger import Tagger

#: The verdicts a person gives.
HUMAN_VERDICTS = frozenset({Verdict.CORRECT, Verdict.INCORRECT})


class Override(StrEnum):
    """What became of a person's verdict."""

    #: counted: the answer's verdict in the window is now the person's (or the judge's again)
    APPLIED = "applied"
    #: this revision, or a later one, stands already: nothing changed
    REPEATED = "repeated"
    #: the group's window holds no such answer (never judged, another group, or left the window)
    UNKNOWN = "unknown"


def override(
    tagger: Tagger,
    key: GroupKey,
    probe_id: str,
    verdict: Verdict | None,
    revision: int,
    at: float = 0.0,
) -> Override:
    """Count ``verdict`` (None: withdrawn) for the answer ``probe_id`` of the tally ``key``."""
    if verdict is not None and verdict not in HUMAN_VERDICTS:
        raise ValueError(f"a person's verdict is correct or incorrect, not {verdict.value!r}")
    if revision < 1:
        raise ValueError(f"a person's verdict needs a revision of 1 or more, not {revision}")
    if key not in tagger._tallies:
        return Override.UNKNOWN
    t = tagger._live_tally(key)
    old = tagger._live.get(probe_id)
    if old is None or old.key != key or old.cycle not in t.cycles:
        return Override.UNKNOWN
    cy = t.cycles[old.cycle]  # the window's observations are exactly its cycles'
    if old.human is not None and old.human[0] >= revision:
        return Override.REPEATED
    judge = old.human[1] if old.human is not None else old.verdict
    new = replace(old, verdict=verdict if verdict is not None else judge, human=(revision, judge))
    counts = cy.replace(old, new)
    tagger._live[probe_id] = new
    if new.verdict is old.verdict:
        # the revision moves (a replay of an older verdict must stay a repeat), nothing counted
        tagger._changed.add(key)
        return Override.APPLIED
    tagger._count_verdict(old, -1)
    tagger._count_verdict(new, 1)
    if counts:
        _history(t, new.form_id, new.cycle, new.verdict, new.truth_version)
    tagger._touched.add(key)
    t.reshaped = True  # the counted cycles' verdicts moved: re-derive, not move by one verdict
    tagger._recompute(key, t, None, at=at)
    return Override.APPLIED


def _history(t: Tally, form: str, cycle: int, verdict: Verdict, truth_version: int) -> None:
    """The form's verdict history with ``verdict`` as its verdict of ``cycle``: the entry
    replaced, added in order, or dropped when the verdict is no longer a decided one."""
    h = [e for e in t.history.get(form, ()) if e[0] != cycle]
    if verdict is Verdict.CORRECT or verdict is Verdict.INCORRECT:
        h.append(history_entry(cycle, verdict is Verdict.CORRECT, truth_version))
        h.sort()
        del h[:-FLAKY_HISTORY]
    if h:
        t.history[form] = h
    else:
        t.history.pop(form, None)
