"""Per-group rows, the CI gate's rules and JUnit (issue 16), on hand-built observations."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from groundwatch.cli.main import _json_without_file
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import GroupStatus, Observation, Tagger, Window
from groundwatch.report.build import report_from_tagger
from groundwatch.report.gate import evaluate, figure, figures, junit_xml, parse_rule
from groundwatch.report.groups import group_results, overall_status

pytestmark = pytest.mark.unit

G, R, N, F, U, P = (
    GroupStatus.GAP,
    GroupStatus.ROBUST,
    GroupStatus.NON_ROBUST,
    GroupStatus.FLAKY,
    GroupStatus.UNKNOWN,
    GroupStatus.PENDING,
)


@pytest.mark.parametrize(
    ("cohorts", "overall"),
    [
        ([G, G], G),
        ([G, U], G),  # unknown neither confirms nor refutes: still a knowledge gap
        ([G, R], N),  # the fact is there, one wording misses it
        ([R, N], N),
        ([R, F], F),
        ([R, R], R),
        ([U, P], P),
        ([U, U], U),
    ],
)
def test_overall_status(cohorts: list[GroupStatus], overall: GroupStatus) -> None:
    assert overall_status(cohorts) is overall


def obs(gid: str, cohort: str, form: int, verdict: Verdict, **kw: object) -> Observation:
    return Observation(
        probe_id=f"{gid}-{cohort}-{form}",
        target="t",
        cohort=cohort,
        group_id=gid,
        form_id=f"{cohort}{form}",
        verdict=verdict,
        group_forms=2,
        series="s",
        cycle=1,
        **kw,  # type: ignore[arg-type]
    )


def tagger() -> Tagger:
    """g1 gap everywhere, g2 gap in long only, g3 robust, g4 every form a 503."""
    t = Tagger(Window(runs=1))
    c, i, e = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR
    plan = {"g1": (i, i, i, i), "g2": (c, c, i, i), "g3": (c, c, c, c), "g4": (e, e, e, e)}
    for gid, verdicts in plan.items():
        for k, v in enumerate(verdicts):
            cohort = "short" if k < 2 else "long"
            extra = {"error_kind": "http_5xx"} if v is e else {}
            t.apply(obs(gid, cohort, k % 2, v, **extra))
    return t


def test_group_rows_filter_order_and_page() -> None:
    t = tagger()
    total, rows = group_results(t)
    assert total == 4
    assert [(r.group_id, r.status) for r in rows] == [
        ("g1", "gap"),
        ("g2", "non_robust"),
        ("g4", "unknown"),
        ("g3", "robust"),
    ]
    assert rows[0].knowledge_gap and not rows[1].knowledge_gap
    assert rows[1].cohort_status == {"long": "gap", "short": "robust"}
    # a cohort gap is not blamed on the knowledge base
    causes = {f.cause for f in rows[1].forms if f.verdict == "incorrect"}
    assert causes <= {"retrieval", "lm", "inconclusive"} and "gap" not in causes
    assert {f.cause for f in rows[0].forms} == {"gap"}
    assert [h.status for h in rows[0].history] == ["gap", "gap"]
    total, long_gaps = group_results(t, cohort="long", status=GroupStatus.GAP)
    assert (total, [r.group_id for r in long_gaps]) == (2, ["g1", "g2"])
    assert long_gaps[0].cohort == "long" and {f.cohort for f in long_gaps[0].forms} == {"long"}
    total, page = group_results(t, offset=1, limit=2)
    assert total == 4 and [r.group_id for r in page] == ["g2", "g4"]
    assert group_results(t, group_id="g")[0] == 4 and group_results(t, group_id="g3")[0] == 1


def test_a_page_of_groups_snapshots_only_its_rows() -> None:
    """Picking a page reads statuses; only the page's groups are snapshotted (a report's
    failing groups at 500k probes held every group's snapshots to pick 2,000)."""
    t = tagger()
    asked: list[tuple[str, str, str]] = []
    real = t.tally

    def counting(target: str, cohort: str, group_id: str) -> object:
        asked.append((target, cohort, group_id))
        return real(target, cohort, group_id)

    t.tally = counting  # type: ignore[method-assign,assignment]
    total, page = group_results(t, offset=1, limit=1)
    assert (total, [r.group_id for r in page]) == (4, ["g2"])
    assert sorted(asked) == [("t", "long", "g2"), ("t", "short", "g2")]


def test_rows_and_summary_read_the_same_from_a_tagger_with_cold_tallies_and_its_view() -> None:
    from groundwatch.core.tagging import publish
    from groundwatch.report.groups import status_summary

    live = tagger()
    expected = group_results(live)
    summary = status_summary(live)
    assert summary["gap"] == 1 and summary["non_robust"] == 1 and summary["robust"] == 1
    cold = tagger()
    cold.refresh_causes()  # a group whose attribution is due stays live
    cold.make_cold()
    cold.make_cold()  # the second call makes cold what the first saw touched
    assert cold._hot_keys == set()
    for reads in (cold, publish(cold), publish(live)):
        assert group_results(reads) == expected
        assert status_summary(reads) == summary
        total, gaps = group_results(reads, cohort="long", status=GroupStatus.GAP)
        assert (total, [r.group_id for r in gaps]) == (2, ["g1", "g2"])


def test_report_lists_failing_groups_and_target_health() -> None:
    report = report_from_tagger(tagger())
    assert [g.group_id for g in report.failing_groups] == ["g1", "g2", "g4"]
    assert report.failing_groups_total == 3
    h = report.target_health["t"]
    assert (h.probes, h.errors, h.error_kinds, h.all_failed) == (16, 4, {"http_5xx": 4}, False)


def test_rules_parse_scope_and_reject_typos() -> None:
    assert parse_rule("acc_db=0.9", "min").figure == "acc_db"
    r = parse_rule("prod/long:refined_accuracy=0.95", "min")
    assert (r.target, r.cohort, r.threshold) == ("prod", "long", 0.95)
    assert parse_rule("long:lambda=0.2", "max").cohort == "long"
    for bad in ("acc_dbb=1", "acc_db", "acc_db=high"):
        with pytest.raises(ValueError):
            parse_rule(bad, "min")
    assert {"acc_db", "lambda", "non_robust_share", "target_error_share"} <= set(figures())


def test_gate_checks_every_cohort_and_undefined_figures_break() -> None:
    report = report_from_tagger(tagger())
    short, long_ = report.cohorts["short"], report.cohorts["long"]
    assert figure(short, "acc_db") == pytest.approx(2 / 3) and figure(
        long_, "acc_db"
    ) == pytest.approx(1 / 3)
    assert figure(long_, "target_error_share") == pytest.approx(2 / 8)
    checks = evaluate(
        report,
        [
            parse_rule("acc_db=0.5", "min"),
            parse_rule("target_error_share=0.3", "max"),
            parse_rule("nosuch:acc_db=0.1", "min"),
        ],
    )
    broken = {(c.target, c.cohort, c.rule.figure) for c in checks if not c.ok}
    assert broken == {("t", "long", "acc_db"), ("*", "nosuch", "acc_db")}
    line = next(c for c in checks if c.cohort == "long" and not c.ok).line
    assert line == "t/long: acc_db = 0.3333 < 0.5 (--fail-under)"


def test_non_robust_share_counts_a_fact_missed_in_one_cohort_only() -> None:
    """Short forms right and long forms wrong: each cohort is consistent within itself (short
    robust, long a cohort gap), and the semantic group is fragile — the gate's non-robust share
    must see it (it read 0 for the long cohort, and ``--max non_robust_share=0.01`` passed)."""
    t = Tagger(Window(runs=1))
    for g in ("g1", "g2"):
        for cohort, verdict in (("short", Verdict.CORRECT), ("long", Verdict.INCORRECT)):
            for f in range(2):
                t.apply(
                    Observation(
                        f"{g}{cohort}{f}", "t", cohort, g, f"{cohort}{f}", verdict,
                        group_forms=2, series="s", cycle=1,
                    )
                )  # fmt: skip
    report = report_from_tagger(t)
    long_ = report.cohorts["long"]
    assert long_.non_robust_groups == 0 and long_.cohort_gap_groups == 2
    assert figure(long_, "non_robust_share") == 1.0
    assert figure(long_, "cohort_gap_share") == 1.0
    checks = evaluate(report, [parse_rule("non_robust_share=0.01", "max")])
    assert sorted((c.cohort, c.ok) for c in checks) == [("long", False), ("short", True)]


def test_junit_has_one_case_per_group() -> None:
    t = tagger()
    report = report_from_tagger(t)
    _, every = group_results(t)
    root = ET.fromstring(junit_xml(every, evaluate(report, [parse_rule("acc_db=0.9", "min")]),
                                   report.target_health))  # fmt: skip
    suite = root.find("testsuite[@name='groundwatch.t']")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "2", "1")
    assert "503" not in (suite.findtext("system-out") or "") and "http_5xx 4" in (
        suite.findtext("system-out") or ""
    )
    thresholds = root.find("testsuite[@name='groundwatch.thresholds']")
    assert thresholds is not None and thresholds.get("failures") == "2"  # 2/3 and 1/3 < 0.9


def test_json_flag_without_a_file_means_stdout() -> None:
    assert _json_without_file(["groups", "--json"]) == ["groups", "--json", "-"]
    assert _json_without_file(["groups", "--json", "--status", "gap"]) == [
        "groups", "--json", "-", "--status", "gap"
    ]  # fmt: skip
    assert _json_without_file(["groups", "--json", "f.json"]) == ["groups", "--json", "f.json"]
    assert _json_without_file(["run", "--json"]) == ["run", "--json"]


def test_a_report_file_named_dash_is_standard_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """``report --json -`` wrote a file named '-' and said "wrote -"; ``groups --json -``
    writes to standard output, and so does every report file now — the text report then
    stays off standard output, which carries the file."""
    from groundwatch.cli.outputs import STDOUT, finish

    monkeypatch.chdir(tmp_path)
    code = finish(report_from_tagger(tagger()), json_out=STDOUT, fail_on_dead_target=False)
    out, err = capsysbinary.readouterr()
    assert code == 0 and not (tmp_path / "-").exists()
    assert json.loads(out)["schema"].startswith("groundwatch.report/")
    assert b"wrote" not in err


def test_show_says_a_gap_of_previous_values_is_outdated_knowledge() -> None:
    """Every form answering the source's previous value (cause stale) was shown as 'knowledge
    gap: the fact is missing' beside causes that said otherwise."""
    from groundwatch.cli.groups import render_group
    from groundwatch.report.document import FormResult, GroupResult

    def form(i: int, cause: str) -> FormResult:
        return FormResult(
            probe_id=f"p{i}", form_id=f"f{i}", cohort="short", verdict="incorrect", cause=cause
        )

    def group(*causes: str) -> str:
        forms = [form(i, c) for i, c in enumerate(causes)]
        return render_group(
            GroupResult(target="t", group_id="g", status="gap", knowledge_gap=True, forms=forms)
        )

    assert "knowledge gap: the fact is outdated" in group("stale", "stale")
    assert "knowledge gap: the fact is missing" in group("stale", "gap")
