"""The offline, rule-based SQL template generator g_sql (the default; no LLM needed).

It follows the paper's criteria (Table 7, Appendix D.1) mechanically instead of by prompt:
selected and condition columns must be meaningful and descriptive (no record identifiers), and the
query must yield a single answer — checked against the functional dependencies observed in the
data. Three shapes, as C_sql asks for: one placeholder, two placeholders, and one-hop joins.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from sqlglot import exp

from groundwatch.core.generation.naming import entity_noun, humanize, param_name, role_of_fk, words
from groundwatch.core.generation.schema import ColumnInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.templates import (
    JoinInfo,
    Selected,
    Slot,
    SqlTemplate,
    assign_tokens,
    ident,
    render,
)
from groundwatch.core.model import AnswerType


@dataclass(frozen=True, slots=True)
class RuleConfig:
    """Knobs of the rule generator.

    ``key_ratio``: distinct/non-null share for a text column to count as an entity's name.
    ``pair_min_coverage``: share of a table's rows two conditions must single out for a
    two-placeholder template. ``join_attributes``: "identifier" asks a joined row only for its
    name ("director of project X"); "all" also asks its other attributes (two-document questions).
    """

    key_ratio: float = 0.9
    pairs: bool = True
    pair_min_coverage: float = 0.3
    max_pairs_per_table: int = 2
    joins: bool = True
    reverse_joins: bool = True
    join_attributes: str = "identifier"


def _where(cols: list[tuple[exp.Expression, str]]) -> exp.Expression:
    conds: list[exp.Expression] = [
        exp.EQ(this=c, expression=exp.Placeholder(this=p)) for c, p in cols
    ]
    out = conds[0]
    for c in conds[1:]:
        out = exp.And(this=out, expression=c)
    return out


def _col(name: str, alias: str | None = None) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(alias) if alias else None)


def single_template(
    table: TableInfo, keys: list[ColumnInfo], attr: ColumnInfo, schema: SchemaInfo
) -> SqlTemplate:
    """``SELECT A FROM T WHERE K1 = :k1 [AND K2 = :k2]``."""
    taken: set[str] = set()
    params = [param_name(k.name, taken) for k in keys]
    tree = exp.Select(
        expressions=[_col(attr.name)],
        from_=exp.From(this=exp.Table(this=ident(table.name))),
        where=exp.Where(
            this=_where([(_col(k.name), p) for k, p in zip(keys, params, strict=True)])
        ),
    )
    slots = [Slot(p, table.name, k.name, table.name) for k, p in zip(keys, params, strict=True)]
    key_like = tuple(p for k, p in zip(keys, params, strict=True) if table.is_key_like(k))
    return SqlTemplate(
        sql=render(tree, schema.dialect),
        slots=assign_tokens(slots),
        selected=(Selected(table.name, attr.name, table.name, attr.kind),),
        tables=(table.name,),
        origin="rule",
        kind="single" if len(keys) == 1 else "pair",
        answer_label=humanize(attr.name),
        entity=entity_noun(table.name),
        on_multiple="reject" if len(keys) == 1 else "drop",
        identifier_slots=key_like,
    )


def join_template(
    base: TableInfo,
    key: ColumnInfo,
    other: TableInfo,
    attr: ColumnInfo,
    join: JoinInfo,
    schema: SchemaInfo,
) -> SqlTemplate:
    """A one-hop join: conditions on ``base``, the answer from ``other``.

    The joined table is aliased by the foreign key's role (``director``), which keeps self-joins
    (employee → supervisor) unambiguous and the SQL readable.
    """
    base_alias = base.name
    # forward: alias by role ("director"); reverse: the joined table keeps its own name
    role_alias = ("_".join(words(join.role)) or "t2") if join.direction == "forward" else other.name
    if role_alias.lower() == base_alias.lower():
        role_alias = f"{role_alias}_2"
    if join.direction == "forward":
        on = exp.EQ(
            this=_col(join.fk_column, base_alias), expression=_col(join.ref_column, role_alias)
        )
    else:
        on = exp.EQ(
            this=_col(join.fk_column, role_alias), expression=_col(join.ref_column, base_alias)
        )
    joined = exp.Table(this=ident(other.name))
    if role_alias != other.name:
        joined.set("alias", exp.TableAlias(this=ident(role_alias)))
    tree = exp.Select(
        expressions=[_col(attr.name, role_alias)],
        from_=exp.From(this=exp.Table(this=ident(base.name))),
        joins=[exp.Join(this=joined, on=on)],
        where=exp.Where(this=_where([(_col(key.name, base_alias), param_name(key.name, set()))])),
    )
    identifier = other.identifier()
    if join.direction == "forward":
        label = (
            join.role
            if identifier and attr.name == identifier.name
            else (f"{humanize(attr.name)} of the {join.role}")
        )
        entity = entity_noun(base.name)
    else:
        label = entity_noun(other.name)
        entity = join.role
    slot = Slot(param_name(key.name, set()), base.name, key.name, base_alias)
    return SqlTemplate(
        sql=render(tree, schema.dialect),
        slots=assign_tokens([slot]),
        selected=(Selected(other.name, attr.name, role_alias, attr.kind),),
        tables=(base.name, other.name),
        origin="rule",
        kind="join",
        answer_label=label,
        entity=entity,
        join=join,
        on_multiple="reject",
        identifier_slots=(slot.param,),
    )


def rule_templates(schema: SchemaInfo, config: RuleConfig | None = None) -> list[SqlTemplate]:
    """All SQL templates the schema and its data support, in a stable order."""
    cfg = config or RuleConfig()
    out: list[SqlTemplate] = []
    for table in schema.tables:
        descriptive = table.descriptive()
        keys = [c for c in descriptive if table.is_key_like(c, cfg.key_ratio)]
        for key in keys:
            for attr in descriptive:
                if attr.name == key.name or table.determines(key.name, attr.name) is False:
                    continue
                out.append(single_template(table, [key], attr, schema))
        if cfg.pairs:
            out.extend(_pair_templates(table, descriptive, keys, cfg, schema))
        if cfg.joins:
            out.extend(_join_templates(table, keys, cfg, schema))
    return out


def _pair_templates(
    table: TableInfo,
    descriptive: list[ColumnInfo],
    keys: list[ColumnInfo],
    cfg: RuleConfig,
    schema: SchemaInfo,
) -> list[SqlTemplate]:
    """Two conditions that together single out a row, asking for the row's name.

    Only categorical text columns (neither a name nor constant) qualify as conditions, and only
    when neither alone already determines the answer: otherwise the second condition is noise.
    """
    target = table.identifier()
    if target is None:
        return []
    cats = [
        c
        for c in descriptive
        if c.kind is AnswerType.TEXT and c not in keys and 2 <= c.distinct < c.non_null
    ]
    scored: list[tuple[int, SqlTemplate]] = []
    for k1, k2 in combinations(cats, 2):
        if table.determines(k1.name, target.name) or table.determines(k2.name, target.name):
            continue
        prof = table.pair_profile.get((k1.name, k2.name)) or table.pair_profile.get(
            (k2.name, k1.name)
        )
        if prof is None:
            continue
        _, single = prof
        if table.rows == 0 or single < cfg.pair_min_coverage * table.rows:
            continue
        scored.append((single, single_template(table, [k1, k2], target, schema)))
    scored.sort(key=lambda s: -s[0])
    return [t for _, t in scored[: cfg.max_pairs_per_table]]


def _join_templates(
    table: TableInfo, keys: list[ColumnInfo], cfg: RuleConfig, schema: SchemaInfo
) -> list[SqlTemplate]:
    out: list[SqlTemplate] = []
    for fk in table.foreign_keys:
        other = schema.table(fk.ref_table)
        if other is None:
            continue
        role = role_of_fk(fk.column)
        forward = JoinInfo(table.name, fk.column, other.name, fk.ref_column, role, "forward")
        target = other.identifier()
        attrs = [target] if target is not None else []
        if cfg.join_attributes == "all":
            attrs = [c for c in other.descriptive()]
        for key in keys:
            for attr in attrs:
                out.append(join_template(table, key, other, attr, forward, schema))
        # reverse: "project of client X"; self-references have no generic wording, skip them
        if cfg.reverse_joins and other.name != table.name:
            mine = table.identifier()
            if mine is None:
                continue
            reverse = JoinInfo(table.name, fk.column, other.name, fk.ref_column, role, "reverse")
            for okey in [c for c in other.descriptive() if other.is_key_like(c, cfg.key_ratio)]:
                out.append(join_template(other, okey, table, mine, reverse, schema))
    return out
