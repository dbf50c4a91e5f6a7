"""Validation of every SQL template before it may run, whichever generator wrote it.

An LLM's SQL is untrusted text. A template is accepted only if sqlglot parses it as exactly one
plain SELECT built from an allow-list of node types (so DML, DDL, PRAGMA, ATTACH, VACUUM, locks,
``SELECT INTO``, functions and subqueries are all refused without naming each one), every table and
column exists in the introspected schema, and every placeholder is a named parameter compared for
equality with a real column. Rejections raise :class:`UnsafeSQL` with a short reason code, which
the stage summary counts.

A template is a narrower shape than a query that may run: the execution gate
(:mod:`groundwatch.core.generation.sql_gate`, which the source adapter applies to every text it
runs) parses it the same way and accepts every template this module accepts; the checks here add
what makes a template a question (a placeholder per condition, an answer column).
"""

from __future__ import annotations

import re

from sqlglot import exp

from groundwatch.core.generation import abbreviations
from groundwatch.core.generation.naming import (
    attribute_label,
    entity_noun,
    is_name_like,
    param_name,
    plural,
    spoken_as,
)
from groundwatch.core.generation.schema import SchemaInfo, TableInfo
from groundwatch.core.generation.sql_gate import (
    Rejection,
    check_read,
    parse_statement,
    reject,
    rejection_code,
)
from groundwatch.core.generation.templates import (
    Origin,
    Selected,
    Slot,
    SqlTemplate,
    assign_tokens,
    render,
)
from groundwatch.core.model import AnswerType

__all__ = ["Rejection", "paper_to_named", "reject", "rejection_code", "validate_sql"]

_ALLOWED: tuple[type[exp.Expression], ...] = (
    exp.Select,
    exp.From,
    exp.Join,
    exp.Where,
    exp.Table,
    exp.TableAlias,
    exp.Alias,
    exp.Column,
    exp.Identifier,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Paren,
    exp.Is,
    exp.Null,
    exp.Literal,
    exp.Placeholder,
    exp.Boolean,
    exp.In,
    exp.Like,
    exp.ILike,
    exp.Between,
    exp.Distinct,
    exp.Order,
    exp.Ordered,
    exp.Limit,
    exp.Tuple,
    exp.Neg,
    exp.Count,
    exp.Max,
    exp.Min,
    exp.Sum,
    exp.Avg,
    exp.Star,
)
#: Aggregates a template may project (never nest, never condition on): "number of …", "latest …".
_AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Count: "count",
    exp.Max: "max",
    exp.Min: "min",
    exp.Sum: "sum",
    exp.Avg: "avg",
}
_AGG_WORDS = {
    "count": "number",
    "max": "latest",
    "min": "earliest",
    "sum": "total",
    "avg": "average",
}
# Paper placeholders, quoted or not: '[Client.Name]' or [Client.Name].
_PAPER_TOKEN = re.compile(r"'?\[([A-Za-z_][\w ]*)\.([A-Za-z_][\w ]*)\]'?")


def paper_to_named(sql: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """``WHERE Name = '[Client.Name]'`` → ``WHERE Name = :name`` and {param: (table, column)}."""
    taken: set[str] = set()
    by_token: dict[tuple[str, str], str] = {}

    def sub(m: re.Match[str]) -> str:
        key = (m.group(1), m.group(2))
        if key not in by_token:
            by_token[key] = param_name(m.group(2), taken)
        return f":{by_token[key]}"

    named = _PAPER_TOKEN.sub(sub, sql)
    return named, {p: k for k, p in by_token.items()}


def _parse_single_select(sql: str, dialect: str) -> exp.Select:
    stmt = parse_statement(sql, dialect)
    if not isinstance(stmt, exp.Select):
        raise reject(Rejection.NOT_SELECT, type(stmt).__name__)
    if any(
        isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
        for e in stmt.expressions
    ):
        raise reject(Rejection.STAR, "SELECT *")
    for node in stmt.walk():
        if not isinstance(node, _ALLOWED):
            raise reject(Rejection.FORBIDDEN, type(node).__name__)
    for key in ("with_", "with", "into", "locks", "group", "having", "joins_using"):
        if stmt.args.get(key):
            raise reject(Rejection.FORBIDDEN, key)
    for node in stmt.walk():
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            raise reject(Rejection.STAR, "* outside COUNT(*)")
        if isinstance(node, tuple(_AGGREGATES)):
            top = node.parent.this if isinstance(node.parent, exp.Alias) else node
            if (
                top is not node
                or node.parent_select is not stmt
                or node.find_ancestor(exp.Where, exp.Join, exp.Order)
            ):
                raise reject(Rejection.FORBIDDEN, f"{type(node).__name__} outside the projection")
            if any(
                isinstance(x, tuple(_AGGREGATES))
                for x in node.find_all(exp.Expression)
                if x is not node
            ):
                raise reject(Rejection.FORBIDDEN, "nested aggregate")
    for join in stmt.args.get("joins") or []:
        if join.args.get("using"):
            raise reject(Rejection.FORBIDDEN, "JOIN USING")
    return stmt


def _scope(stmt: exp.Select, schema: SchemaInfo) -> dict[str, TableInfo]:
    """alias (or table name) → table, for FROM and every JOIN."""
    scope: dict[str, TableInfo] = {}
    for tbl in stmt.find_all(exp.Table):
        if tbl.args.get("db") or tbl.args.get("catalog"):
            db = tbl.args["db"].name if tbl.args.get("db") else ""
            if db.lower() not in ("main", "public", ""):
                raise reject(Rejection.UNKNOWN_TABLE, f"{db}.{tbl.name}")
        info = schema.table(tbl.name)
        if info is None:
            why = schema.excluded_tables.get(tbl.name.lower())
            if why is not None:
                raise reject(Rejection.EXCLUDED, f"{tbl.name} ({why})")
            raise reject(Rejection.UNKNOWN_TABLE, tbl.name)
        scope[tbl.alias_or_name] = info
        scope.setdefault(tbl.name, info)
    return scope


def _resolve(
    col: exp.Column, scope: dict[str, TableInfo], schema: SchemaInfo
) -> tuple[str, TableInfo, str]:
    """(alias, table, real column name) of a column reference, or reject."""
    if col.table:
        info = scope.get(col.table)
        if info is None:
            raise reject(Rejection.UNKNOWN_TABLE, col.table)
        c = info.column(col.name)
        if c is None:
            why = schema.excluded.get((info.name.lower(), col.name.lower()))
            if why is not None:
                raise reject(Rejection.EXCLUDED, f"{info.name}.{col.name} ({why})")
            raise reject(Rejection.UNKNOWN_COLUMN, f"{col.table}.{col.name}")
        return col.table, info, c.name
    owners = {(a, t.name): t for a, t in scope.items() if t.column(col.name) is not None}
    distinct_tables = {t.name for t in owners.values()}
    if not owners:
        for t in scope.values():
            why = schema.excluded.get((t.name.lower(), col.name.lower()))
            if why is not None:
                raise reject(Rejection.EXCLUDED, f"{t.name}.{col.name} ({why})")
    if len(distinct_tables) != 1:
        reason = Rejection.UNKNOWN_COLUMN if not owners else Rejection.FORBIDDEN
        raise reject(reason, f"column {col.name} matches {len(distinct_tables)} tables")
    alias, _ = next(iter(owners))
    info = next(iter(owners.values()))
    col_info = info.column(col.name)
    assert col_info is not None
    return alias, info, col_info.name


def validate_sql(
    sql: str,
    schema: SchemaInfo,
    *,
    origin: Origin = "llm",
    allow_surrogates: bool = False,
) -> SqlTemplate:
    """Check one template and return it in canonical named-parameter form, or raise UnsafeSQL.

    ``allow_surrogates`` is for importing templates someone already curated (the paper's files);
    LLM output must not ask about or condition on record identifiers.
    """
    with spoken_as(abbreviations.of_schema(schema)):
        return _validate_sql(sql, schema, origin, allow_surrogates)


def _validate_sql(
    sql: str, schema: SchemaInfo, origin: Origin, allow_surrogates: bool
) -> SqlTemplate:
    named, _ = paper_to_named(sql.strip())
    stmt = _parse_single_select(named, schema.dialect)
    scope = _scope(stmt, schema)
    check_read(stmt, schema)  # what the execution gate will ask of it, refused here already
    for col in stmt.find_all(exp.Column):
        _resolve(col, scope, schema)
    slots = _where_slots(stmt, scope, schema)
    selected = [_selected(e, scope, schema) for e in stmt.expressions]
    aggregated = [s for s in selected if s.agg]
    _check_answers(slots, selected, schema, allow_surrogates=allow_surrogates)
    tables = tuple(dict.fromkeys(t.name for t in scope.values()))
    shape = (
        "aggregate"
        if aggregated
        else "single"
        if len(slots) == 1 and len(tables) == 1
        else ("pair" if len(tables) == 1 else "join")
    )
    return SqlTemplate(
        sql=render(stmt, schema.dialect),
        slots=assign_tokens(slots),
        selected=tuple(selected),
        tables=tables,
        origin=origin,
        kind=shape,  # type: ignore[arg-type]
        answer_label=" and ".join(_label(s) for s in selected),
        entity=entity_noun(slots[0].table),
        on_multiple="drop",
        identifier_slots=_identifier_slots(slots, schema),
    )


def _where_slots(stmt: exp.Select, scope: dict[str, TableInfo], schema: SchemaInfo) -> list[Slot]:
    """The WHERE clause's placeholders, each ``column = :name`` in its top conjunction, once."""
    slots: list[Slot] = []
    for ph in stmt.find_all(exp.Placeholder):
        if not isinstance(ph.this, str) or not ph.this:
            raise reject(Rejection.BAD_PLACEHOLDER, "positional placeholder")
        parent = ph.parent if isinstance(ph.parent, exp.Expression) else None
        other = None
        if isinstance(parent, exp.EQ):
            other = parent.left if parent.right is ph else parent.right
        if not isinstance(other, exp.Column) or not _in_top_conjunction(parent, stmt):
            raise reject(Rejection.BAD_PLACEHOLDER, f":{ph.name}")
        alias, info, column = _resolve(other, scope, schema)
        if any(s.param == ph.name for s in slots):
            raise reject(Rejection.BAD_PLACEHOLDER, f":{ph.name} used twice")
        slots.append(Slot(ph.name, info.name, column, alias))
    if not slots:
        raise reject(Rejection.NO_PLACEHOLDER, "no placeholder in WHERE")
    return slots


def _selected(e: exp.Expression, scope: dict[str, TableInfo], schema: SchemaInfo) -> Selected:
    """One SELECT expression: a plain column, or an aggregate of a column or of ``*``."""
    target = e.this if isinstance(e, exp.Alias) else e
    agg = _AGGREGATES.get(type(target), "")
    if agg:
        arg = target.this
        if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
            arg = arg.expressions[0]
        if isinstance(arg, exp.Star):
            first = next(iter(scope.values()))
            return Selected(first.name, "*", first.name, AnswerType.NUMBER, agg)
        if not isinstance(arg, exp.Column):
            raise reject(Rejection.NOT_COLUMN, target.sql())
        alias, info, column = _resolve(arg, scope, schema)
        c = info.column(column)
        assert c is not None
        kind = c.kind if agg in ("max", "min") else AnswerType.NUMBER
        return Selected(info.name, column, alias, kind, agg)
    if not isinstance(target, exp.Column):
        raise reject(Rejection.NOT_COLUMN, target.sql())
    alias, info, column = _resolve(target, scope, schema)
    c = info.column(column)
    assert c is not None
    return Selected(info.name, column, alias, c.kind)


def _check_answers(
    slots: list[Slot], selected: list[Selected], schema: SchemaInfo, *, allow_surrogates: bool
) -> None:
    """What is asked must be answerable from the row the conditions name: no aggregate beside
    a plain column, no condition column projected, no record identifier asked or conditioned
    on (unless ``allow_surrogates``)."""
    aggregated = [s for s in selected if s.agg]
    if aggregated and len(aggregated) != len(selected):
        raise reject(Rejection.FORBIDDEN, "aggregate next to a plain column without GROUP BY")
    slot_cols = {(s.alias, s.column) for s in slots}
    if any((s.alias, s.column) in slot_cols for s in selected if not s.agg):
        raise reject(Rejection.SELF_ANSWER, "projects a condition column")
    if not allow_surrogates:
        for tname, cname in [(s.table, s.column) for s in selected if not s.agg] + [
            (s.table, s.column) for s in slots
        ]:
            owner = schema.table(tname)
            c = owner.column(cname) if owner else None
            if owner is not None and c is not None and owner.is_surrogate(c):
                raise reject(Rejection.SURROGATE, f"{tname}.{cname}")


def _identifier_slots(slots: list[Slot], schema: SchemaInfo) -> tuple[str, ...]:
    """The placeholders on a key-like or name-like column: what identifies a row."""
    identifiers = []
    for s in slots:
        owner = schema.table(s.table)
        c = owner.column(s.column) if owner else None
        if owner is not None and c is not None and (owner.is_key_like(c) or is_name_like(c.name)):
            identifiers.append(s.param)
    slot_tables = {s.table for s in slots}
    # several slots name rows of several tables only when each is identified on its own
    return tuple(identifiers) if len(slots) == 1 or len(slot_tables) > 1 else ()


def _label(s: Selected) -> str:
    """What a projected column or aggregate asks for, in words."""
    if s.agg == "count":
        return f"number of {plural(entity_noun(s.table))}"
    if s.agg:
        return f"{_AGG_WORDS[s.agg]} {attribute_label(s.column, s.kind)}"
    return attribute_label(s.column, s.kind)


def _in_top_conjunction(node: exp.Expression | None, stmt: exp.Select) -> bool:
    """True if ``node`` is one of the AND-ed conditions of the WHERE clause (not under OR/NOT)."""
    where = stmt.args.get("where")
    if node is None or where is None:
        return False
    parts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    parts = [p.unnest() if isinstance(p, exp.Paren) else p for p in parts]
    return any(p is node for p in parts)
