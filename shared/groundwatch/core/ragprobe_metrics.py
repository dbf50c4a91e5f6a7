"""RAGProbe's evaluation metrics per scenario (RAGProbe §3.1), the parts rules can decide.

Answerable scenarios (S1–S5, and GRAMMAR's factual probes) are judged on correctness, relevance,
completeness and consistency; the unanswerable scenario S6 on explicitness, contradiction and
no-question-related-information. A probe fails if any metric of its scenario fails
(RAGProbe §5: "Failure is any answer … that does not pass one or more evaluation metrics").

Each metric here is pass, fail or ``None`` (the rules cannot tell); ``None`` goes to the
LLM-judged metrics of :mod:`groundwatch.stages.judge.ragprobe_llm`. What is decided here:

* correctness — the deterministic tier chain's verdict;
* completeness — every gold part found (pass), or a part with none of its words (fail);
* relevance / consistency — a correct, short answer passes; a refusal or a conflicting date or
  number fails consistency; the rest needs a reader;
* explicitness — an explicit refusal (pass) or none (fail);
* contradiction — refusing and then saying nothing else cannot contradict itself (pass);
* no-question-related-information — a bare refusal passes, a substantive answer fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from groundwatch.core.judging import Decision, judge_deterministic
from groundwatch.core.judging.gold import prepare_gold
from groundwatch.core.judging.normalize import fold, tokens
from groundwatch.core.judging.refusal import count_sentences, detect_refusal
from groundwatch.core.judging.tiers import ParsedResponse, PartStatus
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.scores import RagProbeMetric as RagProbeMetric

ANSWERABLE_METRICS = (
    RagProbeMetric.CORRECTNESS,
    RagProbeMetric.RELEVANCE,
    RagProbeMetric.COMPLETENESS,
    RagProbeMetric.CONSISTENCY,
)
UNANSWERABLE_METRICS = (
    RagProbeMetric.EXPLICITNESS,
    RagProbeMetric.CONTRADICTION,
    RagProbeMetric.NO_QUESTION_RELATED_INFORMATION,
)
#: RAGProbe Table 3 scenarios; "factual" is a GRAMMAR probe, judged like S1–S5.
SCENARIO_METRICS: dict[str, tuple[RagProbeMetric, ...]] = {
    **{s: ANSWERABLE_METRICS for s in ("S1", "S2", "S3", "S4", "S5", "factual")},
    "S6": UNANSWERABLE_METRICS,
}

#: A "short" answer: no room to wander off the question or to add inconsistent detail.
SHORT_SENTENCES = 2


def metrics_for(scenario: str, expected: Expected) -> tuple[RagProbeMetric, ...]:
    """The scenario's metric set; an unanswerable expectation always gets S6's."""
    if not expected.answerable:
        return UNANSWERABLE_METRICS
    return SCENARIO_METRICS.get(scenario, ANSWERABLE_METRICS)


@dataclass(frozen=True)
class MetricResult:
    metric: RagProbeMetric
    passed: bool | None  # None: the rules cannot tell; an LLM must
    reason: str


def deterministic_metrics(
    scenario: str, query: str, expected: Expected, response: str | None
) -> dict[RagProbeMetric, MetricResult]:
    """Each metric of the scenario: passed, failed, or ``None`` for the LLM to decide."""
    wanted = metrics_for(scenario, expected)
    out: dict[RagProbeMetric, MetricResult] = {}

    def put(metric: RagProbeMetric, passed: bool | None, reason: str) -> None:
        if metric in wanted:
            out[metric] = MetricResult(metric, passed, reason)

    text = (response or "").strip()
    if not text:
        for m in wanted:
            put(m, False, "empty_response")
        return out
    folded = fold(text)
    refusal = detect_refusal(folded, tokens(folded, folded=True))

    if not expected.answerable:
        if refusal is None:
            put(RagProbeMetric.EXPLICITNESS, False, "no explicit refusal")
            put(RagProbeMetric.CONTRADICTION, True, "no refusal to contradict")
            put(RagProbeMetric.NO_QUESTION_RELATED_INFORMATION, False, "attempts an answer")
        else:
            put(RagProbeMetric.EXPLICITNESS, True, f"refusal {refusal.phrase!r}")
            if refusal.other_sentences == 0:
                put(RagProbeMetric.CONTRADICTION, True, "refusal only")
                put(RagProbeMetric.NO_QUESTION_RELATED_INFORMATION, True, "refusal only")
            else:
                put(RagProbeMetric.CONTRADICTION, None, "refusal with other content")
                put(
                    RagProbeMetric.NO_QUESTION_RELATED_INFORMATION,
                    None,
                    "refusal with other content",
                )
        return out

    decision: Decision = judge_deterministic(query, expected, text)
    correct = decision.verdict is Verdict.CORRECT
    put(
        RagProbeMetric.CORRECTNESS,
        None if decision.verdict is Verdict.UNDECIDED else correct,
        f"{decision.tier}: {decision.reason}",
    )

    gold = prepare_gold(expected)
    statuses = ParsedResponse(query, gold, text).statuses(gold.parts) if gold.parts else []
    if statuses and all(s is PartStatus.FOUND for s in statuses):
        put(RagProbeMetric.COMPLETENESS, True, "every gold part present")
    elif refusal is not None and not any(s is PartStatus.FOUND for s in statuses):
        put(RagProbeMetric.COMPLETENESS, False, "refusal")
    elif decision.verdict is Verdict.INCORRECT and decision.tier in ("typed", "conflict"):
        put(RagProbeMetric.COMPLETENESS, False, decision.reason)
    else:
        put(RagProbeMetric.COMPLETENESS, None, "partial")

    short = count_sentences(text) <= SHORT_SENTENCES
    if refusal is not None and not correct:
        put(RagProbeMetric.RELEVANCE, False, "refusal does not address the question")
        put(RagProbeMetric.CONSISTENCY, False, "refusal")
    elif correct and short:
        put(RagProbeMetric.RELEVANCE, True, "correct and short")
        put(RagProbeMetric.CONSISTENCY, True, "correct and short")
    else:
        put(RagProbeMetric.RELEVANCE, None, "needs a reader")
        conflict = decision.verdict is Verdict.INCORRECT and "mismatch" in decision.code
        put(
            RagProbeMetric.CONSISTENCY,
            False if conflict else None,
            decision.reason if conflict else "needs a reader",
        )
    return out


def probe_verdict(results: Mapping[RagProbeMetric, bool | None]) -> Verdict:
    """Fails if any metric fails; passes only if every metric passes; otherwise undecided."""
    values = list(results.values())
    if any(v is False for v in values):
        return Verdict.INCORRECT
    if values and all(v is True for v in values):
        return Verdict.CORRECT
    return Verdict.UNDECIDED
