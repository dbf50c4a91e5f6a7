"""The offline, rule-based SQL template generator g_sql (the default; no LLM needed).

It follows the paper's criteria (Table 7, Appendix D.1) mechanically instead of by prompt:
selected and condition columns must be meaningful and descriptive (no record identifiers), and the
query must yield a single answer — checked against the functional dependencies observed in the
data. The shapes, as C_sql asks for and as the schema's keys allow:

- one placeholder and two placeholders on one table;
- joins along foreign keys, one hop and chains of ``max_hops`` ("account manager of the client of
  project X");
- many-to-many link tables (``employment(Company_ID, People_ID, Year_working)``): a link
  attribute asked with one placeholder per end ("years of employment of person X at company Y"),
  and one end asked from the other;
- tables without a column that names a row (invoices, readings), reached through the row they
  point at, with a second condition from their composite key or their dates;
- aggregates over the rows pointing at a named row: how many, the latest date.

Templates whose fills may have several answers are marked ``on_multiple="drop"``: such fills are
dropped (and reported) or, when asked for, kept as list answers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations, permutations

from sqlglot import exp

from groundwatch.core.generation import abbreviations
from groundwatch.core.generation.naming import (
    HIERARCHY_ROLES,
    ROLE_PREPOSITIONS,
    attribute_label,
    entity_noun,
    humanize,
    is_name_like,
    param_name,
    plural,
    relation_verb,
    role_of_fk,
    self_role,
    singular,
    spoken_as,
    spoken_words,
    words,
)
from groundwatch.core.generation.schema import (
    MAX_LABEL_LENGTH,
    ColumnInfo,
    ForeignKeyInfo,
    SchemaInfo,
    TableInfo,
)
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
    ``max_hops``: longest chain of foreign keys followed from the named row (1 = direct joins).
    ``links``: templates through many-to-many link tables. ``children``: rows of tables that have
    no naming column, reached through the row they point at. ``aggregates``: counts and latest
    dates over the rows pointing at a named row.
    """

    key_ratio: float = 0.9
    pairs: bool = True
    pair_min_coverage: float = 0.3
    max_pairs_per_table: int = 2
    joins: bool = True
    reverse_joins: bool = True
    join_attributes: str = "identifier"
    max_hops: int = 2
    links: bool = True
    children: bool = True
    aggregates: bool = True


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
    table: TableInfo,
    keys: list[ColumnInfo],
    attr: ColumnInfo,
    schema: SchemaInfo,
    name: bool = False,
) -> SqlTemplate:
    """``SELECT A FROM T WHERE K1 = :k1 [AND K2 = :k2]``; ``name``: the keys are a person's
    first and last name, said as one ("office of 'Maria Chen'")."""
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
    assigned = assign_tokens(slots)
    entity = entity_noun(table.name)
    refs = None
    if name:
        key_like = tuple(params)
        refs = (_said(assigned), f"the {entity} named {_said(assigned)}")
    elif len(keys) == 1:
        refs = _key_refs(keys[0], assigned, entity)
    return SqlTemplate(
        sql=render(tree, schema.dialect),
        slots=assigned,
        selected=(Selected(table.name, attr.name, table.name, attr.kind, flag=attr.flag),),
        tables=(table.name,),
        origin="rule",
        kind="single" if len(keys) == 1 or name else "pair",
        answer_label=attribute_label(attr.name, attr.kind),
        entity=entity,
        on_multiple="drop",
        identifier_slots=key_like,
        refs=refs,
    )


def join_template(
    base: TableInfo,
    key: ColumnInfo | tuple[ColumnInfo, ...],
    other: TableInfo,
    attr: ColumnInfo | tuple[ColumnInfo, ...],
    join: JoinInfo,
    schema: SchemaInfo,
    twin: exp.Expression | None = None,
) -> SqlTemplate:
    """A one-hop join: conditions on ``base``, the answer from ``other``.

    ``twin``: ``key`` is a full name and a second column, and this condition keeps the rows
    whose full name is repeated (see :func:`_twin_templates`).

    ``key``: the column (or a person's first and last name) the named row is given by; ``attr``:
    what is asked (a person's two name columns when the answer is a person). The joined table
    is aliased by the foreign key's role (``director``), which keeps self-joins (employee →
    supervisor) unambiguous and the SQL readable.
    """
    keys = key if isinstance(key, tuple) else (key,)
    attrs = attr if isinstance(attr, tuple) else (attr,)
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
    ptaken: set[str] = set()
    slots = assign_tokens(
        [Slot(param_name(k.name, ptaken), base.name, k.name, base_alias) for k in keys]
    )
    cond = _where([(_col(s.column, base_alias), s.param) for s in slots])
    tree = exp.Select(
        expressions=[_col(a.name, role_alias) for a in attrs],
        from_=exp.From(this=exp.Table(this=ident(base.name))),
        joins=[exp.Join(this=joined, on=on)],
        where=exp.Where(this=cond if twin is None else exp.And(this=cond, expression=twin)),
    )
    names = other.name_columns()
    if join.direction == "forward":
        label = (
            join.role
            if names and {a.name for a in attrs} <= {c.name for c in names}
            else (f"{attribute_label(attrs[0].name, attrs[0].kind)} of the {join.role}")
        )
        entity = entity_noun(base.name)
    else:
        label = entity_noun(other.name)
        entity = join.role
    refs = None
    if twin is not None:
        name, tok2 = _said(slots[:2]), _token(slots[2])
        label2 = attribute_label(keys[2].name, keys[2].kind)
        terse2, full2 = told_by(label2, tok2)
        refs = (f"{name} {terse2}", f"the {entity} named {name} {full2}")
    elif len(slots) == 1:
        refs = _key_refs(keys[0], slots, entity)
    elif len(slots) > 1:
        tok = _said(slots)
        refs = (
            f"{entity} {tok}" if join.direction == "reverse" else tok,
            named(entity, keys[-1].name, tok),
        )
    return SqlTemplate(
        sql=render(tree, schema.dialect),
        slots=slots,
        selected=tuple(
            Selected(other.name, a.name, role_alias, a.kind, flag=a.flag) for a in attrs
        ),
        tables=(base.name, other.name),
        origin="rule",
        kind="join",
        answer_label=label,
        entity=entity,
        join=join,
        on_multiple="drop",
        identifier_slots=tuple(s.param for s in slots),
        refs=refs,
    )


def rule_templates(schema: SchemaInfo, config: RuleConfig | None = None) -> list[SqlTemplate]:
    """All SQL templates the schema and its data support, in a stable order, worded with the
    schema's own abbreviations."""
    with spoken_as(abbreviations.of_schema(schema)):
        return _rule_templates(schema, config)


def _rule_templates(schema: SchemaInfo, config: RuleConfig | None) -> list[SqlTemplate]:
    cfg = config or RuleConfig()
    if any(t.key_ratio != cfg.key_ratio for t in schema.tables):
        schema = replace(
            schema, tables=tuple(replace(t, key_ratio=cfg.key_ratio) for t in schema.tables)
        )
    out: list[SqlTemplate] = []
    for table in schema.tables:
        descriptive = table.descriptive()
        keys = [c for c in descriptive if table.is_key_like(c, cfg.key_ratio)]
        full = table.full_name()
        if full is not None:  # a person is asked about by full name, never by one half of it
            keys = [k for k in keys if k not in full]
        for key in keys:
            for attr in descriptive:
                if attr.name == key.name or not _mostly_determines(table, key, attr):
                    continue
                if full is not None and attr in full:
                    continue
                out.append(single_template(table, [key], attr, schema))
        if full is not None:
            for attr in descriptive:
                if attr not in full:
                    out.append(single_template(table, list(full), attr, schema, name=True))
            if table.repeated_names:
                out.extend(_twin_templates(table, full, descriptive, schema))
        names: list[tuple[ColumnInfo, ...]] = [(k,) for k in keys]
        if full is not None:
            names.append(full)
        if cfg.pairs:
            out.extend(_pair_templates(table, descriptive, keys, cfg, schema))
        if cfg.joins:
            out.extend(_join_templates(table, names, cfg, schema))
        if cfg.joins and cfg.max_hops >= 2:
            out.extend(_chain_templates(table, names, cfg, schema))
        if cfg.links and is_link_table(table):
            out.extend(_link_templates(table, schema, cfg))
            if cfg.aggregates:
                out.extend(_payload_templates(table, schema))
        elif cfg.children and table.identifier() is None:
            out.extend(_child_templates(table, schema))
        if cfg.aggregates:
            out.extend(_aggregate_templates(table, schema))
    return _unique(out)


#: Share of a key column's values that may map to several values of an attribute and the
#: template still be made: those fills are dropped one by one ("several_answers").
FD_TOLERANCE = 0.1


def _mostly_determines(table: TableInfo, key: ColumnInfo, attr: ColumnInfo) -> bool:
    """Whether ``key → attr`` holds for all but a few key values (None: not profiled, assumed).

    A track name that three tracks share breaks the dependency for that name only; rejecting
    every "genre of track X" for it threw away the other fifty-seven tracks.
    """
    v = table.fd_violations.get((key.name, attr.name))
    return v is None or v <= FD_TOLERANCE * max(1, key.distinct)


def _unique(templates: list[SqlTemplate]) -> list[SqlTemplate]:
    """One template per SQL text (two routes can reach the same query)."""
    seen: set[str] = set()
    out = []
    for t in templates:
        if t.sql not in seen:
            seen.add(t.sql)
            out.append(t)
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
    The column asked for is never one: a person's family name answers for their row but is no
    key (people are named by their full name), and "the last name of the driver with first
    name X and last name Y" would give its answer away in every fill.
    """
    target = table.identifier()
    if target is None:
        return []
    cats = [
        c
        for c in descriptive
        if c.kind is AnswerType.TEXT
        and c not in keys
        and c.name != target.name
        and not c.flag  # "which product has discontinued '0'": a flag is no condition
        and 2 <= c.distinct < c.non_null
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


def _twin(
    table: TableInfo, schema: SchemaInfo
) -> tuple[tuple[ColumnInfo, ColumnInfo, ColumnInfo], exp.Expression] | None:
    """For a table of people some of whom share a full name: the full name with the column that
    tells them apart (the most distinct short one), and the condition that keeps only the rows
    of a repeated name. None when no name repeats."""
    full = table.full_name()
    if full is None or not table.repeated_names:
        return None
    descriptive = table.descriptive()
    others = [
        c
        for c in descriptive
        if c not in full
        and not c.flag
        and (c.kind is not AnswerType.TEXT or (c.avg_length or 0.0) <= MAX_LABEL_LENGTH)
        and c.distinct >= 2
    ]
    if not others:
        return None
    second = max(others, key=lambda c: (c.distinct, -descriptive.index(c)))
    alias = "gw_twin"
    same = exp.And(
        this=exp.EQ(this=_col(full[0].name, alias), expression=_col(full[0].name, table.name)),
        expression=exp.EQ(
            this=_col(full[1].name, alias), expression=_col(full[1].name, table.name)
        ),
    )
    repeated = exp.GT(
        this=exp.Subquery(
            this=exp.Select(
                expressions=[exp.Count(this=exp.Star())],
                from_=exp.From(this=_table(table.name, alias)),
                where=exp.Where(this=same),
            )
        ),
        expression=exp.Literal.number(1),
    )
    return (full[0], full[1], second), repeated


def _twin_templates(
    table: TableInfo,
    full: tuple[ColumnInfo, ColumnInfo],
    descriptive: list[ColumnInfo],
    schema: SchemaInfo,
) -> list[SqlTemplate]:
    """Where two people share a full name (two students called 'James Smith'), a second
    attribute tells them apart: "office of 'James Smith' with enrolled year '2020'". Only the
    fills of a repeated name are asked so (the SQL keeps the rows whose full name occurs more
    than once); every other person is asked by name alone."""
    found = _twin(table, schema)
    if found is None:
        return []
    (_, _, second), repeated = found
    entity = entity_noun(table.name)
    taken: set[str] = set()
    slots = assign_tokens(
        [Slot(param_name(c.name, taken), table.name, c.name, table.name) for c in (*full, second)]
    )
    name, tok2 = _said(slots[:2]), _token(slots[2])
    label2 = attribute_label(second.name, second.kind)
    out = []
    for attr in descriptive:
        if attr in full or attr == second:
            continue
        where = exp.And(
            this=_where([(_col(sl.column), sl.param) for sl in slots]), expression=repeated
        )
        tree = exp.Select(
            expressions=[_col(attr.name)],
            from_=exp.From(this=exp.Table(this=ident(table.name))),
            where=exp.Where(this=where),
        )
        out.append(
            SqlTemplate(
                sql=render(tree, schema.dialect),
                slots=slots,
                selected=(Selected(table.name, attr.name, table.name, attr.kind, flag=attr.flag),),
                tables=(table.name,),
                origin="rule",
                kind="single",
                answer_label=attribute_label(attr.name, attr.kind),
                entity=entity,
                on_multiple="drop",
                identifier_slots=tuple(sl.param for sl in slots),
                refs=(
                    f"{entity} {name} {told_by(label2, tok2)[0]}",
                    f"the {entity} named {name} {told_by(label2, tok2)[1]}",
                ),
            )
        )
    return out


def _key_refs(key: ColumnInfo, slots: tuple[Slot, ...], entity: str) -> tuple[str, str] | None:
    """How a row given by one column is referred to where the bare value would mislead: a
    number is said with the row's kind ("purchase order '4017'"), a name of something else with
    its column ("supplier with contact name 'Eva Holm'", never "is 'Eva Holm' active"). None:
    the value alone names the row."""
    tok = _said(slots)
    if key.kind is AnswerType.NUMBER:
        return (f"{entity} {tok}", named(entity, key.name, tok))
    if _names_another(key.name, entity):
        label = attribute_label(key.name, key.kind)
        return (f"{entity} with {label} {tok}", f"the {entity} with {label} {tok}")
    return None


def _names_another(column: str, entity: str) -> bool:
    """Whether a name-like column names something else than its row: ``contact_name`` of a
    supplier, ``captain_name`` of a team (but ``supplier_name`` or ``title`` name the row)."""
    ws = spoken_words(column)
    if not is_name_like(column) or len(ws) < 2:
        return False
    return not set(ws[:-1]) <= set(entity.split())


def _names(table: TableInfo, cfg: RuleConfig) -> list[tuple[ColumnInfo, ...]]:
    """The ways a row of ``table`` is named: each key-like column, a person by full name."""
    full = table.full_name()
    keys = [c for c in table.descriptive() if table.is_key_like(c, cfg.key_ratio)]
    out: list[tuple[ColumnInfo, ...]] = [(k,) for k in keys if full is None or k not in full]
    return [*out, full] if full is not None else out


def _said(slots: tuple[Slot, ...] | list[Slot]) -> str:
    """The quoted name a question gives a row by: one placeholder, or a person's first and last
    name as one (``'[T.first_name] [T.last_name]'`` fills to ``'Maria Chen'``)."""
    return "'" + " ".join(s.grammar_token() for s in slots) + "'"


def _join_templates(
    table: TableInfo, keys: list[tuple[ColumnInfo, ...]], cfg: RuleConfig, schema: SchemaInfo
) -> list[SqlTemplate]:
    out: list[SqlTemplate] = []
    for fk in table.foreign_keys:
        other = schema.table(fk.ref_table)
        if other is None:
            continue
        role = _noun(fk, other, table)
        if role is None:  # a self-reference whose key names no role: no wording is right
            continue
        forward = JoinInfo(table.name, fk.column, other.name, fk.ref_column, role, "forward")
        target = other.name_columns()
        attrs: list[tuple[ColumnInfo, ...]] = [target] if target else []
        if cfg.join_attributes == "all":
            attrs = [(c,) for c in other.descriptive()]
        for key in keys:
            for attr in attrs:
                out.append(join_template(table, key, other, attr, forward, schema))
        twin = _twin(table, schema)
        if twin is not None and role is not None:
            for attr in attrs:
                out.append(
                    join_template(table, twin[0], other, attr, forward, schema, twin=twin[1])
                )
        # reverse: "project of client X"; self-references have no generic wording, skip them
        if cfg.reverse_joins and other.name != table.name:
            mine = table.name_columns()
            if not mine:
                continue
            reverse = JoinInfo(table.name, fk.column, other.name, fk.ref_column, role, "reverse")
            for okey in _names(other, cfg):
                out.append(join_template(other, okey, table, mine, reverse, schema))
    return out


# --- multi-hop joins, link tables, child rows, aggregates -------------------------------------


@dataclass(frozen=True, slots=True)
class _Step:
    """``JOIN table AS alias ON left_alias.left_col = alias.right_col``."""

    table: str
    alias: str
    left_alias: str
    left_col: str
    right_col: str


def _alias(name: str, taken: set[str]) -> str:
    base = "_".join(words(name)) or "t"
    alias, i = base, 2
    while alias.lower() in taken:
        alias, i = f"{base}_{i}", i + 1
    taken.add(alias.lower())
    return alias


def _table(name: str, alias: str) -> exp.Table:
    t = exp.Table(this=ident(name))
    if alias != name:
        t.set("alias", exp.TableAlias(this=ident(alias)))
    return t


def _query(
    projections: list[exp.Expression],
    base: str,
    steps: list[_Step],
    conds: list[tuple[str, str, str]],
    dialect: str,
) -> str:
    """``SELECT projections FROM base JOIN steps… WHERE alias.col = :param AND …``."""
    tree = exp.Select(
        expressions=projections,
        from_=exp.From(this=_table(base, base)),
        where=exp.Where(this=_where([(_col(c, a), p) for a, c, p in conds])),
    )
    if steps:
        tree.set(
            "joins",
            [
                exp.Join(
                    this=_table(s.table, s.alias),
                    on=exp.EQ(
                        this=_col(s.left_col, s.left_alias), expression=_col(s.right_col, s.alias)
                    ),
                )
                for s in steps
            ],
        )
    return render(tree, dialect)


def is_link_table(table: TableInfo) -> bool:
    """A many-to-many link: two or more foreign keys and no column that names its rows."""
    return len(table.fk_columns) >= 2 and table.identifier() is None


def _noun(fk: ForeignKeyInfo, other: TableInfo, own: TableInfo | None = None) -> str | None:
    """What the row a foreign key points at is called here: its role if the key names one
    (``director_id`` → director), else the table's noun (``Company_ID`` → company, ``ShipVia``
    → shipper). A self-reference is named by its role (``ReportsTo`` → manager), or None when
    its key names none that can be said."""
    noun = entity_noun(other.name)
    if own is not None and own.name == other.name:
        return self_role(fk.column, noun)
    role = role_of_fk(fk.column)
    ws = role.split()
    if not role or role == humanize(fk.column) or singular(role) == noun:
        return noun
    if ws[-1] in ROLE_PREPOSITIONS:
        return noun
    return role


def told_by(label: str, token: str) -> tuple[str, str]:
    """How a second column tells a row apart after its name, terse and in full: a year or date
    of an event by the event ("enrolled in '2020'", "hired on '2019-03-01'", "born in '1990'"),
    anything else by its label ("with office 'B12'", "whose office is 'B12'"). A column name in
    a sentence ("with enrolled year '2020'") is schema-speak."""
    ws = label.split()
    if len(ws) == 2 and ws[1] in ("year", "date"):
        event = (
            "born" if ws[0] == "birth" else ws[0] if ws[0].endswith("ed") and len(ws[0]) > 4 else ""
        )
        if event:
            said = f"{event} {'in' if ws[1] == 'year' else 'on'} {token}"
            return (said, said)
    return (f"with {label} {token}", f"whose {label} is {token}")


def named(noun: str, column: str, token: str) -> str:
    """``the company named 'X'``, ``the album titled 'X'``, ``the product with code 'X'``."""
    last = (spoken_words(column) or [""])[-1]
    if last == "title":
        return f"the {noun} titled {token}"
    if last == "number":
        return f"the {noun} numbered {token}"
    if last not in _SPOKEN_AS_NAMES:
        # a key that is no name is said by what it is: "the ward with code 'PEDS'", "the book
        # with ISBN '978-…'", "the member with email 'm1001@…'", never "the book named '978-…'";
        # a column called by its own table's noun says it once
        return f"the {noun} with {humanize(column).removeprefix(f'{noun} ')} {token}"
    return f"the {noun} named {token}"


#: Last words of a column that is its row's name: "the company named 'X'".
_SPOKEN_AS_NAMES = frozenset({"name", "names", "surname", "nickname", "alias"})


def _token(slot: Slot) -> str:
    return f"'{slot.grammar_token()}'"


def _dedup(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _chain_templates(
    table: TableInfo, keys: list[tuple[ColumnInfo, ...]], cfg: RuleConfig, schema: SchemaInfo
) -> list[SqlTemplate]:
    """Two foreign keys in a row, each many-to-one: "account manager of the client of project X".

    Every step lands on one row, so a fill has one answer unless the name itself is shared.
    """
    out: list[SqlTemplate] = []
    if not keys:
        return out
    for fk1 in table.foreign_keys:
        mid = schema.table(fk1.ref_table)
        if mid is None:
            continue
        for fk2 in mid.foreign_keys:
            end = schema.table(fk2.ref_table)
            target = end.name_columns() if end is not None else ()
            if end is None or not target:
                continue
            role1, role2 = _noun(fk1, mid, table), _noun(fk2, end, mid)
            if role1 is None or role2 is None:
                continue
            taken = {table.name.lower()}
            a1, a2 = _alias(role1, taken), _alias(role2, taken)
            steps = [
                _Step(mid.name, a1, table.name, fk1.column, fk1.ref_column),
                _Step(end.name, a2, a1, fk2.column, fk2.ref_column),
            ]
            entity = entity_noun(table.name)
            for key in keys:
                ptaken: set[str] = set()
                slots = assign_tokens(
                    [Slot(param_name(k.name, ptaken), table.name, k.name, table.name) for k in key]
                )
                tok = _said(slots)
                out.append(
                    SqlTemplate(
                        sql=_query(
                            [_col(c.name, a2) for c in target],
                            table.name,
                            steps,
                            [(table.name, sl.column, sl.param) for sl in slots],
                            schema.dialect,
                        ),
                        slots=slots,
                        selected=tuple(Selected(end.name, c.name, a2, c.kind) for c in target),
                        tables=_dedup([table.name, mid.name, end.name]),
                        origin="rule",
                        kind="chain",
                        answer_label=f"{role2} of the {role1}",
                        entity=entity,
                        on_multiple="drop",
                        identifier_slots=tuple(sl.param for sl in slots),
                        refs=(tok, named(entity, key[-1].name, tok))
                        if len(key) > 1
                        else _key_refs(key[0], slots, entity),
                    )
                )
    return out


_End = tuple[ForeignKeyInfo, TableInfo, tuple[ColumnInfo, ...]]


def _ends(table: TableInfo, schema: SchemaInfo) -> list[_End]:
    """The foreign keys of ``table`` whose target rows have a name, with its columns."""
    out = []
    for fk in table.foreign_keys:
        other = schema.table(fk.ref_table)
        cols = other.name_columns() if other is not None else ()
        if other is not None and cols:
            out.append((fk, other, cols))
    return out


def _named_slots(
    cols: tuple[ColumnInfo, ...], table: str, alias: str, noun: str, taken: set[str]
) -> list[Slot]:
    """One slot per column a row of ``table`` (joined as ``alias``) is named by."""
    return [Slot(param_name(f"{noun} {c.name}", taken), table, c.name, alias) for c in cols]


def _conds(slots: tuple[Slot, ...] | list[Slot]) -> list[tuple[str, str, str]]:
    return [(s.alias, s.column, s.param) for s in slots]


#: Nouns of rows that hold other rows: a link between one of these and another table reads as
#: membership ("which playlists contain track X", "how many tracks are in playlist X").
CONTAINERS = frozenset(
    {"playlist", "list", "album", "collection", "set", "group", "category", "folder", "basket",
     "cart", "order", "invoice", "bundle", "package", "catalog", "catalogue", "library", "menu",
     "team", "class", "course", "project", "portfolio", "queue", "board", "channel", "box",
     "shelf", "batch", "shipment", "route", "tour", "program", "programme", "curriculum"}
)  # fmt: skip


def _is_container(noun: str, other: str) -> bool:
    return noun.split()[-1] in CONTAINERS and other.split()[-1] not in CONTAINERS


def _is_with(table: TableInfo, noun: str, schema: SchemaInfo) -> bool:
    """Whether a link's other end is said "with" (a person, a physical thing), not "in"."""
    if table.full_name() is not None:
        return True
    return table.name in schema.things and noun.split()[-1] not in CONTAINERS


def _link_templates(link: TableInfo, schema: SchemaInfo, cfg: RuleConfig) -> list[SqlTemplate]:
    """Through a many-to-many link table: its own attributes asked with one placeholder per end
    ("year working of the person named X and the company named Y", as GRAMMAR's authors asked
    of ``employment``), and each end asked from the other, worded as membership where one end
    holds the other ("which playlist contains track X", "which track is in playlist X")."""
    out: list[SqlTemplate] = []
    entity = entity_noun(link.name)
    event = bool(link.descriptive())  # orders, invoice lines: rows with facts of their own
    for end_a, end_b in combinations(_ends(link, schema), 2):
        (fa, a_tbl, ka), (fb, b_tbl, kb) = _first_end(end_a, end_b, link)
        if fa.column == fb.column:
            continue
        na, nb = _noun(fa, a_tbl, link), _noun(fb, b_tbl, link)
        if na is None or nb is None:
            continue
        taken = {link.name.lower()}
        aa, ab = _alias(na, taken), _alias(nb, taken)
        steps = [
            _Step(a_tbl.name, aa, link.name, fa.column, fa.ref_column),
            _Step(b_tbl.name, ab, link.name, fb.column, fb.ref_column),
        ]
        ptaken: set[str] = set()
        a_slots = _named_slots(ka, a_tbl.name, aa, na, ptaken)
        b_slots = _named_slots(kb, b_tbl.name, ab, nb, ptaken)
        slots = assign_tokens([*a_slots, *b_slots])
        sa, sb = slots[: len(ka)], slots[len(ka) :]
        # "the grade of student 'Ana Lopez' in course 'CHEM301'": the payload is the pair's;
        # one meets a person or is with a thing, never in one ("patient X with physician Y",
        # "pet X with medication Y")
        prep = "with" if _is_with(b_tbl, nb, schema) else "in"
        both = (
            f"{na} {_said(sa)} {prep} {nb} {_said(sb)}",
            f"{named(na, ka[-1].name, _said(sa))} {prep} {named(nb, kb[-1].name, _said(sb))}",
        )
        # an end named by the role its row plays (a trip's origin and destination, both
        # stations) is a fact of the link's row, not a place the other end is in: "the trip
        # with the origin named X and the destination named Y", never "trip of origin X in
        # destination Y"
        by_role = na != entity_noun(a_tbl.name) or nb != entity_noun(b_tbl.name)
        if by_role:
            both = (
                f"{entity} with {na} {_said(sa)} and {nb} {_said(sb)}",
                f"the {entity} with {named(na, ka[-1].name, _said(sa))} and "
                f"{named(nb, kb[-1].name, _said(sb))}",
            )
        # a link whose rows have an identity of their own (an appointment, an order) has facts
        # of the row, not of the pair: "the reason of the appointment of patient X with Y"
        own_rows = len(link.primary_key) == 1 and link.primary_key[0] not in link.fk_columns
        tables = _dedup([link.name, a_tbl.name, b_tbl.name])
        for attr in link.descriptive():
            label = attribute_label(attr.name, attr.kind)
            wh = None
            last = set(label.split()[-1:])
            of_row = attr.flag or (own_rows and not label.startswith(f"{entity} "))
            if by_role:
                pass  # the references name the row already: no "what grade did X get in Y"
            elif not of_row and last & _SCORES:
                # "what did Ana Lopez get in CHEM301": the grade is what one gets
                wh = (
                    f"what {label} did {both[0].replace(f' {prep} ', f' get {prep} ', 1)}",
                    f"what {both[0].replace(f' {prep} ', f' got {prep} ', 1)}",
                )
            elif not of_row and last & _PERIODS:
                wh = (
                    f"when was {both[0]}",
                    f"when {both[0].replace(f' {prep} ', f' was {prep} ', 1)}",
                )
            out.append(
                SqlTemplate(
                    sql=_query(
                        [_col(attr.name, link.name)],
                        link.name,
                        steps,
                        _conds(slots),
                        schema.dialect,
                    ),
                    slots=slots,
                    selected=(
                        Selected(link.name, attr.name, link.name, attr.kind, flag=attr.flag),
                    ),
                    tables=tables,
                    origin="rule",
                    kind="link",
                    answer_label=label,
                    entity=entity,
                    on_multiple="drop",
                    identifier_slots=tuple(sl.param for sl in slots),
                    # a flag is the row's: "is the stock move of product X in warehouse Y
                    # received", never "is product X in warehouse Y received"
                    refs=(f"{entity} of {both[0]}", f"the {entity} of {both[1]}")
                    if of_row and not by_role
                    else both,
                    wh=wh,
                )
            )
        for (x_alias, x_tbl, kx, nx, fx), (y_alias, y_tbl, ky, ny, _) in permutations(
            [(aa, a_tbl, ka, na, fa), (ab, b_tbl, kb, nb, fb)]
        ):
            x_slots = assign_tokens(_named_slots(kx, x_tbl.name, x_alias, nx, set()))
            tok = f"{nx} {_said(x_slots)}"
            wh_m = _membership(ny, nx, tok, entity, event, relation_verb(fx.column))
            thing = y_tbl if x_tbl.full_name() is not None else x_tbl
            if (
                event
                and (x_tbl.full_name() is None) != (y_tbl.full_name() is None)
                and thing.name not in schema.things
            ):
                # a person and what they take part in: "which course is student X in",
                # "which student is in course Y" (a book one borrows is no course one is in)
                in_it = x_tbl.full_name() is not None
                wh_m = f"which {ny} is {tok} in" if in_it else f"which {ny} is in {tok}"
            out.append(
                SqlTemplate(
                    sql=_query(
                        [_col(c.name, y_alias) for c in ky],
                        link.name,
                        steps,
                        _conds(x_slots),
                        schema.dialect,
                    ),
                    slots=x_slots,
                    selected=tuple(Selected(y_tbl.name, c.name, y_alias, c.kind) for c in ky),
                    tables=tables,
                    origin="rule",
                    kind="link",
                    answer_label=ny,
                    entity=nx,
                    on_multiple="drop",
                    identifier_slots=tuple(sl.param for sl in x_slots),
                    refs=(tok, named(nx, kx[-1].name, _said(x_slots))),
                    wh=(wh_m, _embedded(wh_m)),
                )
            )
    return out


#: Payload words of a link that a person "gets" in the other end: "what grade did X get in Y".
_SCORES = frozenset({"grade", "score", "mark", "marks", "rating", "result", "points"})
#: Payload words of a link that say when the pair held: "when was student X in course Y".
_PERIODS = frozenset({"term", "semester", "session", "season", "quarter", "period"})


def _first_end(a: _End, b: _End, link: TableInfo) -> tuple[_End, _End]:
    """The end a link's payload is said of first: a person ("student 'Ana Lopez' in course
    'CHEM301'"), else the end that is not a container ("track X in playlist Y")."""
    if (a[1].full_name() is None) != (b[1].full_name() is None):
        return (a, b) if a[1].full_name() is not None else (b, a)
    na, nb = _noun(a[0], a[1], link), _noun(b[0], b[1], link)
    if na and nb and (_is_container(na, nb) or _is_container(nb, na)):
        return (b, a) if _is_container(na, nb) else (a, b)
    # the end with fewer rows is the place the others are in ("product X in warehouse Y")
    return (b, a) if b[1].rows > a[1].rows else (a, b)


def _membership(ny: str, nx: str, tok: str, entity: str, event: bool, verb: str | None) -> str:
    """ "which Y …" for a link asked from one end: membership, an event's other party, or a
    plain link ("which territory does employee X have" is not membership)."""
    if event:
        return f"which {ny} is on the {plural(entity)} {verb or 'of'} {tok}"
    if _is_container(nx, ny):
        return f"which {ny} is in {tok}"
    if _is_container(ny, nx):
        return f"which {ny} contains {tok}"
    return f"which {ny} is linked to {tok}"


def _child_templates(table: TableInfo, schema: SchemaInfo) -> list[SqlTemplate]:
    """A table with no naming column (invoices, readings), reached through the row it points at.

    With one placeholder ("total of the invoice of the customer named X": one answer only for
    customers with one invoice, the other fills are dropped and reported), and with a second
    condition that singles a row out: a column of its composite key, else a date.
    """
    out: list[SqlTemplate] = []
    entity = entity_noun(table.name)
    attrs = table.descriptive()
    if not attrs:
        return out
    in_key = [c for c in attrs if c.name in table.primary_key]
    dated = [c for c in attrs if c.kind is AnswerType.DATE and c.distinct * 2 >= table.rows]
    seconds = in_key or dated
    for fk, parent, kp in _ends(table, schema):
        if parent.name == table.name:
            continue
        noun = _noun(fk, parent, table)
        if noun is None:
            continue
        taken = {table.name.lower()}
        ap = _alias(noun, taken)
        steps = [_Step(parent.name, ap, table.name, fk.column, fk.ref_column)]
        ptaken: set[str] = set()
        pslots = _named_slots(kp, parent.name, ap, noun, ptaken)
        params = tuple(sl.param for sl in pslots)
        tables = _dedup([table.name, parent.name])
        said = _said(assign_tokens(pslots))
        of_parent = named(noun, kp[-1].name, said)
        for attr in attrs:
            slots = assign_tokens(pslots)
            out.append(
                SqlTemplate(
                    sql=_query(
                        [_col(attr.name, table.name)],
                        table.name,
                        steps,
                        _conds(slots),
                        schema.dialect,
                    ),
                    slots=slots,
                    selected=(
                        Selected(table.name, attr.name, table.name, attr.kind, flag=attr.flag),
                    ),
                    tables=tables,
                    origin="rule",
                    kind="child",
                    answer_label=attribute_label(attr.name, attr.kind),
                    entity=entity,
                    on_multiple="drop",
                    identifier_slots=params,
                    refs=(
                        _terse_child(noun, said, entity, attr),
                        f"the {entity} of {of_parent}",
                    ),
                )
            )
        for second in seconds:
            p2 = param_name(second.name, set(ptaken))
            slots = assign_tokens([*pslots, Slot(p2, table.name, second.name, table.name)])
            label2 = attribute_label(second.name, second.kind)
            for attr in attrs:
                if attr.name == second.name:
                    continue
                out.append(
                    SqlTemplate(
                        sql=_query(
                            [_col(attr.name, table.name)],
                            table.name,
                            steps,
                            _conds(slots),
                            schema.dialect,
                        ),
                        slots=slots,
                        selected=(
                            Selected(table.name, attr.name, table.name, attr.kind, flag=attr.flag),
                        ),
                        tables=tables,
                        origin="rule",
                        kind="child",
                        answer_label=attribute_label(attr.name, attr.kind),
                        entity=entity,
                        on_multiple="drop",
                        identifier_slots=params,
                        refs=(
                            f"{_terse_child(noun, said, entity, attr)} "
                            f"{told_by(label2, _token(slots[-1]))[0]}",
                            f"the {entity} of {of_parent} {told_by(label2, _token(slots[-1]))[0]}",
                        ),
                    )
                )
    return out


def _terse_child(noun: str, token: str, entity: str, attr: ColumnInfo) -> str:
    """``customer 'X' invoice``, or ``customer 'X'`` when the attribute already names the row
    ("order date" of an order: "customer 'X' order order date" would say it twice)."""
    if attribute_label(attr.name, attr.kind).startswith(entity + " "):
        return f"{noun} {token}"
    return f"{noun} {token} {entity}"


def _aggregate_templates(table: TableInfo, schema: SchemaInfo) -> list[SqlTemplate]:
    """Over the rows of ``table`` that point at a named row: how many, and the latest date.

    The answer is one value per fill by construction (an aggregate), read from the database like
    every other answer. Each count is named by what it counts: through a link table the distinct
    rows at the other end ("how many tracks are in playlist X", "number of different employees
    on the orders shipped via X"), over a self-reference the rows under the named one ("number of
    direct reports of employee X", "birth date of the youngest direct report of employee X"); a
    self-reference whose role cannot be said gets no aggregate. A name two parent rows share
    would pool both: such fills are dropped (:mod:`.grouped` counts the rows a name matched).
    """
    out: list[SqlTemplate] = []
    entity = entity_noun(table.name)
    dates = [c for c in table.descriptive() if c.kind is AnswerType.DATE]
    for fk, parent, kp in _ends(table, schema):
        subject = _aggregate_subject(fk, parent, table, entity)
        if subject is None:
            continue
        role, noun, counted = subject
        ap = _alias(role, {table.name.lower()})
        steps = [_Step(parent.name, ap, table.name, fk.column, fk.ref_column)]
        slots = assign_tokens(_named_slots(kp, parent.name, ap, noun, set()))
        over = _Over(
            table=table,
            entity=entity,
            noun=noun,
            counted=counted,
            self_ref=parent.name == table.name,
            tok=f"{noun} {_said(slots)}",
            named=named(noun, kp[-1].name, _said(slots)),
            verb=relation_verb(fk.column),
        )
        aggregates = [
            *_link_counts(over, fk, schema),
            *_row_count(over),
            *(_latest_date(over, d) for d in dates),
        ]
        refs = (over.tok, over.named)
        for a in aggregates:
            out.append(
                SqlTemplate(
                    sql=_query([a.expr], table.name, steps, _conds(slots), schema.dialect),
                    slots=slots,
                    selected=(Selected(table.name, a.column, table.name, a.kind, a.agg),),
                    tables=_dedup([table.name, parent.name]),
                    origin="rule",
                    kind="aggregate",
                    answer_label=a.label,
                    entity=noun,
                    on_multiple="drop",
                    identifier_slots=tuple(sl.param for sl in slots),
                    refs=refs,
                    wh=(a.wh, _embedded(a.wh)) if a.wh else None,
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class _Over:
    """The rows one foreign key of ``table`` points from, at a named row: what they are."""

    table: TableInfo
    entity: str  #: a row of ``table`` ("invoice")
    noun: str  #: the named row ("customer"; over a self-reference the table's own entity)
    counted: str  #: what a count counts ("invoice", "direct report", "child department")
    self_ref: bool
    tok: str  #: the named row as said ("customer 'X'")
    named: str  #: the named row as a phrase ("the customer named 'X'")
    verb: str | None  #: how the rows relate to it ("shipped via"), if the key says

    @property
    def link(self) -> bool:
        return is_link_table(self.table)

    @property
    def pure_link(self) -> bool:
        """A link table with no facts of its own: it only pairs its two ends."""
        return self.link and not self.table.descriptive()

    @property
    def rows(self) -> str:
        """The counted rows with their relation, to be followed by the named row."""
        return f"{plural(self.entity)} {self.verb}" if self.verb else f"{plural(self.entity)} of"


@dataclass(frozen=True, slots=True)
class _Aggregate:
    """One aggregate over the rows, what its answer is called and the question asking it."""

    expr: exp.Expression
    column: str
    label: str
    kind: AnswerType | None
    agg: str
    wh: str | None


def _aggregate_subject(
    fk: ForeignKeyInfo, parent: TableInfo, table: TableInfo, entity: str
) -> tuple[str, str, str] | None:
    """The key's role, the named row's noun and what a count counts; None when the role cannot
    be said, or a self-reference's role is neither a hierarchy nor a parent."""
    role = _noun(fk, parent, table)
    if role is None:
        return None
    if parent.name != table.name:
        return role, role, entity
    # the named row is an employee, not "the manager 'X'"
    if role in HIERARCHY_ROLES:
        return role, entity, "direct report"
    if role.startswith("parent "):
        return role, entity, f"child {entity}"
    return None


def _link_counts(over: _Over, fk: ForeignKeyInfo, schema: SchemaInfo) -> list[_Aggregate]:
    """Through a link table, the distinct rows at each of its other ends."""
    if not over.link:
        return []
    out: list[_Aggregate] = []
    table = over.table
    for other in table.foreign_keys:
        target = schema.table(other.ref_table)
        if other.column == fk.column or target is None:
            continue
        on = _noun(other, target, table)
        if on is None:
            continue
        distinct = exp.Count(this=exp.Distinct(expressions=[_col(other.column, table.name)]))
        label, wh = _link_count_wording(over, on)
        out.append(_Aggregate(distinct, other.column, label, AnswerType.NUMBER, "count", wh))
    return out


def _link_count_wording(over: _Over, on: str) -> tuple[str, str]:
    """The label and question of a count of ``on`` rows through the link: contained in, or
    containing, the named row when the nouns say so, else linked to or having its rows."""
    noun, tok = over.noun, over.tok
    if over.pure_link:
        if _is_container(noun, on):
            return f"number of {plural(on)}", f"how many {plural(on)} are in {tok}"
        if _is_container(on, noun):
            return f"number of {plural(on)}", f"how many {plural(on)} contain {tok}"
        return f"number of {plural(on)}", f"how many {plural(on)} are linked to {tok}"
    if not over.verb and (_is_container(noun, on) or _is_container(on, noun)):
        # a member and what it is in, with facts of its own (an enrollment's grade): "how
        # many courses is student X in", "how many students are in course Y"
        if _is_container(on, noun):
            return f"number of {plural(on)}", f"how many {plural(on)} is {tok} in"
        return f"number of {plural(on)}", f"how many {plural(on)} are in {tok}"
    # the link's rows are things that happened: "how many warehouses have stock moves of
    # product X", never "… on the stock moves"
    return (
        f"number of {plural(on)} with {plural(over.entity)}",
        f"how many {plural(on)} have {over.rows} {tok}",
    )


def _row_count(over: _Over) -> list[_Aggregate]:
    """How many rows point at the named row; none for a link that only pairs its ends, or one
    keyed by its two ends (one row per pair: its count is the other end's, asked above)."""
    table = over.table
    keyed_by_ends = over.link and set(table.primary_key) == table.fk_columns
    if over.pure_link or keyed_by_ends:
        return []
    wh: str | None
    if over.self_ref:
        wh = f"how many {plural(over.counted)} does {over.tok} have"
    elif over.verb:
        wh = f"how many {plural(over.entity)} were {over.verb} {over.tok}"
    else:
        wh = None
    label = f"number of {plural(over.counted)}"
    return [_Aggregate(exp.Count(this=exp.Star()), "*", label, AnswerType.NUMBER, "count", wh)]


def _latest_date(over: _Over, d: ColumnInfo) -> _Aggregate:
    """The latest of a date of the rows; under a self-reference, a birth date is the youngest
    row's."""
    attr = attribute_label(d.name, d.kind)
    wh = None
    counted = over.counted
    if over.self_ref:
        if "birth" in words(d.name):
            label = f"{attr} of the youngest {counted}"
            wh = f"when was the youngest {counted} of {over.named} born"
        else:
            label = f"latest {attr} among the {plural(counted)}"
    else:
        # the date is the counted rows', not the named row's: "latest pet birth date of the
        # owner named X", never "latest birth date of the owner named X"
        if not over.link and over.entity.split()[-1] not in attr.split():
            attr = f"{over.entity} {attr}"
        label = f"latest {attr}"
    return _Aggregate(exp.Max(this=_col(d.name, over.table.name)), d.name, label, d.kind, "max", wh)


def _embedded(question: str) -> str:
    """ "how many direct reports does X have" → "how many direct reports X has" (the order of an
    indirect question); questions whose subject is the wh-phrase keep their order."""
    head, sep, rest = question.partition(" does ")
    if sep and rest.endswith(" have"):
        return f"{head} {rest[: -len(' have')]} has"
    head, sep, rest = question.partition(" is ")
    if sep and rest.endswith(" in") and not rest.startswith("in "):
        # "which course is student X in" → "which course student X is in"
        return f"{head} {rest[: -len(' in')]} is in"
    return question


#: Words of a numeric link column that add up over rows: a sum of them means something.
_ADDITIVE = frozenset({"quantity", "qty", "units", "amount", "count", "hours", "minutes"})


def _payload_templates(link: TableInfo, schema: SchemaInfo) -> list[SqlTemplate]:
    """A link's additive payload keyed by both ends when one end is reached through an unnamed
    row: "how many units of track X are on the invoices of customer Y" sums
    ``InvoiceLine.Quantity`` over the lines of track X on the invoices (unnamed) of customer Y.
    """
    out: list[SqlTemplate] = []
    payload = [
        c
        for c in link.descriptive()
        if c.kind is AnswerType.NUMBER and not c.flag and set(words(c.name)) & _ADDITIVE
    ]
    if not payload:
        return out
    entity = entity_noun(link.name)
    for fd, d_tbl, kd in _ends(link, schema):
        nd = _noun(fd, d_tbl, link)
        for fm in link.foreign_keys:
            mid = schema.table(fm.ref_table)
            if fm.column == fd.column or mid is None or mid.identifier() is not None:
                continue
            for f2, n_tbl, kn in _ends(mid, schema):
                nn = _noun(f2, n_tbl, mid)
                if nd is None or nn is None or n_tbl.name in (d_tbl.name, link.name):
                    continue
                taken = {link.name.lower()}
                a_d, a_m = _alias(nd, taken), _alias(entity_noun(mid.name), taken)
                a_n = _alias(nn, taken)
                steps = [
                    _Step(d_tbl.name, a_d, link.name, fd.column, fd.ref_column),
                    _Step(mid.name, a_m, link.name, fm.column, fm.ref_column),
                    _Step(n_tbl.name, a_n, a_m, f2.column, f2.ref_column),
                ]
                ptaken: set[str] = set()
                slots = assign_tokens(
                    [
                        *_named_slots(kd, d_tbl.name, a_d, nd, ptaken),
                        *_named_slots(kn, n_tbl.name, a_n, nn, ptaken),
                    ]
                )
                sd, sn = slots[: len(kd)], slots[len(kd) :]
                mids = plural(entity_noun(mid.name))
                verb = relation_verb(f2.column) or "of"
                terse = f"{nd} {_said(sd)} on the {mids} {verb} {nn} {_said(sn)}"
                full = (
                    f"{named(nd, kd[-1].name, _said(sd))} on the {mids} {verb} "
                    f"{named(nn, kn[-1].name, _said(sn))}"
                )
                for q in payload:
                    label = attribute_label(q.name, q.kind)
                    unit = "units" if set(words(q.name)) & {"quantity", "qty", "units"} else label
                    wh = f"how many {unit} of {terse} are there"
                    if unit == "units":
                        wh = (
                            f"how many units of {nd} {_said(sd)} are on the {mids} {verb} "
                            f"{nn} {_said(sn)}"
                        )
                    out.append(
                        SqlTemplate(
                            sql=_query(
                                [exp.Sum(this=_col(q.name, link.name))],
                                link.name,
                                steps,
                                _conds(slots),
                                schema.dialect,
                            ),
                            slots=slots,
                            selected=(Selected(link.name, q.name, link.name, q.kind, "sum"),),
                            tables=_dedup([link.name, d_tbl.name, mid.name, n_tbl.name]),
                            origin="rule",
                            kind="link",
                            answer_label="number of units" if unit == "units" else f"total {label}",
                            entity=entity,
                            on_multiple="drop",
                            identifier_slots=tuple(sl.param for sl in slots),
                            refs=(terse, full),
                            wh=(wh, wh),
                        )
                    )
    return out
