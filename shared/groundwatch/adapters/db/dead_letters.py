"""Dead letters in the store: what no stage could process, kept whole and listed for an operator.

On Kafka the dead-letter topic keeps them for its retention; in one process (``groundwatch run``,
the demo) the topic is memory, so without this table they were gone when the process exited.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import Session

from groundwatch.adapters.db.engine import dialect_insert, is_mysql
from groundwatch.adapters.db.tables import DeadLetterRow
from groundwatch.contracts import DeadLetter


def letter_key(letter: DeadLetter) -> str:
    """Where the letter came from and what it holds: the same record dead-lettered again (a
    batch redelivered after a crash) has the same key; a new process's record at the same
    offset holds other bytes (a fresh probe id) and gets another."""
    parts = (letter.service, letter.source_topic, str(letter.partition), str(letter.offset))
    digest = hashlib.sha256("\x1f".join(parts).encode())
    digest.update(b"\x1f" + letter.raw_b64.encode())
    return digest.hexdigest()


def _insert_ignoring_repeats(engine: Engine) -> Any:
    if is_mysql(engine):
        return mysql.insert(DeadLetterRow).prefix_with("IGNORE")
    return dialect_insert(engine, DeadLetterRow).on_conflict_do_nothing(
        index_elements=["letter_key"]
    )


class DeadLetterStore:
    """Insert dead letters (a repeat is a no-op) and list them, newest first."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert = _insert_ignoring_repeats(engine)

    def save(self, letters: Sequence[DeadLetter]) -> None:
        if not letters:
            return
        now = datetime.now(UTC)
        rows = [
            {
                "letter_key": letter_key(d),
                "service": d.service,
                "source_topic": d.source_topic,
                "partition": d.partition,
                "offset": d.offset,
                "key": d.key,
                "group_id": d.group_id,
                "probe_id": str(d.probe_id) if d.probe_id is not None else None,
                "error": d.error,
                "raw_b64": d.raw_b64,
                "failed_at": d.failed_at,
                "stored_at": now,
            }
            for d in letters
        ]
        with self.engine.begin() as conn:
            conn.execute(self._insert, rows)

    def newest(self, *, limit: int = 50, service: str | None = None) -> list[DeadLetterRow]:
        with Session(self.engine) as s:
            q = select(DeadLetterRow)
            if service:
                q = q.where(DeadLetterRow.service == service)
            return list(s.scalars(q.order_by(DeadLetterRow.id.desc()).limit(limit)).all())

    def count(self, *, service: str | None = None) -> int:
        with Session(self.engine) as s:
            q = select(func.count()).select_from(DeadLetterRow)
            if service:
                q = q.where(DeadLetterRow.service == service)
            return int(s.scalar(q) or 0)
