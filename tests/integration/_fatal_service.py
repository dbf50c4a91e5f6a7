"""A service whose one consume loop cannot go on (its bus refuses every publish for good), run
with the real ``serve`` as the services run: ``python -m tests.integration._fatal_service``.
Used by ``test_service_exit.py``: the process must exit 3 with one log line."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.contracts import Probe, RagResponse, TargetStatus, Topics, _Contract
from groundwatch.core.model import Expected
from groundwatch.runtime.consume import ConsumeLoop
from groundwatch.runtime.service import ServiceParts, build_app, serve
from groundwatch.runtime.settings import CommonSettings, load_settings


class RefusingBus(MemoryBus):
    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        if any(m.topic.endswith("responses") for m in messages):
            raise RuntimeError("topic authorization failed")
        await super().publish_many(messages)


async def answer(batch: list[Probe]) -> Sequence[_Contract]:
    return [RagResponse.for_probe(p, status=TargetStatus.OK, answer="a") for p in batch]


def main() -> None:
    topics = Topics("x.")
    bus = RefusingBus()

    async def bootstrap() -> ServiceParts:
        await bus.ensure_topics(topics.all())
        p = Probe(
            probe_id=uuid.uuid4(),
            run_id="r",
            dataset_id="d",
            group_id="g",
            form_id="f",
            cohort="c",
            target="t",
            query="q",
            expected=Expected(values=["a"]),
        )
        await bus.publish_many([Outgoing(topics.probes.name, b"g", p.to_bytes(), p)])
        loop = ConsumeLoop(
            bus=bus, topics=topics, source=topics.probes, group="g", handler=answer, service="x"
        )
        return ServiceParts(bus=bus, topics=topics, registry=CollectorRegistry(), loops=[loop])

    serve(build_app("fatal-test", bootstrap), load_settings(CommonSettings))


if __name__ == "__main__":
    main()
