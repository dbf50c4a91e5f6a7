"""The runner stage: probes in, responses out. A target failure is a response with status error."""

from __future__ import annotations

from collections.abc import Sequence

from groundwatch.contracts import Probe, RagResponse, Topic, Topics
from groundwatch.stages.runner.lanes import Runner


class RunnerStage:
    """Asks each probe of a batch to its target, within the target's limits (:class:`Runner`)."""

    service = "rag-runner"
    group = "rag-runner"

    def __init__(self, runner: Runner, *, batch: int = 500) -> None:
        self.runner = runner
        self.max_records = batch

    def source(self, topics: Topics) -> Topic[Probe]:
        return topics.probes

    async def handle(self, probes: list[Probe]) -> Sequence[RagResponse]:
        return await self.runner.run_many(probes)
