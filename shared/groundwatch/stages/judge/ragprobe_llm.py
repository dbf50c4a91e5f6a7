"""RAGProbe metrics an LLM judges: whatever the rules of :mod:`groundwatch.core.ragprobe_metrics`
leave open, one Pass/Fail question per metric.

The prompts are written for this project (RAGProbe extends OpenAI evals' ClosedQA template, which
it does not print): each states the metric's definition from RAGProbe §3.1 and asks for exactly
"Pass" or "Fail". A metric whose verdict cannot be read stays open (``None``) and is counted as a
``judge_error``, so the probe stays undecided instead of being passed or failed by a guess.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from groundwatch.adapters.llm.cache import CachedVerdict, VerdictCache, cache_key
from groundwatch.core.judging import JUDGE_ERROR
from groundwatch.core.judging.normalize import fold
from groundwatch.core.llm import NamedChatModel
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.ragprobe_metrics import (
    MetricResult,
    RagProbeMetric,
    deterministic_metrics,
    probe_verdict,
)
from groundwatch.errors import GroundwatchError

PROMPT_VERSION = "ragprobe-metrics-v1"

#: RAGProbe §3.1, one sentence per metric, addressed to the judge.
DEFINITIONS: dict[RagProbeMetric, str] = {
    RagProbeMetric.CORRECTNESS: (
        "The system's answer matches the expected answer exactly or is a close paraphrase "
        "reflecting the same information."
    ),
    RagProbeMetric.RELEVANCE: (
        "The system's answer directly addresses the question without deviating into unrelated "
        "topics."
    ),
    RagProbeMetric.COMPLETENESS: (
        "The system's answer covers all parts of the expected answer, providing a full response."
    ),
    RagProbeMetric.CONSISTENCY: (
        "The system's answer aligns with the expected answer in detail and context and is "
        "logically coherent."
    ),
    RagProbeMetric.EXPLICITNESS: (
        "The system's answer clearly states that the system does not know or cannot answer the "
        "question."
    ),
    RagProbeMetric.CONTRADICTION: (
        "After stating that it cannot answer, the system's answer does not go on to provide "
        "information or attempt to answer the question anyway."
    ),
    RagProbeMetric.NO_QUESTION_RELATED_INFORMATION: (
        "The system's answer contains no information that attempts to address the question."
    ),
}

TEMPLATE = (
    "You check one answer of a question-answering system against one criterion.\n"
    "Criterion ({name}): {definition}\n"
    "Question: {query}\n"
    "Expected answer: {expected}\n"
    "System's answer: {response}\n"
    "Does the system's answer meet the criterion? Reply with exactly one word: Pass or Fail."
)
UNANSWERABLE_EXPECTED = "The documents do not contain the answer; the system should say so."

_LEAD = re.compile(r"^[\W_]*(?:(?:verdict|answer|result)\s*[:\-]?[\W_]*)?(pass|fail)")
_WORD = re.compile(r"\b(pass(?:es|ed)?|fail(?:s|ed)?)\b")
_ECHO = re.compile(r"\b(?:pass|fail)\s*(?:or|/)\s*(?:pass|fail)\b")


def render(metric: RagProbeMetric, query: str, expected: str, response: str) -> str:
    return (
        TEMPLATE.replace("{name}", metric.value.replace("_", " "))
        .replace("{definition}", DEFINITIONS[metric])
        .replace("{query}", query)
        .replace("{expected}", expected)
        .replace("{response}", response)
    )


def parse_pass_fail(text: str) -> bool | None:
    """True for "Pass", False for "Fail", None when the reply says neither or both."""
    t = fold(text).replace("**", "").strip()
    if _ECHO.search(t):
        return None  # "Pass or Fail" repeats the instruction; it is no verdict
    m = _LEAD.match(t)
    if m:
        return m.group(1) == "pass"
    said = {w.startswith("pass") for w in _WORD.findall(t)}
    return said.pop() if len(said) == 1 else None


@dataclass
class ProbeEvaluation:
    """All metrics of one probe and the probe's verdict (fail if any metric fails)."""

    verdict: Verdict
    metrics: dict[RagProbeMetric, MetricResult]
    llm_calls: int = 0
    cache_hits: int = 0
    judge_errors: list[RagProbeMetric] = field(default_factory=list)

    @property
    def failed(self) -> list[RagProbeMetric]:
        return [m for m, r in self.metrics.items() if r.passed is False]


class RagProbeJudge:
    """Rules first, then one LLM question per metric still open."""

    def __init__(
        self,
        client: NamedChatModel,
        cache: VerdictCache | None = None,
        *,
        prompt_version: str = PROMPT_VERSION,
    ) -> None:
        self.client = client
        self.cache = cache
        self.prompt_version = prompt_version

    async def evaluate(
        self, scenario: str, query: str, expected: Expected, response: str | None
    ) -> ProbeEvaluation:
        results = deterministic_metrics(scenario, query, expected, response)
        open_metrics = [m for m, r in results.items() if r.passed is None]
        gold = expected.text if expected.answerable else UNANSWERABLE_EXPECTED
        evaluation = ProbeEvaluation(Verdict.UNDECIDED, results)
        asked = await asyncio.gather(
            *(self._ask(m, query, gold, response or "", evaluation) for m in open_metrics)
        )
        for metric, result in zip(open_metrics, asked, strict=True):
            results[metric] = result
        evaluation.verdict = probe_verdict({m: r.passed for m, r in results.items()})
        return evaluation

    async def _ask(
        self, metric: RagProbeMetric, query: str, gold: str, response: str, ev: ProbeEvaluation
    ) -> MetricResult:
        version = f"{self.prompt_version}:{metric.value}"[:32]
        key = cache_key(query, gold, response, self.client.model, version)
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                ev.cache_hits += 1
                return MetricResult(
                    metric, hit.verdict is Verdict.CORRECT, f"llm (cached): {hit.raw!r}"
                )
        try:
            replies = await self.client.complete(
                "", render(metric, query, gold, response), temperature=0.0, max_tokens=10
            )
        except GroundwatchError as exc:
            ev.judge_errors.append(metric)
            return MetricResult(metric, None, f"{JUDGE_ERROR}: call failed: {exc}")
        ev.llm_calls += 1
        raw = replies[0] if replies else ""
        passed = parse_pass_fail(raw)
        if passed is None:
            ev.judge_errors.append(metric)
            return MetricResult(metric, None, f"{JUDGE_ERROR}: unparseable {raw[:200]!r}")
        if self.cache is not None:
            verdict = Verdict.CORRECT if passed else Verdict.INCORRECT
            await self.cache.put(CachedVerdict(key, self.client.model, version, verdict, raw))
        return MetricResult(metric, passed, f"llm: {raw.strip()[:200]!r}")
