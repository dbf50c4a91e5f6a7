"""The comparison of two sides (:mod:`groundwatch.core.compare`): which groups changed how, the
figures' deltas and their intervals, the sign test, the regression gate."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from scipy.stats import binomtest

from groundwatch.app.compare import BASELINE_SCHEMA, diff
from groundwatch.cli.main import _optional_values
from groundwatch.core.compare import (
    PairedSign,
    Side,
    change_kind,
    cohort_tally,
    compare,
    dataset_digest,
    figures,
    form_changes,
    gate,
)
from groundwatch.core.stats import sign_test_p
from groundwatch.errors import ConfigError


def side(label: str, groups: dict[str, dict[str, tuple[int, int]]], target: str = "t") -> Side:
    """``groups``: group id → cohort → (right, wrong) of a three-form cohort."""
    s = Side(label, "ds", "")
    for gid, cohorts in groups.items():
        for cohort, (right, wrong) in cohorts.items():
            s.add(target, gid, cohort, cohort_tally(right, wrong, 3 - right - wrong, 0, 3))
    return s


def test_each_kind_of_change_is_named_and_listed_worst_first() -> None:
    a = side("a", {
        "g-gap": {"s": (3, 0)}, "g-nr": {"s": (3, 0)}, "g-rec": {"s": (0, 3)},
        "g-lost": {"s": (3, 0)}, "g-gain": {"s": (0, 0)}, "g-same": {"s": (3, 0)},
        "g-gone": {"s": (3, 0)},
    })  # fmt: skip
    b = side("b", {
        "g-gap": {"s": (0, 3)}, "g-nr": {"s": (2, 1)}, "g-rec": {"s": (3, 0)},
        "g-lost": {"s": (0, 0)}, "g-gain": {"s": (3, 0)}, "g-same": {"s": (3, 0)},
        "g-new": {"s": (3, 0)},
    })  # fmt: skip
    c = compare(a, b)
    assert [(x.group_id, x.kind, x.transition) for x in c.changes] == [
        ("g-gap", "regression", "robust→gap"),  # the bigger fall first
        ("g-nr", "regression", "robust→non_robust"),
        ("g-gone", "lost", "robust→absent"),
        ("g-lost", "lost", "robust→unknown"),
        ("g-gain", "gained", "unknown→robust"),
        ("g-new", "gained", "absent→robust"),
        ("g-rec", "recovery", "gap→robust"),
    ]
    assert c.counts == {"regression": 2, "lost": 2, "gained": 2, "recovery": 1}
    # the sign test counts only groups decided on both sides
    assert (c.paired.worse, c.paired.better, c.paired.ties) == (2, 1, 1)
    assert c.paired.p_value == pytest.approx(binomtest(1, 3, 0.5).pvalue)


def test_the_semantic_group_status_spans_its_cohorts() -> None:
    # one cohort forgets, the other still answers: the group is non-robust, not a gap
    a = side("a", {"g": {"short": (3, 0), "long": (3, 0)}})
    b = side("b", {"g": {"short": (3, 0), "long": (0, 3)}})
    (ch,) = compare(a, b).changes
    assert ch.transition == "robust→non_robust"
    assert [(m.cohort, m.before, m.after) for m in ch.cohorts] == [
        ("long", "robust", "gap"),
        ("short", "robust", "robust"),
    ]


def test_figures_and_their_deltas() -> None:
    a = side("a", {f"g{i}": {"s": (3, 0)} for i in range(10)})
    b = side("b", {f"g{i}": {"s": (0, 3) if i < 4 else (3, 0)} for i in range(10)})
    fb = figures(b, "t")["s"]
    assert (fb.value("acc_db"), fb.value("lambda"), fb.value("refined_accuracy")) == (
        0.6,
        0.4,
        1.0,
    )
    deltas = {d.figure: d for d in compare(a, b).targets["t"].cohorts["s"]}
    acc = deltas["acc_db"]
    assert acc.a == 1.0 and acc.b == 0.6 and acc.delta == pytest.approx(-0.4)
    assert acc.delta_ci is not None and acc.delta_ci[0] < -0.4 < acc.delta_ci[1] < 0
    assert deltas["coverage"].delta == 0.0


def test_an_unknown_cohort_enters_coverage_but_no_rate() -> None:
    # one form right, two errors: too little decided for a status (the evidence rules)
    s = side("s", {"g1": {"c": (3, 0)}, "g2": {"c": (1, 0)}})
    f = figures(s, "t")["c"]
    assert f.groups == 1 and f.examples == 3
    assert f.value("coverage") == pytest.approx(4 / 6)


def test_sign_test_is_the_exact_binomial_test() -> None:
    for worse, better in [(12, 0), (7, 3), (0, 0), (40, 25), (1, 1)]:
        expected = binomtest(worse, worse + better, 0.5).pvalue if worse + better else 1.0
        assert sign_test_p(worse, better) == pytest.approx(expected)
    assert sign_test_p(12, 0) < 0.05


def test_targets_of_different_names_are_paired_when_each_side_has_one() -> None:
    a = side("a", {"g": {"s": (3, 0)}}, target="v1")
    b = side("b", {"g": {"s": (0, 3)}}, target="v2")
    c = compare(a, b)
    assert [x.transition for x in c.changes] == ["robust→gap"]
    assert c.targets["v2"].target_a == "v1"


def test_the_gate_counts_regressions_and_may_ask_for_significance() -> None:
    a = side("a", {f"g{i}": {"s": (3, 0)} for i in range(6)})
    b = side("b", {f"g{i}": {"s": (0, 3) if i < 2 else (3, 0)} for i in range(6)})
    c = compare(a, b)
    assert gate(c, 2, significant_only=False) is None
    assert "2 groups regressed" in (gate(c, 1, significant_only=False) or "")
    # 2 worse, 0 better: p = 0.5, not significant
    assert gate(c, 0, significant_only=True) is None
    assert gate(c, 0, significant_only=False) is not None


def test_change_kind() -> None:
    assert change_kind("robust", "flaky") == "regression"
    assert change_kind("flaky", "robust") == "recovery"
    assert change_kind("unknown", "pending") is None
    assert change_kind("gap", "gap") is None


def test_form_changes_keep_what_differs() -> None:
    before = {"f1": ("s", "correct", "Q1", "A"), "f2": ("s", "correct", "Q2", "B")}
    after = {"f1": ("s", "incorrect", "Q1", "?"), "f2": ("s", "correct", "Q2", "B")}
    (f,) = form_changes(before, after)
    assert (f.form_id, f.before, f.after, f.before_answer, f.after_answer) == (
        "f1", "correct", "incorrect", "A", "?"
    )  # fmt: skip


def test_the_digest_is_of_the_pairs_whatever_their_order() -> None:
    pairs = [("g2", "f1"), ("g1", "f2"), ("g1", "f1")]
    assert dataset_digest(pairs) == dataset_digest(reversed(pairs))
    assert dataset_digest(pairs) != dataset_digest(pairs[:2])


def test_fail_on_regression_may_go_without_a_value() -> None:
    assert _optional_values(["run", "--fail-on-regression"]) == ["run", "--fail-on-regression=0"]
    assert _optional_values(["run", "--fail-on-regression", "3", "--once"]) == [
        "run", "--fail-on-regression=3", "--once"
    ]  # fmt: skip
    assert _optional_values(["run", "--fail-on-regression", "--once"]) == [
        "run", "--fail-on-regression=0", "--once"
    ]  # fmt: skip
    assert _optional_values(["run", "--fail-on-regression=2"]) == ["run", "--fail-on-regression=2"]


def _baseline(path: Path, targets: list[str]) -> Path:
    groups = [
        {"target": t, "group_id": "g", "status": "robust",
         "cohorts": {"s": {"status": "robust", "correct": 3, "incorrect": 0, "group_forms": 3,
                           "forms": {"f1": "correct", "f2": "correct", "f3": "correct"}}}}
        for t in targets
    ]  # fmt: skip
    doc = {"schema": BASELINE_SCHEMA, "dataset_id": "ds", "digest": "d", "groups": groups}
    path.write_bytes(orjson.dumps(doc))
    return path


def test_two_baselines_compare_without_a_store(tmp_path: Path) -> None:
    a = _baseline(tmp_path / "a.json", ["prod"])
    c = diff(str(a), str(a), None)
    assert c.changes == [] and c.paired.ties == 1 and c.same_dataset


def test_sides_with_no_target_in_common_are_refused(tmp_path: Path) -> None:
    a = _baseline(tmp_path / "a.json", ["x", "y"])
    b = _baseline(tmp_path / "b.json", ["z", "w"])
    with pytest.raises(ConfigError, match="no target to compare"):
        diff(str(a), str(b), None)


def test_a_file_that_is_no_baseline_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "report.json"
    bad.write_bytes(orjson.dumps({"schema": "groundwatch.report/3"}))
    with pytest.raises(ConfigError, match="not a baseline"):
        diff(str(bad), str(bad), None)


@pytest.mark.parametrize(
    ("worse", "better", "says"),
    [
        (12, 0, "significant regression (two-sided sign test, p = 0.000488 < α = 0.05)"),
        (7, 2, "no significant regression (two-sided sign test, p = 0.18 ≥ α = 0.05)"),
        # the newcomer's split: a small p, but towards recoveries — no regression to speak of
        (
            116,
            149,
            "no regression, significantly more better than worse"
            " (two-sided sign test, p = 0.0491 < α = 0.05)",
        ),
        (3, 3, "no significant regression (two-sided sign test, p = 1 ≥ α = 0.05)"),
    ],
)
def test_the_sign_verdict_names_the_test_and_what_it_found(
    worse: int, better: int, says: str
) -> None:
    p = PairedSign(worse + better, worse, better, 0, sign_test_p(worse, better))
    assert p.verdict(0.05) == says
    assert p.significant(0.05) == says.startswith("significant")


def test_text_json_and_html_carry_the_same_sign_verdict() -> None:
    from groundwatch.app.compare import comparison_json
    from groundwatch.report.compare_view import render_diff_html, render_diff_text, summary_line

    a = side("a", {f"g{i}": {"s": (0, 3)} for i in range(8)})
    b = side("b", {f"g{i}": {"s": (3, 0)} for i in range(8)})
    c = compare(a, b)
    verdict = c.paired.verdict(c.alpha)
    assert verdict.startswith("no regression, significantly more better than worse")
    doc = orjson.loads(comparison_json(c))
    assert doc["sign_test"] == verdict and doc["significant"] is False
    assert verdict in render_diff_text(c) and verdict in summary_line(c)
    assert verdict.replace("<", "&lt;") in render_diff_html(c)
    assert "not significant" not in render_diff_text(c)
