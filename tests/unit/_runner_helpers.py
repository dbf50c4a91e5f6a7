"""Probes for runner tests."""

from __future__ import annotations

import hashlib
import uuid

from groundwatch.contracts import Probe
from groundwatch.core.model import AnswerType, Expected


def probe(target: str, query: str = "q", answer: str = "a", cohort: str = "short") -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="run-1",
        dataset_id="ds",
        group_id=f"g-{_slug(query)}",
        form_id=f"f-{_slug(query)}-{cohort}",
        cohort=cohort,
        target=target,
        query=query,
        expected=Expected(values=[answer], types=[AnswerType.TEXT]),
    )


def _slug(query: str) -> str:
    """An id the contract accepts for any query text (ids are plain and at most 64 characters)."""
    return hashlib.sha256(query.encode()).hexdigest()[:16]
