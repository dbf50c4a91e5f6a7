"""What the tally state shares instead of copying per group (issue 33, memory): the published
view holds the tally's own ``latest`` map, so the tagger must replace it, never change it; a
form's history entries and a group's cohort set are shared objects; and the process limits
glibc's malloc arenas unless the operator set them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import groundwatch
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import (
    Observation,
    Tagger,
    Window,
    dump_state,
    history_entry,
    publish,
    restore,
)
from groundwatch.runtime.allocator import limit_arenas

pytestmark = pytest.mark.integration

#: this checkout's package first, whatever the working directory of the test
_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(Path(groundwatch.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
    ),
}


def obs(
    pid: str,
    form: str,
    verdict: Verdict,
    *,
    cohort: str = "short",
    cycle: int = 1,
    group: str = "g1",
    forms: int = 3,
) -> Observation:
    return Observation(
        probe_id=pid, target="t", cohort=cohort, group_id=group, form_id=form, verdict=verdict,
        group_forms=forms, series="s", cycle=cycle,
    )  # fmt: skip


def test_a_published_view_keeps_its_latest_verdicts_when_a_form_is_asked_again() -> None:
    tagger = Tagger(Window(runs=2))
    tagger.apply(obs("p1", "f1", Verdict.CORRECT))
    tagger.apply(obs("p2", "f2", Verdict.INCORRECT))
    view = publish(tagger)
    g = view._tallies[("t", "short", "g1")]
    before = dict(g.latest)
    # the same form again in the same cycle: its verdict replaces the old one in the tagger
    tagger.apply(obs("p3", "f2", Verdict.CORRECT))
    assert tagger._tallies[("t", "short", "g1")].latest["f2"].verdict is Verdict.CORRECT
    assert g.latest == before  # the view published before it still reads the old verdict
    assert g.latest["f2"].verdict is Verdict.INCORRECT
    assert list(tagger._tallies[("t", "short", "g1")].latest) == ["f1", "f2"]  # its place kept
    after = publish(tagger, view)
    assert after._tallies[("t", "short", "g1")].latest["f2"].verdict is Verdict.CORRECT
    assert g.tally.correct == 1 and after._tallies[("t", "short", "g1")].tally.correct == 2


def test_history_entries_are_shared_and_cohorts_found_without_a_map_per_group() -> None:
    tagger = Tagger(Window(runs=3))
    for i in range(20):
        for cohort in ("short", "long"):
            for f in range(3):
                tagger.apply(
                    obs(f"p{i}{cohort}{f}", f"{cohort}{f}", Verdict.CORRECT, cohort=cohort,
                        group=f"g{i}")
                )  # fmt: skip
    tagger.apply(obs("q", "mid0", Verdict.CORRECT, cohort="mid", group="g3"))
    entries = {id(e) for t in tagger._tallies.values() for h in t.history.values() for e in h}
    assert len(entries) == 1  # (cycle 1, correct, version 1): one object for 121 forms
    assert tagger._group_cohorts("t", "g0") == ("long", "short")  # sorted
    assert tagger._group_cohorts("t", "g3") == ("long", "mid", "short")
    assert tagger._group_cohorts("t", "nope") == () and tagger._group_cohorts("u", "g0") == ()
    view = publish(tagger)
    assert view._group_cohorts("t", "g3") == ("long", "mid", "short")
    # a restored tagger shares the entries and finds the same cohorts
    states = [(k, dump_state(tagger, k)) for k in tagger._tallies]
    again = Tagger(Window(runs=3))
    restore(again, states)  # type: ignore[arg-type]
    assert {id(e) for t in again._tallies.values() for h in t.history.values() for e in h} == (
        entries
    )
    assert again._group_cohorts("t", "g3") == ("long", "mid", "short")
    # a discarded group has no cohorts left, in the tagger and in the next view
    tagger.discard_group("t", "g3")
    assert tagger._group_cohorts("t", "g3") == ()
    assert publish(tagger, view)._group_cohorts("t", "g3") == ()
    assert view._group_cohorts("t", "g3") == ("long", "mid", "short")  # the old view unchanged


def test_history_entry_is_the_value_it_names() -> None:
    assert history_entry(4, True, 2) == (4, True, 2)
    assert history_entry(4, True, 2) is history_entry(4, True, 2)
    assert history_entry(4, False, 2) != history_entry(4, True, 2)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_arena_limit_is_set_unless_the_environment_names_one() -> None:
    code = "from groundwatch.runtime.allocator import limit_arenas; print(limit_arenas())"
    env = {k: v for k, v in _ENV.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr
    out = subprocess.run(
        [sys.executable, "-c", code], env={**env, "MALLOC_ARENA_MAX": "4"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.stdout.strip() == "False", out.stderr
    assert limit_arenas() in (True, False)  # and calling it again in-process is harmless


def test_loading_the_targets_config_does_not_import_openai() -> None:
    code = (
        "import sys, groundwatch.adapters.targets.config, groundwatch.app.runs;"
        " print('openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=_ENV, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
