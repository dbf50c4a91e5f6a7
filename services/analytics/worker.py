"""Analytics worker: judgements in, live group state stored, nothing produced."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from sqlalchemy.exc import SQLAlchemyError

from groundwatch.bus.base import Bus
from groundwatch.contracts import Judgement, Topics, _Contract
from groundwatch.core.tagging import Observation, Tagger, Window
from groundwatch.errors import RetryLater
from groundwatch.worker import ConsumeLoop
from services.analytics.metrics import AnalyticsMetrics
from services.analytics.store import AnalyticsStore

log = logging.getLogger(__name__)


class AnalyticsWorker:
    """Applies each judgement once (by ``probe_id``), stores it with the touched tallies, and only
    then lets the loop commit the offsets."""

    def __init__(
        self,
        bus: Bus,
        topics: Topics,
        store: AnalyticsStore,
        *,
        window: Window | None = None,
        metrics: AnalyticsMetrics | None = None,
        group: str = "analytics",
        client_id: str = "",
    ) -> None:
        self.store = store
        self.window = window
        self.metrics = metrics
        self.tagger = Tagger(window)
        self._stale = True
        self.loop = ConsumeLoop(
            bus=bus,
            topics=topics,
            source=topics.judgements,
            group=group,
            handler=self.handle,
            service="analytics",
            client_id=client_id,
            max_records=2000,
        )

    def reload(self) -> int:
        """Rebuild the tagger from the store: on start-up and after a failed write."""
        tagger = Tagger(self.window)
        n = tagger.apply_many(self.store.load_observations())
        self.tagger = tagger
        self._stale = False
        return n

    async def handle(self, judgements: list[Judgement]) -> Sequence[_Contract]:
        if self._stale:
            try:
                n = await asyncio.to_thread(self.reload)
                log.info("analytics state rebuilt from %d stored judgements", n)
            except SQLAlchemyError as exc:
                raise RetryLater(f"database unavailable: {exc}") from exc
        tagger = self.tagger
        fresh: list[Judgement] = []
        seen: set[str] = set()
        for j in judgements:
            pid = str(j.probe_id)
            if pid not in tagger and pid not in seen:
                seen.add(pid)
                fresh.append(j)
        if not fresh:
            return []
        applied = [o for o in map(Observation.from_judgement, fresh) if tagger.apply(o)]
        tallies = [t for t in (tagger.tally(*k) for k in {o.key for o in applied}) if t is not None]
        try:
            await asyncio.to_thread(self.store.save, fresh, tallies)
        except SQLAlchemyError as exc:
            self._stale = True  # memory ran ahead of the store: rebuild before the redelivery
            raise RetryLater(f"database write failed: {exc}") from exc
        except BaseException:
            self._stale = True  # any other failure (or cancellation) leaves memory ahead too
            raise
        if self.metrics is not None:
            self.metrics.observe(applied, time.time())
        tagger.refresh_causes(max_groups=1000)  # context comparison, off the scrape path
        return []
