"""The LLM-verdict cache: one row per (query, gold, response, model, prompt version).

Judging is reproducible because a verdict, once paid for, is read back instead of asked again —
by this judge process, by its siblings in the consumer group, and by the next run. The rows live
in the database through SQLAlchemy (``LlmCacheRow``); a small in-process LRU in front saves the
round trip for repeats within one process. Blocking database calls run in a worker thread so
the event loop keeps judging.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

import orjson
from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from groundwatch.adapters.db.tables import LlmCacheRow
from groundwatch.core.model import Verdict


def cache_key(query: str, gold: str, response: str, model: str, prompt_version: str) -> str:
    """sha256 over the canonical JSON of the five parts (no separator can be forged)."""
    return hashlib.sha256(orjson.dumps([query, gold, response, model, prompt_version])).hexdigest()


@dataclass(frozen=True)
class CachedVerdict:
    key: str
    model: str
    prompt_version: str
    verdict: Verdict
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


class VerdictCache(Protocol):
    async def get(self, key: str) -> CachedVerdict | None: ...

    async def put(self, entry: CachedVerdict) -> None: ...


class MemoryVerdictCache:
    """Bounded in-process LRU; also the front layer of :class:`SqlVerdictCache`."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._max = max_entries
        self._data: OrderedDict[str, CachedVerdict] = OrderedDict()

    async def get(self, key: str) -> CachedVerdict | None:
        return self.get_now(key)

    def get_now(self, key: str) -> CachedVerdict | None:
        entry = self._data.get(key)
        if entry is not None:
            self._data.move_to_end(key)
        return entry

    async def put(self, entry: CachedVerdict) -> None:
        self.put_now(entry)

    def put_now(self, entry: CachedVerdict) -> None:
        self._data[entry.key] = entry
        self._data.move_to_end(entry.key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class SqlVerdictCache:
    """Verdicts in ``llm_cache`` (SQLite or PostgreSQL), with an in-process LRU in front."""

    def __init__(self, engine: Engine, *, memory_entries: int = 10_000) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._front = MemoryVerdictCache(memory_entries)

    async def get(self, key: str) -> CachedVerdict | None:
        hit = self._front.get_now(key)
        if hit is not None:
            return hit
        entry = await asyncio.to_thread(self._select, key)
        if entry is not None:
            self._front.put_now(entry)
        return entry

    async def put(self, entry: CachedVerdict) -> None:
        self._front.put_now(entry)
        await asyncio.to_thread(self._insert, entry)

    def _select(self, key: str) -> CachedVerdict | None:
        with self._sessions() as session:
            row = session.scalars(select(LlmCacheRow).where(LlmCacheRow.key == key)).first()
            if row is None:
                return None
            try:
                verdict = Verdict(row.verdict)
            except ValueError:
                return None  # a row from a newer schema: ask again rather than misread it
            return CachedVerdict(
                key=row.key,
                model=row.model,
                prompt_version=row.prompt_version,
                verdict=verdict,
                raw=row.raw,
                prompt_tokens=row.prompt_tokens,
                completion_tokens=row.completion_tokens,
                latency_s=row.latency_s,
            )

    def _insert(self, entry: CachedVerdict) -> None:
        session: Session
        with self._sessions() as session:
            session.add(
                LlmCacheRow(
                    key=entry.key,
                    model=entry.model[:128],
                    prompt_version=entry.prompt_version[:32],
                    verdict=entry.verdict.value,
                    raw=entry.raw,
                    prompt_tokens=entry.prompt_tokens,
                    completion_tokens=entry.completion_tokens,
                    latency_s=entry.latency_s,
                )
            )
            try:
                session.commit()
            except IntegrityError:
                # A sibling judge cached the same key first; its verdict is as good as ours.
                session.rollback()
