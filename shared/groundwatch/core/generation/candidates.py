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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from groundwatch.core.generation.answers import date_text, format_value
from groundwatch.core.generation.schema import MAX_LABEL_LENGTH, ColumnInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.templates import SqlTemplate, ident, parse_one, render
from groundwatch.core.judging.normalize import normalize
from groundwatch.core.model import (
    MAX_ATTRIBUTES,
    MAX_CANDIDATE_CHARS,
    MAX_CANDIDATES,
    MAX_DOMAIN,
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


def _full_name_query(template: SqlTemplate, schema: SchemaInfo) -> tuple[str, str] | None:
    """The full names ("first last") of the table whose first and last name the two slots are."""
    a, b = template.slots
    table = schema.table(a.table)
    if table is None or (a.table, a.alias) != (b.table, b.alias):
        return None
    full = table.full_name()
    if full is None or {a.column, b.column} != {full[0].name, full[1].name}:
        return None
    first, last = (exp.Column(this=ident(c.name)) for c in full)
    name = exp.Concat(expressions=[first.copy(), exp.Literal.string(" "), last.copy()])
    not_null = exp.And(
        this=exp.Not(this=exp.Is(this=first.copy(), expression=exp.Null())),
        expression=exp.Not(this=exp.Is(this=last.copy(), expression=exp.Null())),
    )
    sql = render(
        exp.Select(
            expressions=[name],
            distinct=exp.Distinct(),
            from_=exp.From(this=exp.Table(this=ident(table.name))),
            where=exp.Where(this=not_null),
        ),
        schema.dialect,
    )
    return f"{table.name}.{full[0].name} {full[1].name}", sql


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


#: Other columns of the asked kind whose values a domain takes in as kin (the most alike first).
MAX_KIN_COLUMNS = 6
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def kind_word(column: str) -> str:
    """The word a column's name ends with, lower-cased: what it holds ("BillingCity", "city",
    "ship_city" → "city"; "LastName" → "name")."""
    words = [w for w in re.split(r"[\W_]+", _CAMEL.sub("_", column)) if w]
    return words[-1].lower() if words else ""


def kin_queries(template: SqlTemplate, schema: SchemaInfo) -> list[list[tuple[str, str]]]:
    """Per answer column, the columns of the same kind elsewhere in the database, as
    ``(table.column, distinct-values query)``: text label columns (not free text, not a key or a
    flag) whose names end with the same word ("city": a customer's city and an invoice's billing
    city for an employee's city). Their values are what a reader gives that answered about
    another entity ("The city of the customer Kovács is Budapest.")."""
    out: list[list[tuple[str, str]]] = []
    for sel in template.selected:
        table = schema.table(sel.table)
        column = table.column(sel.column) if table is not None else None
        if table is None or column is None or column.kind is not AnswerType.TEXT or sel.flag:
            out.append([])
            continue
        word = kind_word(column.name)
        found: list[tuple[int, str, str]] = []
        for t in schema.tables:
            for c in t.columns:
                if (t.name, c.name) == (table.name, column.name) or kind_word(c.name) != word:
                    continue
                if c.kind is not AnswerType.TEXT or c.flag or t.is_surrogate(c):
                    continue
                if c.avg_length is not None and c.avg_length > MAX_LABEL_LENGTH:
                    continue  # free text: no value one names
                # the same name first ("city" for "city"), then longer names ending with it
                rank = 0 if c.name.lower() == column.name.lower() else 1
                sql = distinct_values_sql(t.name, c.name, schema.dialect)
                found.append((rank, f"{t.name}.{c.name}", sql))
        found.sort(key=lambda f: (f[0], f[1]))
        out.append([(src, sql) for _, src, sql in found[:MAX_KIN_COLUMNS]])
    return out


def kin_values(
    own: ColumnSample, kin: Sequence[tuple[str, ColumnSample]], limit: int = MAX_DOMAIN
) -> tuple[list[str], list[str]]:
    """The kin columns' values not among the column's own (compared normalized, as the judge
    compares them), with the column each came from: taken in turn from each column, so every
    kin column is sampled when together they hold more than ``limit``."""
    seen = set(own.normalized)
    values: list[str] = []
    sources: list[str] = []
    cursors = [0] * len(kin)
    while len(values) < limit and any(
        c < len(k[1].values) for c, k in zip(cursors, kin, strict=True)
    ):
        for i, (src, sample) in enumerate(kin):
            if cursors[i] >= len(sample.values) or len(values) >= limit:
                continue
            value, norm = sample.values[cursors[i]], sample.normalized[cursors[i]]
            cursors[i] += 1
            if norm and norm not in seen:
                seen.add(norm)
                values.append(value)
                sources.append(src)
    return values, sources


def entity_query(template: SqlTemplate, schema: SchemaInfo) -> tuple[str, str] | None:
    """``(table.column, distinct-values query)`` of the text column a one-slot template names
    its entity by, or of the full names of the people a two-slot template names by their first
    and last name ("Jonas Eriksen" is another member than the asked "Mira Fischer"); None for
    no slot, other slots, or a slot of another type."""
    if len(template.slots) == 2:
        return _full_name_query(template, schema)
    if len(template.slots) != 1:
        return None
    slot = template.slots[0]
    table = schema.table(slot.table)
    column = table.column(slot.column) if table is not None else None
    if table is None or column is None or column.kind is not AnswerType.TEXT or column.flag:
        return None
    return f"{table.name}.{column.name}", distinct_values_sql(
        table.name, column.name, schema.dialect
    )


def domain_record(
    sample: ColumnSample | None,
    kin: Sequence[tuple[str, ColumnSample]] = (),
) -> dict[str, Any] | None:
    """:class:`~groundwatch.core.model.ColumnDomain` of a column's sample and its kin columns'
    samples, as a group record holds it (the model's fields in order), or None without a
    sample."""
    if sample is None:
        return None
    kin_vals, kin_srcs = kin_values(sample, kin) if kin else ([], [])
    d = ColumnDomain.of(
        list(sample.values), complete=sample.complete, kin=kin_vals, kin_sources=kin_srcs
    )
    return {
        "id": d.id,
        "values": d.values,
        "complete": d.complete,
        "kin": d.kin,
        "kin_sources": d.kin_sources,
    }


@dataclass(frozen=True, slots=True)
class AttributesQuery:
    """How to read the other values of the row a template's slots name: ``sql`` selects the slot
    columns (``n_keys`` of them) and then the row's other columns and its neighbours' (the rows
    one or two foreign keys away), whose types are ``types`` and whose ``table.column`` are
    ``sources``."""

    sql: str
    n_keys: int
    types: tuple[AnswerType, ...]
    sources: tuple[str, ...] = ()


#: Tables joined beyond the named row's own for its neighbours' values (one or two foreign keys
#: away, followed from the row outwards: each is one row, so the query stays one row per entity).
MAX_NEIGHBOUR_TABLES = 4
#: Foreign keys followed from the named row: its own, and its neighbours' once more.
NEIGHBOUR_HOPS = 2


def entity_attributes_query(
    template: SqlTemplate, schema: SchemaInfo, *, keys_only: bool = False
) -> AttributesQuery | None:
    """The query for the other values of the row the template's slots name, or None when the
    slots name no one row of one table, or the row and its neighbours state no other value
    (``keys_only``: then the query for its keys alone, which rows reference it; see
    :func:`referencing_queries`).

    The row is the one the question is about: the asked row of a single-table template, the row
    a join starts from ("the port of the ship named X": the ship's row) or an aggregate counts
    under ("the number of ships of the port named X": the port's row). Its other columns, of
    every type, are what a reader that picked the right entity's wrong sentence answers with;
    so are the values of the rows its foreign keys name, and theirs in turn ("the artist of the
    album" for its track): a reader that picked a neighbour's sentence. Slots on two tables or
    two aliases (a link between two named rows, a self-join) name no one row; surrogate and
    foreign-key columns are no fact anyone states, a yes/no flag's "1", "true" or "yes" is any
    answer's word; the asked columns are the gold. Whether a slot value names exactly one row
    is the data's to say (:func:`entity_attributes` drops a key that two rows share)."""
    if not template.slots or not template.selected:
        return None
    if len({(s.table.lower(), s.alias.lower()) for s in template.slots}) != 1:
        return _joined_row_query(template, schema)
    table = schema.table(template.slots[0].table)
    if table is None:
        return None
    key_cols = [table.column(s.column) for s in template.slots]
    if any(c is None for c in key_cols):
        return None
    keys = [c.name for c in key_cols if c is not None]
    asked = {
        (t.name, s.column.lower())
        for s in template.selected
        if (t := schema.table(s.table)) is not None
    }
    root = "t0"
    cols: list[exp.Expression] = [exp.Column(this=ident(k), table=ident(root)) for k in keys]
    types: list[AnswerType] = []
    sources: list[str] = []
    joins: list[exp.Join] = []

    def stated(t: TableInfo, alias: str, skip: set[str]) -> None:
        for c in t.columns:
            if (
                c.kind is None
                or c.flag
                or t.is_surrogate(c)
                or (t.name, c.name.lower()) in asked
                or c.name in skip
                or len(types) >= MAX_ATTRIBUTES
            ):
                continue
            cols.append(exp.Column(this=ident(c.name), table=ident(alias)))
            types.append(c.kind)
            sources.append(f"{t.name}.{c.name}")

    stated(table, root, set(keys))
    frontier = [(table, root)]
    for _ in range(NEIGHBOUR_HOPS):
        reached: list[tuple[TableInfo, str]] = []
        for t, alias in frontier:
            for fk in t.foreign_keys:
                ref = schema.table(fk.ref_table)
                if ref is None or len(joins) >= MAX_NEIGHBOUR_TABLES:
                    continue
                to = f"n{len(joins) + 1}"
                on = exp.EQ(
                    this=exp.Column(this=ident(fk.column), table=ident(alias)),
                    expression=exp.Column(this=ident(fk.ref_column), table=ident(to)),
                )
                joins.append(
                    exp.Join(this=exp.Table(this=ident(ref.name), alias=ident(to)), on=on,
                             side="LEFT")
                )  # fmt: skip
                stated(ref, to, set())
                reached.append((ref, to))
        frontier = reached
    if not types and not keys_only:
        return None
    select = exp.Select(
        expressions=cols,
        from_=exp.From(this=exp.Table(this=ident(table.name), alias=ident(root))),
        joins=joins,
    )
    return AttributesQuery(render(select, schema.dialect), len(keys), tuple(types), tuple(sources))


def _joined_row_query(template: SqlTemplate, schema: SchemaInfo) -> AttributesQuery | None:
    """Slots on two named rows (a link's ends: "the fee of the visit of pet X with medication
    Y"): the row asked about is the one row, reached through the template's own joins, of the
    table that holds every asked column; its other stated columns are what a reader that picked
    that row's wrong sentence answers with ("its diagnosis", "its date"). Keyed by the slot
    columns, in the slots' order; a key two rows share names no row (:func:`entity_attributes`).
    None for an aggregate, asked columns of two rows, or a row that states nothing else."""
    picked = {(s.table.lower(), s.alias.lower()) for s in template.selected}
    if len(picked) != 1 or any(s.agg for s in template.selected):
        return None
    table = schema.table(template.selected[0].table)
    tree = parse_one(template.sql, schema.dialect)
    if table is None or not isinstance(tree, exp.Select) or tree.args.get("from_") is None:
        return None
    asked = {(table.name, s.column.lower()) for s in template.selected}
    asked |= {(t.name, s.column.lower()) for s in template.slots if (t := schema.table(s.table))}
    row = template.selected[0].alias
    # the row's own columns first, then those of the rows it joins (the pet's species)
    tables = [(table, row)]
    for t_exp in tree.find_all(exp.Table):
        t = schema.table(t_exp.name)
        alias = t_exp.alias_or_name
        if t is not None and alias.lower() != row.lower():
            tables.append((t, alias))
    stated = [(alias, t, c) for t, alias in tables for c in _stated_columns(t, asked)]
    stated = stated[:MAX_ATTRIBUTES]
    if not any(alias == row for alias, _, _ in stated):
        return None  # the row states nothing but what is asked: no sentence of its to pick
    cols = [exp.Column(this=ident(s.column), table=ident(s.alias)) for s in template.slots]
    cols += [exp.Column(this=ident(c.name), table=ident(alias)) for alias, _, c in stated]
    select = exp.Select(
        expressions=cols,
        from_=tree.args["from_"].copy(),
        joins=[j.copy() for j in tree.args.get("joins") or ()],
    )
    return AttributesQuery(
        render(select, schema.dialect),
        len(template.slots),
        tuple(c.kind for _, _, c in stated if c.kind is not None),
        tuple(f"{t.name}.{c.name}" for _, t, c in stated),
    )


#: Rows kept per named entity and per table whose foreign key names it (a driver's trains): the
#: ones with the smallest stable hash of their values, so the same database gives the same rows.
REFERENCING_ROWS = 3
#: Tables whose rows reference the named row that are read for its evidence (one query each).
MAX_REFERENCING_TABLES = 3


def referencing_queries(template: SqlTemplate, schema: SchemaInfo) -> list[AttributesQuery]:
    """The queries for the values of the rows that reference the row the template's slots name
    (one foreign key away in the reverse direction: the trains whose ``driver_id`` is the named
    driver's), one per referencing table, up to :data:`MAX_REFERENCING_TABLES`: a reader that
    picked the sentence of a row about the entity answers with its values ("It is RT-212" for
    the driver's home city). Each selects the slot columns (``n_keys``) and then the referencing
    row's stated columns (as :func:`entity_attributes_query`: no surrogate, foreign-key or flag
    column, never an asked one), and those of the rows its other foreign keys name (the train of
    a station's trip; not another row of the entity's own table, which is another entity), up to
    :data:`MAX_ATTRIBUTES` values a row; an entity has many such rows, so
    :func:`referencing_attributes` keeps :data:`REFERENCING_ROWS` of them per entity and table.
    Empty where the slots name no one row of one table, or no other table references it."""
    if not template.slots or not template.selected:
        return []
    if len({(s.table.lower(), s.alias.lower()) for s in template.slots}) != 1:
        return []
    table = schema.table(template.slots[0].table)
    if table is None:
        return []
    key_cols = [table.column(s.column) for s in template.slots]
    if any(c is None for c in key_cols):
        return []
    keys = [c.name for c in key_cols if c is not None]
    asked = {
        (t.name, s.column.lower())
        for s in template.selected
        if (t := schema.table(s.table)) is not None
    }
    out: list[AttributesQuery] = []
    for ref in schema.tables:
        if ref.name == table.name:
            continue  # a self-reference names rows of the entity's own kind: other entities
        for fk in ref.foreign_keys:
            if fk.ref_table.lower() != table.name.lower() or len(out) >= MAX_REFERENCING_TABLES:
                continue
            # the referencing row's columns, then those of the rows its other foreign keys name
            # (a trip of the station: its train's code), two keys away from the entity
            stated = [("r", ref, c) for c in _stated_columns(ref, asked)]
            on = exp.EQ(
                this=exp.Column(this=ident(fk.column), table=ident("r")),
                expression=exp.Column(this=ident(fk.ref_column), table=ident("t0")),
            )
            joins = [exp.Join(this=exp.Table(this=ident(ref.name), alias=ident("r")), on=on)]
            for other in ref.foreign_keys:
                far = schema.table(other.ref_table)
                if other is fk or far is None or far.name == table.name:
                    continue  # back to the entity's kind: other entities, not its context
                if len(joins) > MAX_NEIGHBOUR_TABLES:
                    break
                to = f"f{len(joins)}"
                joins.append(
                    exp.Join(
                        this=exp.Table(this=ident(far.name), alias=ident(to)),
                        on=exp.EQ(
                            this=exp.Column(this=ident(other.column), table=ident("r")),
                            expression=exp.Column(this=ident(other.ref_column), table=ident(to)),
                        ),
                        side="LEFT",
                    )
                )
                stated += [(to, far, c) for c in _stated_columns(far, asked)]
            stated = stated[:MAX_ATTRIBUTES]
            if not stated:
                continue
            select = exp.Select(
                expressions=[exp.Column(this=ident(k), table=ident("t0")) for k in keys]
                + [exp.Column(this=ident(c.name), table=ident(a)) for a, _, c in stated],
                from_=exp.From(this=exp.Table(this=ident(table.name), alias=ident("t0"))),
                joins=joins,
            )
            out.append(
                AttributesQuery(
                    render(select, schema.dialect),
                    len(keys),
                    tuple(c.kind for _, _, c in stated if c.kind is not None),
                    tuple(f"{t.name}.{c.name}" for _, t, c in stated),
                )
            )
    return out


def _stated_columns(t: TableInfo, asked: set[tuple[str, str]]) -> list[ColumnInfo]:
    """``t``'s columns that state a fact: no surrogate, foreign-key or flag column, never an
    asked one."""
    return [
        c
        for c in t.columns
        if c.kind is not None
        and not c.flag
        and not t.is_surrogate(c)
        and (t.name, c.name.lower()) not in asked
    ]


def referencing_attributes(
    rows_map: dict[tuple[str, ...], RowValues],
    rows: Iterable[Sequence[Any]],
    query: AttributesQuery,
    per_entity: int = REFERENCING_ROWS,
    max_values: int = MAX_ENTITY_VALUES,
) -> None:
    """Adds to each entity of ``rows_map`` (from :func:`entity_attributes`) the values of up to
    ``per_entity`` rows of ``rows`` (one :func:`referencing_queries` query's) that reference it,
    the ones with the smallest stable hash; after the entity's own and its neighbours' values,
    and never beyond :data:`MAX_ATTRIBUTES` values per entity nor ``max_values`` in the map, so
    a group's evidence and a template's map keep their bounds (the held rows are
    ``per_entity`` per entity while the query streams). An entity the map lacks or holds twice
    (a key two rows share) gets none."""
    total = sum(len(v[0]) for v in rows_map.values())
    kept: dict[tuple[str, ...], list[tuple[int, int, tuple[Any, ...]]]] = {}
    n = query.n_keys
    for seen, row in enumerate(rows):
        if any(v is None for v in row[:n]):
            continue
        key = tuple(format_value(v) for v in row[:n])
        known = rows_map.get(key)
        if known is None or known is AMBIGUOUS_ROW:
            continue
        vals = tuple(row[n:])
        rank = -int.from_bytes(_rank("\x1f".join(map(format_value, vals))), "big")
        heap = kept.setdefault(key, [])
        if len(heap) < per_entity:
            heapq.heappush(heap, (rank, seen, vals))
        elif rank > heap[0][0]:
            heapq.heapreplace(heap, (rank, seen, vals))
    shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for key, heap in kept.items():
        own = rows_map[key]
        values, kinds = list(own[0]), list(own[1])
        sources = list(own[2]) if len(own[2]) == len(values) else [""] * len(values)
        have = set(values)
        for _, _, vals in sorted(heap, reverse=True):  # smallest hash first
            for j, v in enumerate(vals):
                if v is None or len(values) >= MAX_ATTRIBUTES or total >= max_values:
                    continue
                kind = query.types[j]
                text = format_value(v).strip()
                if kind is AnswerType.DATE:
                    text = date_text(text)
                if 0 < len(text) <= MAX_CANDIDATE_CHARS and text not in have:
                    have.add(text)
                    values.append(text)
                    kinds.append(kind)
                    sources.append(query.sources[j])
                    total += 1
        k, src = tuple(kinds), tuple(sources)
        rows_map[key] = (tuple(values), shared.setdefault(k, k), shared.setdefault(src, src))


#: Distinct values one template's map shares a string for.
_POOLED = 100_000

#: What :func:`entity_attributes` holds for a key two rows share (this very object: a row with
#: no other values is another, equal tuple).
AMBIGUOUS_ROW: tuple[tuple[str, ...], tuple[AnswerType, ...], tuple[str, ...]] = ((), (), ())

#: One row's other values, their types and their sources (aligned), as
#: :attr:`Expected.attributes`, :attr:`Expected.attribute_types` and
#: :attr:`Expected.attribute_sources` carry them (tuples: a map of 200,000 rows holds one each).
RowValues = tuple[tuple[str, ...], tuple[AnswerType, ...], tuple[str, ...]]


def entity_attributes(
    rows: Iterable[Sequence[Any]],
    n_keys: int,
    types: Sequence[AnswerType] = (),
    limit: int = MAX_ENTITY_ROWS,
    max_values: int = MAX_ENTITY_VALUES,
    sources: Sequence[str] = (),
) -> dict[tuple[str, ...], RowValues] | None:
    """The other values of each row by its key values (formatted as a fill's parameters are),
    typed by their columns (``types``; text where not given) and named by them (``sources``);
    None when the table has more than ``limit`` rows or its rows more than ``max_values`` values
    in all (memory stays bounded per template: about 120 MB at the values bound). A key two rows
    share names no one row: it gets no values (an empty triple). A value two columns hold is
    kept once, with the first column's name (the row's own before its neighbours')."""
    out: dict[tuple[str, ...], RowValues] = {}
    # one tuple per pattern of types (and of sources): rows of a table share a handful
    shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    # one string per distinct value: a city, a segment, a year or a day repeats over the rows,
    # and a string costs more than the reference to it (bounded: later values are not pooled)
    pool: dict[str, str] = {}
    ambiguous = AMBIGUOUS_ROW
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
        vals: dict[str, tuple[AnswerType, str]] = {}
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
                vals[text] = (kind, sources[j] if j < len(sources) else "")
        kept += len(vals)
        if kept > max_values:
            return None
        kinds = tuple(k for k, _ in vals.values())
        named = tuple(n for _, n in vals.values()) if sources else ()
        out[key] = (
            tuple(vals),
            shared.setdefault(kinds, kinds),
            shared.setdefault(named, named),
        )
    return out


def candidates_for(samples: Sequence[ColumnSample | None], gold: Sequence[str]) -> list[list[str]]:
    """``Expected.candidates`` for one answer: per column, the sample without any gold value.

    Every gold value is excluded from every column, so a two-part answer whose parts come from
    the same column never lists one part as a rival of the other. Empty when no column has any.
    """
    out = [s.candidates(gold) if s is not None else [] for s in samples]
    return out if any(out) else []
