"""The report reads a cohort's groups through the tagger (``report.build._CohortTallies``)
instead of copying every group into dicts of its own: it must read exactly as those dicts did —
the factual groups of one (target, cohort), in the tagger's order, from a live tagger, from a
cold one and from a published view."""

from __future__ import annotations

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window, publish
from groundwatch.core.tagging.cold import ColdTally
from groundwatch.report.build import _View

pytestmark = pytest.mark.unit


def _tagger() -> Tagger:
    tagger = Tagger(Window(runs=2))
    n = 0
    for g in range(12):
        for cohort in ("short", "long"):
            for f in range(3):
                n += 1
                verdict = Verdict.INCORRECT if (g + f) % 4 == 0 else Verdict.CORRECT
                tagger.apply(
                    Observation(
                        probe_id=f"p{n}", target="t" if g % 3 else "u", cohort=cohort,
                        group_id=f"g{g}", form_id=f"{cohort}{f}", verdict=verdict,
                        group_forms=3, series="s", cycle=1,
                        scenario="factual" if g != 5 else "numbers",
                    )
                )  # fmt: skip
    return tagger


def _copied(reads: object, target: str, cohort: str) -> dict[str, object]:
    """What the report held before: a dict of every factual group of the pair."""
    return {
        t.group_id: t
        for t in reads.tallies()  # type: ignore[attr-defined]
        if t.scenario == "factual" and (t.target, t.cohort) == (target, cohort)
    }


@pytest.mark.parametrize("source", ["live", "cold", "view"])
def test_a_cohort_s_groups_read_as_the_copied_dict_did(source: str) -> None:
    tagger = _tagger()
    if source == "cold":
        tagger.refresh_causes()
        tagger.make_cold()
        tagger.make_cold()  # untouched since the last call: every complete group cold
        assert all(type(t) is ColdTally for t in tagger._tallies.values())
    reads = publish(tagger) if source == "view" else tagger
    view = _View(reads)
    first_seen = list(
        dict.fromkeys((t.target, t.cohort) for t in reads.tallies() if t.scenario == "factual")
    )
    assert view.pairs == first_seen
    assert set(view.pairs) == {("t", "short"), ("t", "long"), ("u", "short"), ("u", "long")}
    for target, cohort in view.pairs:
        got, want = view.tallies(target, cohort), _copied(reads, target, cohort)
        assert list(got) == list(want)  # the same groups in the same order
        assert dict(got.items()) == want and list(got.values()) == list(want.values())
        assert len(got) == len(want) and bool(got)
        for gid, t in want.items():
            assert gid in got and got[gid] == t
        assert "g5" not in got  # a RAGProbe scenario group is not a factual one
        with pytest.raises(KeyError):
            got["nope"]
    empty = view.tallies("t", "nope")
    assert not empty and len(empty) == 0 and list(empty) == [] and "g1" not in empty
    # the answered groups (looked up, not kept): a right answer in some cohort
    answered = {
        gid for (t, _), d in ((p, _copied(reads, *p)) for p in view.pairs) if t == "t"
        for gid, g in d.items() if g.correct
    }  # fmt: skip
    groups = {gid for (t, _), d in ((p, _copied(reads, *p)) for p in view.pairs) if t == "t"
              for gid in d}  # fmt: skip
    assert answered <= groups and answered
    assert {gid for gid in groups if view.tagger.answered_anywhere("t", gid)} == answered
