"""Expected answers stored once (``expected_answers``) and referenced by judgements.

Every form of a group is judged against the same expected answer (values, types, domain,
attributes, version: ~250 bytes), so a judgement row keeps only a reference, ``expected_ref``:
a hash of the answer's content, so two different answers never share a row and a replayed
batch writes the same reference. Rows written before keep their own ``expected``; every reader
takes the row's own value, else the referenced one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
from sqlalchemy import Engine, func, select

from groundwatch.adapters.db.tables import ExpectedAnswerRow, JudgementRow


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
