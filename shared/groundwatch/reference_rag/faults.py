"""Fault switches: break the reference RAG on purpose, so the evaluation has something to find.

Dropping documents makes knowledge gaps (every form of a group fails), a small top-k starves the
reader, unread documents break the reader (retrieved, returned as context, never read — a gap whose
fact the corpus does hold), added latency and an error rate exercise the runner's timeouts,
retries and circuit breaker. An injected error must end up as ``status=error`` and never as a
wrong answer.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from groundwatch.errors import GroundwatchError


class InjectedFault(GroundwatchError):
    """The error-rate switch fired; the endpoint answers HTTP 500 for it."""


class FaultSwitches(BaseModel):
    """Switches that can be changed while the endpoint runs (copy with ``model_copy``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_k: int = Field(3, ge=1, le=100, description="Documents handed to the reader.")
    drop_doc_ids: frozenset[str] = Field(
        default_factory=frozenset, description="Documents never retrieved (a planted gap)."
    )
    drop_fraction: float = Field(
        0.0, ge=0.0, le=1.0, description="Share of documents dropped, chosen stably by id hash."
    )
    unread_doc_ids: frozenset[str] = Field(
        default_factory=frozenset,
        description="Documents the reader skips: still retrieved and returned as contexts, never"
        " read (a broken reader).",
    )
    added_latency_s: float = Field(0.0, ge=0.0, le=600.0, description="Sleep before answering.")
    error_rate: float = Field(0.0, ge=0.0, le=1.0, description="Share of queries failing (500).")
    seed: int = Field(0, description="Seed of the error draws and of the drop_fraction choice.")

    def dropped(self, doc_ids: Iterable[str]) -> frozenset[str]:
        """The documents hidden by these switches.

        ``drop_fraction`` picks by a seeded hash of the id, so the same documents stay dropped
        across restarts and replicas; otherwise a "gap" would wander between probing cycles.
        """
        picked = set(self.drop_doc_ids)
        if self.drop_fraction > 0.0:
            for doc_id in doc_ids:
                digest = hashlib.sha256(f"{self.seed}\x1f{doc_id}".encode()).digest()
                if int.from_bytes(digest[:8], "big") / 2**64 < self.drop_fraction:
                    picked.add(doc_id)
        return frozenset(picked)

    def fails(self, rng: random.Random) -> bool:
        return self.error_rate > 0.0 and rng.random() < self.error_rate
