"""Ground truth that stays current: answer versions of a semantic group.

Production databases change. When a cycle re-reads a group's SQL answer and it differs, the group
gets a new answer version and the old answer is kept as a stale value, so a response that matches
the old fact is judged ``incorrect`` with reason ``stale`` — an outdated knowledge base, told apart
from a gap (never known) and from an error (no answer).
"""

from __future__ import annotations

from groundwatch.core.model import AnswerType, Expected, SemanticGroup

#: Earlier versions kept per group: enough to recognise a lagging index, bounded in size.
MAX_STALE_VERSIONS = 5


def next_version(expected: Expected, values: list[str], types: list[AnswerType]) -> Expected | None:
    """The group's answer after re-reading ``values``; ``None`` when nothing changed."""
    if values == expected.values:
        return None
    stale = [expected.values, *[v for v in expected.stale_values if v != values]]
    return expected.model_copy(
        update={
            "values": values,
            "types": types or expected.types,
            "version": expected.version + 1,
            "stale_values": stale[:MAX_STALE_VERSIONS],
        }
    )


def with_answer(group: SemanticGroup, expected: Expected) -> SemanticGroup:
    return group.model_copy(update={"answer": expected})
