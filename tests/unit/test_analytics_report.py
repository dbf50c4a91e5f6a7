"""Report numbers (GRAMMAR eq. 1–3), attribution, the cohort test and the target comparison."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation
from groundwatch.report.build import build_report
from groundwatch.report.text import render_text

pytestmark = pytest.mark.unit

C, W, E, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR, Verdict.UNDECIDED


def group(
    group_id: str,
    verdicts: list[Verdict],
    *,
    cohort: str = "short",
    target: str = "t",
    retrieved: list[tuple[str, ...]] | None = None,
    relevant: tuple[str, ...] = (),
    forms: int | None = None,
) -> list[Observation]:
    out = []
    for i, v in enumerate(verdicts):
        out.append(
            Observation(
                probe_id=f"{target}:{cohort}:{group_id}:{i}",
                target=target,
                cohort=cohort,
                group_id=group_id,
                form_id=f"{cohort}{i}",
                verdict=v,
                group_forms=forms or len(verdicts),
                retrieved_ids=retrieved[i] if retrieved else (),
                relevant_doc_ids=relevant,
            )
        )
    return out


def strict_json(report: dict[str, Any]) -> dict[str, Any]:
    """Round-trip with NaN forbidden: the report must be plain JSON."""
    loaded: dict[str, Any] = json.loads(json.dumps(report, allow_nan=False))
    return loaded


def test_equations_on_a_hand_counted_cohort() -> None:
    obs = (
        group("A", [C, C, C], retrieved=[("a",)] * 3)
        + group("B", [W, W, W], retrieved=[("b",)] * 3)
        + group("C", [C, W, E], retrieved=[("d1",), ("d1",), ()])
        + group("D", [W, W], forms=3, retrieved=[("x",)] * 2)  # pending: a form not judged yet
    )
    r = strict_json(build_report(obs).to_json())
    c = r["cohorts"]["short"]
    assert r["target"] == "t" and list(r["targets"]) == ["t"]
    # D is pending: its two wrong forms enter no rate (Acc_db, R and λ over the same groups)
    assert (c["examples"], c["correct"], c["incorrect"], c["errors"]) == (8, 4, 4, 1)
    assert (c["groups"], c["gap_groups"], c["robust_groups"]) == (3, 1, 1)
    assert c["non_robust_groups"] == 1
    assert c["pending_groups"] == 1 and c["gap_examples"] == 3
    assert c["probed"] == 11 and c["coverage"] == pytest.approx(10 / 11)
    assert c["partial_groups"] == 1  # C: one form erred
    assert c["accuracy"] == pytest.approx(4 / 8)
    assert c["acc_db"] == pytest.approx(1 - 1 / 3)  # eq. 1 over decided groups
    assert c["refined_accuracy"] == pytest.approx(4 / 5)  # eq. 2
    assert c["lambda"] == pytest.approx(3 / 8)  # eq. 3
    assert c["accuracy"] == pytest.approx(c["refined_accuracy"] * (1 - c["lambda"]))
    lo, hi = c["accuracy_ci"]
    assert lo < c["accuracy"] < hi
    # C's wrong form retrieved what its right form did: the LM is at fault (context comparison)
    assert c["attribution"] == {
        "gap": 3,
        "retrieval": 0,
        "lm": 1,
        "inconclusive": 0,
        "flaky": 0,
        "target_error": 1,
        "stale": 0,
        "undecided": 0,
        "unknown": 0,
        "pending": 2,
    }
    # retrieval: A 3 + C 2 (correct one, and the LM-fault one) judged sufficient; B's and D's
    # forms have ids but no correctly answered form to compare with, and no text: inconclusive,
    # outside the denominator (never a retrieval failure by default)
    assert (c["retrieval_judged"], c["retrieval_inconclusive"]) == (5, 5)
    assert c["retrieval_accuracy"] == pytest.approx(5 / 5)
    assert c["retrieval_coverage"] == pytest.approx(5 / 10)
    assert (c["refined_retrieval_accuracy"], c["refined_retrieval_n"]) == (1.0, 5)
    assert c["retrieval_judged_by"] == {"context_comparison": 5}
    assert c["refined_n"] == 5  # R's denominator: 8 examples − 3 in the gap group


def test_ground_truth_documents_decide_retrieval() -> None:
    obs = group(
        "G",
        [C, W, W],
        relevant=("d1", "d2"),
        retrieved=[("d1", "d2", "d9"), ("d2", "d1"), ("d1", "d7")],
    )
    c = build_report(obs).to_json()["cohorts"]["short"]
    assert c["attribution"]["lm"] == 1 and c["attribution"]["retrieval"] == 1
    assert c["retrieval_accuracy"] == pytest.approx(2 / 3)
    assert c["retrieval_judged_by"] == {"ground_truth": 3}


def test_duplicates_count_once() -> None:
    obs = group("A", [C, W, W])
    assert build_report(obs + obs).to_json()["cohorts"]["short"]["examples"] == 3


def cohort_experiment(seed: int, long_fail: float, n_groups: int = 40) -> list[Observation]:
    """A short cohort that is right outside its gap groups and a long one that fails with
    probability ``long_fail`` (the keyword retriever's weakness), with mutual gap groups."""
    rng = random.Random(seed)
    obs: list[Observation] = []
    for g in range(n_groups):
        gid = f"g{g}"
        if g % 4 == 0:  # knowledge gap: wrong whatever the form
            obs += group(gid, [W, W, W], cohort="short")
            obs += group(gid, [W, W, W], cohort="long")
            continue
        obs += group(gid, [C, C, C], cohort="short", retrieved=[("d",)] * 3)
        lv = [W if rng.random() < long_fail else C for _ in range(3)]
        obs += group(gid, lv, cohort="long", retrieved=[("x",) if v is W else ("d",) for v in lv])
    return obs


def test_cohort_test_finds_the_weaker_form() -> None:
    r = strict_json(
        build_report(cohort_experiment(1, long_fail=0.5), compare=("short", "long")).to_json()
    )
    h = r["hypothesis"]
    assert h["available"] and h["cohorts"] == ["short", "long"]
    assert (h["shared_groups"], h["mutual_gap_groups"], h["groups_compared"]) == (40, 10, 30)
    assert h["sides"]["short"]["accuracy"] == 1.0 > h["sides"]["long"]["accuracy"]
    assert h["significant"] and h["p_value"] < 0.001
    assert h["paired_test"]["wilcoxon_p"] < 0.001 and h["z_test"]["p_value"] < 0.001
    assert h["effect_size"]["rank_biserial"] == 1.0 and h["effect_size"]["cohens_h"] > 0.8
    assert h["conclusion"].startswith("'long' is worse than 'short'")
    assert h["groups_better_in"]["long"] == 0
    assert (
        h["sides"]["long"]["accuracy_ci"][1] < h["sides"]["short"]["accuracy_ci"][0]
    )  # intervals apart
    # long's failures come from retrieval (a wrong form retrieved "x", never a right one's "d")
    long = r["cohorts"]["long"]
    att = long["attribution"]
    assert att["retrieval"] > 0 and att["lm"] == 0
    # groups only the long forms fail are cohort gaps: not blamed on the knowledge base
    assert long["gap_groups"] > 10 and long["knowledge_gap_groups"] == 10
    assert long["cohort_gap_groups"] == long["gap_groups"] - 10
    assert att["gap"] == 30 and att["retrieval"] == long["incorrect"] - 30


def test_cohort_test_without_difference_is_not_significant() -> None:
    obs = cohort_experiment(2, long_fail=0.0)
    h = build_report(obs).to_json()["hypothesis"]
    assert h["p_value"] == 1.0 and not h["significant"]
    assert h["lambda_balanced"] and h["warnings"] == []
    assert "no significant difference" in h["conclusion"]


def test_unbalanced_lambda_warns() -> None:
    obs = cohort_experiment(3, long_fail=0.0)
    for g in range(40, 60):  # extra groups only the long cohort has, all gaps
        obs += group(f"g{g}", [W, W, W], cohort="long")
    h = build_report(obs).to_json()["hypothesis"]
    assert not h["lambda_balanced"]
    assert any("λ differs" in w for w in h["warnings"])
    assert h["groups_compared"] == 30  # groups the short cohort lacks are not shared


def test_cohort_specific_gap_stays_in_the_comparison() -> None:
    obs = group("a", [W, W, W], cohort="short") + group("a", [W, W, W], cohort="long")
    obs += group("b", [C, C, C], cohort="short") + group("b", [W, W, W], cohort="long")
    h = build_report(obs).to_json()["hypothesis"]
    assert h["mutual_gap_groups"] == 1 and h["groups_compared"] == 1
    assert h["sides"]["long"]["gap_groups"] == 1 and h["sides"]["long"]["refined_accuracy"] is None
    assert any("little power" in w for w in h["warnings"])


def test_hypothesis_unavailable_with_one_cohort() -> None:
    h = build_report(group("a", [C])).hypothesis
    assert not h.available and h.reason == "needs two cohorts" and h.p_value is None


def test_target_comparison_sees_fixed_groups() -> None:
    obs: list[Observation] = []
    for g in range(30):
        fixed = g < 12
        obs += group(f"g{g}", [W, W, W] if fixed else [C, C, W], target="prod")
        obs += group(f"g{g}", [C, C, C] if fixed else [C, C, W], target="canary")
    report = build_report(obs)
    r = strict_json(report.to_json())
    tc = r["target_comparison"]
    assert tc["baseline"] == "prod" and tc["candidate"] == "canary"
    c = tc["cohorts"]["short"]
    assert (c["improved_groups"], c["worsened_groups"], c["unchanged_groups"]) == (12, 0, 18)
    assert c["status_transitions"] == {"gap->robust": 12}
    assert c["status_improved"] == 12 and c["status_worsened"] == 0
    assert c["mcnemar"]["only_second"] == 36 and c["mcnemar"]["only_first"] == 0
    assert c["mcnemar"]["p_value"] < 1e-9 and c["significant"]
    assert "better" in c["conclusion"]
    line = next(ln for ln in render_text(report).splitlines() if ln.startswith("Target comparison"))
    # each test's count in its own unit: 30 semantic groups (paired test), 90 text forms
    # (McNemar), the 36 forms only the candidate got right among them
    assert "over 30 semantic groups 12 better, 0 worse, paired p =" in line
    assert "over 90 text forms 36 right only for canary, 0 only for prod, McNemar p" in line


def test_reliability_and_human_agreement() -> None:
    obs = group("a", [C, C, W, W, W, C, W, C], forms=8)
    pids = [o.probe_id for o in obs]
    says_correct = dict.fromkeys(pids, True)  # an evaluator that calls everything correct
    ratings = {pid: (5.0 if o.verdict is C else 1.0) for pid, o in zip(pids, obs, strict=True)}
    noise = {pid: float(i) for i, pid in enumerate(pids)}
    report = build_report(
        obs,
        evaluators={"always_yes": says_correct | {"unknown": False}},
        human_ratings=ratings,
        metric_scores={"noise": noise},
    )
    r = strict_json(report.to_json())
    rel = r["reliability"]["always_yes"]
    assert rel["precision"] == pytest.approx(4 / 8) and rel["recall"] == 1.0
    assert rel["error_recall"] == 0.0 and rel["unmatched"] == 1 and rel["n"] == 8
    lo, hi = rel["precision_ci"]  # Wilson (the default), symmetric around 1/2
    assert lo == pytest.approx(0.2152, abs=1e-4) and hi == pytest.approx(1 - lo)
    sp = r["human_agreement"]["spearman"]
    assert sp["judge_verdict"]["rho"] == pytest.approx(1.0) and sp["judge_verdict"]["n"] == 8
    assert abs(sp["noise"]["rho"]) < 0.5
    text = render_text(report)
    assert "always_yes" in text and "judge_verdict" in text


def test_render_text_shows_the_table() -> None:
    text = render_text(build_report(cohort_experiment(4, long_fail=0.5)))
    assert "GRAMMAR group report" in text and "Cohort test" in text
    assert "short" in text and "long" in text


def test_cohort_selection_and_order() -> None:
    obs = cohort_experiment(5, long_fail=0.3)
    r = build_report(obs, cohorts=["long", "short"]).to_json()
    assert list(r["cohorts"]) == ["long", "short"]
    assert r["hypothesis"]["cohorts"] == ["long", "short"]
    assert list(build_report(obs, cohorts=["long"]).to_json()["cohorts"]) == ["long"]


def test_empty_report() -> None:
    r = strict_json(build_report([]).to_json())
    assert r["cohorts"] == {} and r["hypothesis"]["available"] is False


def test_the_groups_column_says_it_counts_decided_groups_only() -> None:
    """A pending and an unknown group beside two decided ones: ``groups`` (the rates' set) is 2,
    and the text table, the HTML tooltip and the JSON field's description all say "decided"."""
    from groundwatch.report.columns import COHORT_COLUMNS
    from groundwatch.report.document import CohortNumbers

    obs = (
        group("A", [C, C])
        + group("B", [W, W])
        + group("P", [C], forms=2)  # pending: a form not judged yet
        + group("U", [E, E])  # unknown: no decided verdict
    )
    report = build_report(obs)
    n = strict_json(report.to_json())["cohorts"]["short"]
    assert (n["groups"], n["pending_groups"], n["unknown_groups"]) == (2, 1, 1)
    header = next(ln for ln in render_text(report).splitlines() if ln.startswith("target"))
    assert "decided" in header.split()
    col = next(c for c in COHORT_COLUMNS if c.key == "groups")
    assert col.title == "decided groups" and "pending" in col.help
    doc = CohortNumbers.model_json_schema()["properties"]["groups"]["description"]
    assert doc.startswith("Decided groups")
