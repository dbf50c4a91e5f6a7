"""The judge stage: responses in, judgements out. Stateless: any number share one consumer group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from groundwatch.contracts import Judgement, RagResponse, TargetStatus, Topic, Topics
from groundwatch.core.judging import Decision
from groundwatch.core.model import Expected, Verdict

#: The judging function the worker calls: the tiered judge of ``groundwatch.stages.judge.tiered``.
JudgeFn = Callable[[str, Expected, str | None], Awaitable[Decision]]


class JudgeStage:
    """Consume → judge → produce. A target error becomes verdict ``error``, never ``incorrect``."""

    service = "judge"
    group = "judge"
    max_records = 500

    def __init__(self, judge: JudgeFn, *, concurrency: int = 64) -> None:
        self.judge = judge
        self.concurrency = max(1, concurrency)

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
            kind = response.error_kind or "target_error"
            detail = response.error_detail or ""
            # the reason names the kind and why (the store and `groundwatch show` keep it)
            reason = detail if detail.startswith(kind) else f"{kind}: {detail}" if detail else kind
            decision = Decision(Verdict.ERROR, "target", reason, {})
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
        return Judgement.for_response(
            response,
            verdict=decision.verdict,
            tier=decision.tier,
            reason=decision.reason[:2000],
            scores=decision.scores,
            prompt_version=getattr(decision, "prompt_version", None),
            judge_latency_s=time.perf_counter() - started,
        )
