"""Judgement scores beyond the verdict and their tallies (core), and the report section."""

from __future__ import annotations

import sys

import pytest

from groundwatch.core.answer_scoring import answer_scores, retrieval_scores, score_answer
from groundwatch.core.model import Verdict
from groundwatch.core.sampling import in_share
from groundwatch.core.score_json import scores_from_flat, scores_from_json, scores_json
from groundwatch.core.score_tallies import ScoreTallies
from groundwatch.core.scores import (
    NO_SCORES,
    AnswerScores,
    AuditScore,
    EvaluatorCall,
    LlmCallScores,
    LlmMetricScores,
    MetricOutcome,
    RagProbeOutcomes,
    ReferenceFreeScores,
    RulesScores,
    Scores,
    SemanticScores,
)
from groundwatch.core.stats import evaluator_reliability, reliability_from_counts
from groundwatch.core.tagging import Observation
from groundwatch.report.scores import scores_section

pytestmark = pytest.mark.unit


def obs(
    verdict: Verdict,
    scores: Scores,
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
        scores=scores.tallied(),
    )


def audit(tier: str, agreed: bool | None) -> Scores:
    return Scores(audit=AuditScore(tier, agreed))


def selfcheck(call: EvaluatorCall) -> Scores:
    return Scores(reference_free=ReferenceFreeScores(selfcheck=call))


def ragprobe(outcome: MetricOutcome) -> Scores:
    return Scores(ragprobe=RagProbeOutcomes(correctness=outcome))


def test_share_is_a_stable_uniform_draw() -> None:
    keys = [f"probe-{i}" for i in range(20_000)]
    picked = [k for k in keys if in_share(k, 0.02)]
    assert 300 < len(picked) < 500  # 2 % of 20 000 = 400, binomial sd ≈ 20
    assert picked == [k for k in keys if in_share(k, 0.02)]  # the same draw every time
    assert not any(in_share(k, 0.0) for k in keys[:100])
    assert all(in_share(k, 1.0) for k in keys[:100])
    # a larger share contains the smaller one: raising the audit share only adds items
    assert set(picked) <= {k for k in keys if in_share(k, 0.05)}


def test_tallied_scores_drop_the_judges_detail_and_are_shared() -> None:
    rules = RulesScores(0.5, 1.0, 0.66)
    scores = Scores(
        answer=AnswerScores(5, 0.0, 0.5, 0.5, 0.25),
        audit=AuditScore("typed", True),
        rules=rules,
        llm_call=LlmCallScores(False, 2.0),
    )
    tallied = scores.tallied()
    assert tallied.rules is None and tallied.llm_call is None
    assert tallied.answer == scores.answer and tallied.audit == scores.audit
    # the same scores of another judgement (a repeated answer, a new cycle) are one object
    again = Scores(
        answer=AnswerScores(5, 0.0, 0.5, 0.5, 0.25),
        audit=AuditScore("typed", True),
        rules=RulesScores(0.1, 0.1, 0.1),
    )
    assert again.tallied() is tallied
    per_copy = sum(sys.getsizeof(x) for x in (again, again.answer, again.audit, again.rules))
    assert per_copy > 200  # what each judgement would otherwise hold in the window
    assert Scores(rules=rules).tallied() is NO_SCORES and NO_SCORES.tallied() is NO_SCORES


def test_flat_scores_of_schema_3_read_into_the_families() -> None:
    """Judgements and stored rows of schema version 3 and older carried a flat dict."""
    flat = {
        "token_precision": 0.5,
        "token_recall": 1.0,
        "token_f1": 0.66,
        "metric.k": 3.0,
        "metric.exact_match": 0.0,
        "metric.token_f1": 0.5,
        "metric.rouge_l": 0.5,
        "metric.bleu": 0.1,
        "metric.recall@3": 1.0,
        "metric.precision@3": 1 / 3,
        "metric.ap@3": 0.5,
        "metric.rr": 0.5,
        "metric.ndcg@3": 0.63,
        "metric.semantic_similarity": 0.9,
        "metric.bertscore_f1": 0.8,
        "metric.answer_relevance": 0.7,
        "metric.ragas_faithfulness": 0.5,
        "audit.contains": -1.0,
        "rf.ragas_fact": 1.0,
        "rf.selfcheck": -2.0,
        "llm_cached": 1.0,
        "llm_latency_s": 0.25,
        "someone_elses": 4.0,  # a name no judge wrote: ignored
    }
    s = scores_from_flat(flat)
    assert s.answer == AnswerScores(3, 0.0, 0.5, 0.5, 0.1)
    assert s.retrieval is not None and (s.retrieval.k, s.retrieval.rr) == (3, 0.5)
    assert s.semantic == SemanticScores(0.9, 0.8)
    assert s.llm_metrics is not None and s.llm_metrics.answer_relevance == 0.7
    assert s.llm_metrics.answer_correctness is None
    assert s.reference_free == ReferenceFreeScores(
        EvaluatorCall.RIGHT, 0.5, EvaluatorCall.NOT_SAMPLED, None
    )
    assert s.audit == AuditScore("contains", None)
    assert s.rules == RulesScores(0.5, 1.0, 0.66) and s.llm_call == LlmCallScores(True, 0.25)
    scenario = scores_from_flat({"ragprobe.correctness": 1.0, "ragprobe.relevance": -1.0})
    assert scenario.ragprobe == RagProbeOutcomes(
        correctness=MetricOutcome.PASSED, relevance=MetricOutcome.OPEN
    )
    assert scores_from_flat({"someone_elses": 1.0}) is NO_SCORES
    # the store reads either shape, and writes the typed one
    assert scores_from_json(flat) == s and scores_from_json(scores_json(s)) == s
    assert scores_from_json({}) is NO_SCORES and scores_from_json(None) is NO_SCORES


def test_a_family_refuses_a_score_that_is_not_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        AnswerScores(5, float("nan"))
    with pytest.raises(ValueError, match="finite"):
        RulesScores(0.5, float("inf"), 0.5)


def test_metric_means_count_undefined_metrics_of_scored_answers() -> None:
    ranked = score_answer(
        "Ada Quinn", ["Ada Quinn"], retrieved_ids=["d1", "d2"], relevant_ids={"d2"}
    )
    with_ir = Scores(answer=answer_scores(ranked), retrieval=retrieval_scores(ranked))
    without_ir = Scores(answer=answer_scores(score_answer("Bob", ["Ada Quinn"])))
    assert with_ir.answer is not None and with_ir.answer.k == 5 and without_ir.retrieval is None
    q = ScoreTallies.of(
        [
            obs(Verdict.CORRECT, with_ir, pid="1"),
            obs(Verdict.INCORRECT, without_ir, pid="2"),
            obs(Verdict.ERROR, NO_SCORES, pid="3"),  # no answer: not scored, not counted
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
    q = ScoreTallies.of(
        [
            obs(Verdict.CORRECT, audit("typed", True), pid="1"),
            obs(Verdict.CORRECT, audit("typed", False), pid="2"),
            obs(Verdict.INCORRECT, audit("conflict", False), pid="3"),
            obs(Verdict.INCORRECT, audit("conflict", None), pid="4"),
        ]
    )
    typed, conflict = q.audit[("t", "typed")], q.audit[("t", "conflict")]
    assert (typed.agree, typed.disagree, typed.rules_correct_llm_incorrect) == (1, 1, 1)
    assert (conflict.disagree, conflict.unknown, conflict.rules_incorrect_llm_correct) == (1, 1, 1)


def test_evaluator_calls_against_the_grounded_verdict() -> None:
    right, wrong = EvaluatorCall.RIGHT, EvaluatorCall.WRONG
    q = ScoreTallies.of(
        [
            obs(Verdict.CORRECT, selfcheck(right), pid="1"),  # true positive
            obs(Verdict.INCORRECT, selfcheck(right), pid="2"),  # optimistic: false positive
            obs(Verdict.INCORRECT, selfcheck(wrong), pid="3"),  # caught
            obs(Verdict.CORRECT, selfcheck(EvaluatorCall.ABSTAINED), pid="4"),  # abstained
            obs(Verdict.UNDECIDED, selfcheck(right), pid="5"),  # no truth
            obs(Verdict.CORRECT, selfcheck(EvaluatorCall.NOT_SAMPLED), pid="6"),  # no samples
        ]
    )
    c = q.evaluators[("t", "selfcheck")]
    assert (c.true_positive, c.false_positive, c.true_negative, c.false_negative) == (1, 1, 1, 0)
    assert (c.abstained, c.unmatched, c.unsampled) == (1, 1, 1)


def test_ragprobe_failures_are_over_all_probes() -> None:
    probes = [
        obs(Verdict.INCORRECT, ragprobe(MetricOutcome.FAILED), scenario="S1", pid="1"),
        obs(Verdict.CORRECT, ragprobe(MetricOutcome.PASSED), scenario="S1", pid="2"),
        obs(Verdict.UNDECIDED, ragprobe(MetricOutcome.OPEN), scenario="S1", pid="3"),
        obs(Verdict.ERROR, NO_SCORES, scenario="S1", pid="4"),
    ]
    q = ScoreTallies.of(probes)
    report = scores_section(probes)
    p = q.ragprobe[("t", "S1")]
    assert (p.probes, p.failed, p.passed, p.undecided, p.errors) == (4, 1, 1, 1, 1)
    assert report is not None
    s1 = report.ragprobe_metrics["t"]["S1"]
    assert s1.failure_rate == 0.25  # the paper divides by all questions, errors included
    assert s1.metrics["correctness"].open == 1 and s1.metrics["correctness"].failure_rate == 0.25
    assert s1.failure_rate_ci is not None and s1.failure_rate_ci[0] < 0.25 < s1.failure_rate_ci[1]


def test_section_is_absent_without_scores() -> None:
    none = [obs(Verdict.CORRECT, NO_SCORES), obs(Verdict.ERROR, NO_SCORES, scenario="S2")]
    assert scores_section(none) is None
    # the judge's own detail alone is no section either: the tallies never see it
    assert scores_section([obs(Verdict.CORRECT, Scores(rules=RulesScores(1.0, 1.0, 1.0)))]) is None


def test_reliability_from_counts_is_evaluator_reliability() -> None:
    truth = [True, True, False, False, True, False]
    pred: list[bool | None] = [True, False, True, False, None, False]
    assert reliability_from_counts(1, 1, 1, 2, 1) == evaluator_reliability(truth, pred)


def test_audit_and_reliability_in_the_report_have_wilson_intervals() -> None:
    says_right = ReferenceFreeScores(ragas_fact=EvaluatorCall.RIGHT)
    agreed = Scores(audit=AuditScore("typed", True), reference_free=says_right)
    items = [obs(Verdict.CORRECT, agreed, pid=str(i)) for i in range(9)]
    disagreed = Scores(audit=AuditScore("typed", False), reference_free=says_right)
    items.append(obs(Verdict.INCORRECT, disagreed, pid="x"))
    report = scores_section(items)
    assert report is not None
    audit = report.audit["t"]["typed"]
    assert (audit.audited, audit.agree, audit.agreement) == (10, 9, 0.9)
    assert audit.agreement_ci is not None and audit.agreement_ci[1] < 1.0
    rf = report.reference_free["t"]["ragas_fact"]
    assert (rf.precision, rf.recall, rf.error_recall) == (0.9, 1.0, 0.0)
    assert rf.precision_ci is not None and rf.interval == "wilson"


def test_semantic_and_llm_metrics_are_tallied_without_the_text_metrics() -> None:
    """With ``GW_JUDGE_ANSWER_METRICS=false`` the judge still ships the semantic and LLM-derived
    metrics; the flat scores had no ``metric.k`` then, and their means were dropped."""
    scored = Scores(
        semantic=SemanticScores(0.9, 0.8),
        llm_metrics=LlmMetricScores(answer_relevance=0.7),
    )
    q = ScoreTallies.of([obs(Verdict.CORRECT, scored), obs(Verdict.CORRECT, NO_SCORES, pid="2")])
    group = ("t", "short", "factual")
    assert q.means.answers(group) == 1
    assert q.means.mean(group, "semantic_similarity") == 0.9
    assert q.means.mean(group, "answer_relevance") == 0.7
    # none of the text scores was computed, so none is counted undefined either
    assert q.means.get(group, "exact_match") is None


def test_the_shared_scores_are_bounded_and_follow_the_newest_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import groundwatch.core.scores as scores_module

    monkeypatch.setattr(scores_module, "MAX_SHARED", 8)
    seen = [Scores(answer=AnswerScores(5, i / 100)).tallied() for i in range(30)]
    assert len(scores_module._TALLIED) <= 8
    # a score set seen after the table started over is shared again
    assert Scores(answer=AnswerScores(5, 29 / 100)).tallied() is seen[-1]
    assert NO_SCORES.tallied() is NO_SCORES
