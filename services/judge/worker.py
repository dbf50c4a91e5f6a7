"""Judge worker: responses in, judgements out. Stateless, so any number share one consumer group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from groundwatch.bus.base import Bus
from groundwatch.contracts import Judgement, RagResponse, TargetStatus, Topics
from groundwatch.core.judging import Decision
from groundwatch.core.model import Expected, Verdict
from groundwatch.worker import ConsumeLoop

#: The judging function the worker calls: the tiered judge of ``groundwatch.judging``.
JudgeFn = Callable[[str, Expected, str | None], Awaitable[Decision]]


class JudgeWorker:
    """Consume → judge → produce. A target error becomes verdict ``error``, never ``incorrect``."""

    def __init__(
        self, bus: Bus, topics: Topics, judge: JudgeFn, *, group: str = "judge", client_id: str = ""
    ) -> None:
        self.judge = judge
        self.loop = ConsumeLoop(
            bus=bus,
            topics=topics,
            source=topics.responses,
            group=group,
            handler=self.handle,
            service="judge",
            client_id=client_id,
        )

    async def handle(self, responses: list[RagResponse]) -> Sequence[Judgement]:
        return await asyncio.gather(*(self._one(r) for r in responses))

    async def _one(self, response: RagResponse) -> Judgement:
        started = time.perf_counter()
        if response.status is TargetStatus.ERROR:
            decision = Decision(Verdict.ERROR, "target", response.error_kind or "target_error", {})
        else:
            decision = await self.judge(response.query, response.expected, response.answer)
        return Judgement.for_response(
            response,
            verdict=decision.verdict,
            tier=decision.tier,
            reason=decision.reason[:2000],
            scores=decision.scores,
            prompt_version=getattr(decision, "prompt_version", None),
            judge_latency_s=time.perf_counter() - started,
        )
