"""The judge stage: responses in, judgements out. Stateless: any number share one consumer group."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

from groundwatch.contracts import Judgement, RagResponse, TargetStatus, Topic, Topics
from groundwatch.core.answer_metrics import DEFAULT_K, answer_metrics
from groundwatch.core.judge_quality import metric_scores
from groundwatch.core.judging import Decision
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import FACTUAL

#: The judging function the worker calls: the tiered judge of ``groundwatch.stages.judge.tiered``.
JudgeFn = Callable[[str, Expected, str | None], Awaitable[Decision]]
#: How a RAGProbe scenario probe is judged: (scenario, query, expected, response) → decision.
ScenarioJudgeFn = Callable[[str, str, Expected, str | None], Awaitable[Decision]]
#: Extra scores of a judged response beside its verdict (the reference-free evaluators).
Annotator = Callable[[RagResponse, Decision], Awaitable[dict[str, float]]]


class AnswerScorer:
    """Oro et al.'s per-answer metrics of every response, memoised.

    The metrics are pure functions of (answer, gold, ranking, relevant documents), and a RAG
    endpoint probed every cycle gives the same answer to the same form again and again (and one
    extractive sentence to several forms), so a bounded LRU makes all but the first sighting a
    dictionary lookup: the judge's hot path stays the rules'.

    A target that reports no retrieved ids (an empty list) gets no IR metrics: the contract
    cannot tell "retrieved nothing" from "does not say", and a 0 for every probe of a target
    that simply does not report its ranking would be a made-up number.
    """

    def __init__(self, k: int = DEFAULT_K, *, max_entries: int = 50_000) -> None:
        self.k = k
        self.max_entries = max_entries
        self._cache: OrderedDict[tuple[object, ...], dict[str, float]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def scores(self, response: RagResponse) -> dict[str, float]:
        answer = response.answer
        if response.status is not TargetStatus.OK or answer is None:
            return {}
        expected = response.expected
        gold: tuple[str, ...] = tuple(expected.values) if expected.answerable else ()
        retrieved = tuple(response.retrieved_ids) if response.retrieved_ids else None
        relevant = tuple(response.relevant_doc_ids)
        key = (answer, gold, retrieved, relevant)
        cache = self._cache
        hit = cache.get(key)
        if hit is not None:
            self.hits += 1
            cache.move_to_end(key)
            return hit
        self.misses += 1
        scored = metric_scores(
            answer_metrics(answer, gold, retrieved_ids=retrieved, relevant_ids=relevant, k=self.k)
        )
        cache[key] = scored
        if len(cache) > self.max_entries:
            cache.popitem(last=False)
        return scored


class JudgeStage:
    """Consume → judge → produce. A target error becomes verdict ``error``, never ``incorrect``.

    GRAMMAR's factual probes go to ``judge`` (rules, then the LLM tier); RAGProbe scenario probes
    to ``scenario_judge`` when given (their scenario's metrics, each decided on its own). Every
    answered response is scored by ``scorer`` (``None``: no answer metrics), and ``annotate``
    adds the reference-free evaluators' calls; all of it travels in ``Judgement.scores``.
    """

    service = "judge"
    group = "judge"
    max_records = 500

    def __init__(
        self,
        judge: JudgeFn,
        *,
        concurrency: int = 64,
        scenario_judge: ScenarioJudgeFn | None = None,
        scorer: AnswerScorer | None = None,
        annotate: Annotator | None = None,
    ) -> None:
        self.judge = judge
        self.concurrency = max(1, concurrency)
        self.scenario_judge = scenario_judge
        self.scorer = scorer
        self.annotate = annotate

    def source(self, topics: Topics) -> Topic[RagResponse]:
        return topics.responses

    async def handle(self, responses: list[RagResponse]) -> Sequence[Judgement]:
        """Judge a batch, up to ``concurrency`` at once, in order.

        A few drains share the batch instead of a task per response: the deterministic tiers
        never wait, so one drain judges the whole batch without scheduling anything, while an
        LLM-judged batch still has ``concurrency`` calls in flight (the LLM client caps them
        further). On a failure the other drains stop and the error goes to the consume loop.
        """
        if len(responses) == 1:
            return [await self._one(responses[0])]
        out: list[Judgement | None] = [None] * len(responses)
        pending = iter(enumerate(responses))

        async def drain() -> None:
            for i, response in pending:
                out[i] = await self._one(response)

        drains = [asyncio.ensure_future(drain()) for _ in range(min(self.concurrency, len(out)))]
        try:
            await asyncio.gather(*drains)
        except BaseException:
            for d in drains:
                d.cancel()
            raise
        return [j for j in out if j is not None]

    async def _one(self, response: RagResponse) -> Judgement:
        started = time.perf_counter()
        if response.status is TargetStatus.ERROR:
            decision = Decision(Verdict.ERROR, "target", response.error_kind or "target_error", {})
        else:
            if response.scenario != FACTUAL and self.scenario_judge is not None:
                decision = await self.scenario_judge(
                    response.scenario, response.query, response.expected, response.answer
                )
            else:
                decision = await self.judge(response.query, response.expected, response.answer)
            if response.answer_truncated and decision.verdict is Verdict.INCORRECT:
                # The gold may sit in the part that was cut off: an oversize answer is not
                # evidence of a wrong one, so it stays undecided instead of counting as a miss.
                decision = Decision(
                    Verdict.UNDECIDED,
                    decision.tier,
                    f"answer_truncated: {decision.reason}",
                    decision.scores,
                    decision.prompt_version,
                )
        scores = decision.scores
        if self.scorer is not None or self.annotate is not None:
            scores = dict(scores)
            if self.scorer is not None:
                scores.update(self.scorer.scores(response))
            if self.annotate is not None and response.status is TargetStatus.OK:
                scores.update(await self.annotate(response, decision))
        return Judgement.for_response(
            response,
            verdict=decision.verdict,
            tier=decision.tier,
            reason=decision.reason[:2000],
            scores=scores,
            prompt_version=getattr(decision, "prompt_version", None),
            judge_latency_s=time.perf_counter() - started,
        )
