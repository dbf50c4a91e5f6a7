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

from groundwatch.core.generation.naming import (
    HIERARCHY_ROLES,
    ROLE_PREPOSITIONS,
    attribute_label,
    entity_noun,
    humanize,
    param_name,
    plural,
    relation_verb,
    role_of_fk,
    self_role,
    singular,
    words,
)
from groundwatch.core.generation.schema import ColumnInfo, ForeignKeyInfo, SchemaInfo, TableInfo
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
        selected=(Selected(table.name, attr.name, table.name, attr.kind, flag=attr.flag),),
        tables=(table.name,),
        origin="rule",
        kind="single" if len(keys) == 1 else "pair",
        answer_label=attribute_label(attr.name, attr.kind),
        entity=entity_noun(table.name),
        on_multiple="drop",
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
            else (f"{attribute_label(attr.name, attr.kind)} of the {join.role}")
        )
        entity = entity_noun(base.name)
    else:
        label = entity_noun(other.name)
        entity = join.role
    slot = Slot(param_name(key.name, set()), base.name, key.name, base_alias)
    return SqlTemplate(
        sql=render(tree, schema.dialect),
        slots=assign_tokens([slot]),
        selected=(Selected(other.name, attr.name, role_alias, attr.kind, flag=attr.flag),),
        tables=(base.name, other.name),
        origin="rule",
        kind="join",
        answer_label=label,
        entity=entity,
        join=join,
        on_multiple="drop",
        identifier_slots=(slot.param,),
    )


def rule_templates(schema: SchemaInfo, config: RuleConfig | None = None) -> list[SqlTemplate]:
    """All SQL templates the schema and its data support, in a stable order."""
    cfg = config or RuleConfig()
    if any(t.key_ratio != cfg.key_ratio for t in schema.tables):
        schema = replace(
            schema, tables=tuple(replace(t, key_ratio=cfg.key_ratio) for t in schema.tables)
        )
    out: list[SqlTemplate] = []
    for table in schema.tables:
        descriptive = table.descriptive()
        keys = [c for c in descriptive if table.is_key_like(c, cfg.key_ratio)]
        for key in keys:
            for attr in descriptive:
                if attr.name == key.name or not _mostly_determines(table, key, attr):
                    continue
                out.append(single_template(table, [key], attr, schema))
        if cfg.pairs:
            out.extend(_pair_templates(table, descriptive, keys, cfg, schema))
        if cfg.joins:
            out.extend(_join_templates(table, keys, cfg, schema))
        if cfg.joins and cfg.max_hops >= 2:
            out.extend(_chain_templates(table, keys, cfg, schema))
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
        role = _noun(fk, other, table)
        if role is None:  # a self-reference whose key names no role: no wording is right
            continue
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


def named(noun: str, column: str, token: str) -> str:
    """``the company named 'X'``, ``the album titled 'X'``, ``the product with code 'X'``."""
    last = (words(column) or [""])[-1]
    if last == "title":
        return f"the {noun} titled {token}"
    if last in ("code", "label", "handle", "username", "designation"):
        return f"the {noun} with {humanize(column)} {token}"
    return f"the {noun} named {token}"


def _token(slot: Slot) -> str:
    return f"'{slot.grammar_token()}'"


def _dedup(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _chain_templates(
    table: TableInfo, keys: list[ColumnInfo], cfg: RuleConfig, schema: SchemaInfo
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
            target = end.identifier() if end is not None else None
            if end is None or target is None:
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
            for key in keys:
                p = param_name(key.name, set())
                slot = Slot(p, table.name, key.name, table.name)
                out.append(
                    SqlTemplate(
                        sql=_query(
                            [_col(target.name, a2)],
                            table.name,
                            steps,
                            [(table.name, key.name, p)],
                            schema.dialect,
                        ),
                        slots=assign_tokens([slot]),
                        selected=(Selected(end.name, target.name, a2, target.kind),),
                        tables=_dedup([table.name, mid.name, end.name]),
                        origin="rule",
                        kind="chain",
                        answer_label=f"{role2} of the {role1}",
                        entity=entity_noun(table.name),
                        on_multiple="drop",
                        identifier_slots=(p,),
                    )
                )
    return out


_End = tuple[ForeignKeyInfo, TableInfo, ColumnInfo]


def _ends(table: TableInfo, schema: SchemaInfo) -> list[_End]:
    """The foreign keys of ``table`` whose target has a naming column, with that column."""
    out = []
    for fk in table.foreign_keys:
        other = schema.table(fk.ref_table)
        ident_col = other.identifier() if other is not None else None
        if other is not None and ident_col is not None:
            out.append((fk, other, ident_col))
    return out


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


def _link_templates(link: TableInfo, schema: SchemaInfo, cfg: RuleConfig) -> list[SqlTemplate]:
    """Through a many-to-many link table: its own attributes asked with one placeholder per end
    ("year working of the person named X and the company named Y", as GRAMMAR's authors asked
    of ``employment``), and each end asked from the other, worded as membership where one end
    holds the other ("which playlist contains track X", "which track is in playlist X")."""
    out: list[SqlTemplate] = []
    entity = entity_noun(link.name)
    event = bool(link.descriptive())  # orders, invoice lines: rows with facts of their own
    for (fa, a_tbl, ka), (fb, b_tbl, kb) in combinations(_ends(link, schema), 2):
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
        pa = param_name(f"{na} {ka.name}", ptaken)
        pb = param_name(f"{nb} {kb.name}", ptaken)
        slots = assign_tokens(
            [Slot(pa, a_tbl.name, ka.name, aa), Slot(pb, b_tbl.name, kb.name, ab)]
        )
        sa, sb = slots
        both = (
            f"{na} {_token(sa)} and {nb} {_token(sb)}",
            f"{named(na, ka.name, _token(sa))} and {named(nb, kb.name, _token(sb))}",
        )
        tables = _dedup([link.name, a_tbl.name, b_tbl.name])
        for attr in link.descriptive():
            out.append(
                SqlTemplate(
                    sql=_query(
                        [_col(attr.name, link.name)],
                        link.name,
                        steps,
                        [(aa, ka.name, pa), (ab, kb.name, pb)],
                        schema.dialect,
                    ),
                    slots=slots,
                    selected=(
                        Selected(link.name, attr.name, link.name, attr.kind, flag=attr.flag),
                    ),
                    tables=tables,
                    origin="rule",
                    kind="link",
                    answer_label=attribute_label(attr.name, attr.kind),
                    entity=entity,
                    on_multiple="drop",
                    identifier_slots=(pa, pb),
                    refs=both,
                )
            )
        for (x_alias, x_tbl, kx, nx, fx), (y_alias, y_tbl, ky, ny, _) in permutations(
            [(aa, a_tbl, ka, na, fa), (ab, b_tbl, kb, nb, fb)]
        ):
            p = param_name(f"{nx} {kx.name}", set())
            slot = assign_tokens([Slot(p, x_tbl.name, kx.name, x_alias)])
            tok = f"{nx} {_token(slot[0])}"
            wh = _membership(ny, nx, tok, entity, event, relation_verb(fx.column))
            out.append(
                SqlTemplate(
                    sql=_query(
                        [_col(ky.name, y_alias)],
                        link.name,
                        steps,
                        [(x_alias, kx.name, p)],
                        schema.dialect,
                    ),
                    slots=slot,
                    selected=(Selected(y_tbl.name, ky.name, y_alias, ky.kind),),
                    tables=tables,
                    origin="rule",
                    kind="link",
                    answer_label=ny,
                    entity=nx,
                    on_multiple="drop",
                    identifier_slots=(p,),
                    refs=(tok, named(nx, kx.name, _token(slot[0]))),
                    wh=(wh, wh),
                )
            )
    return out


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
        p = param_name(f"{noun} {kp.name}", ptaken)
        pslot = Slot(p, parent.name, kp.name, ap)
        tables = _dedup([table.name, parent.name])
        of_parent = named(noun, kp.name, f"'{pslot.grammar_token()}'")
        for attr in attrs:
            slots = assign_tokens([pslot])
            out.append(
                SqlTemplate(
                    sql=_query(
                        [_col(attr.name, table.name)],
                        table.name,
                        steps,
                        [(ap, kp.name, p)],
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
                    identifier_slots=(p,),
                    refs=(
                        _terse_child(noun, _token(slots[0]), entity, attr),
                        f"the {entity} of {of_parent}",
                    ),
                )
            )
        for second in seconds:
            p2 = param_name(second.name, set(ptaken))
            slots = assign_tokens([pslot, Slot(p2, table.name, second.name, table.name)])
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
                            [(ap, kp.name, p), (table.name, second.name, p2)],
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
                        identifier_slots=(p,),
                        refs=(
                            f"{_terse_child(noun, _token(slots[0]), entity, attr)}, "
                            f"{label2} {_token(slots[1])}",
                            f"the {entity} of {of_parent} with {label2} {_token(slots[1])}",
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
    link = is_link_table(table)
    entity = entity_noun(table.name)
    pure_link = link and not table.descriptive()
    dates = [c for c in table.descriptive() if c.kind is AnswerType.DATE]
    for fk, parent, kp in _ends(table, schema):
        self_ref = parent.name == table.name
        noun = _noun(fk, parent, table)
        if noun is None:
            continue
        counted = entity
        if self_ref:
            if noun in HIERARCHY_ROLES:
                counted = "direct report"
            elif noun.startswith("parent "):
                counted = f"child {entity}"
            else:
                continue
            noun = entity  # the named row is an employee, not "the manager 'X'"
        taken = {table.name.lower()}
        ap = _alias(_noun(fk, parent, table) or noun, taken)
        steps = [_Step(parent.name, ap, table.name, fk.column, fk.ref_column)]
        p = param_name(f"{noun} {kp.name}", set())
        slots = assign_tokens([Slot(p, parent.name, kp.name, ap)])
        tok = f"{noun} {_token(slots[0])}"
        refs = (tok, named(noun, kp.name, _token(slots[0])))
        verb = relation_verb(fk.column)
        rows = f"{plural(entity)} {verb}" if verb else f"{plural(entity)} of"
        items: list[tuple[exp.Expression, str, str, AnswerType | None, str, str | None]] = []
        wh: str | None
        if link:
            for other in table.foreign_keys:
                target = schema.table(other.ref_table)
                if other.column == fk.column or target is None:
                    continue
                on = _noun(other, target, table)
                if on is None:
                    continue
                distinct = exp.Count(
                    this=exp.Distinct(expressions=[_col(other.column, table.name)])
                )
                if pure_link:
                    label = f"number of {plural(on)}"
                    if _is_container(noun, on):
                        wh = f"how many {plural(on)} are in {tok}"
                    elif _is_container(on, noun):
                        wh = f"how many {plural(on)} contain {tok}"
                    else:
                        wh = f"how many {plural(on)} are linked to {tok}"
                else:
                    label = f"number of different {plural(on)} on the {plural(entity)}"
                    wh = f"how many different {plural(on)} are on the {rows} {tok}"
                items.append((distinct, other.column, label, AnswerType.NUMBER, "count", wh))
        if not pure_link:
            label = f"number of {plural(counted)}"
            if self_ref:
                wh = f"how many {plural(counted)} does {tok} have"
            elif verb:
                wh = f"how many {plural(entity)} were {verb} {tok}"
            else:
                wh = None
            items.append((exp.Count(this=exp.Star()), "*", label, AnswerType.NUMBER, "count", wh))
        for d in dates:
            attr = attribute_label(d.name, d.kind)
            wh = None
            if self_ref:
                if "birth" in words(d.name):
                    label = f"{attr} of the youngest {counted}"
                    wh = f"when was the youngest {counted} of {refs[1]} born"
                else:
                    label = f"latest {attr} among the {plural(counted)}"
            else:
                # the date is the counted rows', not the named row's: "latest pet birth date of
                # the owner named X", never "latest birth date of the owner named X"
                if not link and entity.split()[-1] not in attr.split():
                    attr = f"{entity} {attr}"
                label = f"latest {attr}"
            items.append((exp.Max(this=_col(d.name, table.name)), d.name, label, d.kind, "max", wh))
        for expr, col, label, kind, agg, wh in items:
            out.append(
                SqlTemplate(
                    sql=_query([expr], table.name, steps, [(ap, kp.name, p)], schema.dialect),
                    slots=slots,
                    selected=(Selected(table.name, col, table.name, kind, agg),),
                    tables=_dedup([table.name, parent.name]),
                    origin="rule",
                    kind="aggregate",
                    answer_label=label,
                    entity=noun,
                    on_multiple="drop",
                    identifier_slots=(p,),
                    refs=refs,
                    wh=(wh, _embedded(wh)) if wh else None,
                )
            )
    return out


def _embedded(question: str) -> str:
    """ "how many direct reports does X have" → "how many direct reports X has" (the order of an
    indirect question); questions whose subject is the wh-phrase keep their order."""
    head, sep, rest = question.partition(" does ")
    if sep and rest.endswith(" have"):
        return f"{head} {rest[: -len(' have')]} has"
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
                pd = param_name(f"{nd} {kd.name}", ptaken)
                pn = param_name(f"{nn} {kn.name}", ptaken)
                slots = assign_tokens(
                    [Slot(pd, d_tbl.name, kd.name, a_d), Slot(pn, n_tbl.name, kn.name, a_n)]
                )
                sd, sn = slots
                mids = plural(entity_noun(mid.name))
                verb = relation_verb(f2.column) or "of"
                terse = f"{nd} {_token(sd)} on the {mids} {verb} {nn} {_token(sn)}"
                full = (
                    f"{named(nd, kd.name, _token(sd))} on the {mids} {verb} "
                    f"{named(nn, kn.name, _token(sn))}"
                )
                for q in payload:
                    label = attribute_label(q.name, q.kind)
                    unit = "units" if set(words(q.name)) & {"quantity", "qty", "units"} else label
                    wh = f"how many {unit} of {terse} are there"
                    if unit == "units":
                        wh = (
                            f"how many units of {nd} {_token(sd)} are on the {mids} {verb} "
                            f"{nn} {_token(sn)}"
                        )
                    out.append(
                        SqlTemplate(
                            sql=_query(
                                [exp.Sum(this=_col(q.name, link.name))],
                                link.name,
                                steps,
                                [(a_d, kd.name, pd), (a_n, kn.name, pn)],
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
                            identifier_slots=(pd, pn),
                            refs=(terse, full),
                            wh=(wh, wh),
                        )
                    )
    return out
