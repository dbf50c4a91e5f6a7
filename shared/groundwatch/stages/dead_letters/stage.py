"""The dead-letter keeper: dead letters in, stored, nothing produced.

Why a stage: in one process the dead-letter topic is memory, so a letter was gone when ``groundwatch
run`` exited — the message no stage could process was lost, which is what a dead letter exists to
prevent. Storing them also lets ``groundwatch dead-letters`` list them whatever the bus.

The keeper must never dead-letter a letter itself (it would read its own output again, for ever):
a database that is down is waited out (``RetryLater``), and a letter the database refuses is
logged whole and skipped — the loop goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence

from sqlalchemy.exc import SQLAlchemyError

from groundwatch.adapters.db.dead_letters import DeadLetterStore
from groundwatch.adapters.db.engine import refused_data
from groundwatch.contracts import DeadLetter, Topic, Topics, _Contract
from groundwatch.errors import StoreUnavailable

log = logging.getLogger(__name__)


class DeadLetterKeeper:
    """Stores every dead letter of the deployment (a repeat is a no-op)."""

    service = "dead-letter-keeper"
    group = "dead-letter-keeper"
    max_records = 500

    def __init__(self, store: DeadLetterStore) -> None:
        self.store = store
        #: letters handled: stored, or refused by the database and logged
        self.seen = 0
        #: "service: error" of the newest letters, for a run's one-line warning
        self.recent: deque[str] = deque(maxlen=20)

    def source(self, topics: Topics) -> Topic[DeadLetter]:
        return topics.dead_letter

    async def handle(self, letters: list[DeadLetter]) -> Sequence[_Contract]:
        try:
            await asyncio.to_thread(self.store.save, letters)
        except SQLAlchemyError as exc:
            if not refused_data(exc):
                raise StoreUnavailable(f"database write failed: {exc}") from exc
            await self._one_by_one(letters)
        self.seen += len(letters)
        self.recent.extend(f"{d.service}: {d.error.splitlines()[0][:200]}" for d in letters)
        return []

    async def _one_by_one(self, letters: list[DeadLetter]) -> None:
        for letter in letters:
            try:
                await asyncio.to_thread(self.store.save, [letter])
            except SQLAlchemyError as exc:
                if not refused_data(exc):
                    raise StoreUnavailable(f"database write failed: {exc}") from exc
                log.error(
                    "dead letter not stored (the database refused it: %s): %s",
                    str(exc).splitlines()[0][:300],
                    letter.model_dump_json(),
                )
