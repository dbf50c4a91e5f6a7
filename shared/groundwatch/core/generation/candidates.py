"""Grounded candidates: the other values of an answer's column, shipped with each probe.

The judge can only call a free-text answer *wrong* on positive evidence. The database has it: a
response that names another value of the answer's column ("Construction" where the gold industry
is "Mining") and not the gold is conclusively wrong, and one that names the gold *and* another
value is a hedge. So every probe carries a bounded sample of the column's other DISTINCT values
(:attr:`groundwatch.core.model.Expected.candidates`).

For a large domain the sample is a bottom-k sketch: the ``k`` values with the smallest stable
hash. It is deterministic (the same database gives the same candidates on every host and run),
needs one streaming pass and O(k) memory, and is an unbiased sample of the domain, unlike "the
first k in sort order", which would favour one end of the alphabet.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from groundwatch.core.generation.answers import date_text, format_value
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.templates import SqlTemplate, ident, render
from groundwatch.core.judging.normalize import normalize
from groundwatch.core.model import (
    MAX_ATTRIBUTES,
    MAX_CANDIDATE_CHARS,
    MAX_CANDIDATES,
    AnswerType,
    ColumnDomain,
)

#: Rows of a table whose other values are kept per template for :attr:`Expected.attributes`;
#: a larger table's templates get none (a bounded map per template, released after it).
MAX_ENTITY_ROWS = 200_000
#: Values kept in all for one template's rows (every type now, so a wide table's rows hold more
#: of them than its text columns did): beyond, the template gets no attributes.
MAX_ENTITY_VALUES = 1_000_000


def _rank(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()


@dataclass(frozen=True, slots=True)
class ColumnSample:
    """A bounded, deterministic sample of one column's distinct values (hash order)."""

    values: tuple[str, ...]
    #: each value normalized as the judge compares them, computed once per sample (it was
    #: recomputed for every group of the template: most of generation's time)
    normalized: tuple[str, ...] = ()
    #: whether ``values`` are all of the column's distinct values (no value was left out)
    complete: bool = True

    #: positions by normalized value, and of values that normalize to nothing (set up once)
    _at: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)
    _blank: frozenset[int] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.normalized) != len(self.values):
            object.__setattr__(self, "normalized", tuple(normalize(v) for v in self.values))
        at: dict[str, list[int]] = {}
        for i, n in enumerate(self.normalized):
            at.setdefault(n, []).append(i)
        object.__setattr__(self, "_at", {n: tuple(ix) for n, ix in at.items()})
        object.__setattr__(self, "_blank", frozenset(at.get("", ())))

    @classmethod
    def of(cls, values: Iterable[Any], k: int = MAX_CANDIDATES + 1) -> ColumnSample:
        """The ``k`` distinct values with the smallest hash, in one pass over ``values``.

        One more than :data:`MAX_CANDIDATES` by default, so that a full sample still holds
        :data:`MAX_CANDIDATES` values after the gold is taken out. NULLs, empty strings and
        values longer than :data:`MAX_CANDIDATE_CHARS` (free text, not a value one names) are
        skipped.
        """
        heap: list[tuple[bytes, str]] = []  # max-heap on the rank, via inverted bytes
        seen: set[str] = set()
        dropped = False
        for raw in values:
            if raw is None:
                continue
            text = format_value(raw).strip()
            if not text or len(text) > MAX_CANDIDATE_CHARS or text in seen:
                continue
            rank = _rank(text)
            inverted = bytes(255 - b for b in rank)
            if len(heap) < k:
                heapq.heappush(heap, (inverted, text))
                seen.add(text)
            else:
                dropped = True
                if inverted > heap[0][0]:
                    _, out = heapq.heapreplace(heap, (inverted, text))
                    seen.discard(out)
                    seen.add(text)
        return cls(tuple(t for _, t in sorted(heap, reverse=True)), complete=not dropped)

    def candidates(self, gold: Sequence[str], limit: int = MAX_CANDIDATES) -> list[str]:
        """The sample without the gold answer's values (compared normalized), at most ``limit``.

        Case and accent variants of a gold value are taken out too: a candidate the judge could
        not tell from the gold would turn every correct answer into a hedge.
        """
        at = self._at
        skip = set(self._blank)
        for g in gold:
            skip.update(at.get(normalize(g), ()))
        if not skip:  # the gold is not in the sample: its first values, no comparisons
            return list(self.values[:limit])
        return [v for i, v in enumerate(self.values) if i not in skip][:limit]


def distinct_values_sql(table: str, column: str, dialect: str) -> str:
    """``SELECT DISTINCT column FROM table WHERE column IS NOT NULL`` in ``dialect``."""
    col = exp.Column(this=ident(column))
    return render(
        exp.Select(
            expressions=[col.copy()],
            distinct=exp.Distinct(),
            from_=exp.From(this=exp.Table(this=ident(table))),
            where=exp.Where(this=exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))),
        ),
        dialect,
    )


def candidate_queries(template: SqlTemplate, schema: SchemaInfo) -> list[str | None]:
    """Per answer column, the query for its distinct values, or None when it gets no candidates.

    Only text columns of a known table get candidates: dates and numbers are compared as such
    (another date *is* the conflicting value), and an expression has no column to read.
    """
    out: list[str | None] = []
    for sel in template.selected:
        table = schema.table(sel.table)
        column = table.column(sel.column) if table is not None else None
        # a flag's gold is yes/no: its stored values (true/false) are no rivals of it
        if table is None or column is None or column.kind is not AnswerType.TEXT or sel.flag:
            out.append(None)
        else:
            out.append(distinct_values_sql(table.name, column.name, schema.dialect))
    return out


def domain_record(sample: ColumnSample | None) -> dict[str, Any] | None:
    """:class:`~groundwatch.core.model.ColumnDomain` of a column's sample, as a group record
    holds it (the model's fields in order), or None without a sample."""
    if sample is None:
        return None
    d = ColumnDomain.of(list(sample.values), complete=sample.complete)
    return {"id": d.id, "values": d.values, "complete": d.complete}


@dataclass(frozen=True, slots=True)
class AttributesQuery:
    """How to read the other values of the row a template's slots name: ``sql`` selects the slot
    columns (``n_keys`` of them) and then the row's other columns, whose types are ``types``."""

    sql: str
    n_keys: int
    types: tuple[AnswerType, ...]


def entity_attributes_query(template: SqlTemplate, schema: SchemaInfo) -> AttributesQuery | None:
    """The query for the other values of the row the template's slots name, or None when the
    slots name no one row of one table.

    The row is the one the question is about: the asked row of a single-table template, the row
    a join starts from ("the port of the ship named X": the ship's row) or an aggregate counts
    under ("the number of ships of the port named X": the port's row). Its other columns, of
    every type, are what a reader that picked the right entity's wrong sentence answers with.
    Slots on two tables or two aliases (a link between two named rows, a self-join) name no one
    row; surrogate and foreign-key columns are no fact anyone states, a yes/no flag's "1", "true"
    or "yes" is any answer's word; the asked columns are the gold. Whether a slot value names
    exactly one row is the data's to say (:func:`entity_attributes` drops a key that two rows
    share)."""
    if not template.slots or not template.selected:
        return None
    if len({(s.table.lower(), s.alias.lower()) for s in template.slots}) != 1:
        return None
    table = schema.table(template.slots[0].table)
    if table is None:
        return None
    key_cols = [table.column(s.column) for s in template.slots]
    if any(c is None for c in key_cols):
        return None
    keys = [c.name for c in key_cols if c is not None]
    asked = {
        s.column.lower()
        for s in template.selected
        if (t := schema.table(s.table)) is not None and t.name == table.name
    }
    others = [
        c
        for c in table.columns
        if c.kind is not None
        and not c.flag
        and not table.is_surrogate(c)
        and c.name.lower() not in asked
        and c.name not in keys
    ]
    if not others:
        return None
    cols = [exp.Column(this=ident(c)) for c in [*keys, *(c.name for c in others)]]
    sql = render(
        exp.Select(expressions=cols, from_=exp.From(this=exp.Table(this=ident(table.name)))),
        schema.dialect,
    )
    return AttributesQuery(sql, len(keys), tuple(c.kind for c in others if c.kind is not None))


#: Distinct values one template's map shares a string for.
_POOLED = 100_000

#: One row's other values and their types (aligned), as :attr:`Expected.attributes` and
#: :attr:`Expected.attribute_types` carry them (tuples: a map of 200,000 rows holds one each).
RowValues = tuple[tuple[str, ...], tuple[AnswerType, ...]]


def entity_attributes(
    rows: Iterable[Sequence[Any]],
    n_keys: int,
    types: Sequence[AnswerType] = (),
    limit: int = MAX_ENTITY_ROWS,
    max_values: int = MAX_ENTITY_VALUES,
) -> dict[tuple[str, ...], RowValues] | None:
    """The other values of each row by its key values (formatted as a fill's parameters are),
    typed by their columns (``types``; text where not given); None when the table has more than
    ``limit`` rows or its rows more than ``max_values`` values in all (memory stays bounded per
    template: about 120 MB at the values bound). A key two rows share names no one row: it gets no
    values (an empty pair)."""
    out: dict[tuple[str, ...], RowValues] = {}
    shared: dict[tuple[AnswerType, ...], tuple[AnswerType, ...]] = {}  # one per type pattern
    # one string per distinct value: a city, a segment, a year or a day repeats over the rows,
    # and a string costs more than the reference to it (bounded: later values are not pooled)
    pool: dict[str, str] = {}
    ambiguous: RowValues = ((), ())
    kept = 0
    text_type = AnswerType.TEXT
    for row in rows:
        if len(out) >= limit:
            return None
        if any(v is None for v in row[:n_keys]):
            continue  # a NULL names no row a question can ask about
        key = tuple(format_value(v) for v in row[:n_keys])
        if key in out:
            out[key] = ambiguous
            continue
        vals: dict[str, AnswerType] = {}
        for j, v in enumerate(row[n_keys:]):
            if v is None or len(vals) >= MAX_ATTRIBUTES:
                continue
            kind = types[j] if j < len(types) else text_type
            text = format_value(v).strip()
            if kind is AnswerType.DATE:
                text = date_text(text)  # a day stored as a date-time at midnight: its day
            if 0 < len(text) <= MAX_CANDIDATE_CHARS and text not in vals:
                text = pool.get(text) or (
                    pool.setdefault(text, text) if len(pool) < _POOLED else text
                )
                vals[text] = kind
        kept += len(vals)
        if kept > max_values:
            return None
        pattern = tuple(vals.values())
        out[key] = (tuple(vals), shared.setdefault(pattern, pattern))
    return out


def candidates_for(samples: Sequence[ColumnSample | None], gold: Sequence[str]) -> list[list[str]]:
    """``Expected.candidates`` for one answer: per column, the sample without any gold value.

    Every gold value is excluded from every column, so a two-part answer whose parts come from
    the same column never lists one part as a rival of the other. Empty when no column has any.
    """
    out = [s.candidates(gold) if s is not None else [] for s in samples]
    return out if any(out) else []
