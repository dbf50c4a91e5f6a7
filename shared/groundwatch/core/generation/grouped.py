"""One grouped query per template: every fill and its answers in a single pass.

Algorithm 1 of the paper runs one SELECT per combination of placeholder values. For a template whose
placeholders are AND-ed equalities with columns, the same answers come from one query: drop those
equalities, project the condition columns next to the answer, keep the other conditions, and read
the result ordered by the condition values. Each run of rows with equal condition values is one
fill; its distinct answer tuples are the answers that fill's query would have returned. The rows
are streamed in order, so memory stays flat however many fills there are.

Combinations of DISTINCT values that never occur together simply do not appear: they are the
"no answer" fills of the paper, counted from the DISTINCT counts instead of being queried. A
count is the exception: the paper's bound query answers 0 for a value with no rows ("how many
visits has patient X had" of a patient with none), so a one-placeholder count template also
asks for its placeholder column's values that the count has no row for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from sqlglot import exp

from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.templates import SqlTemplate, ident, parse_one, render


@dataclass(frozen=True, slots=True)
class GroupedPlan:
    """How to get all answers of one template.

    ``sql`` is the grouped query, or None when the template's placeholders are not plain AND-ed
    column equalities (then the caller falls back to one bound query per combination). Its rows
    are ``params..., answers..., n`` with one row per fill: ``n`` distinct answer tuples were
    found, the answer columns hold one of them (the smallest). ``multi_sql`` returns a row iff
    some fill has several answers (for templates whose policy is to reject, not drop).
    ``list_sql`` returns every distinct (fill, answer) pair ordered by fill, for keeping the
    answers of a fill with several as a list; None for aggregates (one answer per fill).
    """

    template: SqlTemplate
    sql: str | None
    distinct_sql: dict[str, str]
    values_sql: dict[str, str]
    multi_sql: str | None = None
    list_sql: str | None = None
    #: a one-placeholder count: the placeholder values it has no row for (their count is 0),
    #: each with the rows it names
    zero_sql: str | None = None


@dataclass(slots=True)
class Fill:
    """One combination of placeholder values and what the filled query returned."""

    params: dict[str, Any]
    answer: tuple[Any, ...]
    n_answers: int = 1
    answers: list[tuple[Any, ...]] | None = None


def plan(template: SqlTemplate, schema: SchemaInfo) -> GroupedPlan:
    """Build the grouped query (and the per-slot DISTINCT queries) for a validated template."""
    distinct_sql: dict[str, str] = {}
    values_sql: dict[str, str] = {}
    for s in template.slots:
        col = exp.Column(this=ident(s.column))
        tbl = exp.Table(this=ident(s.table))
        distinct_sql[s.param] = render(
            exp.Select(
                expressions=[exp.Count(this=exp.Distinct(expressions=[col.copy()]))],
                from_=exp.From(this=tbl.copy()),
            ),
            schema.dialect,
        )
        values_sql[s.param] = render(
            exp.Select(
                expressions=[col.copy()],
                distinct=exp.Distinct(),
                from_=exp.From(this=tbl.copy()),
                where=exp.Where(this=exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))),
                order=exp.Order(expressions=[exp.Ordered(this=col.copy())]),
            ),
            schema.dialect,
        )
    tree = parse_one(template.sql, schema.dialect)
    assert isinstance(tree, exp.Select)
    grouped = _rewrite(tree, template, schema)
    if grouped is None:
        return GroupedPlan(template, None, distinct_sql, values_sql)
    sql, multi, listing, zero = grouped
    return GroupedPlan(template, sql, distinct_sql, values_sql, multi, listing, zero)


def _is_aggregate(e: exp.Expression) -> bool:
    return isinstance(e.this if isinstance(e, exp.Alias) else e, exp.AggFunc)


def _rewrite(
    tree: exp.Select, template: SqlTemplate, schema: SchemaInfo
) -> tuple[str, str, str | None, str | None] | None:
    """``SELECT a FROM t WHERE k = :k AND c`` →
    ``SELECT p0, MIN(a0), COUNT(*) FROM (SELECT DISTINCT k AS p0, a AS a0 FROM t WHERE c AND k IS
    NOT NULL) GROUP BY p0 ORDER BY p0``: every fill, its answer and how many answers it has."""
    if tree.args.get("limit") or tree.args.get("group") or tree.args.get("having"):
        return None
    where = tree.args.get("where")
    if where is None:
        return None
    conds = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    by_param: dict[str, exp.Expression] = {}
    rest: list[exp.Expression] = []
    for c in conds:
        assert isinstance(c, exp.Expression)
        inner = c.unnest() if isinstance(c, exp.Paren) else c
        ph = None
        col = None
        if isinstance(inner, exp.EQ):
            if isinstance(inner.right, exp.Placeholder) and isinstance(inner.left, exp.Column):
                ph, col = inner.right, inner.left
            elif isinstance(inner.left, exp.Placeholder) and isinstance(inner.right, exp.Column):
                ph, col = inner.left, inner.right
        if ph is not None and col is not None:
            by_param[ph.name] = col
        else:
            if any(True for _ in c.find_all(exp.Placeholder)):
                return None
            rest.append(c)
    if set(by_param) != set(template.params):
        return None
    n_p, n_a = len(template.params), len(tree.expressions)
    projections: list[exp.Expression] = []
    for i, p in enumerate(template.params):
        projections.append(exp.Alias(this=by_param[p].copy(), alias=ident(f"gw_p{i}")))
    for i, e in enumerate(tree.expressions):
        target = e.this if isinstance(e, exp.Alias) else e
        projections.append(exp.Alias(this=target.copy(), alias=ident(f"gw_a{i}")))
    not_null: list[exp.Expression] = [
        exp.Not(this=exp.Is(this=by_param[p].copy(), expression=exp.Null()))
        for p in template.params
    ]
    all_conds = [c.copy() for c in rest] + not_null
    cond = all_conds[0]
    for c in all_conds[1:]:
        cond = exp.And(this=cond, expression=c)
    keys = [exp.column(f"gw_p{i}") for i in range(n_p)]
    never = exp.Select(expressions=[exp.Literal.number(1)]).where(
        exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(0))
    )
    if any(_is_aggregate(e) for e in tree.expressions):
        # ``SELECT COUNT(*) … WHERE k = :k`` → ``SELECT k, COUNT(*), 1 … GROUP BY k``: one row,
        # hence one answer, per fill that has rows at all
        # ``n`` is how many rows the placeholder values named: a name two rows share (two
        # playlists called "Music") pools both into one count, so the fill is dropped, not kept
        agg = tree.copy()
        agg.set("expressions", [*projections, exp.alias_(_rows_named(template, schema), "gw_n")])
        agg.set("where", exp.Where(this=cond))
        agg.set("group", exp.Group(expressions=[by_param[p].copy() for p in template.params]))
        agg.set("order", exp.Order(expressions=[exp.Ordered(this=k.copy()) for k in keys]))
        agg.set("distinct", None)
        zero = _zero_sql(tree, template, schema, by_param, cond)
        return render(agg, schema.dialect), render(never, schema.dialect), None, zero
    pairs = tree.copy()
    pairs.set("expressions", projections)
    pairs.set("where", exp.Where(this=cond))
    pairs.set("distinct", exp.Distinct())
    pairs.set("order", None)
    listing = pairs.copy()
    listing.set(
        "order",
        exp.Order(
            expressions=[
                exp.Ordered(this=exp.column(f"gw_{x}{i}"))
                for x, n in (("p", n_p), ("a", n_a))
                for i in range(n)
            ]
        ),
    )
    list_sql = render(listing, schema.dialect)
    if _one_row_per_fill(tree, by_param, schema):
        # A unique condition column and joins that only go to a unique column: each fill matches
        # at most one row, so one plain scan is the answer list (no sort, no grouping needed).
        scan = pairs.copy()
        scan.set("distinct", None)
        scan.set(
            "expressions",
            [*projections, exp.Alias(this=exp.Literal.number(1), alias=ident("gw_n"))],
        )
        return render(scan, schema.dialect), render(never, schema.dialect), list_sql, None
    grouped = exp.Select(
        expressions=[
            *[k.copy() for k in keys],
            *[
                exp.Alias(this=exp.Min(this=exp.column(f"gw_a{i}")), alias=ident(f"gw_a{i}"))
                for i in range(n_a)
            ],
            exp.Alias(this=exp.Count(this=exp.Star()), alias=ident("gw_n")),
        ],
        from_=exp.From(this=exp.Subquery(this=pairs, alias=exp.TableAlias(this=ident("gw_d")))),
        group=exp.Group(expressions=[k.copy() for k in keys]),
        order=exp.Order(expressions=[exp.Ordered(this=k.copy(), nulls_first=True) for k in keys]),
    )
    multi = exp.Select(
        expressions=[exp.Literal.number(1)],
        from_=exp.From(
            this=exp.Subquery(this=pairs.copy(), alias=exp.TableAlias(this=ident("gw_d")))
        ),
        group=exp.Group(expressions=[k.copy() for k in keys]),
        having=exp.Having(
            this=exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1))
        ),
        limit=exp.Limit(expression=exp.Literal.number(1)),
    )
    return render(grouped, schema.dialect), render(multi, schema.dialect), list_sql, None


def _zero_sql(
    tree: exp.Select,
    template: SqlTemplate,
    schema: SchemaInfo,
    by_param: dict[str, exp.Expression],
    cond: exp.Expression,
) -> str | None:
    """For a one-placeholder template that only counts: ``SELECT z.k, n FROM t AS z WHERE z.k
    IS NOT NULL AND NOT EXISTS (a row the template counts for z.k) GROUP BY z.k``: every value
    of the placeholder's column the count has no row for (its bound query answers 0), with the
    rows it names (``n``: a name two rows share is dropped, as a counted one is). An anti-join
    every backend plans as one (``NOT IN`` is quadratic on PostgreSQL past ``work_mem``), and
    streamed: no set of the counted values is held here."""
    if len(template.slots) != 1 or not all(
        isinstance(e.this if isinstance(e, exp.Alias) else e, exp.Count) for e in tree.expressions
    ):
        return None
    (s,) = template.slots
    outer = exp.Column(this=ident(s.column), table=ident("gw_z"))
    counted = tree.copy()
    counted.set("expressions", [exp.Literal.number(1)])
    counted.set(
        "where",
        exp.Where(
            this=exp.And(
                this=cond.copy(),
                expression=exp.EQ(this=by_param[s.param].copy(), expression=outer.copy()),
            )
        ),
    )
    counted.set("distinct", None)
    counted.set("order", None)
    info = schema.table(s.table)
    column = info.column(s.column) if info is not None else None
    shared = column is not None and not column.unique
    rows: exp.Expression = exp.Count(this=exp.Star()) if shared else exp.Literal.number(1)
    zero = exp.Select(
        expressions=[outer.copy(), exp.alias_(rows, "gw_n")],
        from_=exp.From(
            this=exp.Table(this=ident(s.table), alias=exp.TableAlias(this=ident("gw_z")))
        ),
        where=exp.Where(
            this=exp.And(
                this=exp.Not(this=exp.Is(this=outer.copy(), expression=exp.Null())),
                expression=exp.Not(this=exp.Exists(this=counted)),
            )
        ),
        group=exp.Group(expressions=[outer.copy()]),
    )
    return render(zero, schema.dialect)


def _rows_named(template: SqlTemplate, schema: SchemaInfo) -> exp.Expression:
    """The product of ``COUNT(DISTINCT alias.pk)`` over the slots whose column is not declared
    unique: 1 exactly when every placeholder value names one row; 1 when nothing can be shared."""
    factors: list[exp.Expression] = []
    for s in template.slots:
        info = schema.table(s.table)
        col = info.column(s.column) if info is not None else None
        if info is None or col is None or col.unique or len(info.primary_key) != 1:
            continue
        key = exp.Column(this=ident(info.primary_key[0]), table=ident(s.alias))
        factors.append(exp.Count(this=exp.Distinct(expressions=[key])))
    if not factors:
        return exp.Literal.number(1)
    out = factors[0]
    for f in factors[1:]:
        out = exp.Mul(this=out, expression=f)
    return out


def _one_row_per_fill(
    tree: exp.Select, by_param: dict[str, exp.Expression], schema: SchemaInfo
) -> bool:
    """True if a fill can match at most one row: a single condition on a declared-unique column of
    the FROM table, and every join lands on a unique column of the joined table (many-to-one)."""
    if len(by_param) != 1:
        return False
    aliases = {t.alias_or_name: schema.table(t.name) for t in tree.find_all(exp.Table)}

    def unique(col: exp.Expression) -> bool:
        if not isinstance(col, exp.Column):
            return False
        info = (
            aliases.get(col.table)
            if col.table
            else (next(iter(aliases.values())) if len(aliases) == 1 else None)
        )
        c = info.column(col.name) if info else None
        return bool(c is not None and c.unique)

    cond = next(iter(by_param.values()))
    base = tree.args.get("from") or tree.args.get("from_")
    base_alias = (
        base.this.alias_or_name if base is not None and isinstance(base.this, exp.Table) else None
    )
    # the condition must single out a row of the FROM table: a unique column of a joined table
    # (the customer's name) still matches every row of the FROM table that points at it
    if not isinstance(cond, exp.Column) or (cond.table and cond.table != base_alias):
        return False
    if not unique(cond):
        return False
    for join in tree.args.get("joins") or []:
        on = join.args.get("on")
        alias = join.this.alias_or_name if isinstance(join.this, exp.Table) else None
        if (
            not isinstance(on, exp.EQ)
            or alias is None
            or join.args.get("side")
            or join.args.get("kind")
        ):
            return False
        sides = [c for c in (on.left, on.right) if isinstance(c, exp.Column) and c.table == alias]
        if len(sides) != 1 or not unique(sides[0]):
            return False
    return True


def list_rows(rows: Iterable[Sequence[Any]], grouped: GroupedPlan) -> Iterator[Fill]:
    """``list_sql`` rows (ordered by fill) → one fill per run of equal placeholder values, with
    every distinct answer of that fill."""
    params = grouped.template.params
    n_p = len(params)
    for key, run in groupby(rows, key=lambda r: tuple(r[:n_p])):
        answers = [tuple(r[n_p:]) for r in run]
        yield Fill(dict(zip(params, key, strict=True)), answers[0], len(answers), answers)


def group_rows(rows: Iterable[Sequence[Any]], grouped: GroupedPlan) -> Iterator[Fill]:
    """Grouped-query rows → fills (one row per fill; no grouping left to do in Python)."""
    params = grouped.template.params
    n_p = len(params)
    if n_p == 1:
        (name,) = params
        for r in rows:
            yield Fill({name: r[0]}, tuple(r[1:-1]), r[-1])
        return
    for r in rows:
        yield Fill(dict(zip(params, r[:n_p], strict=True)), tuple(r[n_p:-1]), r[-1])


def zero_rows(rows: Iterable[Sequence[Any]], grouped: GroupedPlan) -> Iterator[Fill]:
    """``zero_sql`` rows → the fills whose count is 0: what the bound query of each returns."""
    (param,) = grouped.template.params
    zero = (0,) * len(grouped.template.selected)
    for value, n in rows:
        yield Fill({param: value}, zero, int(n))


@dataclass(frozen=True, slots=True)
class FactQuery:
    """Which rows a filled query reads, and which of their columns it touches.

    ``sql`` selects the primary key of every table instance (in ``aliases`` order) under the
    template's own FROM/JOIN/WHERE; ``columns[i]`` are the non-key columns the template references
    on ``aliases[i]``. A (table, column, key) triple is one fact of the answer: what a document must
    state for the question to be answerable.
    """

    sql: str
    aliases: tuple[tuple[str, str, str], ...]
    columns: tuple[frozenset[str], ...]


def fact_query(sql: str, schema: SchemaInfo) -> FactQuery | None:
    """The provenance query of a template (None if a table lacks a single-column primary key)."""
    tree = parse_one(sql, schema.dialect)
    if not isinstance(tree, exp.Select):
        return None
    scope: dict[str, str] = {}
    order: list[tuple[str, str, str]] = []
    for tbl in tree.find_all(exp.Table):
        info = schema.table(tbl.name)
        if info is None or len(info.primary_key) != 1:
            return None
        scope[tbl.alias_or_name] = info.name
        order.append((tbl.alias_or_name, info.name, info.primary_key[0]))
    cols: dict[str, set[str]] = {a: set() for a, _, _ in order}
    for col in tree.find_all(exp.Column):
        alias = col.table
        if not alias:
            owners = [a for a, t, _ in order if (ti := schema.table(t)) and ti.column(col.name)]
            if len(owners) != 1:
                return None
            alias = owners[0]
        if alias not in scope:
            return None
        info = schema.table(scope[alias])
        c = info.column(col.name) if info else None
        if c is not None and not c.primary_key:
            cols[alias].add(c.name)
    out = tree.copy()
    out.set(
        "expressions",
        [
            exp.Alias(this=exp.Column(this=ident(pk), table=ident(a)), alias=ident(f"gw_r{i}"))
            for i, (a, _, pk) in enumerate(order)
        ],
    )
    out.set("distinct", exp.Distinct())
    out.set("order", None)
    out.set("limit", None)
    return FactQuery(
        render(out, schema.dialect), tuple(order), tuple(frozenset(cols[a]) for a, _, _ in order)
    )
