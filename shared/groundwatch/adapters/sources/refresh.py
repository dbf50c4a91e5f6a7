"""Re-read the SQL answers of semantic groups from the (read-only) source database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, text

from groundwatch.core.generation.answers import typed_answer
from groundwatch.core.model import SemanticGroup
from groundwatch.core.versions import next_version, with_answer


@dataclass
class RefreshResult:
    groups: list[SemanticGroup]
    changed: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)


def refresh_answers(engine: Engine, groups: Sequence[SemanticGroup]) -> RefreshResult:
    """Each group's SQL run again with its bound parameters; a changed answer is a new version.

    A group whose SQL no longer returns exactly one row keeps its last answer and is reported as
    vanished: its truth is undefined now, and guessing would plant a false gap.
    """
    out = RefreshResult(groups=[])
    with engine.connect() as conn:
        for group in groups:
            rows = conn.execute(text(group.sql), group.params).all()
            if len(rows) != 1:
                out.vanished.append(group.group_id)
                out.groups.append(group)
                continue
            kinds = tuple(group.answer.types) or (None,) * len(rows[0])
            if len(kinds) != len(rows[0]):
                kinds = (None,) * len(rows[0])
            values, types = typed_answer(tuple(rows[0]), kinds)
            new = next_version(group.answer, values, types)
            if new is None:
                out.groups.append(group)
            else:
                out.changed.append(group.group_id)
                out.groups.append(with_answer(group, new))
    return out
