"""Re-reading the SQL truth every cycle, for every way of running the generator.

A monitor that keeps the answers it generated judges a target that follows a changed fact as
wrong: the fact's group turns gap though nothing is missing. With a source database, each cycle
re-reads each group's answer first; a changed one becomes a new answer version (stored beside the
judgements, so `groundwatch show` names it) and an answer that still gives the old value is
judged ``stale``, not a gap. Used by the generator service (``GW_SOURCE_URL``) and by
``groundwatch run --source``.

A dataset file's SQL is untrusted text: each runs through the read gate
(:mod:`groundwatch.core.generation.sql_gate`) on a read-only, time-limited connection, and a group
whose SQL the gate refuses is never run — ``check_source`` stops a run before its first cycle,
and a cycle keeps such a group's answer and says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from groundwatch.adapters.db.tables import AnswerVersionRow
from groundwatch.adapters.sources.connect import SourcePolicy
from groundwatch.core.generation.sql_gate import ReadGate, Rejection
from groundwatch.core.model import SemanticGroup
from groundwatch.errors import ConfigError
from groundwatch.stages.generator.stage import Refresher

log = logging.getLogger(__name__)


def answer_refresher(
    source_url: str,
    engine: Engine,
    on_changed: Callable[[int], None] | None = None,
    policy: SourcePolicy | None = None,
) -> Refresher:
    """Re-read answers from ``source_url`` on a read-only connection (opened by ``policy``);
    record each new version in ``engine``'s store; ``on_changed(n)`` after a cycle that changed
    ``n`` answers."""
    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.adapters.sources.refresh import refresh_answers

    source = readonly_engine(source_url, policy=policy)
    # the gate over the source's tables, introspected by the first cycle and kept while it
    # refuses nothing (a refusal may mean the schema changed: the next cycle looks again)
    gate: list[ReadGate | None] = [None]

    def store(groups: list[SemanticGroup], changed: list[str]) -> None:
        by_id = {g.group_id: g for g in groups}
        with Session(engine) as s, s.begin():
            for gid in changed:
                g = by_id[gid]
                s.merge(
                    AnswerVersionRow(
                        dataset_id=g.dataset_id,
                        group_id=gid,
                        version=g.answer.version,
                        answer=g.answer.model_dump(mode="json"),
                    )
                )

    async def refresh(groups: list[SemanticGroup]) -> tuple[list[SemanticGroup], list[str]]:
        try:
            result = await asyncio.to_thread(refresh_answers, source, groups, gate=gate[0])
        except SQLAlchemyError as exc:
            # a source that is down for a while must not stop the monitor: the cycle asks with
            # the answers it has, and says so
            log.warning("source database unreadable, answers kept this cycle: %s", _line(exc))
            return groups, []
        gate[0] = None if result.refused else result.gate
        if result.refused:
            gid, why = next(iter(result.refused.items()))
            log.warning(
                "%d group(s) not refreshed: their SQL is refused by the read gate (group %s: %s)",
                len(result.refused),
                gid,
                why,
            )
        if result.changed:
            await asyncio.to_thread(store, result.groups, result.changed)
            if on_changed is not None:
                on_changed(len(result.changed))
        return result.groups, result.changed

    return refresh


def _line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    lines = [ln.strip() for ln in str(orig).splitlines() if ln.strip()]
    return f"{type(orig).__name__}: {lines[0][:300] if lines else ''}"


def check_source(
    source_url: str, groups: Sequence[SemanticGroup], policy: SourcePolicy | None = None
) -> None:
    """:class:`ConfigError` in one line unless ``source_url`` opens read-only (by ``policy``)
    and the dataset's SQL passes the read gate and runs on it (a group of each distinct SQL
    template, so another database is caught before the first cycle, not as an error in each)."""
    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.adapters.sources.refresh import refresh_answers

    engine = readonly_engine(source_url, policy=policy)
    seen: dict[str, SemanticGroup] = {}
    for g in groups:
        seen.setdefault(g.sql, g)
    try:
        try:
            with engine.connect():
                pass
        except SQLAlchemyError as exc:
            raise ConfigError(f"cannot open it ({_line(exc)})") from None
        try:
            result = refresh_answers(engine, list(seen.values()))
        except SQLAlchemyError as exc:
            raise ConfigError(f"the dataset's SQL does not run on it ({_line(exc)})") from None
        if result.refused:
            gid, why = next(iter(result.refused.items()))
            if why.startswith((Rejection.UNKNOWN_TABLE, Rejection.UNKNOWN_COLUMN)):
                # names this database does not have: another database than the dataset's
                raise ConfigError(f"the dataset's SQL does not run on it (group {gid}: {why})")
            raise ConfigError(
                f"the dataset's SQL is refused by the read gate ({len(result.refused)} of"
                f" {len(seen)} distinct queries; group {gid}: {why})"
            )
    finally:
        engine.dispose()
