"""Retrieve, then read: the reference RAG system as one object the HTTP app and the demo call."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from groundwatch.core.retrieval.retrievers import Retriever
from groundwatch.reference_rag.faults import FaultSwitches, InjectedFault
from groundwatch.reference_rag.readers import Reader


@dataclass(frozen=True)
class RagAnswer:
    """What ``POST /query`` returns: the answer and the evidence it was read from."""

    answer: str
    retrieved_ids: list[str] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)


class RagPipeline:
    """A retriever and a reader over one corpus, with fault switches that can change at run time."""

    def __init__(
        self,
        corpus: Mapping[str, str],
        retriever: Retriever,
        reader: Reader,
        faults: FaultSwitches | None = None,
    ) -> None:
        self.corpus = dict(corpus)
        self.retriever = retriever
        self.reader = reader
        self._rng = random.Random()
        self.faults = faults or FaultSwitches()

    @property
    def faults(self) -> FaultSwitches:
        return self._faults

    @faults.setter
    def faults(self, value: FaultSwitches) -> None:
        self._faults = value
        self._dropped = value.dropped(self.corpus)
        self._rng.seed(value.seed)

    @property
    def dropped(self) -> frozenset[str]:
        return self._dropped

    async def answer(self, query: str) -> RagAnswer:
        """Answer one query; raises :class:`InjectedFault` when the error-rate switch fires."""
        faults = self._faults
        if faults.added_latency_s > 0:
            await asyncio.sleep(faults.added_latency_s)
        if faults.fails(self._rng):
            raise InjectedFault(f"injected error (error_rate={faults.error_rate})")
        docs = self.retriever.retrieve(query, faults.top_k, exclude=self._dropped)
        unread = faults.unread_doc_ids
        read = [d for d in docs if d.doc_id not in unread] if unread else docs
        text = await self.reader.read(query, read)
        return RagAnswer(text, [d.doc_id for d in docs], [d.text for d in docs])
