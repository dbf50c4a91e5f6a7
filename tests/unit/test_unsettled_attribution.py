"""The wrong forms of groups without a conclusive status: the failure attribution counts them
under the name the groups table counts their groups by — ``unknown`` (a closed cycle with too
little decided) apart from ``pending`` (no cycle closed yet) — in every read of one tagger."""

from __future__ import annotations

from html import escape

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import (
    CAUSE_MEANINGS,
    STATUS_CAUSES,
    UNSETTLED_MEANINGS,
    Cause,
    GroupStatus,
    Observation,
    Tagger,
    TallyReads,
    publish,
)
from groundwatch.report.build import report_from_tagger
from groundwatch.report.groups import group_results
from groundwatch.report.html import render_html
from groundwatch.report.text import render_text

pytestmark = pytest.mark.unit

C, W, E, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR, Verdict.UNDECIDED


def group(gid: str, cohort: str, verdicts: list[Verdict], forms: int = 3) -> list[Observation]:
    return [
        Observation(
            probe_id=f"{cohort}:{gid}:{i}",
            target="t",
            cohort=cohort,
            group_id=gid,
            form_id=f"{cohort}{gid}{i}",
            verdict=v,
            group_forms=forms,
        )
        for i, v in enumerate(verdicts)
    ]


def tagger() -> Tagger:
    t = Tagger()
    # u: its cycle closed (every form has a verdict) with one decided form: unknown
    t.apply_many(group("u", "short", [W, U, E]))
    # p: two of its three forms judged, the cycle still open: pending
    t.apply_many(group("p", "short", [W, W]))
    # a: unknown in long, but short answered the fact: the wrong long form is fragility
    t.apply_many(group("a", "short", [C, C, C]))
    t.apply_many(group("a", "long", [W, U, U]))
    return t


def agree(reads: TallyReads) -> None:
    """Every cause named after an unsettled status counts forms of groups of that status."""
    numbers = reads.cohort_numbers()
    causes = reads.cause_counts()
    for (target, cohort), n in numbers.items():
        for status in UNSETTLED_MEANINGS:
            forms = causes.get((target, cohort, STATUS_CAUSES[status]), 0)
            assert not forms or n[f"{status.value}_groups"], (cohort, status, forms)


def test_an_unknown_groups_wrong_form_is_unknown_not_pending() -> None:
    t = tagger()
    assert t.status("t", "short", "u") is GroupStatus.UNKNOWN
    assert t.status("t", "short", "p") is GroupStatus.PENDING
    assert t.status("t", "long", "a") is GroupStatus.UNKNOWN
    assert t.cause_counts() == {
        ("t", "short", Cause.UNKNOWN): 1,
        ("t", "short", Cause.PENDING): 2,
        ("t", "short", Cause.UNDECIDED): 1,
        ("t", "short", Cause.TARGET_ERROR): 1,
        ("t", "long", Cause.INCONCLUSIVE): 1,  # answered in short: no knowledge question
        ("t", "long", Cause.UNDECIDED): 2,
    }
    short, long = t.cohort_numbers()[("t", "short")], t.cohort_numbers()[("t", "long")]
    assert (short["unknown_groups"], short["pending_groups"]) == (1, 1)
    assert (long["unknown_groups"], long["pending_groups"]) == (1, 0)
    agree(t)
    agree(publish(t))


def test_the_report_tables_and_the_group_rows_say_the_same() -> None:
    t = tagger()
    report = report_from_tagger(t)
    short = report.targets["t"].cohorts["short"]
    long = report.targets["t"].cohorts["long"]
    assert (short.unknown_groups, short.pending_groups) == (1, 1)
    assert (short.attribution["unknown"], short.attribution["pending"]) == (1, 2)
    assert (long.unknown_groups, long.pending_groups) == (1, 0)
    assert (long.attribution["unknown"], long.attribution["pending"]) == (0, 0)
    assert long.attribution["inconclusive"] == 1
    # the per-form cause a listing (``groups``, ``show``) prints is the table's
    _, rows = group_results(t, group_id="u")
    (row,) = rows
    assert row.status == "unknown"
    assert [f.cause for f in row.forms if f.verdict == "incorrect"] == ["unknown"]
    _, rows = group_results(t, group_id="p")
    assert [f.cause for f in rows[0].forms] == ["pending", "pending"]
    text = render_text(report)
    assert f"unknown: {CAUSE_MEANINGS[Cause.UNKNOWN]}" in text
    assert f"pending: {CAUSE_MEANINGS[Cause.PENDING]}" in text
    html = render_html(report)
    assert escape(CAUSE_MEANINGS[Cause.UNKNOWN]) in html
    # the groups table's tooltip and the cause's words say one thing about an unknown group
    assert escape(UNSETTLED_MEANINGS[GroupStatus.UNKNOWN]) in html


def test_every_status_that_names_a_cause_names_its_own() -> None:
    """A cause named after a status is that status's (and every cause is explained)."""
    assert all(c.value == s.value for s, c in STATUS_CAUSES.items())
    assert set(UNSETTLED_MEANINGS) <= set(STATUS_CAUSES)
    assert set(CAUSE_MEANINGS) == set(Cause)
