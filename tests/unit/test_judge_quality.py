"""Judgement scores beyond the verdict and their aggregates (core), and the report section."""

from __future__ import annotations

import sys

import pytest

from groundwatch.core.answer_metrics import answer_metrics
from groundwatch.core.judge_quality import (
    NO_SCORES,
    JudgeQuality,
    in_share,
    metric_scores,
    outcome_code,
    outcome_of,
    pack_scores,
)
from groundwatch.core.model import Verdict
from groundwatch.core.stats import evaluator_reliability, reliability_from_counts
from groundwatch.core.tagging import Observation
from groundwatch.report.quality import judge_quality

pytestmark = pytest.mark.unit


def obs(
    verdict: Verdict,
    scores: dict[str, float],
    *,
    target: str = "t",
    cohort: str = "short",
    scenario: str = "factual",
    pid: str = "p",
) -> Observation:
    return Observation(
        probe_id=pid,
        target=target,
        cohort=cohort,
        group_id="g",
        form_id="f",
        verdict=verdict,
        scenario=scenario,
        scores=pack_scores(scores),
    )


def test_share_is_a_stable_uniform_draw() -> None:
    keys = [f"probe-{i}" for i in range(20_000)]
    picked = [k for k in keys if in_share(k, 0.02)]
    assert 300 < len(picked) < 500  # 2 % of 20 000 = 400, binomial sd ≈ 20
    assert picked == [k for k in keys if in_share(k, 0.02)]  # the same draw every time
    assert not any(in_share(k, 0.0) for k in keys[:100])
    assert all(in_share(k, 1.0) for k in keys[:100])
    # a larger share contains the smaller one: raising the audit share only adds items
    assert set(picked) <= {k for k in keys if in_share(k, 0.05)}


def test_outcome_codes_round_trip() -> None:
    for outcome in (True, False, None):
        assert outcome_of(outcome_code(outcome)) is outcome


def test_packed_scores_keep_only_quality_scores_compactly() -> None:
    scores = {"token_f1": 0.5, "metric.bleu": 0.25, "audit.typed": 1.0, "llm_latency_s": 2.0}
    packed = pack_scores(scores)
    assert dict(packed) == {"audit.typed": 1.0, "metric.bleu": 0.25}
    assert packed["metric.bleu"] == 0.25 and "token_f1" not in packed
    with pytest.raises(KeyError):
        packed["token_f1"]
    again = pack_scores({"metric.bleu": 0.5, "audit.typed": 0.0})
    assert list(again) is not None and list(again) == list(packed)
    # the names are shared between observations, the values are raw doubles
    assert again._keys is packed._keys  # type: ignore[attr-defined]
    twelve = {f"metric.m{i}": i / 12 for i in range(12)}
    big = pack_scores(twelve)
    packed_size = sys.getsizeof(big) + sys.getsizeof(big._values)  # type: ignore[attr-defined]
    dict_size = sys.getsizeof(twelve) + sum(sys.getsizeof(v) for v in twelve.values())
    assert packed_size < dict_size / 3
    assert pack_scores({}) is NO_SCORES and pack_scores({"token_f1": 1.0}) is NO_SCORES


def test_metric_means_count_undefined_metrics_of_scored_answers() -> None:
    with_ir = metric_scores(
        answer_metrics("Ada Quinn", ["Ada Quinn"], retrieved_ids=["d1", "d2"], relevant_ids={"d2"})
    )
    without_ir = metric_scores(answer_metrics("Bob", ["Ada Quinn"]))
    assert with_ir["metric.k"] == 5.0 and "metric.recall@5" not in without_ir
    q = JudgeQuality.of(
        [
            obs(Verdict.CORRECT, with_ir, pid="1"),
            obs(Verdict.INCORRECT, without_ir, pid="2"),
            obs(Verdict.ERROR, {}, pid="3"),  # no answer: not scored, not counted
        ]
    )
    group = ("t", "short", "factual")
    assert q.means.answers(group) == 2
    assert q.means.mean(group, "exact_match") == 0.5
    recall = q.means.get(group, "recall@5")
    assert recall is not None and (recall.count, recall.undefined, recall.value) == (1, 1, 1.0)
    assert q.means.mean(group, "rr") == 0.5  # the relevant document came second
    # histogram: the EM of 1.0 in the last bucket, the EM of 0.0 in the first
    assert q.histograms[(*group, "exact_match")][0] == 1
    assert q.histograms[(*group, "exact_match")][-1] == 1


def test_audit_counts_agreement_by_tier_and_direction() -> None:
    q = JudgeQuality.of(
        [
            obs(Verdict.CORRECT, {"audit.typed": 1.0}, pid="1"),
            obs(Verdict.CORRECT, {"audit.typed": 0.0}, pid="2"),
            obs(Verdict.INCORRECT, {"audit.conflict": 0.0}, pid="3"),
            obs(Verdict.INCORRECT, {"audit.conflict": -1.0}, pid="4"),
        ]
    )
    typed, conflict = q.audit[("t", "typed")], q.audit[("t", "conflict")]
    assert (typed.agree, typed.disagree, typed.rules_correct_llm_incorrect) == (1, 1, 1)
    assert (conflict.disagree, conflict.unknown, conflict.rules_incorrect_llm_correct) == (1, 1, 1)


def test_evaluator_calls_against_the_grounded_verdict() -> None:
    q = JudgeQuality.of(
        [
            obs(Verdict.CORRECT, {"rf.selfcheck": 1.0}, pid="1"),  # true positive
            obs(Verdict.INCORRECT, {"rf.selfcheck": 1.0}, pid="2"),  # optimistic: false positive
            obs(Verdict.INCORRECT, {"rf.selfcheck": 0.0}, pid="3"),  # caught
            obs(Verdict.CORRECT, {"rf.selfcheck": -1.0}, pid="4"),  # abstained
            obs(Verdict.UNDECIDED, {"rf.selfcheck": 1.0}, pid="5"),  # no truth
        ]
    )
    c = q.evaluators[("t", "selfcheck")]
    assert (c.true_positive, c.false_positive, c.true_negative, c.false_negative) == (1, 1, 1, 0)
    assert (c.abstained, c.unmatched) == (1, 1)


def test_ragprobe_failures_are_over_all_probes() -> None:
    q = JudgeQuality.of(
        [
            obs(Verdict.INCORRECT, {"ragprobe.correctness": 0.0}, scenario="S1", pid="1"),
            obs(Verdict.CORRECT, {"ragprobe.correctness": 1.0}, scenario="S1", pid="2"),
            obs(Verdict.UNDECIDED, {"ragprobe.correctness": -1.0}, scenario="S1", pid="3"),
            obs(Verdict.ERROR, {}, scenario="S1", pid="4"),
        ]
    )
    report = judge_quality(
        [
            obs(Verdict.INCORRECT, {"ragprobe.correctness": 0.0}, scenario="S1", pid="1"),
            obs(Verdict.CORRECT, {"ragprobe.correctness": 1.0}, scenario="S1", pid="2"),
            obs(Verdict.UNDECIDED, {"ragprobe.correctness": -1.0}, scenario="S1", pid="3"),
            obs(Verdict.ERROR, {}, scenario="S1", pid="4"),
        ]
    )
    p = q.ragprobe[("t", "S1")]
    assert (p.probes, p.failed, p.passed, p.undecided, p.errors) == (4, 1, 1, 1, 1)
    assert report is not None
    s1 = report.ragprobe_metrics["t"]["S1"]
    assert s1.failure_rate == 0.25  # the paper divides by all questions, errors included
    assert s1.metrics["correctness"].open == 1 and s1.metrics["correctness"].failure_rate == 0.25
    assert s1.failure_rate_ci is not None and s1.failure_rate_ci[0] < 0.25 < s1.failure_rate_ci[1]


def test_section_is_absent_without_scores() -> None:
    assert judge_quality([obs(Verdict.CORRECT, {}), obs(Verdict.ERROR, {}, scenario="S2")]) is None


def test_reliability_from_counts_is_evaluator_reliability() -> None:
    truth = [True, True, False, False, True, False]
    pred: list[bool | None] = [True, False, True, False, None, False]
    assert reliability_from_counts(1, 1, 1, 2, 1) == evaluator_reliability(truth, pred)


def test_audit_and_reliability_in_the_report_have_wilson_intervals() -> None:
    items = [obs(Verdict.CORRECT, {"audit.typed": 1.0, "rf.ragas_fact": 1.0}, pid=str(i))
             for i in range(9)]  # fmt: skip
    items.append(obs(Verdict.INCORRECT, {"audit.typed": 0.0, "rf.ragas_fact": 1.0}, pid="x"))
    report = judge_quality(items)
    assert report is not None
    audit = report.audit["t"]["typed"]
    assert (audit.audited, audit.agree, audit.agreement) == (10, 9, 0.9)
    assert audit.agreement_ci is not None and audit.agreement_ci[1] < 1.0
    rf = report.reference_free["t"]["ragas_fact"]
    assert (rf.precision, rf.recall, rf.error_recall) == (0.9, 1.0, 0.0)
    assert rf.precision_ci is not None and rf.interval == "wilson"
