"""Schema introspection with SQLAlchemy reflection, plus the data profile the rule generator needs.

Reflection gives tables, columns, types, primary and foreign keys. The profile adds, per table, the
row count and per-column distinct/non-null counts (one aggregate query per table), the functional
dependencies K → A observed in the rows (one aggregate query per candidate K), and for pairs of
categorical columns how many value pairs single out one row name. All queries are aggregates that
return one row, built with SQLAlchemy Core so quoting is the dialect's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import combinations
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    Table,
    and_,
    case,
    distinct,
    func,
    inspect,
    literal,
    select,
)
from sqlalchemy import types as sqltypes

from groundwatch.adapters.lexicon import wordnet
from groundwatch.core.generation.abbreviations import schema_abbreviations
from groundwatch.core.generation.lexicon import Thesaurus, schema_context
from groundwatch.core.generation.naming import entity_noun, words
from groundwatch.core.generation.schema import ColumnInfo, ForeignKeyInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.steering import Steering, steer, table_allowed
from groundwatch.core.model import AnswerType

_MAX_PROFILED_COLUMNS = 24


def _english_word() -> Callable[[str], bool] | None:
    """Whether a word is one of English by WordNet (a noun, verb or adjective of its own: ``post``,
    ``pat``), which no schema's abbreviation is read as; None without WordNet."""
    wn = wordnet()
    if wn is None:
        return None
    return lambda w: any(wn.senses(w, pos) for pos in ("n", "v", "a"))


def _things(schema: SchemaInfo) -> frozenset[str]:
    """The tables whose noun is a physical thing no row is in, by WordNet in the sense the
    schema's names tell (:meth:`Thesaurus.is_thing`); none without WordNet."""
    wn = wordnet()
    if wn is None:
        return frozenset()
    names = [n for t in schema.tables for n in (t.name, *(c.name for c in t.columns))]
    thesaurus = Thesaurus(wn, schema_context(names))
    return frozenset(t.name for t in schema.tables if thesaurus.is_thing(entity_noun(t.name)))


_MAX_PAIR_COLUMNS = 10


def answer_kind(type_: Any) -> AnswerType | None:
    """The answer kind of a reflected column type (None = not comparable as an answer)."""
    if isinstance(type_, sqltypes.Date | sqltypes.DateTime):
        return AnswerType.DATE
    if isinstance(type_, sqltypes.Boolean):
        return AnswerType.TEXT
    if isinstance(type_, sqltypes.Integer | sqltypes.Numeric | sqltypes.Float):
        return AnswerType.NUMBER
    if isinstance(type_, sqltypes.String | sqltypes.Enum):
        return AnswerType.TEXT
    # SQLite accepts any declared type name; go by affinity words.
    name = str(getattr(type_, "__visit_name__", "")) + " " + _type_text(type_)
    name = name.upper()
    if "DATE" in name or "TIME" in name:
        return AnswerType.DATE
    if any(w in name for w in ("CHAR", "TEXT", "CLOB", "STRING")):
        return AnswerType.TEXT
    if any(w in name for w in ("INT", "REAL", "NUM", "DEC", "FLOA", "DOUB")):
        return AnswerType.NUMBER
    return None


def _type_text(type_: Any) -> str:
    try:
        return str(type_)
    except Exception:
        return type(type_).__name__


def introspect(
    source: Engine | Connection,
    *,
    tables: Sequence[str] | None = None,
    profile: bool = True,
    steering: Steering | None = None,
    key_ratio: float = 0.9,
) -> SchemaInfo:
    """Reflect the schema (optionally only ``tables``), apply ``steering``, profile the rest.

    Steering is applied before profiling, so an excluded table or column is never read; only with
    ``steering.pii`` are a few values of each text column sampled, to tell personal data by value.
    """
    if isinstance(source, Engine):
        with source.connect() as conn:
            return introspect(
                conn,
                tables=tables,
                profile=profile,
                steering=steering,
                key_ratio=key_ratio,
            )
    conn = source
    steer_by = steering or Steering()
    insp = inspect(conn)
    names = [n for n in insp.get_table_names() if not n.startswith("sqlite_")]
    if tables is not None:
        wanted = {t.lower() for t in tables}
        names = [n for n in names if n.lower() in wanted]
    md = MetaData()
    infos: list[TableInfo] = []
    handles: dict[str, Table] = {}
    for name in sorted(names):
        if not table_allowed(name, steer_by):
            continue
        pk = tuple(insp.get_pk_constraint(name).get("constrained_columns") or ())
        fks = tuple(
            ForeignKeyInfo(
                fk["constrained_columns"][0], fk["referred_table"], fk["referred_columns"][0]
            )
            for fk in insp.get_foreign_keys(name)
            if len(fk["constrained_columns"]) == 1 and fk.get("referred_columns")
        )
        reflected = insp.get_columns(name)
        unique = {
            u["column_names"][0]
            for u in insp.get_unique_constraints(name)
            if len(u["column_names"]) == 1
        }
        unique |= {
            ix["column_names"][0]
            for ix in insp.get_indexes(name)
            if ix.get("unique") and len(ix["column_names"]) == 1 and ix["column_names"][0]
        }
        if len(pk) == 1:
            unique.add(pk[0])
        table = Table(name, md, *[Column(c["name"], c["type"]) for c in reflected])
        handles[name] = table
        columns = [
            ColumnInfo(
                name=c["name"],
                kind=answer_kind(c["type"]),
                sql_type=_type_text(c["type"]),
                nullable=bool(c.get("nullable", True)),
                primary_key=c["name"] in pk,
                unique=c["name"] in unique,
            )
            for c in reflected
        ]
        if steer_by.pii:
            columns = [_with_samples(conn, table, c) for c in columns]
        infos.append(TableInfo(name, tuple(columns), pk, fks, key_ratio=key_ratio))
    schema = steer(SchemaInfo(tuple(infos), dialect=_dialect(conn)), steer_by)
    schema = replace(
        schema,
        abbreviations=schema_abbreviations(schema, _english_word()),
        things=_things(schema),
    )
    if not profile:
        return schema
    schema = replace(
        schema, tables=tuple(_profile(conn, handles[t.name], t) for t in schema.tables)
    )
    return replace(schema, shared_names=_shared_names(conn, schema, handles))


#: Most pairs of naming columns compared for shared values (one INTERSECT query each).
_MAX_NAME_PAIRS = 200


def _shared_names(
    conn: Connection, schema: SchemaInfo, handles: dict[str, Table]
) -> frozenset[tuple[str, str]]:
    """Naming columns that share a value with a naming column of another table.

    Only columns called alike are compared (``LastName`` with ``LastName``, ``Name`` with
    ``Name``): values of unlike columns rarely meet, and a schema of a hundred tables would
    otherwise cost thousands of queries.
    """
    names = [(t, c) for t in schema.tables for c in t.columns if t.is_key_like(c)]
    out: set[tuple[str, str]] = set()
    pairs = 0
    for (t1, c1), (t2, c2) in combinations(names, 2):
        if t1.name == t2.name or c1.name.lower() != c2.name.lower():
            continue
        pairs += 1
        if pairs > _MAX_NAME_PAIRS:
            break
        a = select(handles[t1.name].c[c1.name])
        b = select(handles[t2.name].c[c2.name])
        both = a.intersect(b).subquery("gw_shared")
        if conn.execute(select(func.count()).select_from(both)).scalar_one():
            out.update({(t1.name, c1.name), (t2.name, c2.name)})
    return frozenset(out)


_SAMPLES = 20


def _with_samples(conn: Connection, table: Table, col: ColumnInfo) -> ColumnInfo:
    """A few non-NULL values of a text column, as text (for telling personal data by value)."""
    if col.kind is not AnswerType.TEXT:
        return col
    c = table.c[col.name]
    rows = conn.execute(select(c).where(c.is_not(None)).limit(_SAMPLES)).all()
    return replace(col, samples=tuple(str(r[0]) for r in rows))


def _dialect(conn: Connection) -> str:
    name = conn.dialect.name
    return {"postgresql": "postgres", "mariadb": "mysql"}.get(name, name)


def _multi(col: Any) -> Any:
    """Distinct values of ``col`` in a group, NULL counted as one more value."""
    return func.count(distinct(col)) + func.max(case((col.is_(None), 1), else_=0))


#: Words of a number column that say it counts or measures, so its 0s and 1s are amounts, not
#: no and yes (a quantity of 1, a discount of 0).
_AMOUNT_WORDS = frozenset(
    {"quantity", "qty", "count", "number", "num", "amount", "total", "price", "cost", "units",
     "discount", "rate", "score", "level", "rank", "order", "year", "size", "weight", "stock"}
)  # fmt: skip


def _is_flag(col: ColumnInfo, low: Any, high: Any) -> bool:
    """A yes/no column stored as a number: only 0 and 1 occur, and its name is no amount."""
    if col.primary_key or col.non_null == 0 or low is None or high is None:
        return False
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        return False
    if lo not in (0.0, 1.0) or hi not in (0.0, 1.0) or col.distinct > 2:
        return False
    return not (set(words(col.name)) & _AMOUNT_WORDS)


#: Pairs of stored values that say yes and no, lower-cased: a column holding exactly one such
#: pair is a flag whatever its declared type (a TEXT ``Discontinued`` of '0' and '1').
_FLAG_PAIRS = frozenset(
    frozenset(p) for p in (("0", "1"), ("y", "n"), ("yes", "no"), ("true", "false"), ("t", "f"))
)


def _text_flags(conn: Connection, table: Table, cols: list[ColumnInfo]) -> set[str]:
    """The text columns of ``cols`` with two distinct values that are a yes/no pair (one query
    per two-valued column, reading at most three distinct values)."""
    out: set[str] = set()
    for c in cols:
        if c.distinct != 2 or c.primary_key or set(words(c.name)) & _AMOUNT_WORDS:
            continue
        col = table.c[c.name]
        values = conn.execute(select(col).where(col.is_not(None)).distinct().limit(3)).scalars()
        said = frozenset(str(v).strip().lower() for v in values)
        if said in _FLAG_PAIRS:
            out.add(c.name)
    return out


def _profile(conn: Connection, table: Table, info: TableInfo) -> TableInfo:
    """Row count, distinct/non-null counts, functional dependencies and pair profiles.

    Only ``info``'s columns are read: the ones steering left in.
    """
    cols = [c for c in info.columns if c.kind is not None][:_MAX_PROFILED_COLUMNS]
    exprs: list[Any] = [func.count()]
    for c in cols:
        col = table.c[c.name]
        exprs += [func.count(col), func.count(distinct(col))]
        # numbers: their range (a 0/1 column is a flag); text: its mean length (a label or prose)
        if c.kind is AnswerType.NUMBER:
            exprs += [func.min(col), func.max(col)]
        elif c.kind is AnswerType.TEXT and not isinstance(col.type, sqltypes.Boolean):
            exprs += [func.avg(func.length(col)), literal(None)]
        else:
            exprs += [literal(None), literal(None)]
    row = conn.execute(select(*exprs).select_from(table)).one()
    rows = int(row[0])
    profiled: dict[str, ColumnInfo] = {}
    for i, c in enumerate(cols):
        non_null, n_distinct, a, b = row[1 + 4 * i : 5 + 4 * i]
        prof = replace(c, distinct=int(n_distinct), non_null=int(non_null))
        if c.kind is AnswerType.NUMBER:
            prof = replace(prof, flag=_is_flag(prof, a, b))
        elif c.kind is AnswerType.TEXT:
            boolean = isinstance(table.c[c.name].type, sqltypes.Boolean)
            prof = replace(
                prof, flag=boolean, avg_length=None if boolean or a is None else float(a)
            )
        profiled[c.name] = prof
    texts = [p for p in profiled.values() if p.kind is AnswerType.TEXT and not p.flag]
    for name in _text_flags(conn, table, texts):
        profiled[name] = replace(profiled[name], flag=True, avg_length=None)
    columns = tuple(profiled.get(c.name, replace(c, distinct=0, non_null=0)) for c in info.columns)
    info = replace(info, columns=columns, rows=rows)
    descriptive = info.descriptive()
    keys = [c for c in descriptive if c.kind is AnswerType.TEXT and c.distinct >= 2]
    violations: dict[tuple[str, str], int] = {}
    for k in keys:
        attrs = [a for a in descriptive if a.name != k.name]
        if not attrs:
            continue
        kc = table.c[k.name]
        inner = (
            select(
                kc.label("k"),
                *[_multi(table.c[a.name]).label(f"d{i}") for i, a in enumerate(attrs)],
            )
            .where(kc.is_not(None))
            .group_by(kc)
            .subquery("g")
        )
        outer = select(
            *[
                func.coalesce(func.sum(case((inner.c[f"d{i}"] > 1, 1), else_=0)), 0)
                for i in range(len(attrs))
            ]
        )
        vrow = conn.execute(outer).one()
        for a, v in zip(attrs, vrow, strict=True):
            violations[(k.name, a.name)] = int(v)
    pair_profile: dict[tuple[str, str], tuple[int, int]] = {}
    target = info.identifier()
    cats = [c for c in keys if not info.is_key_like(c) and c.distinct < c.non_null][
        :_MAX_PAIR_COLUMNS
    ]
    if target is not None:
        tc = table.c[target.name]
        for k1, k2 in combinations(cats, 2):
            c1, c2 = table.c[k1.name], table.c[k2.name]
            inner = (
                select(_multi(tc).label("d"))
                .where(and_(c1.is_not(None), c2.is_not(None)))
                .group_by(c1, c2)
                .subquery("g")
            )
            prow = conn.execute(
                select(func.count(), func.coalesce(func.sum(case((inner.c.d == 1, 1), else_=0)), 0))
            ).one()
            pair_profile[(k1.name, k2.name)] = (int(prow[0]), int(prow[1]))
    return replace(
        info,
        fd_violations=violations,
        pair_profile=pair_profile,
        repeated_names=_repeated_names(conn, table, info),
    )


def _repeated_names(conn: Connection, table: Table, info: TableInfo) -> int:
    """How many full names (first and last) more than one row of ``table`` has."""
    full = info.full_name()
    if full is None:
        return 0
    first, last = table.c[full[0].name], table.c[full[1].name]
    shared = (
        select(first, last)
        .where(and_(first.is_not(None), last.is_not(None)))
        .group_by(first, last)
        .having(func.count() > 1)
        .subquery("n")
    )
    return int(conn.execute(select(func.count()).select_from(shared)).scalar_one())
