"""Runner worker: probes in, responses out. A target failure is a response with status error."""

from __future__ import annotations

from collections.abc import Sequence

from groundwatch.adapters.bus.base import Bus
from groundwatch.contracts import Probe, RagResponse, Topics
from groundwatch.runtime.consume import ConsumeLoop
from groundwatch.stages.runner.lanes import Runner


class RunnerWorker:
    def __init__(
        self,
        bus: Bus,
        topics: Topics,
        runner: Runner,
        *,
        group: str = "rag-runner",
        client_id: str = "",
        batch: int = 500,
    ) -> None:
        self.runner = runner
        self.loop = ConsumeLoop(
            bus=bus,
            topics=topics,
            source=topics.probes,
            group=group,
            handler=self.handle,
            service="rag-runner",
            client_id=client_id,
            max_records=batch,
        )

    async def handle(self, probes: list[Probe]) -> Sequence[RagResponse]:
        return await self.runner.run_many(probes)
