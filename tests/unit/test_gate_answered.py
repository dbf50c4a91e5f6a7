"""The gate's answered-share floor: a target that answered too little of its newest cycle breaks
the gate whatever the thresholds say, and the line says how many probes were shed and failed."""

from __future__ import annotations

from xml.etree import ElementTree as ET

import pytest

from groundwatch.report.document import TargetHealth
from groundwatch.report.gate import DEFAULT_MIN_ANSWERED, answered_checks, junit_xml

pytestmark = pytest.mark.unit


def health(probes: int, answered: int, shed: int) -> TargetHealth:
    errors = probes - answered
    kinds = {k: n for k, n in (("circuit_open", shed), ("http_5xx", errors - shed)) if n}
    return TargetHealth(
        cycle=1, probes=probes, answered=answered, errors=errors, error_kinds=kinds,
        all_failed=probes > 0 and answered == 0,
    )  # fmt: skip


def test_a_mostly_shed_cycle_breaks_the_floor_and_says_why() -> None:
    (check,) = answered_checks({"mine": health(1200, 143, 1057)}, DEFAULT_MIN_ANSWERED)
    assert not check.ok
    assert check.line == (
        "mine: answered 143 of 1200 probes of cycle 1 (0.1192 < --min-answered 0.9):"
        " 1057 shed by the open circuit (circuit_open), 0 failed; too little evidence for the gate"
    )


def test_the_floor_holds_at_its_share_and_zero_turns_it_off() -> None:
    ok, short = answered_checks({"a": health(100, 90, 0), "b": health(100, 89, 3)}, 0.9)
    assert ok.ok and not short.ok
    assert "3 shed by the open circuit (circuit_open), 8 failed" in short.line
    assert answered_checks({"b": health(100, 1, 99)}, 0.0) == []
    assert answered_checks({"idle": health(0, 0, 0)}, 0.9) == []  # nothing probed: no floor


def test_the_floor_is_a_case_of_the_junit_thresholds_suite() -> None:
    checks = answered_checks({"mine": health(10, 2, 8)}, 0.9)
    root = ET.fromstring(junit_xml([], checks, {}))
    suite = root.find("testsuite[@name='groundwatch.thresholds']")
    assert suite is not None and suite.get("failures") == "1"
    case = suite.find("testcase")
    assert case is not None and case.get("name") == "mine: answered_share >= 0.9"
    failure = case.find("failure")
    assert failure is not None and "8 shed by the open circuit" in failure.get("message", "")
