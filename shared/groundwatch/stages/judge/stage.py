"""The judge stage: responses in, judgements out. Stateless: any number share one consumer group."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from groundwatch.contracts import Judgement, RagResponse, TargetStatus, Topic, Topics
from groundwatch.core.answer_scoring import (
    DEFAULT_K,
    answer_scores,
    retrieval_scores,
    score_answer,
)
from groundwatch.core.judging import Decision
from groundwatch.core.judging.context import gold_in_contexts
from groundwatch.core.judging.gold import gold_key
from groundwatch.core.judging.memo import Memo
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.scores import AnswerScores, RetrievalScores, Scores
from groundwatch.core.tagging import FACTUAL

_NONE = object()  # a memoised "cannot tell" (None means "not in the memo")

#: The judging function the worker calls: the tiered judge of ``groundwatch.stages.judge.tiered``.
JudgeFn = Callable[[str, Expected, str | None], Awaitable[Decision]]
#: How a RAGProbe scenario probe is judged: (scenario, query, expected, response) → decision.
ScenarioJudgeFn = Callable[[str, str, Expected, str | None], Awaitable[Decision]]
#: Extra scores of a judged response beside its verdict (the reference-free evaluators, the
#: semantic and LLM-derived metrics): the families it measured.
Annotator = Callable[[RagResponse, Decision], Awaitable[Scores]]
_S = TypeVar("_S")


class AnswerScorer:
    """Oro et al.'s scores of every response, memoised.

    The metrics are pure functions of (answer, gold) and of (ranking, relevant documents), and a
    RAG endpoint probed every cycle gives the same answer to the same form again and again (and
    one extractive sentence to several forms), so two bounded LRUs — text scores by (answer,
    gold), IR metrics by (ranking, relevant) — make all but the first sighting a dictionary
    lookup: the judge's hot path stays the rules'. The memoised scores are immutable, so every
    judgement of a repeated answer shares them.

    A target that reports no retrieved ids (an empty list) gets no IR metrics: the contract
    cannot tell "retrieved nothing" from "does not say", and a 0 for every probe of a target
    that simply does not report its ranking would be a made-up number.
    """

    def __init__(self, k: int = DEFAULT_K, *, max_entries: int = 10_000) -> None:
        self.k = k
        self.max_entries = max_entries
        self._text: OrderedDict[tuple[str, tuple[str, ...]], AnswerScores] = OrderedDict()
        self._ir: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], RetrievalScores] = (
            OrderedDict()
        )
        self.hits = 0
        self.misses = 0

    def scores(self, response: RagResponse) -> tuple[AnswerScores | None, RetrievalScores | None]:
        """The response's answer scores and IR scores (``None``: not scored — no answer, or
        for IR no ranking or no relevant document)."""
        answer = response.answer
        if response.status is not TargetStatus.OK or answer is None:
            return None, None
        expected = response.expected
        gold: tuple[str, ...] = tuple(expected.values) if expected.answerable else ()
        text = self._lookup(self._text, (answer, gold))
        if text is None:
            text = answer_scores(score_answer(answer, gold, k=self.k))
            self._store(self._text, (answer, gold), text)
        if not response.retrieved_ids or not response.relevant_doc_ids:
            return text, None
        key = (tuple(response.retrieved_ids), tuple(response.relevant_doc_ids))
        ir = self._lookup(self._ir, key)
        if ir is None:
            scored = score_answer("", (), retrieved_ids=key[0], relevant_ids=key[1], k=self.k)
            ir = retrieval_scores(scored)
            if ir is None:  # defined whenever there is a relevant document: never here
                return text, None
            self._store(self._ir, key, ir)
        return text, ir

    def _lookup(self, cache: OrderedDict[Any, _S], key: Any) -> _S | None:
        hit = cache.get(key)
        if hit is None:
            self.misses += 1
            return None
        self.hits += 1
        cache.move_to_end(key)
        return hit

    def _store(self, cache: OrderedDict[Any, _S], key: Any, value: _S) -> None:
        cache[key] = value
        if len(cache) > self.max_entries:
            cache.popitem(last=False)


class JudgeStage:
    """Consume → judge → produce. A target error becomes verdict ``error``, never ``incorrect``.

    GRAMMAR's factual probes go to ``judge`` (rules, then the LLM tier); RAGProbe scenario probes
    to ``scenario_judge`` when given (their scenario's metrics, each decided on its own). Every
    answered response is scored by ``scorer`` (``None``: no answer scores), and ``annotate``
    adds the reference-free evaluators' calls and the semantic metrics; all of it travels in
    ``Judgement.scores``, one object per family.
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
        self.context_memo: Memo[object] = Memo()

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

    def _in_contexts(self, response: RagResponse) -> bool | None:
        """:func:`gold_in_contexts`, memoised on (gold, contexts, question)."""
        if not response.contexts:
            return None
        key = (gold_key(response.expected), tuple(response.contexts), response.query)
        hit = self.context_memo.get(key)
        if hit is None:
            found = gold_in_contexts(response.expected, response.contexts, response.query)
            hit = _NONE if found is None else found
            self.context_memo.put(key, hit)
        return None if hit is _NONE else bool(hit)

    async def _one(self, response: RagResponse) -> Judgement:
        started = time.perf_counter()
        in_contexts: bool | None = None
        if response.status is TargetStatus.ERROR:
            kind = response.error_kind or "target_error"
            detail = response.error_detail or ""
            # the reason names the kind and why (the store and `groundwatch show` keep it)
            reason = detail if detail.startswith(kind) else f"{kind}: {detail}" if detail else kind
            decision = Decision.made(Verdict.ERROR, "target", reason)
        else:
            # the contexts end here: what attribution needs of them is this one flag
            in_contexts = self._in_contexts(response)
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
        if self.scorer is not None:
            answer, retrieval = self.scorer.scores(response)
            if answer is not None:
                s = scores
                scores = Scores(
                    answer,
                    retrieval,
                    s.semantic,
                    s.llm_metrics,
                    s.reference_free,
                    s.audit,
                    s.ragprobe,
                    s.rules,
                    s.llm_call,
                )
        if self.annotate is not None and response.status is TargetStatus.OK:
            scores = scores.merged(await self.annotate(response, decision))
        return Judgement.for_response(
            response,
            verdict=decision.verdict,
            tier=decision.tier,
            reason=decision.reason[:2000],
            scores=scores,
            prompt_version=getattr(decision, "prompt_version", None),
            context_has_answer=in_contexts,
            judge_latency_s=time.perf_counter() - started,
        )
