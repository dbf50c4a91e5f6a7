"""Re-read the SQL answers of semantic groups from the (read-only) source database."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine

from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.answers import rerender, typed_answer
from groundwatch.core.generation.sql_gate import ReadGate
from groundwatch.core.model import SemanticGroup
from groundwatch.core.versions import next_version, with_answer
from groundwatch.errors import UnsafeSQL


@dataclass
class RefreshResult:
    """The groups (with new answer versions where the answer changed), the ids of those that
    changed, those whose SQL no longer returns one row, and those whose SQL the read gate refused
    (id → reason) — a dataset file's SQL is untrusted text, and a refused one is never run."""

    groups: list[SemanticGroup]
    changed: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    gate: ReadGate | None = None


def refresh_answers(
    engine: Engine, groups: Sequence[SemanticGroup], *, gate: ReadGate | None = None
) -> RefreshResult:
    """Each group's SQL run again with its bound parameters; a changed answer is a new version.

    The SQL runs through :class:`SqlAlchemyPort`, so it passes the read gate (``gate``, or one
    over the source's introspected tables) and what runs is the gate's canonical text. A group
    whose SQL the gate refuses keeps its answer and is listed in ``refused``; a group whose SQL
    no longer returns exactly one row keeps its last answer and is reported as vanished: its truth
    is undefined now, and guessing would plant a false gap.
    """
    out = RefreshResult(groups=[])
    with engine.connect() as conn:
        port = SqlAlchemyPort(conn, gate)
        for group in groups:
            try:
                # two rows tell "not exactly one"; the rest is never read
                rows = list(itertools.islice(port.rows(group.sql, group.params), 2))
            except UnsafeSQL as exc:
                out.refused[group.group_id] = str(exc)
                out.groups.append(group)
                continue
            if len(rows) != 1:
                out.vanished.append(group.group_id)
                out.groups.append(group)
                continue
            kinds = tuple(group.answer.types) or (None,) * len(rows[0])
            if len(kinds) != len(rows[0]):
                kinds = (None,) * len(rows[0])
            values, types = typed_answer(tuple(rows[0]), kinds)
            previous = group.answer.values
            if len(previous) == len(values):
                # in the form the generator gave the gold: yes/no, a day, money's unit
                values = [
                    rerender(p, v, k) for p, v, k in zip(previous, rows[0], types, strict=True)
                ]
            new = next_version(group.answer, values, types)
            if new is None:
                out.groups.append(group)
            else:
                out.changed.append(group.group_id)
                out.groups.append(with_answer(group, new))
        out.gate = port.gate if groups else gate
    return out
