"""Expected answers stored once (``expected_answers``) and referenced by judgements.

Every form of a group is judged against the same expected answer (values, types, domain,
attributes, version: ~250 bytes), so a judgement row keeps only a reference, ``expected_ref``:
a hash of the answer's content, so two different answers never share a row and a replayed
batch writes the same reference. Rows written before keep their own ``expected``; every reader
takes the row's own value, else the referenced one.

Retention's sweep removes the answers no judgement references any more, while writers (other
processes) keep referencing answers they remember as stored. A generation makes that safe:

* every transaction that writes judgements reads the generation (:func:`generation`) and holds
  it locked, shared, until it commits (SQLite: the write transaction itself excludes the sweep),
  then writes each answer it references with that generation unless it wrote that answer in the
  same generation before (the writer's memo, kept per generation);
* a sweep raises the generation (waiting for every writer in flight), then reads which answers
  the judgements reference, then deletes only the answers of older generations not among them.

A writer that referenced an answer before the raise has committed, so the sweep's read sees its
judgements; one after the raise writes the answer with the new generation, which the sweep
keeps (and re-inserts it if the sweep removed it first).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, func, insert, select, text

from groundwatch.adapters.db.engine import dialect_insert, is_mysql
from groundwatch.adapters.db.tables import ExpectedAnswerRow, JudgementRow, StoreCounterRow

#: The name of the expected answers' sweep generation in ``store_counters``.
GENERATION = "expected_answers"
#: PostgreSQL: the advisory lock writers hold shared and a sweep's raise exclusive. A row lock
#: would do the same, but shared row lockers do not queue behind a waiting update, so writers
#: whose transactions overlap could hold a sweep off for ever; advisory lock requests queue.
GENERATION_LOCK = 0x67770001


def expected_ref(payload: Any) -> str:
    """The reference of an expected answer (its JSON-ready dict): 128 bits of its hash."""
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


#: A judgement's expected answer as a column: its own, else the one it references.
EXPECTED = func.coalesce(
    JudgementRow.expected,
    select(ExpectedAnswerRow.expected)
    .where(ExpectedAnswerRow.ref == JudgementRow.expected_ref)
    .scalar_subquery(),
    type_=JudgementRow.expected.type,
).label("expected")


def fill_expected(engine: Engine, rows: Iterable[JudgementRow]) -> None:
    """Set ``expected`` on loaded (detached) judgement rows that reference theirs."""
    lean = [r for r in rows if r.expected is None and r.expected_ref]
    refs = sorted({r.expected_ref for r in lean if r.expected_ref})
    if not refs:
        return
    found: dict[str, Any] = {}
    with engine.connect() as conn:
        for i in range(0, len(refs), 500):
            stmt = select(ExpectedAnswerRow.ref, ExpectedAnswerRow.expected).where(
                ExpectedAnswerRow.ref.in_(refs[i : i + 500])
            )
            found.update((ref, exp) for ref, exp in conn.execute(stmt))
    for r in lean:
        if r.expected_ref in found:
            r.expected = found[r.expected_ref]


def generation(conn: Connection) -> int:
    """The sweep generation, locked shared until ``conn``'s transaction ends (PostgreSQL: an
    advisory lock, :data:`GENERATION_LOCK`; MySQL: the row, ``LOCK IN SHARE MODE``; SQLite:
    call it after the transaction's first write, which holds the database's write lock). Made
    if missing (a schema made without its migration)."""
    stmt = select(StoreCounterRow.value).where(StoreCounterRow.name == GENERATION)
    if conn.dialect.name == "postgresql":
        # taken before the read: the read's snapshot then sees a raise that went before
        conn.execute(text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": GENERATION_LOCK})
    else:
        stmt = stmt.with_for_update(read=True)
    value = conn.scalar(stmt)
    if value is None:
        if is_mysql(conn.engine):
            made: Any = insert(StoreCounterRow).prefix_with("IGNORE")
        else:
            made = dialect_insert(conn.engine, StoreCounterRow).on_conflict_do_nothing()
        conn.execute(made.values(name=GENERATION, value=0, at=None))
        value = conn.scalar(stmt)
    return int(value or 0)
