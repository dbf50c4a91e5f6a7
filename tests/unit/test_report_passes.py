"""The report calls its caller's allocator hook after each pass over every group, and the
hook changes nothing in it: the services give each pass's freed heap back there (a 500k-probe
report climbed 48 MB over the cycle's state, pass after pass, without it)."""

from __future__ import annotations

import pytest

from groundwatch.app.reports import tagger_report
from groundwatch.core.tagging import Tagger, Window
from groundwatch.report.build import report_from_tagger

from .test_tagger_incremental import stream

pytestmark = pytest.mark.unit


def _tagger(seed: int) -> Tagger:
    tagger = Tagger(Window(runs=2))
    for o in stream(seed):
        tagger.apply(o)
    tagger.drain_transitions()
    tagger.refresh_causes()
    return tagger


@pytest.mark.parametrize("seed", range(3))
def test_the_hook_runs_after_every_pass_and_changes_nothing(seed: int) -> None:
    tagger = _tagger(seed)
    calls: list[int] = []
    hooked = report_from_tagger(tagger, after_pass=lambda: calls.append(len(calls)))
    plain = report_from_tagger(tagger)
    assert hooked.model_dump(exclude={"generated_at"}) == plain.model_dump(exclude={"generated_at"})
    # the view's pass; per target each cohort's numbers, the hypothesis and the balanced
    # comparison; then the scores, the targets' health and the failing groups
    per_target = sum(len(c.cohorts) + 2 for c in plain.targets.values())
    assert plain.targets, "the stream has factual groups"
    assert len(calls) == 1 + per_target + 3


def test_the_run_report_gives_memory_back_between_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    import groundwatch.runtime.allocator as allocator

    released: list[None] = []
    monkeypatch.setattr(allocator, "release_free_memory", lambda: released.append(None) or True)
    report, _ = tagger_report(_tagger(0))
    assert report.targets
    # once before the report (the cycle's holes), then after each pass
    assert len(released) >= 1 + 1 + 3
